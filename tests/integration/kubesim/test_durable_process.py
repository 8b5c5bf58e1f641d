"""`kubesim --data-dir` as a process: killed with SIGKILL in the middle of a stream of creates, it restarts
from the same directory with every answered create but the last group, revisions above any it answered, and
watches that resume; stopped with SIGTERM, it loses nothing and continues its counter without a gap."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from tests.helpers import wait_for

CMS = "/api/v1/namespaces/default/configmaps"
WRITERS = 4  # concurrent creates in flight: at most this many answered ones can fall in the lost group


@contextlib.contextmanager
def kubesim_process(data_dir: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim.cli", "--port", "0", "--no-kubelet", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until it serves or exits (then the line is empty)
        assert line.startswith("kubesim ready at "), f"kubesim did not start: {line!r}"
        yield proc, line.removeprefix("kubesim ready at ").strip()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name * 20}}


async def create_until_stopped(
    session: aiohttp.ClientSession, url: str, prefix: str, answered: dict[str, tuple[str, int]]
) -> None:
    """Create configmaps one after another, recording each answered one (name -> uid, rv), until the server
    goes away."""
    for i in range(100_000):
        name = f"{prefix}-{i}"
        try:
            async with session.post(url + CMS, json=configmap(name)) as response:
                body = await response.read()
        except aiohttp.ClientError:
            return
        assert response.status == 201, body
        meta = orjson.loads(body)["metadata"]
        answered[name] = (meta["uid"], int(meta["resourceVersion"]))


async def stored(session: aiohttp.ClientSession, url: str) -> tuple[dict[str, tuple[str, int]], int]:
    async with session.get(url + CMS) as response:
        listed = orjson.loads(await response.read())
    objects = {
        o["metadata"]["name"]: (o["metadata"]["uid"], int(o["metadata"]["resourceVersion"]))
        for o in listed["items"]
    }
    return objects, int(listed["metadata"]["resourceVersion"])


@pytest.mark.slow
async def test_a_killed_kubesim_restarts_with_all_but_the_last_group(tmp_path: Path) -> None:
    answered: dict[str, tuple[str, int]] = {}
    async with aiohttp.ClientSession() as session:
        with kubesim_process(tmp_path) as (proc, url):
            writers = [
                asyncio.create_task(create_until_stopped(session, url, f"w{n}", answered))
                for n in range(WRITERS)
            ]
            await wait_for(lambda: len(answered) >= 1500 or None, timeout=30, message="1500 creates")
            proc.send_signal(signal.SIGKILL)
            async with asyncio.timeout(30):
                await asyncio.gather(*writers)
        seen_rv = max(rv for _, rv in answered.values())

        with kubesim_process(tmp_path) as (_, url):
            objects, _ = await stored(session, url)
            missing = {name: rv for name, (_, rv) in answered.items() if name not in objects}
            assert len(missing) <= WRITERS, missing
            present_rvs = [rv for name, (_, rv) in answered.items() if name in objects]
            assert not missing or min(missing.values()) > max(present_rvs)  # only the newest can be lost
            assert all(objects[name] == answered[name] for name in answered if name in objects)

            async with session.post(url + CMS, json=configmap("after")) as response:
                after = int(orjson.loads(await response.read())["metadata"]["resourceVersion"])
            assert after > seen_rv

            # A watch from a recent revision resumes with the events after it, not a 410.
            newest = sorted(rv for _, rv in objects.values() if rv < after)[-6:]
            watch = f"{url}{CMS}?watch=1&timeoutSeconds=5&resourceVersion={newest[0]}"
            async with session.get(watch) as response:
                events = [orjson.loads(await response.content.readline()) for _ in newest[1:]]
            assert [int(e["object"]["metadata"]["resourceVersion"]) for e in events] == newest[1:]


@pytest.mark.slow
async def test_a_kubesim_stopped_by_sigterm_loses_nothing(tmp_path: Path) -> None:
    answered: dict[str, tuple[str, int]] = {}
    async with aiohttp.ClientSession() as session:
        with kubesim_process(tmp_path) as (proc, url):
            for i in range(50):
                async with session.post(url + CMS, json=configmap(f"c{i}")) as response:
                    body = await response.read()
                assert response.status == 201, body  # a Status here once failed as a bare KeyError 'uid'
                meta = orjson.loads(body)["metadata"]
                answered[f"c{i}"] = (meta["uid"], int(meta["resourceVersion"]))
            _, last_rv = await stored(session, url)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
        with kubesim_process(tmp_path) as (_, url):
            objects, rv = await stored(session, url)
            assert objects == answered
            assert rv == last_rv
            async with session.post(url + CMS, json=configmap("next")) as response:
                body = await response.read()
            assert response.status == 201, body
            meta = orjson.loads(body)["metadata"]
            assert int(meta["resourceVersion"]) == last_rv + 1


async def test_a_data_dir_that_is_not_a_kubesim_store_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "kubesim.db").write_bytes(b"this is not SQLite" * 100)
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubesim.cli", "--port", "0", "--data-dir", str(tmp_path)),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(60):
        _, stderr = await proc.communicate()
    assert proc.returncode == 1
    assert (
        stderr.decode().startswith("kubesim: error: ") and "not a kubesim data directory" in stderr.decode()
    )
