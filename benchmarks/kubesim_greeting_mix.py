"""kubesim's CPU per object for the request mix of the Greeting operator (operator_vs_kopf.py), without an
operator: one client replays what the operator and the benchmark ask of kubesim, so kubesim's share can be
measured (and compared before/after) without the operator's own CPU on the same cores.

    .venv/bin/python benchmarks/kubesim_greeting_mix.py [N] [--rounds R]

Per object, as in operator_vs_kopf's aiokcm row: POST the Greeting; POST its ConfigMap (controller owner
reference); PATCH `status.ready: true` on the status subresource (merge patch); POST a core/v1 `Greeted`
event. Five watches see it all, as there: Greetings and ConfigMaps twice (operator and benchmark), Events
once.
Objects go 50 at a time, each object's four writes in order. kubesim runs as `python -m kubesim.cli
--no-kubelet` in its own process (the kubesim of the current directory's checkout); its utime + stime over
the window, divided by N, is the figure (median of the rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import aiohttp
import orjson
from kubesim_process import process_cpu, start_kubesim, stop
from operator_vs_kopf import CRD, GROUP, greeting

NS = "bench"
JSON_CT = {"Content-Type": "application/json"}
MERGE_CT = {"Content-Type": "application/merge-patch+json"}


def paths(url: str) -> dict[str, str]:
    return {
        "greetings": f"{url}/apis/{GROUP}/v1/namespaces/{NS}/greetings",
        "configmaps": f"{url}/api/v1/namespaces/{NS}/configmaps",
        "events": f"{url}/api/v1/namespaces/{NS}/events",
    }


async def post(session: aiohttp.ClientSession, url: str, body: Any, headers: dict[str, str] = JSON_CT) -> Any:
    async with session.post(url, data=orjson.dumps(body), headers=headers) as response:
        data = await response.read()
        assert response.status == 201, data
        return orjson.loads(data)


async def one(session: aiohttp.ClientSession, at: dict[str, str], i: int) -> None:
    name = f"g-{i:05d}"
    created = await post(session, at["greetings"], greeting(name, NS))
    meta = created["metadata"]
    owner = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Greeting",
        "name": name,
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-greeting", "namespace": NS, "ownerReferences": [owner]},
        "data": {"message": created["spec"]["message"]},
    }
    await post(session, at["configmaps"], configmap)
    body = orjson.dumps({"status": {"ready": True}})
    async with session.patch(f"{at['greetings']}/{name}/status", data=body, headers=MERGE_CT) as response:
        assert response.status == 200, await response.read()
        await response.read()
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{i:x}", "namespace": NS},
        "involvedObject": {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Greeting",
            "name": name,
            "namespace": NS,
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
        },
        "reason": "Greeted",
        "message": f"ConfigMap {name}-greeting",
        "source": {"component": "bench-greeting-controller"},
        "firstTimestamp": "2026-12-06T00:00:00Z",
        "lastTimestamp": "2026-12-06T00:00:00Z",
        "count": 1,
        "type": "Normal",
        "reportingComponent": "bench-greeting-controller",
        "reportingInstance": "bench",
    }
    await post(session, at["events"], event)


async def follow(response: aiohttp.ClientResponse, expected: int) -> None:
    seen = 0
    async for _ in response.content:
        seen += 1
        if seen >= expected:
            return


async def round_(count: int) -> float:
    sim, url = start_kubesim("--no-kubelet", "--history-size", "200000")
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            await post(session, f"{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
            await post(
                session,
                f"{url}/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            )
            at = paths(url)
            for _ in range(100):  # the CRD is served
                async with session.get(at["greetings"]) as response:
                    if response.status == 200:
                        rv = (await response.json())["metadata"]["resourceVersion"]
                        break
                await asyncio.sleep(0.05)
            # Greetings: ADDED + MODIFIED each; ConfigMaps and Events: ADDED
            watched = [
                ("greetings", 2),
                ("greetings", 2),
                ("configmaps", 1),
                ("configmaps", 1),
                ("events", 1),
            ]
            watches = [
                await session.get(f"{at[what]}?watch=1&resourceVersion={rv}&timeoutSeconds=600")
                for what, _ in watched
            ]
            followers = [
                asyncio.create_task(follow(w, per * count))
                for w, (_, per) in zip(watches, watched, strict=True)
            ]
            sem = asyncio.Semaphore(50)

            async def limited(i: int) -> None:
                async with sem:
                    await one(session, at, i)

            cpu = process_cpu(sim.pid)
            await asyncio.gather(*(limited(i) for i in range(count)))
            await asyncio.wait_for(asyncio.gather(*followers), 120)
            used = process_cpu(sim.pid) - cpu
            for w in watches:
                w.close()
            return used
    finally:
        stop(sim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    per_object = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        used = asyncio.run(round_(args.count))
        per_object.append(used / args.count * 1e6)
        took = time.perf_counter() - started
        print(f"kubesim {used:.2f} s CPU = {per_object[-1]:.0f} us/object ({took:.1f} s)")
    print(f"median {statistics.median(per_object):.0f} us/object of kubesim CPU ({args.count} objects)")


if __name__ == "__main__":
    main()
