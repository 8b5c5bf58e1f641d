"""Nothing a client sends may crash kubesim or lose stored objects: seeded random requests, every answer a
Status (or a valid object), the server healthy and the store intact afterwards."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
import orjson

from kubesim.pytest_plugin import KubeSimFactory

PATHS = [
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/keep",
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/p",
    "/api/v1/namespaces/default/pods/p/status",
    "/apis/apps/v1/namespaces/default/deployments/d/scale",
    "/apis/apps/v1/namespaces/default/replicasets",
    "/api/v1/namespaces",
    "/api/v1/namespaces/default",
    "/api/v1/nodes",
    "/apis/batch/v1/jobs",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "/api/v1/namespaces/default/events",
    "/apis/events.k8s.io/v1/namespaces/default/events",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/api",
    "/apis",
    "/api/v1",
    "/apis/apps/v1",
    "/version",
    "/api/v1/namespaces/%00/pods",
    "/apis/../api/v1",
    "/api/v1/namespaces/default/configmaps/" + "x" * 300,
    "/api/v1/watch/namespaces/default/configmaps",
]
QUERIES = [
    "",
    "watch=maybe",
    "limit=-1",
    "limit=x",
    "resourceVersion=-5",
    "resourceVersion=9999999999999999999999",
    "continue=%ff%fe",
    "labelSelector=%28%28%28",
    "fieldSelector=%3D%3D%3D",
    "timeoutSeconds=abc",
    "dryRun=Some",
    "fieldValidation=Loose",
    "gracePeriodSeconds=x",
    "propagationPolicy=Never",
    "fieldManager=" + "m" * 200,
    "resourceVersionMatch=Exact&resourceVersion=0",
    "sendInitialEvents=1",
    "allowWatchBookmarks=perhaps",
    "watch=1&timeoutSeconds=1&resourceVersion=1",
    "force=true",
]
BILLION_LAUGHS = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n".encode() for i in range(8)
)
BODIES: list[bytes] = [
    BILLION_LAUGHS,
    b"[" * 20_000 + b"]" * 20_000,
    b"",
    b"null",
    b"[]",
    b"42",
    b'"str"',
    b"{",
    b"\xff\xfe\x00",
    b'{"metadata": []}',
    b'{"metadata": {"name": 5}}',
    b'{"metadata": {"name": "keep", "labels": "x"}}',
    b'{"kind": "Pod", "apiVersion": "v9"}',
    b'{"metadata": {"name": "n", "finalizers": "nope"}, "spec": 7}',
    b'[{"op": "explode"}]',
    b'{"spec": {"replicas": "many"}}',
    b'{"metadata": {"generateName": 1}}',
    b"a: [b",
    b'{"metadata": {"name": "ok-name"}, "data": {"k": ["not", "a", "string"]}}',
    orjson.dumps({"metadata": {"name": "deep"}, "data": {"k": "v"}, "x": [[[[[[[[]]]]]]]]}),
]
CONTENT_TYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
    "",
    "application/json; charset=utf-8",
]


def assert_answer(method: str, path: str, status: int, raw: bytes, content_type: str) -> None:
    assert status != 500 or b"resourceVersion should not be set" in raw, (method, path, raw[:300])
    if status >= 400 and "json" in content_type:
        body: Any = orjson.loads(raw)
        assert body["kind"] == "Status" and body["code"] == status, (method, path, body)


async def test_random_requests_never_break_the_server(kubesim_factory: KubeSimFactory) -> None:
    sim = await kubesim_factory(kubelet=False, max_body_bytes=64 * 1024)
    rng = random.Random(1234)
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        keep = {"metadata": {"name": "keep"}, "data": {"k": "v"}}
        async with session.post(
            sim.url + PATHS[0], data=orjson.dumps(keep), headers={"Content-Type": "application/json"}
        ) as resp:
            assert resp.status == 201
        for _ in range(400):
            method = rng.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
            path = rng.choice(PATHS)
            query = "&".join(rng.sample(QUERIES, rng.randint(0, 2)))
            url = f"{sim.url}{path}{'?' + query if query else ''}"
            if "timeoutSeconds" not in query:  # watches (also /watch/ paths) must end by themselves
                url += ("&" if query else "?") + "timeoutSeconds=1"
            headers = {"Content-Type": rng.choice(CONTENT_TYPES)}
            if rng.random() < 0.2:
                headers["Accept"] = rng.choice(
                    [
                        "application/vnd.kubernetes.protobuf",
                        "application/json;as=Table;g=x",
                        "*/*",
                        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
                    ]
                )
            async with session.request(
                method, url, data=rng.choice(BODIES), headers=headers, allow_redirects=False
            ) as resp:
                try:
                    raw = await asyncio.wait_for(resp.read(), 0.5)
                except TimeoutError:  # an open watch stream: it answered 200 and keeps going
                    assert resp.status == 200 and method == "GET", (method, url)
                    continue
                if method != "HEAD":
                    assert_answer(method, path, resp.status, raw, resp.headers.get("Content-Type", ""))
            if path.endswith("/keep") and method == "DELETE":
                async with session.post(
                    sim.url + PATHS[0], data=orjson.dumps(keep), headers={"Content-Type": "application/json"}
                ) as resp:
                    assert resp.status in (201, 409)
        async with session.get(sim.url + "/api/v1/namespaces") as resp:
            names = {n["metadata"]["name"] for n in (await resp.json())["items"]}
        assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
        async with session.get(sim.url + "/readyz") as resp:
            assert resp.status == 200


async def test_watch_of_one_named_object(kubesim_factory: KubeSimFactory) -> None:
    sim = await kubesim_factory(kubelet=False)
    base = sim.url + "/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession() as session:
        for name in ("a", "b"):
            async with session.post(base, json={"metadata": {"name": name}}) as resp:
                assert resp.status == 201
        async with session.get(f"{base}/b?watch=true&timeoutSeconds=1") as resp:
            lines = [orjson.loads(line) for line in (await resp.read()).splitlines()]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "b")]
