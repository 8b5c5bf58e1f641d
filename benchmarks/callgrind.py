"""Instruction counts of a benchmark's child process over its measurement window, with valgrind's callgrind.

CPU seconds on a shared machine move by tens of per cent between runs; the instructions a process executes
over the same work repeat within a fraction of a per cent. The child runs under
`valgrind --tool=callgrind --instr-atstart=no` (nothing counted from start-up), `callgrind_control -i on`
opens the window, `-i off` and `-d` (dump, which also zeroes the counters) close it, and the dump's
`totals:` line is the window's instruction count (Ir). Instructions are not time: system calls, cache misses
and waiting are not counted; and the child runs 20-50x slower under valgrind (hence `SLOWDOWN` for timeouts).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

TOOLS = ("valgrind", "callgrind_control")
SLOWDOWN = 50  # factor for the benchmarks' timeouts when their child runs under valgrind


def require() -> None:
    """Exit with status 2 and one line when valgrind or callgrind_control is not on PATH."""
    if missing := [tool for tool in TOOLS if shutil.which(tool) is None]:
        print(
            f"--callgrind needs {' and '.join(missing)} on PATH (apt-get install valgrind)", file=sys.stderr
        )
        sys.exit(2)


class Callgrind:
    """One child process under callgrind: `wrap` its command, then `start(pid)` / `stop(pid)` per window."""

    def __init__(self, out_dir: Path, name: str) -> None:
        self.prefix = out_dir / f"{name}.callgrind"
        self.dumps = 0

    def wrap(self, args: list[str]) -> list[str]:
        # A console script (#! line) runs through this interpreter: valgrind must start the ELF itself.
        with open(args[0], "rb") as f:
            script = f.read(2) == b"#!"
        return [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={self.prefix}.%p",
            *([sys.executable] if script else []),
            *args,
        ]

    def start(self, pid: int) -> None:
        control("-i", "on", pid)

    def stop(self, pid: int) -> int:
        """Close the window: the instructions counted since `start`."""
        control("-i", "off", pid)
        control("-d", pid)
        self.dumps += 1
        return totals(Path(f"{self.prefix}.{pid}.{self.dumps}"))


def measure_child(callgrind: Callgrind, args: list[str], what: str = "child") -> int:
    """Run `args` under callgrind as a child speaking a line protocol on stdin/stdout (it prints "ready"
    once warm, runs its measured part on a line from us and prints "done", exits on the next line) and
    return the instructions of the measured part alone."""
    proc = subprocess.Popen(
        callgrind.wrap(args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {what} did not start")
        callgrind.start(proc.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        if proc.stdout.readline().strip() != "done":
            raise RuntimeError(f"the {what} failed")
        instructions = callgrind.stop(proc.pid)
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return instructions


def control(*args: str | int) -> None:
    # callgrind_control returns once valgrind has run the command (through vgdb); its chatter is dropped.
    done = subprocess.run(["callgrind_control", *map(str, args)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind_control {' '.join(map(str, args))}: {done.stderr.strip()}")


def totals(dump: Path, timeout: float = 60) -> int:
    """The `totals:` line of a dump (its first event, Ir), waiting for the file to be complete."""
    deadline = time.monotonic() + timeout
    while True:
        if dump.exists():
            for line in dump.read_text().splitlines():
                if line.startswith("totals:"):
                    return int(line.split()[1])
        if time.monotonic() > deadline:
            raise RuntimeError(f"no totals in {dump}")
        time.sleep(0.1)
