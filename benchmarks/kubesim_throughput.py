"""kubesim throughput over real HTTP: object creates per second, and watch events per second delivered to 50
concurrent watchers. The server runs in a subprocess pinned to one core; the load generator on another.

    .venv/bin/python benchmarks/kubesim_throughput.py [--creates 6000] [--watchers 50] [--events 600]
    .venv/bin/python benchmarks/kubesim_throughput.py --pipeline   # kubesim's own write path, no HTTP
    .venv/bin/python benchmarks/kubesim_throughput.py --authorization-mode RBAC   # every request through RBAC

Targets (issue 3): >= 3,000 creates/s and >= 20,000 watch events/s across 50 watchers, server on one core.
On a shared machine the HTTP figures move with the neighbours' load; `--pipeline` times the create path
in process (decode, admission, store write, response body) without aiohttp or the kernel, which is steadier.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import aiohttp
import orjson

SERVER = """
import asyncio, os, sys
cores = os.sched_getaffinity(0)
core = int(sys.argv[1])
if core in cores:
    os.sched_setaffinity(0, {core})
from kubesim import KubeSim

# the load's user is no system:master: RBAC mode walks its bindings, among 1,000 other users' ones
RBAC = "rbac.authorization.k8s.io"
VERBS = ["create", "get", "list", "watch"]
RULES = [{"apiGroups": [""], "resources": ["configmaps", "pods"], "verbs": VERBS}]

def binding(name, user, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    ref = {"apiGroup": RBAC, "kind": "ClusterRole", "name": "bench"}
    return {"metadata": meta, "roleRef": ref, "subjects": [{"kind": "User", "name": user}]}

async def main():
    mode, tokens = sys.argv[2], sys.argv[3]
    async with KubeSim(port=0, kubelet=False, history_size=10000, authorization_mode=mode,
                       token_auth_file=tokens) as sim:
        sim.store.create(f"clusterroles.{RBAC}", {"metadata": {"name": "bench"}, "rules": RULES})
        sim.store.create(f"clusterrolebindings.{RBAC}", binding("bench", "bench"))
        for i in range(500):
            sim.store.create(f"clusterrolebindings.{RBAC}", binding(f"other-{i}", f"user-{i}"))
            sim.store.create(f"rolebindings.{RBAC}", binding(f"other-{i}", f"user-{i}", "default"))
        print(sim.url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def start_server(script: str, core: int, *args: str) -> tuple[subprocess.Popen[str], str]:
    """`python -c script core *args`, a kubesim that prints its URL once it serves (pinned to `core`)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(core), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("kubesim did not start")
    return proc, url


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process: on a shared machine the fair measure of "on one core"."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def configmap(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"b": "1"}},
            "data": {"key": "value", "other": "x" * 64},
        }
    )


def pod(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]
            },
        }
    )


class RawConnection:
    """A minimal keep-alive HTTP/1.1 client: far cheaper per request than a full client library, so that the
    load generator (one core) is not what gets measured."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, url: str) -> RawConnection:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer, f"{host}:{port}")

    async def post(self, path: str, body: bytes) -> int:
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        await self.reader.readexactly(length)
        return status

    def close(self) -> None:
        self.writer.close()


async def create_many(
    url: str, path: str, make: Callable[[str], bytes], prefix: str, total: int, concurrency: int
) -> float:
    names = iter(range(total))
    connections = [await RawConnection.open(url) for _ in range(concurrency)]

    async def worker(conn: RawConnection) -> None:
        for i in names:
            status = await conn.post(path, make(f"{prefix}-{i}"))
            if status != 201:
                raise RuntimeError(f"create failed: {status}")

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in connections))
    elapsed = time.perf_counter() - started
    for conn in connections:
        conn.close()
    return elapsed


async def watch_counter(
    session: aiohttp.ClientSession, url: str, rv: str, expected: int, ready: asyncio.Event
) -> float:
    """Count event lines until `expected` arrived; return the time the last one arrived."""
    async with session.get(
        f"{url}{CMS}?watch=true&resourceVersion={rv}", timeout=aiohttp.ClientTimeout(None)
    ) as resp:
        ready.set()
        seen = 0
        async for chunk in resp.content.iter_any():
            seen += chunk.count(b"\n")
            if seen >= expected:
                return time.perf_counter()
    raise RuntimeError(f"watch ended after {seen} of {expected} events")


