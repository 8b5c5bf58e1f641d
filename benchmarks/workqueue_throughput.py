"""Work-queue throughput: add + get + done cycles per second (target ≥ 200,000/s).

Run: .venv/bin/python benchmarks/workqueue_throughput.py [cycles]
Prints one line per scenario: a single producer/consumer cycle on an unnamed queue, the same on a named
queue (with its workqueue_* metrics), and 8 workers draining a batch of distinct keys from a named
rate-limiting queue.
"""

from __future__ import annotations

import asyncio
import sys
import time

from manager.workqueue import Queue, QueueShutDown, RateLimitingQueue


async def single_cycle(queue: Queue[int], cycles: int) -> float:
    start = time.perf_counter()
    for i in range(cycles):
        queue.add(i)
        item = await queue.get()
        queue.done(item)
    return cycles / (time.perf_counter() - start)


async def workers_drain(cycles: int, workers: int = 8) -> float:
    queue: RateLimitingQueue[int] = RateLimitingQueue("bench_workers")

    async def worker() -> None:
        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            queue.forget(item)
            queue.done(item)

    start = time.perf_counter()
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for i in range(cycles):
        queue.add(i % 10_000)
        if i % 1000 == 999:
            await asyncio.sleep(0)  # let the workers run, like a real producer would
    await queue.shut_down_with_drain()
    await asyncio.gather(*tasks)
    return cycles / (time.perf_counter() - start)


async def main(cycles: int) -> None:
    unnamed = await single_cycle(Queue(), cycles)
    named = await single_cycle(RateLimitingQueue("bench_named"), cycles)
    drained = await workers_drain(cycles)
    print(f"unnamed queue, 1 producer/consumer: {unnamed:12,.0f} add+get+done cycles/s")
    print(f"named rate-limiting queue (metrics): {named:12,.0f} add+get+done cycles/s")
    print(f"named queue, 8 workers, batched adds: {drained:12,.0f} adds handled/s")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000))
