"""Client CPU per unary request: the ApiClient (lean keep-alive pool, manager/client/http11.py) against the
floor (benchmarks/http_floor.py: the least a keep-alive HTTP/1.1 request costs in Python on this event loop)
and a bare aiohttp session, in the same run, against kubesim in another process.

    .venv/bin/python benchmarks/client_requests.py [N] [--concurrency C] [--rounds R] [--breakdown]

For each client: N ConfigMap creates, then N GETs, N merge PATCHes, N PUTs (unconditional updates) and N
DELETEs of them, C at a time, repeated R times rotating the three clients. The figure is this process's CPU
(time.process_time) per request, which includes the kernel's share of socket sends. The aiohttp and floor
rows build no URL objects, keep no metrics, retry nothing and have no rate limiter; the ApiClient does all of
those (its rate limiter off: --kube-api-qps=0, as the issue's figure is the request path, not the wait).

--breakdown: one more ApiClient round under cProfile, its own time per function grouped by the part of the
path it belongs to, each group's share of the total and that share of the measured CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp
import orjson
from http_floor import FloorClient
from kubesim_process import start_kubesim

from manager import CONFIGMAPS
from manager.client.rest import ApiClient, create_client

NS = "default"
VERBS = ("create", "get", "patch", "update", "delete")
PATCH = {"data": {"patched": "yes"}}
MERGE_PATCH = "application/merge-patch+json"
Call = Callable[[str, str], Awaitable[object]]  # (verb, name)


def configmap(name: str, value: str = "v") -> dict[str, object]:
    metadata = {"name": name, "namespace": NS}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": value * 64}}


async def timed(names: list[str], request: Callable[[str], Awaitable[object]], concurrency: int) -> float:
    """CPU seconds of this process to run `request(name)` for each name, `concurrency` in flight at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one(name: str) -> None:
        async with gate:
            await request(name)

    started = time.process_time()
    await asyncio.gather(*(one(name) for name in names))
    return time.process_time() - started


async def run_round(call: Call, n: int, prefix: str, concurrency: int) -> dict[str, float]:
    """CPU per request of each verb, over N objects."""
    names = [f"{prefix}-{i}" for i in range(n)]
    return {
        verb: await timed(names, lambda name, verb=verb: call(verb, name), concurrency) / n  # type: ignore[misc]
        for verb in VERBS
    }


def api_client_call(client: ApiClient) -> Call:
    async def call(verb: str, name: str) -> object:
        if verb == "create":
            return await client.create(CONFIGMAPS, configmap(name), NS)
        if verb == "get":
            return await client.get(CONFIGMAPS, name, NS)
        if verb == "patch":
            return await client.patch(CONFIGMAPS, name, PATCH, NS)
        if verb == "update":
            return await client.update(CONFIGMAPS, configmap(name, "u"))
        return await client.delete(CONFIGMAPS, name, NS)

    return call


def floor_call(floor: FloorClient) -> Call:
    base = f"/api/v1/namespaces/{NS}/configmaps"

    async def call(verb: str, name: str) -> object:
        if verb == "create":
            return await floor.call("POST", base, orjson.dumps(configmap(name)))
        if verb == "get":
            return await floor.call("GET", f"{base}/{name}")
        if verb == "patch":
            return await floor.call("PATCH", f"{base}/{name}", orjson.dumps(PATCH), MERGE_PATCH)
        if verb == "update":
            body = configmap(name, "u")
            return await floor.call("PUT", f"{base}/{name}", orjson.dumps(body))
        return await floor.call("DELETE", f"{base}/{name}")

    return call


def aiohttp_call(session: aiohttp.ClientSession, url: str) -> Call:
    base = f"{url}/api/v1/namespaces/{NS}/configmaps"
    json_headers = {"Accept": "application/json", "Content-Type": "application/json"}
    patch_headers = {"Accept": "application/json", "Content-Type": MERGE_PATCH}

    async def send(method: str, target: str, body: bytes | None, headers: dict[str, str]) -> object:
        async with session.request(method, target, data=body, headers=headers) as response:
            payload = await response.read()
            if response.status >= 300:
                raise RuntimeError(f"{method} {target}: {response.status}")
            return orjson.loads(payload)

    async def call(verb: str, name: str) -> object:
        if verb == "create":
            return await send("POST", base, orjson.dumps(configmap(name)), json_headers)
        if verb == "get":
            return await send("GET", f"{base}/{name}", None, json_headers)
        if verb == "patch":
            return await send("PATCH", f"{base}/{name}", orjson.dumps(PATCH), patch_headers)
        if verb == "update":
            return await send("PUT", f"{base}/{name}", orjson.dumps(configmap(name, "u")), json_headers)
        return await send("DELETE", f"{base}/{name}", None, json_headers)

    return call


