"""Plain responses go out through `kubesim.server.fastwrite` instead of aiohttp's prepare/write_eof: the bytes
on the wire (status line, headers in order, body) must be those aiohttp sends, for HTTP/1.1 and 1.0, with
and without keep-alive, with Warning headers, errors, YAML and HEAD (which aiohttp keeps)."""

from __future__ import annotations

import asyncio
import re

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from kubesim.server import fastwrite, limits

TIME = re.compile(
    rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
CM = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fw"},"data":{"a":"b"},"bogus":1}'
CASES = [
    ("GET", "/version", "1.1", {}, b""),
    ("GET", "/version", "1.0", {}, b""),
    ("GET", "/version", "1.0", {"Connection": "keep-alive"}, b""),
    ("GET", "/version", "1.1", {"Connection": "close"}, b""),
    ("HEAD", "/version", "1.1", {}, b""),
    ("GET", "/healthz", "1.1", {}, b""),
    ("GET", "/api/v1/namespaces/default/nothings", "1.1", {}, b""),
    ("GET", "/nowhere", "1.1", {}, b""),
    ("GET", "/api/v1/namespaces/default", "1.1", {"Accept": "application/yaml"}, b""),
    ("GET", "/api/v1/namespaces/default/configmaps/missing", "1.1", {}, b""),
    (
        "POST",
        "/api/v1/namespaces/default/configmaps?dryRun=All",
        "1.1",
        {"Content-Type": "application/json"},
        CM,
    ),
    ("POST", "/api/v1/namespaces/default/configmaps", "1.1", {"Content-Type": "text/x-nothing"}, b"{}"),
]


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def exchange(
    sim: KubeSim, method: str, path: str, version: str, headers: dict[str, str], body: bytes
) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
    """One request on a fresh connection: the status line, the headers in order, the body."""
    host, port = sim.url.split("//", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        lines = [
            f"{method} {path} HTTP/{version}",
            f"Host: {host}",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        status, *fields = head[:-4].split(b"\r\n")
        parsed = [(n, v) for n, _, v in (f.partition(b": ") for f in fields)]
        length = int(dict(parsed).get(b"Content-Length", b"0"))
        data = b"" if method == "HEAD" else await asyncio.wait_for(reader.readexactly(length), 10)
        return status, parsed, data
    finally:
        writer.close()


@pytest.mark.parametrize(("method", "path", "version", "headers", "body"), CASES)
async def test_fast_write_sends_what_aiohttp_sends(
    sim: KubeSim,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    version: str,
    headers: dict[str, str],
    body: bytes,
) -> None:
    assert limits._FAST_WRITE  # the installed aiohttp has the state fastwrite needs
    sent = []
    original, original_usual = fastwrite.send, fastwrite.send_usual

    async def counted(request: object, resp: object) -> None:
        sent.append(path)
        await original(request, resp)  # type: ignore[arg-type]

    def counted_usual(request: object, resp: object) -> bool:
        done = original_usual(request, resp)  # type: ignore[arg-type]
        if done:
            sent.append(path)
        return done

    monkeypatch.setattr(fastwrite, "send", counted)
    monkeypatch.setattr(fastwrite, "send_usual", counted_usual)
    fast = await exchange(sim, method, path, version, headers, body)
    assert sent == ([] if method == "HEAD" else [path])  # HEAD: aiohttp's own path
    monkeypatch.setattr(limits, "_FAST_WRITE", False)
    slow = await exchange(sim, method, path, version, headers, body)
    assert fast[0] == slow[0]
    # the same headers in the same order; only the Date may differ (a second boundary)
    assert [(n, v if n != b"Date" else b"") for n, v in fast[1]] == [
        (n, v if n != b"Date" else b"") for n, v in slow[1]
    ]
    assert TIME.sub(b"T", fast[2]) == TIME.sub(b"T", slow[2])  # a dry run's time and uid differ
    if b"Warning" in dict(fast[1]):
        assert b"bogus" in dict(fast[1])[b"Warning"]
