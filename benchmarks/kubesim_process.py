"""kubesim in a process of its own, and the CPU time of other processes: shared by the benchmarks that
measure the manager against kubesim (job_throughput, replicaset_scale, client_requests)."""

from __future__ import annotations

import os
import subprocess
import sys

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


def start_kubesim(*args: str, cwd: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start `python -m kubesim.cli --port 0 <args>`; return the process and its URL once it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim.cli", "--port", "0", *args],
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
