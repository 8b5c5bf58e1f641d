"""Client CPU per unary request: the ApiClient (lean keep-alive pool, manager/client/http11.py) against a
bare aiohttp session doing the same requests, in the same run, against kubesim in another process.

    .venv/bin/python benchmarks/client_requests.py [N] [--concurrency C] [--rounds R]

For each client: N ConfigMap creates then N GETs of them (then N deletes), C at a time, repeated R times
alternating the two clients. The figure is this process's CPU (time.process_time) per request, which
includes the kernel's share of socket sends. The aiohttp baseline is the least aiohttp can do: one
session, a prebuilt URL string, no metrics, no retries, no rate limiter; the ApiClient does all of those.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable

import aiohttp
import orjson
from kubesim_process import start_kubesim

from manager import CONFIGMAPS
from manager.client.rest import ApiClient, create_client

NS = "default"


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v" * 64}}


async def timed(names: list[str], request: Callable[[str], Awaitable[object]], concurrency: int) -> float:
    """CPU seconds of this process to run `request(name)` for each name, `concurrency` in flight at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one(name: str) -> None:
        async with gate:
            await request(name)

    started = time.process_time()
    await asyncio.gather(*(one(name) for name in names))
    return time.process_time() - started


async def round_api_client(client: ApiClient, n: int, prefix: str, concurrency: int) -> float:
    names = [f"{prefix}-{i}" for i in range(n)]
    cpu = await timed(names, lambda name: client.create(CONFIGMAPS, configmap(name), NS), concurrency)
    cpu += await timed(names, lambda name: client.get(CONFIGMAPS, name, NS), concurrency)
    cpu += await timed(names, lambda name: client.delete(CONFIGMAPS, name, NS), concurrency)
    return cpu / (3 * n)


async def round_aiohttp(
    session: aiohttp.ClientSession, url: str, n: int, prefix: str, concurrency: int
) -> float:
    base = f"{url}/api/v1/namespaces/{NS}/configmaps"
    headers = {"Accept": "application/json", "Content-Type": "application/json"}

    async def call(method: str, target: str, body: bytes | None = None) -> object:
        async with session.request(method, target, data=body, headers=headers) as response:
            payload = await response.read()
            if response.status >= 300:
                raise RuntimeError(f"{method} {target}: {response.status}")
            return orjson.loads(payload)

    names = [f"{prefix}-{i}" for i in range(n)]
    cpu = await timed(names, lambda name: call("POST", base, orjson.dumps(configmap(name))), concurrency)
    cpu += await timed(names, lambda name: call("GET", f"{base}/{name}"), concurrency)
    cpu += await timed(names, lambda name: call("DELETE", f"{base}/{name}"), concurrency)
    return cpu / (3 * n)


async def main(n: int, concurrency: int, rounds: int) -> None:
    proc, url = start_kubesim("--nodes", "1", "--log-level", "warning")
    client = await create_client(master=url, qps=0)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
    ours: list[float] = []
    bare: list[float] = []
    try:
        await round_api_client(client, 50, "warm-a", concurrency)
        await round_aiohttp(session, url, 50, "warm-b", concurrency)
        for r in range(rounds):
            ours.append(await round_api_client(client, n, f"a{r}", concurrency))
            bare.append(await round_aiohttp(session, url, n, f"b{r}", concurrency))
    finally:
        await client.close()
        await session.close()
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
    ratio = [a / b for a, b in zip(ours, bare, strict=True)]
    print(f"{n} creates + gets + deletes per round, {concurrency} in flight, {rounds} rounds")
    print(f"ApiClient (http11 pool): {' '.join(f'{1e6 * s:.0f}' for s in ours)} us CPU/request")
    print(f"bare aiohttp session   : {' '.join(f'{1e6 * s:.0f}' for s in bare)} us CPU/request")
    print(
        f"ratio ApiClient/aiohttp: median {statistics.median(ratio):.2f} "
        f"(range {min(ratio):.2f}-{max(ratio):.2f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency, args.rounds))
