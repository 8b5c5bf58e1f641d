"""Instructions per Event of the event pipeline's object work, under callgrind: `make_event`, `correlate`,
the create's body (`create_body`) and the answer kept (`update_state_raw`), no request and no loop. The
events are the Job benchmark's: per one-pod Job a SuccessfulCreate and a Completed about the Job, its
resourceVersion moving between them.

    .venv/bin/python benchmarks/event_callgrind.py [jobs]   (default 2000, two events each)

The process runs itself under callgrind (benchmarks/callgrind.py), counted over the jobs' events only, and
prints instructions per event. Deterministic; needs valgrind and callgrind_control.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from callgrind import Callgrind, measure_child, require


def job(i: int, rv: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"job-{i}",
            "namespace": "default",
            "uid": f"5f0c3a52-8d6e-4c1b-9f7e-{i:012d}",
            "resourceVersion": str(rv),
            "labels": {"app": "bench"},
        },
        "spec": {"completions": 1, "parallelism": 1},
        "status": {},
    }


def child(n: int) -> None:
    from manager.events import EventBroadcaster
    from manager.events.writer import create_body

    broadcaster = EventBroadcaster(None)  # type: ignore[arg-type]  # never started: no client needed
    recorder = broadcaster.recorder("job-controller")
    correlator = broadcaster.correlator
    jobs = [(job(i, 1000 + 3 * i), job(i, 1001 + 3 * i)) for i in range(n + 50)]

    keyed = getattr(recorder, "make_keyed_event", None)  # the event and its aggregate key (not in old trees)

    def record(obj: dict[str, Any], reason: str, message: str) -> None:
        if keyed is not None:
            result = correlator.correlate(*keyed(obj, "Normal", reason, message))
        else:
            result = correlator.correlate(recorder.make_event(obj, "Normal", reason, message))
        body = create_body(result.event)
        assert result.key is not None
        correlator.update_state_raw(body, result.key)

    def run(batch: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        for created, finished in batch:
            name = created["metadata"]["name"]
            record(created, "SuccessfulCreate", f"Created pod: {name}-x7k2p")
            record(finished, "Completed", "Job completed")

    run(jobs[:50])  # caches and the interpreter's specialisations warm
    print("ready", flush=True)
    sys.stdin.readline()
    run(jobs[50:])
    print("done", flush=True)
    sys.stdin.readline()


def main(n: int) -> None:
    require()
    callgrind = Callgrind(Path(tempfile.gettempdir()), "event_callgrind")
    instructions = measure_child(callgrind, [sys.executable, __file__, "--child", str(n)])
    print(f"events={2 * n}  instructions/event={instructions / (2 * n):,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=2000)
    parser.add_argument("--child", type=int, metavar="N")
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
    else:
        main(args.n)
