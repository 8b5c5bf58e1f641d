"""How fast the manager sees an API server outage, and how fast it acts again once the server is back.

    .venv/bin/python benchmarks/apiserver_recovery.py [freeze|restart|restart-durable|both|all]
        [OUTAGE_SECONDS] [RUNS]      (defaults: both = freeze and restart, 45, 3; all: the three)

kubesim runs in a process of its own (no nodes, no kubelet); the real manager runs the ReplicaSet controller
in this process with its default settings (API server probe every 5 s, 3 s timeout, 3 failures; reflector
backoff 0.8 s doubling to 30 s with jitter), without leader election: an outage longer than the renew
deadline ends a leader's process by design, as kube-controller-manager's.

- `freeze`: kubesim is SIGSTOPped for OUTAGE_SECONDS (connections accepted, nothing answered), then
  SIGCONTed.
- `restart`: kubesim is stopped (the port refuses) for OUTAGE_SECONDS, then a new kubesim starts on the same
  port, with an empty store (the manager sees a new history and relists).
- `restart-durable`: the same, but kubesim keeps its cluster in a data directory (`--data-dir`) and the new
  one continues from it, as a kube-apiserver restarts over its etcd: the manager resumes its watches.

Per run it prints: `unready s`, from the start of the outage to the manager's /readyz answering 500 (target
<= 30 s); `ready s`, from the server's return (SIGCONT sent, or the new kubesim serving) to /readyz 200
again; `acts s`, from the return to the pods of a ReplicaSet created right after it existing (the
controller's first writes; target <= 5 s). Then the median of each over the runs.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit

import aiohttp
from kubesim_process import start_kubesim, stop

from controllers.replicaset import ReplicaSetController
from manager import PODS, REPLICASETS
from manager.cli.logging import configure_logging
from manager.client.rest import ApiClient, create_client
from manager.lifecycle.manager import Manager
from manager.testing import run_manager

KUBESIM_ARGS = ("--nodes", "0", "--no-kubelet")
POLL = 0.05


def replicaset(name: str) -> dict[str, object]:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": template},
    }


async def readyz_status(session: aiohttp.ClientSession, manager: Manager) -> int:
    async with session.get(f"{manager.server.url}/readyz") as response:
        return response.status


async def until_readyz(session: aiohttp.ClientSession, manager: Manager, status: int) -> float:
    """Poll the manager's /readyz until it answers `status`; the perf_counter() at that moment."""
    while await readyz_status(session, manager) != status:  # noqa: ASYNC110 - polling is the measurement
        await asyncio.sleep(POLL)
    return time.perf_counter()


async def until_acted(client: ApiClient, name: str) -> float:
    """Create a ReplicaSet of 2 (retrying until the server takes it) and wait for its 2 pods."""
    while True:
        try:
            await client.create(REPLICASETS, replicaset(name), "default")
            break
        except Exception:  # the server is still coming up: try again
            await asyncio.sleep(POLL)
    while len((await client.list(PODS, "default", label_selector=f"app={name}"))["items"]) < 2:  # noqa: ASYNC110
        await asyncio.sleep(POLL)
    return time.perf_counter()


async def one_run(scenario: str, outage: float, run: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory(prefix="apiserver-recovery-") as data_dir:
        durable = ("--data-dir", data_dir) if scenario == "restart-durable" else ()
        return await _one_run(scenario, outage, run, (*KUBESIM_ARGS, *durable))


async def _one_run(
    scenario: str, outage: float, run: int, kubesim_args: tuple[str, ...]
) -> tuple[float, float, float]:
    sim, url = start_kubesim(*kubesim_args)
    port = str(urlsplit(url).port)
    restarted: subprocess.Popen[str] | None = None
    client = await create_client(master=url, qps=0, max_retries=0)
    try:
        async with (
            run_manager(url, ReplicaSetController, flags={"log_level": "warning"}) as manager,
            aiohttp.ClientSession() as session,
        ):
            await until_acted(client, f"warm-{run}")
            await until_readyz(session, manager, 200)
            down = time.perf_counter()
            if scenario == "freeze":
                sim.send_signal(signal.SIGSTOP)
            else:
                await asyncio.to_thread(stop, sim)  # the manager's loop runs on meanwhile
            unready = await asyncio.wait_for(until_readyz(session, manager, 500), outage + 60)
            await asyncio.sleep(max(0.0, down + outage - time.perf_counter()))  # the outage itself
            if scenario == "freeze":
                sim.send_signal(signal.SIGCONT)
            else:
                restarted, _ = await asyncio.to_thread(start_kubesim, *kubesim_args, "--port", port)
            back = time.perf_counter()
            ready, acted = await asyncio.gather(
                until_readyz(session, manager, 200), until_acted(client, f"after-{run}")
            )
            return unready - down, ready - back, acted - back
    finally:
        await client.close()
        if sim.poll() is None:
            sim.send_signal(signal.SIGCONT)
            stop(sim)
        if restarted is not None:
            stop(restarted)


async def bench(scenarios: list[str], outage: float, runs: int) -> None:
    for scenario in scenarios:
        print(f"{scenario}: {outage:g} s outage, {runs} runs (unready target <= 30 s, acts target <= 5 s)")
        print(f"{'run':>4} {'unready s':>10} {'ready s':>8} {'acts s':>7}")
        results = []
        for run in range(runs):
            result = await one_run(scenario, outage, run)
            results.append(result)
            print(f"{run + 1:>4} {result[0]:10.2f} {result[1]:8.2f} {result[2]:7.2f}", flush=True)
        medians = [statistics.median(r[i] for r in results) for i in range(3)]
        print(f"{'med':>4} {medians[0]:10.2f} {medians[1]:8.2f} {medians[2]:7.2f}", flush=True)


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "both"
    choices = {
        "freeze": ["freeze"],
        "restart": ["restart"],
        "restart-durable": ["restart-durable"],
        "both": ["freeze", "restart"],
        "all": ["freeze", "restart", "restart-durable"],
    }
    if which not in choices:
        sys.exit(f"unknown scenario {which!r}: {', '.join(choices)}")
    outage = float(sys.argv[2]) if len(sys.argv) > 2 else 45.0
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if outage < 0 or runs < 1:
        sys.exit("the outage must not be negative and runs must be at least 1")
    configure_logging("json", "error")
    asyncio.run(bench(choices[which], outage, runs))


if __name__ == "__main__":
    main()
