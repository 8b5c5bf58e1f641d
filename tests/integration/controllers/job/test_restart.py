"""A manager restarted in the middle of a Job neither creates a pod twice nor counts one twice."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from controllers.job.podcontrol import PodControl
from kubesim import KubeSim
from manager.client.rest import create_client
from tests.helpers import wait_for
from tests.integration.controllers.job.harness import (
    Env,
    FastJobController,
    _watch_pods,
    condition,
    start_manager,
)

TRACKING = "batch.kubernetes.io/job-tracking"


async def _finished_pod_with_finalizer(env: Env, name: str) -> bool:
    """A pod has finished but is not yet counted: the moment to pull the plug."""
    for pod in await env.pods(name):
        if pod["status"].get("phase") == "Succeeded" and TRACKING in (
            pod["metadata"].get("finalizers") or ()
        ):
            return True
    return False


async def test_restart_mid_job_never_duplicates_pods_or_counts(kubesim: KubeSim) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)  # kubesim's admin
    env: Env | None = None
    watcher: asyncio.Task[None] | None = None
    try:
        async with start_manager(kubesim) as (manager, ctl):
            env = Env(kubesim, client, manager, ctl)
            watcher = asyncio.create_task(_watch_pods(client, env))
            await env.create(
                "restart", completions=8, parallelism=3, annotations={"kubesim.aiokcm.io/run-seconds": "0.3"}
            )

            async def midway() -> bool:
                job = await env.job("restart")
                done = int((job.get("status") or {}).get("succeeded") or 0)
                return done >= 2 and await _finished_pod_with_finalizer(env, "restart")

            await wait_for(midway, 10, interval=0.01, message="midway, with an uncounted finished pod")
            # A crash rather than a graceful stop: in-flight syncs are cancelled where they stand.
            manager.request_shutdown("simulated crash", graceful=False)
        mid = await env.job("restart")
        assert condition(mid, "Complete") is None
        async with start_manager(kubesim) as (_, ctl2):
            assert ctl2 is not ctl
            job = await env.wait_condition("restart", "Complete", timeout=20)
        status: dict[str, Any] = job["status"]
        assert status["succeeded"] == 8 and status.get("failed", 0) == 0
        assert not any((status.get("uncountedTerminatedPods") or {}).values())
        await wait_for(lambda: env.created("restart") == 8, 2, message="8 pods seen")
        pods = await env.pods("restart")
        assert len(pods) == 8 and all(TRACKING not in (p["metadata"].get("finalizers") or ()) for p in pods)
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher
        await client.close()


class StuckPodControl(PodControl):
    async def remove_finalizers(self, pods: Any) -> tuple[list[bool], BaseException | None]:
        raise RuntimeError("crashed between recording and removing finalizers")


class CrashingAfterRecord(FastJobController):
    """Records finished pods in status.uncountedTerminatedPods, then never gets to remove a finalizer."""

    @property
    def pod_control(self) -> PodControl:
        return StuckPodControl(self.client, self.recorder)


async def test_restart_after_uids_recorded_counts_each_pod_once(kubesim: KubeSim) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)  # kubesim's admin
    try:
        async with start_manager(kubesim, CrashingAfterRecord) as (manager, ctl):
            env = Env(kubesim, client, manager, ctl)
            await env.create("recorded", completions=2, parallelism=2)

            async def recorded() -> dict[str, Any] | None:
                job = await env.job("recorded")
                uncounted = (job.get("status") or {}).get("uncountedTerminatedPods") or {}
                return job if len(uncounted.get("succeeded") or ()) == 2 else None

            mid = await wait_for(recorded, 10, message="2 UIDs recorded as uncounted")
            assert int(mid["status"].get("succeeded") or 0) == 0
        async with start_manager(kubesim):
            job = await env.wait_condition("recorded", "Complete")
        assert job["status"]["succeeded"] == 2 and not job["status"]["uncountedTerminatedPods"].get(
            "succeeded"
        )
        assert len(await env.pods("recorded")) == 2
    finally:
        await client.close()
