"""kubesim in a process of its own, and the CPU time of other processes: shared by the benchmarks that
measure the manager against kubesim (job_throughput, replicaset_scale, client_requests, gc_cascade,
deployment_rollout, cronjob_due)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """utime + stime of another process, in seconds (Linux /proc)."""
    user, system = process_times(pid)
    return user + system


def process_times(pid: int) -> tuple[float, float]:
    """utime and stime of another process, in seconds (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS


def process_wakeups(pid: int) -> int:
    """Voluntary context switches of another process: how often it slept and was woken (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0


def start_kubesim(
    *args: str, cwd: str | None = None, wrap: Callable[[list[str]], list[str]] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Start `python -m kubesim.cli --port 0 <args>`; return the process and its URL once it serves.
    `wrap` rewrites the command line (e.g. `Callgrind.wrap`, to run it under valgrind)."""
    command = [sys.executable, "-m", "kubesim.cli", "--port", "0", *args]
    proc = subprocess.Popen(
        wrap(command) if wrap is not None else command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("kubesim ready at "):
            return proc, line.split("kubesim ready at ", 1)[1].strip()
    raise RuntimeError("kubesim did not start")


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def running_kubesim(*args: str) -> Iterator[tuple[int, str]]:
    """kubesim in its own process for the `with` block: yields its pid (for `process_cpu`) and URL."""
    proc, url = start_kubesim(*args)
    try:
        yield proc.pid, url
    finally:
        stop(proc)
