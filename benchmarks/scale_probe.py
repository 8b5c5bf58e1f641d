"""Process probes for `scale.py`: the manager started as its own process, its log, RSS and CPU, and the
retained size of the bare stripped dicts of the objects it caches."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import orjson
from kubesim_process import process_cpu

from manager import GroupVersionResource
from manager.client.rest import ApiClient


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """VmRSS (or VmHWM, the peak) of a process from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for pid {pid}")


class ManagerProcess:
    """`aiokcm --controllers '*'` in its own process, JSON logs at info into a file we poll."""

    def __init__(self, url: str, log_path: str) -> None:
        self.log_path = log_path
        aiokcm = os.path.join(os.path.dirname(sys.executable), "aiokcm")
        # SCALE_BENCH_MANAGER_CMD replaces the manager executable, e.g. with a profiling wrapper.
        prefix = os.environ.get("SCALE_BENCH_MANAGER_CMD", aiokcm).split()
        args = [
            *prefix, "--master", url, "--controllers", "*", "--leader-elect=false", "--kube-api-qps", "0",
            "--bind-address", "127.0.0.1", "--port", "0", "--log-format", "json", "--log-level", "info",
        ]  # fmt: skip
        self.started = time.perf_counter()
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def wait_for_line(self, needle: bytes, timeout: float) -> float:
        """Seconds from the start of the process until `needle` appears in its log (polled every 20 ms)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                if needle in f.read():
                    return time.perf_counter() - self.started
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"the manager never logged {needle!r}; see {self.log_path}")

    def wait_until_quiet(self, timeout: float, window: float = 1.0, share: float = 0.05) -> float:
        """Seconds from the start until a `window` in which the manager used < `share` of a core: the initial
        reconciles of every object are done."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = process_cpu(self.pid)
            time.sleep(window)
            if process_cpu(self.pid) - before < share * window:
                return time.perf_counter() - self.started - window
        raise RuntimeError(f"the manager stayed busy for {timeout} s; see {self.log_path}")

    def log_lines(self, needle: bytes) -> int:
        with open(self.log_path, "rb") as f:
            return sum(1 for line in f if needle in line)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def stripped_dicts_bytes(
    client: ApiClient, resources: list[GroupVersionResource[Any]]
) -> tuple[int, int]:
    """Retained bytes (tracemalloc) of every object of `resources` as a bare orjson dict with
    metadata.managedFields dropped (manager/informers/transform.py strip_managed_fields), and the count."""
    pages: list[bytes] = []
    for gvr in resources:
        token: str | None = None
        while True:
            raw = await client.list_raw(gvr, limit=500, continue_token=token)
            pages.append(raw)
            token = orjson.loads(raw)["metadata"].get("continue") or None
            if not token:
                break
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept: list[Any] = []
    for page in pages:
        for item in orjson.loads(page)["items"]:
            item["metadata"].pop("managedFields", None)
            kept.append(item)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    count = len(kept)
    del kept
    return used, count
