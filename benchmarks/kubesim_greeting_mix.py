"""kubesim's CPU per object for the request mix of the Greeting operator (operator_vs_kopf.py), without an
operator: one client replays what the operator and the benchmark ask of kubesim, so kubesim's share can be
measured (and compared before/after) without the operator's own CPU on the same cores.

    .venv/bin/python benchmarks/kubesim_greeting_mix.py [N] [--rounds R] [--floor]
        [--callgrind [--keep-logs DIR]]

Per object, as in operator_vs_kopf's aiokcm row: POST the Greeting; POST its ConfigMap (controller owner
reference); PATCH `status.ready: true` on the status subresource (merge patch); POST a core/v1 `Greeted`
event. Five watches see it all, as there: Greetings and ConfigMaps twice (operator and benchmark), Events
once.
Objects go 50 at a time, each object's four writes in order. kubesim runs as `python -m kubesim.cli
--no-kubelet` in its own process (the kubesim of the current directory's checkout); its utime + stime over
the window, divided by N, is the figure (median of the rounds).
--callgrind (deterministic A/B, benchmarks/callgrind.py): kubesim runs under valgrind's callgrind with
instrumentation on only over the same window; the figure is then its instructions per object (CPU seconds
under valgrind mean nothing). --keep-logs DIR keeps the dumps (DIR/kubesim.callgrind.<pid>.1) for
callgrind_annotate. --floor replaces the mix with N GET /version (50 at a time): what a request costs
kubesim when its handler does next to nothing (aiohttp's parsing, task, response, the event loop).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from callgrind import SLOWDOWN, Callgrind, require
from kubesim_process import process_times, start_kubesim, stop
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


async def window(sim: Any, grind: Callgrind | None, work: Any) -> tuple[float, float]:
    """kubesim's CPU seconds over `await work` and the system (kernel) part; or its instructions (and 0)."""
    if grind is not None:
        grind.start(sim.pid)
    user, system = process_times(sim.pid)
    await work
    user_after, system_after = process_times(sim.pid)
    if grind is not None:
        return grind.stop(sim.pid), 0
    return user_after - user + system_after - system, system_after - system


async def floor(session: aiohttp.ClientSession, url: str, count: int) -> None:
    """`count` GET /version, 50 at a time: what aiohttp and asyncio cost per request, next to no handler."""
    sem = asyncio.Semaphore(50)

    async def one() -> None:
        async with sem, session.get(f"{url}/version") as response:
            assert response.status == 200
            await response.read()

    await asyncio.gather(*(one() for _ in range(count)))


async def round_(count: int, grind: Callgrind | None = None, only_floor: bool = False) -> tuple[float, float]:
    """kubesim's CPU seconds over the window and the system (kernel) part of them; or its instructions
    (and 0) with `grind`. `only_floor`: `count` GET /version instead of the mix."""
    slow = SLOWDOWN if grind is not None else 1
    sim, url = start_kubesim(
        "--no-kubelet", "--history-size", "200000", wrap=grind.wrap if grind is not None else None
    )
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            if only_floor:
                await floor(session, url, 50)  # the connections are open and the code paths warm
                return await window(sim, grind, floor(session, url, count))
            await post(session, f"{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
            await post(
                session,
                f"{url}/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            )
            at = paths(url)
            for _ in range(100 * slow):  # the CRD is served
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

            async def mix() -> None:
                await asyncio.gather(*(limited(i) for i in range(count)))
                await asyncio.wait_for(asyncio.gather(*followers), 120 * slow)

            used, kernel = await window(sim, grind, mix())
            for w in watches:
                w.close()
            return used, kernel
    finally:
        stop(sim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--callgrind", action="store_true", help="kubesim under valgrind's callgrind: instructions/object"
    )
    parser.add_argument("--keep-logs", type=Path, help="with --callgrind: keep the dumps in this directory")
    parser.add_argument(
        "--floor", action="store_true", help="N GET /version instead of the mix: the per-request floor"
    )
    args = parser.parse_args()
    if args.callgrind:
        require()
    with tempfile.TemporaryDirectory(prefix="kubesim-mix-") as tmp:
        work = args.keep_logs or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        per_object = []
        what = "request" if args.floor else "object"
        for _ in range(args.rounds):
            started = time.perf_counter()
            grind = Callgrind(work, "kubesim") if args.callgrind else None
            used, kernel = asyncio.run(round_(args.count, grind, args.floor))
            took = time.perf_counter() - started
            if grind is not None:
                per_object.append(used / args.count)
                print(f"kubesim {used:,} instructions = {per_object[-1]:,.0f}/{what} ({took:.1f} s)")
            else:
                per_object.append(used / args.count * 1e6)
                print(
                    f"kubesim {used:.2f} s CPU ({kernel:.2f} s system) = {per_object[-1]:.0f} us/{what}"
                    f" ({took:.1f} s)"
                )
    unit = f"instructions/{what} of kubesim" if args.callgrind else f"us/{what} of kubesim CPU"
    print(f"median {statistics.median(per_object):,.0f} {unit} ({args.count} {what}s)")


if __name__ == "__main__":
    main()