def report(label: str, count: int, wall: float, cpu: float) -> None:
    print(
        f"{label:<18} {count:>7,} in {wall:5.2f}s wall = {count / wall:>9,.0f}/s;  server CPU {cpu:5.2f}s = "
        f"{count / cpu:>9,.0f} per server-CPU-second"
    )


async def bench(pid: int, url: str, creates: int, watchers: int, events: int, concurrency: int) -> None:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, headers=AUTH) as session:
        await create_many(url, CMS, configmap, "warm", 200, concurrency)
        cpu = cpu_seconds(pid)
        elapsed = await create_many(url, CMS, configmap, "cm", creates, concurrency)
        report("configmap creates", creates, elapsed, cpu_seconds(pid) - cpu)
        cpu = cpu_seconds(pid)
        elapsed = await create_many(url, PODS, pod, "pod", creates // 2, concurrency)
        report("pod creates", creates // 2, elapsed, cpu_seconds(pid) - cpu)

        async with session.get(url + CMS + "?limit=1") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        readies = [asyncio.Event() for _ in range(watchers)]
        tasks = [asyncio.create_task(watch_counter(session, url, rv, events, r)) for r in readies]
        await asyncio.gather(*(r.wait() for r in readies))
        cpu = cpu_seconds(pid)
        started = time.perf_counter()
        await create_many(url, CMS, configmap, "w", events, concurrency)
        finished = max(await asyncio.gather(*tasks))
        total = watchers * events
        print(f"watch fan-out: {events} creates x {watchers} watchers (the creates' own cost is included):")
        report("watch events", total, finished - started, cpu_seconds(pid) - cpu)


async def pipeline(rounds: int = 5, per_round: int = 2000) -> None:
    """CPU time of kubesim's create path alone: best of `rounds` rounds, in microseconds per create."""
    from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy

    from kubesim import KubeSim
    from kubesim.admission.pipeline import Write
    from kubesim.api.context import ApiContext
    from kubesim.api.request import Target, check_kind, decode_object, resolve

    class Request:  # what the write path reads from a request
        query = MultiDictProxy(MultiDict[str]())
        headers = CIMultiDictProxy(CIMultiDict({"Content-Type": "application/json", "User-Agent": "bench/1"}))

    def create(ctx: ApiContext, target: Target, body: bytes) -> None:
        write = Write(ctx, Request(), target)  # type: ignore[arg-type]
        obj = decode_object(body, "application/json", target.rtype.kind)
        check_kind(obj, target.rtype)
        write.respond(write.create(obj), 201)

    async with KubeSim(port=0, kubelet=False) as sim:
        for path, make in ((CMS, configmap), (PODS, pod)):
            target = resolve(sim.api.registry, path)
            assert target is not None
            for i in range(500):
                create(sim.api, target, make(f"warm-{i}"))
            best = float("inf")
            for r in range(rounds):
                bodies = [make(f"p{r}-{i}") for i in range(per_round)]
                started = time.process_time()
                for body in bodies:
                    create(sim.api, target, body)
                best = min(best, (time.process_time() - started) / per_round)
            plural = target.rtype.plural
            print(f"{plural:<10} create path {best * 1e6:6.1f} us = {1 / best:>8,.0f} per CPU-second")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=6000)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--pipeline", action="store_true", help="time kubesim's create path in process")
    parser.add_argument("--authorization-mode", choices=("AlwaysAllow", "RBAC"), default="AlwaysAllow")
    args = parser.parse_args()
    if args.pipeline:
        asyncio.run(pipeline())
        return
    cores = sorted(os.sched_getaffinity(0))
    server_core = cores[0]
    token_file = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)  # noqa: SIM115
    token_file.write(f"{TOKEN},bench,1\n")
    token_file.close()
    proc, url = start_server(SERVER, server_core, args.authorization_mode, token_file.name)
    if len(cores) > 1:
        os.sched_setaffinity(0, set(cores[1:]))
    print(f"authorization mode {args.authorization_mode}")
    print(f"kubesim at {url}, server pinned to core {server_core}, load generator on {cores[1:] or cores}")
    try:
        asyncio.run(bench(proc.pid, url, args.creates, args.watchers, args.events, args.concurrency))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        os.unlink(token_file.name)


if __name__ == "__main__":
    main()
