"""kubesim's audit log (`--audit-log-path`): one JSON line per mutating request, over real HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import orjson
import pytest

from kubesim.cli import build_parser
from kubesim.pytest_plugin import KubeSimFactory
from kubesim.server import audit

CMS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("POST", CMS, "create"),
        ("PUT", f"{CMS}/a", "update"),
        ("PATCH", f"{CMS}/a", "patch"),
        ("DELETE", f"{CMS}/a", "delete"),
        ("DELETE", CMS, "deletecollection"),
        ("DELETE", "/api/v1/namespaces/gone", "delete"),
        ("DELETE", "/apis/apps/v1/namespaces/x/deployments", "deletecollection"),
        ("DELETE", "/apis/apps/v1/replicasets", "deletecollection"),
        ("GET", f"{CMS}/a", None),
        ("POST", "/kubesim/faults/compact", None),
    ],
)
def test_audit_verbs(method: str, path: str, verb: str | None) -> None:
    assert audit.audit_verb(method, path) == verb


async def test_writes_are_logged_with_code_user_agent_and_peer(
    kubesim_factory: KubeSimFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.log"
    log = audit.AuditLog(path)
    monkeypatch.setattr(audit, "_enabled", log)
    sim = await kubesim_factory(kubelet=False)
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    sim.faults.fail(500, verb="delete", resource="configmaps", count=1)
    connector = aiohttp.TCPConnector(limit=1)  # one connection: one client port for every request
    headers = {"User-Agent": "audit-test/1", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(sim.url, connector=connector, headers=headers) as http:
        for method, url, data in [
            ("POST", CMS, body),
            ("POST", CMS, body),  # 409 AlreadyExists
            ("GET", f"{CMS}/a", None),  # a read: not logged
            ("DELETE", f"{CMS}/a", None),  # the injected 500
            ("DELETE", f"{CMS}/a", None),
        ]:
            async with http.request(method, url, data=data) as resp:
                await resp.read()
    # one more from a socket of our own, to know the client port the server saw
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    port = writer.get_extra_info("sockname")[1]
    writer.write(
        f"DELETE {CMS}/b HTTP/1.1\r\nHost: x\r\nUser-Agent: raw\r\nConnection: close\r\n\r\n".encode()
    )
    await writer.drain()
    await reader.read()
    writer.close()
    log.close()
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    codes = [(e["verb"], e["path"], e["code"], e["userAgent"]) for e in lines]
    assert codes == [
        ("create", CMS, 201, "audit-test/1"),
        ("create", CMS, 409, "audit-test/1"),
        ("delete", f"{CMS}/a", 500, "audit-test/1"),
        ("delete", f"{CMS}/a", 200, "audit-test/1"),
        ("delete", f"{CMS}/b", 404, "raw"),
    ]
    assert len({e["peer"] for e in lines[:4]}) == 1  # one pooled connection
    assert lines[4]["peer"] == f"127.0.0.1:{port}"
    assert all(isinstance(e["time"], float) and e["time"] > 0 for e in lines)


def test_the_flag() -> None:
    args = build_parser().parse_args(["--audit-log-path", "/tmp/x.log"])
    assert args.audit_log_path == "/tmp/x.log"
    assert build_parser().parse_args([]).audit_log_path is None