# Parts of the ApiClient's path, by the file a function lives in (first match wins); the rest is the floor's
# own kind of work (asyncio, sockets, httptools, orjson) or the benchmark's loop.
PARTS = (
    (
        "metrics (prometheus_client, manager/client/metrics.py)",
        ("prometheus_client", "client/metrics.py", "fasthistogram"),
    ),
    ("logging (structlog)", ("structlog",)),
    ("URL and body building (rest.py, resources.py, urllib)", ("client/rest.py", "apimachinery/", "urllib/")),
    (
        "request and retries (transport.py, retry.py, ratelimit.py, writegate.py)",
        ("client/transport.py", "client/retry.py", "client/ratelimit.py", "client/writegate.py"),
    ),
    ("errors (errors.py)", ("client/errors.py",)),
    ("connection pool and parser callbacks (http11.py)", ("client/http11.py",)),
    (
        "benchmark loop (this file, gather, semaphores)",
        ("client_requests.py", "asyncio/locks.py", "asyncio/tasks.py"),
    ),
)


def breakdown(profile: cProfile.Profile, per_request: float) -> None:
    stats = pstats.Stats(profile)
    totals: dict[str, float] = {}
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        part = next(
            (name for name, needles in PARTS if any(needle in filename for needle in needles)),
            "floor work (asyncio loop and transports, sockets, httptools, orjson)",
        )
        totals[part] = totals.get(part, 0.0) + own
    whole = sum(totals.values())
    print(f"ApiClient breakdown (cProfile own time, shares applied to {1e6 * per_request:.0f} us/request):")
    for part, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        share = seconds / whole
        print(f"  {100 * share:5.1f} %  {1e6 * share * per_request:5.1f} us  {part}")


async def main(n: int, concurrency: int, rounds: int, show_breakdown: bool) -> None:
    proc, url = start_kubesim("--nodes", "1", "--log-level", "warning")
    client = await create_client(master=url, qps=0)
    where = urlsplit(url)
    floor = FloorClient(where.hostname or "127.0.0.1", where.port or 80)
    await floor.open(concurrency)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
    rows: dict[str, Call] = {
        "ApiClient (http11 pool)": api_client_call(client),
        "floor (httptools+orjson)": floor_call(floor),
        "bare aiohttp session": aiohttp_call(session, url),
    }
    results: dict[str, list[dict[str, float]]] = {row: [] for row in rows}
    try:
        for row, call in rows.items():
            await run_round(call, 50, f"warm-{len(results[row])}-{row[:3].lower()}", concurrency)
        for r in range(rounds):
            order = list(rows)[r % len(rows) :] + list(rows)[: r % len(rows)]  # rotate who goes first
            for i, row in enumerate(order):
                results[row].append(await run_round(rows[row], n, f"r{r}-{i}", concurrency))
        if show_breakdown:
            profile = cProfile.Profile(time.process_time)
            profile.enable()
            await run_round(rows["ApiClient (http11 pool)"], n, "profiled", concurrency)
            profile.disable()
    finally:
        await client.close()
        await session.close()
        floor.close()
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)

    def overall(result: dict[str, float]) -> float:
        return statistics.fmean(result.values())

    print(f"{n} each of {', '.join(VERBS)} per round, {concurrency} in flight, {rounds} rounds")
    header = " ".join(f"{v:>7}" for v in VERBS)
    print(f"{'us CPU/request (median of rounds)':34} {header}  {'all':>7}  rounds (all)")
    for row, per_round in results.items():
        cells = " ".join(f"{1e6 * statistics.median(r[v] for r in per_round):7.0f}" for v in VERBS)
        alls = [overall(r) for r in per_round]
        each = " ".join(f"{1e6 * a:.0f}" for a in alls)
        print(f"{row:34} {cells}  {1e6 * statistics.median(alls):7.0f}  {each}")
    ours = [overall(r) for r in results["ApiClient (http11 pool)"]]
    floors = [overall(r) for r in results["floor (httptools+orjson)"]]
    bare = [overall(r) for r in results["bare aiohttp session"]]
    above = [a - f for a, f in zip(ours, floors, strict=True)]
    print(
        f"ApiClient above the floor: median {1e6 * statistics.median(above):.0f} us/request; "
        f"ApiClient/floor {statistics.median(a / f for a, f in zip(ours, floors, strict=True)):.2f}x; "
        f"ApiClient/aiohttp {statistics.median(a / b for a, b in zip(ours, bare, strict=True)):.2f}x"
    )
    if show_breakdown:
        breakdown(profile, statistics.median(ours))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency, args.rounds, args.breakdown))
