"""Generated malformed requests (the table in test_strict_cases*.py: resources x mutations x verbs) against
one kubesim over HTTP. Each must be answered with a `Status` carrying the code kube-apiserver gives, never a
500; the server must keep serving; and a GET after each refused write must show nothing changed."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import schemaless_crd, wait_for
from tests.integration.kubesim.test_strict_cases import FOO_SCHEMA, RESOURCES, Case
from tests.integration.kubesim.test_strict_cases_http import all_cases


async def _setup(session: aiohttp.ClientSession, url: str) -> dict[str, str]:
    """Create the Foo CRD and every resource's valid object; return each object's resourceVersion."""
    crd = schemaless_crd("strict.example.com", "Foo")
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": FOO_SCHEMA}
    async with session.post(url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd) as r:
        assert r.status == 201, await r.text()

    async def served() -> bool:
        async with session.get(url + RESOURCES[3].collection) as r:
            return r.status == 200

    await wait_for(served, timeout=10)
    versions = {}
    for res in RESOURCES:
        async with session.post(url + res.collection, json=res.valid) as r:
            assert r.status == 201, await r.text()
            versions[res.item] = (await r.json())["metadata"]["resourceVersion"]
    return versions


async def _send(session: aiohttp.ClientSession, url: str, case: Case) -> tuple[int, Any]:
    headers = {"Content-Type": case.content_type} if case.body else {}
    async with session.request(case.method, url + case.path, data=case.body or None, headers=headers) as r:
        return r.status, orjson.loads(await r.read())


async def _state(session: aiohttp.ClientSession, url: str, path: str) -> tuple[int, str]:
    async with session.get(url + path) as r:
        body = await r.json()
        return r.status, body.get("metadata", {}).get("resourceVersion", "")


def test_the_table_is_large_and_distinct() -> None:
    cases = all_cases()
    assert len(cases) >= 300
    assert len({(c.method, c.path, c.content_type, c.body) for c in cases}) == len(cases)


async def test_generated_malformed_requests_are_refused_with_a_status(
    kubesim_factory: KubeSimFactory,
) -> None:
    sim = await kubesim_factory(kubelet=False, max_body_bytes=64 * 1024)
    sim.api.too_new_wait = 0.05  # a read at a future resourceVersion fails after this wait (504)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        versions = await _setup(session, sim.url)
        semaphore = asyncio.Semaphore(16)

        async def one(case: Case) -> str | None:
            async with semaphore:
                try:
                    code, body = await _send(session, sim.url, case)
                except TimeoutError:
                    return f"{case.label} {case.method} {case.path[:80]}: no answer"
                if code not in case.codes or body.get("kind") != "Status" or body.get("code") != code:
                    return f"{case.label} {case.method} {case.path[:80]}: {code} {str(body)[:200]}"
                if case.unchanged and await _state(session, sim.url, case.unchanged) != (
                    200,
                    versions[case.unchanged],
                ):
                    return f"{case.label}: {case.unchanged} changed"
                if case.absent and (await _state(session, sim.url, case.absent))[0] != 404:
                    return f"{case.label}: {case.absent} was stored"
                return None

        failures = [f for f in await asyncio.gather(*(one(c) for c in all_cases())) if f]
        assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} in all)"
        async with session.get(sim.url + "/readyz") as r:
            assert r.status == 200
