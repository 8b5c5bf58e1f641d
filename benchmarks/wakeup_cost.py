"""What the same work costs in CPU right after the process slept, against the same work done back to back.

    .venv/bin/python benchmarks/wakeup_cost.py [--samples N]

The work is one small slice of a controller's wake-up: decode 5 pod watch lines with orjson, file them in a
dict by key, build and encode a status patch for each. It is timed with the thread's CPU clock
(time.thread_time_ns), so waiting is not counted, only the instructions and the cache and TLB misses of
running them. After a sleep the CPU caches hold other processes' data (or nothing useful) and, on a
virtual machine, the virtual CPU may come back on a cold or slower core: the ratio to the back-to-back figure
is what a paced workload (a rate-limited client, Jobs streamed over seconds) pays per wake-up over a batched
one, whatever the code. It is behind the gap between the `aiokcm-defaults` and `aiokcm-unlimited` rows of
operator_vs_kopf.py and between the streamed and batched scenarios of job_throughput.py
(benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import orjson
from informer_fixtures import watch_lines

GAPS = (0.0, 0.0005, 0.002, 0.01, 0.1, 1.0)  # seconds slept before each timed slice


def make_work() -> Callable[[], None]:
    lines = watch_lines(5)
    cache: dict[str, object] = {}

    def work() -> None:
        for line in lines:
            event = orjson.loads(line)
            obj = event["object"]
            meta = obj["metadata"]
            cache[f"{meta['namespace']}/{meta['name']}"] = obj
            patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": {"phase": "Running"}}
            orjson.dumps(patch)

    return work


def cpu_per_slice(work: Callable[[], None], gap: float, samples: int) -> float:
    """Median CPU microseconds of one slice run `gap` seconds after the previous one ended."""
    costs: list[int] = []
    for _ in range(samples):
        if gap:
            time.sleep(gap)
        start = time.thread_time_ns()
        work()
        costs.append(time.thread_time_ns() - start)
    return statistics.median(costs) / 1000


def cold_factor(samples: int = 40, gap: float = 0.01) -> tuple[float, float]:
    """CPU microseconds of one slice back to back and after `gap` seconds asleep: how much this machine
    charges for a wake-up right now (other benchmarks print it beside their figures)."""
    work = make_work()
    for _ in range(200):
        work()
    return cpu_per_slice(work, 0.0, 200), cpu_per_slice(work, gap, samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--samples", type=int, default=30, help="slices per gap (the 1 s gap takes that long)"
    )
    args = parser.parse_args()
    work = make_work()
    for _ in range(200):  # warm: imports, allocator, the dict
        work()
    hot = cpu_per_slice(work, 0.0, max(args.samples, 200))
    print(f"{'gap before the slice':>22} {'CPU us/slice':>13} {'x back to back':>15}")
    for gap in GAPS:
        cost = hot if gap == 0 else cpu_per_slice(work, gap, args.samples)
        print(f"{gap * 1000:>19.1f} ms {cost:>13.1f} {cost / hot:>15.2f}")


if __name__ == "__main__":
    main()
