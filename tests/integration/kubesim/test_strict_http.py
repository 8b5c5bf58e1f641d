"""HTTP-level limits and the decoding of patched documents, over real HTTP: request lines and headers as
large as kube-apiserver takes (Go net/http's 1 MiB), a `Status` for whatever is refused at the protocol
level, Scale subresource decode errors, and patches that drop apiVersion/kind."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import schemaless_crd

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
JSON_BODY = {"Content-Type": "application/json"}


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def _raw(sim: KubeSim, head: bytes) -> tuple[int, Any]:
    """Send exact request bytes; return the status and the decoded JSON body of the answer. The server may
    answer and close before it has read all of an oversized request, so the answer is read while sending."""
    host, port = sim.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    received = bytearray()

    async def read_answer() -> None:
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(1 << 16):
                received.extend(chunk)

    reading = asyncio.create_task(read_answer())
    try:
        with contextlib.suppress(ConnectionError):
            for start in range(0, len(head), 1 << 16):
                writer.write(head[start : start + (1 << 16)])
                await writer.drain()
        await asyncio.wait_for(reading, 10)  # every error answer closes the connection
    finally:
        writer.close()
    status_line, _, rest = bytes(received).partition(b"\r\n")
    _, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), orjson.loads(body)


def _assert_status(code: int, body: Any, expected: int) -> None:
    assert code == expected, body
    assert body["kind"] == "Status" and body["code"] == expected and body["status"] == "Failure", body


async def _serves(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    async with session.get(sim.url + CMS) as r:
        assert r.status == 200


async def test_a_long_label_selector_and_large_headers_are_served(sim: KubeSim) -> None:
    selector = ",".join(f"key-{i}=value-{i}" for i in range(1500))  # ~30 KB, past aiohttp's 8190 default
    headers = {f"X-Extra-{i}": "v" for i in range(300)} | {"X-Big": "b" * 100_000}
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url + CMS, params={"labelSelector": selector}, headers=headers) as r,
    ):
        assert r.status == 200, await r.text()
        assert (await r.json())["kind"] == "ConfigMapList"


@pytest.mark.parametrize(
    "head",
    [
        b"GET " + CMS.encode() + b"?labelSelector=" + b"a" * (1 << 21) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET " + CMS.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * (1 << 21) + b"\r\n\r\n",
        b"GET "
        + CMS.encode()
        + b" HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-H%d: %s\r\n" % (i, b"h" * 100_000) for i in range(12))
        + b"\r\n",
        b"GET " + CMS.encode() + b" HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 40_000 + b"\r\n",
    ],
    ids=["2 MiB URL", "2 MiB header", "1.2 MB of headers", "40000 headers"],
)
async def test_requests_past_one_mebibyte_of_headers_get_a_431_status(sim: KubeSim, head: bytes) -> None:
    code, body = await _raw(sim, head)
    _assert_status(code, body, 431)
    async with aiohttp.ClientSession() as session:
        await _serves(session, sim)


POST_CMS = b"POST " + CMS.encode() + b" HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize(
    ("head", "code"),
    [
        (b"GET /api/v1 HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400),
        (b"GET /api/v1 HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", 400),
        (b"BR\x00KEN / HTTP/1.1\r\n\r\n", 400),
        (b"GET /api/v1 HTTP/9.9\r\nHost: x\r\n\r\n", 400),
        (b"GET \xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400),
        (POST_CMS + b"Content-Length: x\r\n\r\n", 400),
        (POST_CMS + b"Content-Length: 99999999999999999999\r\n\r\n{}", 400),
        (POST_CMS + b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400),
        (POST_CMS + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400),
        (
            b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            404,
        ),  # no route: the router's own 404
    ],
    ids=[
        "space in a header name",
        "NUL in a header value",
        "bad method",
        "bad version",
        "bad request target",
        "HTTP/2 preface",
        "bad content length",
        "content length overflow",
        "content length and chunked",
        "bad chunk size",
        "CONNECT",
    ],
)
async def test_malformed_http_gets_a_status(sim: KubeSim, head: bytes, code: int) -> None:
    answer, body = await _raw(sim, head)
    _assert_status(answer, body, code)
    async with aiohttp.ClientSession() as session:
        await _serves(session, sim)


async def test_scale_replicas_of_the_wrong_type_are_decode_errors(sim: KubeSim) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    async with aiohttp.ClientSession() as session:
        async with session.post(sim.url + DEPLOYS, json=deployment) as r:
            assert r.status == 201
        for replicas in ("3", 1.5, True, 2**31, 2**63):
            scale: dict[str, Any] = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "d"},
            }
            scale["spec"] = {"replicas": replicas}
            raw = json.dumps(scale).encode()  # not orjson: it refuses 2**63
            for method, content_type in (
                ("PUT", "application/json"),
                ("PATCH", "application/merge-patch+json"),
            ):
                async with session.request(
                    method, f"{sim.url}{DEPLOYS}/d/scale", data=raw, headers={"Content-Type": content_type}
                ) as r:
                    body = await r.json()
                _assert_status(r.status, body, 400)
                assert body["message"].startswith('Scale in version "v1" cannot be handled as a Scale: json:')
                assert "ScaleSpec.spec.replicas of type int32" in body["message"], body
        async with session.get(f"{sim.url}{DEPLOYS}/d") as r:
            assert (await r.json())["spec"]["replicas"] == 1


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        (
            "application/json-patch+json",
            [{"op": "remove", "path": "/apiVersion"}, {"op": "remove", "path": "/kind"}],
        ),
        ("application/merge-patch+json", {"apiVersion": None, "kind": None}),
        ("application/strategic-merge-patch+json", {"apiVersion": None, "kind": None, "data": {"k": "w"}}),
    ],
)
async def test_a_patch_removing_apiversion_and_kind_stores_them_anyway(
    sim: KubeSim, content_type: str, patch: Any
) -> None:
    """The patched document is decoded into the endpoint's type, which sets them again (upstream
    patcher: the result is decoded with the resource's kind)."""
    async with aiohttp.ClientSession() as session:
        async with session.post(sim.url + CMS, json={"metadata": {"name": "c"}, "data": {"k": "v"}}) as r:
            assert r.status == 201
        async with session.patch(
            f"{sim.url}{CMS}/c", data=orjson.dumps(patch), headers={"Content-Type": content_type}
        ) as r:
            assert r.status == 200, await r.text()
        async with session.get(f"{sim.url}{CMS}/c") as r:
            stored = await r.json()
        assert (stored["apiVersion"], stored["kind"]) == ("v1", "ConfigMap")


def _crd_nesting(plural: str, levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    crd = schemaless_crd("deep.example.com", plural.capitalize()[:-1], plural=plural)
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": schema}
    return crd


async def test_a_crd_schema_deeper_than_the_store_takes_is_refused_up_front(sim: KubeSim) -> None:
    crds = sim.url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    async with aiohttp.ClientSession() as session:
        async with session.post(crds, data=json.dumps(_crd_nesting("deeps", 130)), headers=JSON_BODY) as r:
            _assert_status(r.status, await r.json(), 400)
        async with session.get(crds + "/deeps.deep.example.com") as r:
            assert r.status == 404
        async with session.post(crds, json=_crd_nesting("shallows", 90)) as r:  # 180 JSON levels: fine
            assert r.status == 201, await r.text()
