"""Generated malformed requests against one kubesim over HTTP: every answer a Kubernetes Status with a 4xx,
none a 500, the server still serving, nothing invalid stored."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson

from kubesim import KubeSim

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
CMS = "/api/v1/namespaces/default/configmaps"
OK = {400, 404, 409, 413, 415, 422}
WRONG = ("x", 1.5, True, 2**31, -(2**63) - 1, 2**64, {"a": 1}, [1])
PATCH_TYPES = (
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
)
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]},
}
VALID: dict[str, dict[str, Any]] = {
    DEPLOY: {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": TEMPLATE},
    },
    JOBS: {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "completions": 2,
            "parallelism": 1,
            "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}},
        },
    },
    CMS: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}},
}


def _scalar_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            if path or key not in ("apiVersion", "kind", "metadata"):
                yield from _scalar_paths(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _scalar_paths(child, (*path, i))
    else:
        yield path


def _with(obj: dict[str, Any], path: tuple[Any, ...], new: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    target: Any = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return out


def _cases() -> Iterator[tuple[str, str, str, bytes]]:
    """(method, url, content type, body)."""
    json_type = "application/json"
    for url, valid in VALID.items():
        name = valid["metadata"]["name"]
        for path in _scalar_paths(valid):
            for wrong in WRONG:
                if isinstance(wrong, str) and path[-1] in ("name", "image", "k"):
                    continue  # a string where a string belongs is valid
                body = json.dumps(_with(valid, path, wrong)).encode()  # orjson refuses ints beyond 64 bits
                yield "POST", url, json_type, body
                patch = _with({}, (path[0],), _with(valid, path, wrong)[path[0]])
                yield "PATCH", f"{url}/{name}", PATCH_TYPES[len(path) % 2], json.dumps(patch).encode()
        deep = b"[" * 3000 + b"]" * 3000
        yield "POST", url, json_type, b'{"metadata":{"name":"deep"},"spec":' + deep + b"}"
        for patch_type in PATCH_TYPES:
            for body in (
                deep,
                b"{",
                b"[1,2",
                b'"x"',
                b"[{}]",
                b'[{"op":"bogus","path":"/a"}]',
                b'{"metadata":' + b'{"a":' * 2000 + b"1" + b"}" * 2001,
            ):
                yield "PATCH", f"{url}/{name}", patch_type, body
        for content_type in ("text/plain", "application/xml", "application/vnd.kubernetes.protobuf"):
            yield "POST", url, content_type, orjson.dumps(valid)
        for query in ("dryRun=Maybe", "fieldValidation=Loose", "limit=x"):
            method = "GET" if "limit" in query or "timeout" in query else "POST"
            yield method, f"{url}?{query}", json_type, orjson.dumps(valid) if method == "POST" else b""
        yield "GET", f"{url}/missing", json_type, b""
        yield "POST", url, json_type, orjson.dumps(valid)  # the second create of the same name: 409


async def _send(
    session: aiohttp.ClientSession, base: str, case: tuple[str, str, str, bytes]
) -> tuple[int, Any]:
    method, url, content_type, body = case
    headers = {"Content-Type": content_type} if body else {}
    async with session.request(method, base + url, data=body or None, headers=headers) as response:
        return response.status, orjson.loads(await response.read())


async def test_generated_malformed_requests() -> None:
    async with KubeSim(port=0, kubelet=False) as sim, aiohttp.ClientSession() as session:
        for url, valid in VALID.items():  # the objects the patches aim at
            async with session.post(sim.url + url, json=valid) as response:
                assert response.status == 201, await response.text()
        cases = list(_cases())
        assert len(cases) >= 300
        semaphore = asyncio.Semaphore(32)

        async def one(case: tuple[str, str, str, bytes]) -> tuple[int, Any]:
            async with semaphore:
                return await _send(session, sim.url, case)

        answers = await asyncio.gather(*(one(case) for case in cases))
        bad = [
            (case[:3], case[3][:80], code, body)
            for case, (code, body) in zip(cases, answers, strict=True)
            if code not in OK or body.get("kind") != "Status" or body.get("code") != code
        ]
        assert not bad, bad[:5]
        for url, valid in VALID.items():  # the server still answers, and kept what was valid
            async with session.get(f"{sim.url}{url}/{valid['metadata']['name']}") as response:
                assert response.status == 200
                stored = await response.json()
            assert stored["kind"] == valid["kind"] and stored["apiVersion"] == valid["apiVersion"]
            for path in _scalar_paths(valid):
                if path[0] in ("spec", "data") and path[-1] not in ("image",):
                    value: Any = stored
                    for step in path:
                        value = value[step]
                    assert value == _get(valid, path), path
            async with session.get(f"{sim.url}{url}") as response:
                assert len((await response.json())["items"]) == 1


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj
