"""Instructions per unary request of ApiClient, paced (one request in flight, each its own wake-up), under
callgrind: the client's request path (rest verbs, transport, exchange, the keep-alive pool, the loop
iterations per answer) without a controller around it.

    .venv/bin/python benchmarks/unary_callgrind.py [n]   (n rounds of create, get, merge patch; default 300)

kubesim runs as its own process, uninstrumented; the client runs under callgrind (benchmarks/callgrind.py),
counted only while it sends the n rounds. Prints instructions per request. Deterministic to ~0.1 %, so an
A/B needs no repetition beyond two runs per side. Needs valgrind and callgrind_control.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from callgrind import Callgrind, measure_child, require
from kubesim_process import start_kubesim, stop

REQUESTS_PER_ROUND = 3


async def child(url: str, n: int) -> None:
    from manager.apimachinery.resources import CONFIGMAPS
    from manager.client import create_client

    root = await create_client(master=url, qps=0)
    client = root.for_component("unary-callgrind")  # as controllers send theirs
    warm = {"metadata": {"name": "warm"}, "data": {"k": "v"}}
    await client.create(CONFIGMAPS, warm, "default")  # connection opened, caches filled
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for i in range(n):
        name = f"cm-{i}"
        await client.create(CONFIGMAPS, {"metadata": {"name": name}, "data": {"k": "v"}}, "default")
        await client.get(CONFIGMAPS, name, "default")
        await client.patch(CONFIGMAPS, name, {"data": {"k": "w"}}, "default")
    print("done", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await root.close()


def main(n: int) -> None:
    require()
    sim, url = start_kubesim()
    callgrind = Callgrind(Path(tempfile.gettempdir()), f"unary_callgrind_{sim.pid}")
    try:
        instructions = measure_child(callgrind, [sys.executable, __file__, "--child", url, str(n)], "client")
    finally:
        stop(sim)
    requests = n * REQUESTS_PER_ROUND
    print(f"unary requests={requests}  instructions/request={instructions / requests:,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=300)
    parser.add_argument("--child", nargs=2, metavar=("URL", "N"))
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args.child[0], int(args.child[1])))
    else:
        main(args.n)
