"""A controller waiting for its own informers, and saying so.

Each controller waits for the informers it watches, not for every informer of the process (as
kube-controller-manager's controllers each call `cache.WaitForNamedCacheSync`): a custom resource whose CRD is
not installed yet holds back only the controllers that watch it. While one waits, it is visible in
`/readyz?verbose` (its own check fails with the informers' reasons), in `/debug/controllers`, in the
`aiokcm_controller_waiting_for_cache_sync` gauge and in a warning logged after `FIRST_REPORT_AFTER` seconds,
then every `REPORT_EVERY`; its
workers start by themselves once the informers sync (the reflector keeps retrying the list).

A resource that goes away later (its CRD deleted while the controller runs) fails the controller's readiness
check the same way, naming the resource; its workers go on (with an empty cache for that resource) and the
reflector picks the resource up again once the CRD is back.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prometheus_client import Gauge

if TYPE_CHECKING:
    from manager.controller.base import Controller

SYNC_POLL_INTERVAL = 0.05
FIRST_REPORT_AFTER = 5.0  # a healthy list takes well under this; past it, say what is missing
REPORT_EVERY = 30.0

WAITING = Gauge(
    "aiokcm_controller_waiting_for_cache_sync",
    "1 while the controller waits for its informers' first sync (its workers have not started), else 0",
    ["controller"],
)


def sync_problem(ctl: Controller) -> str | None:
    """Why the controller's workers wait, naming each unsynced informer and its last error, or which of its
    synced informers lost their resource (a CRD deleted under a running controller: its cache is empty, the
    reflector keeps retrying, and the workers go on for the rest); None when all is well."""
    if not ctl.stats.waiting_for_sync:
        gone = [r.informer for r in ctl.registrations() if r.informer.reflector.resource_missing]
        if not gone:
            return None
        return "resource no longer served: " + "; ".join(
            f"{informer.name} ({informer.reflector.last_error})" for informer in gone
        )
    unsynced = {r.informer.name: r.informer.health() for r in ctl.registrations() if not r.has_synced()}
    if not unsynced:
        return None
    reasons = "; ".join(reason or f"{name}: handlers not synced" for name, reason in unsynced.items())
    return f"waiting for informers to sync: {reasons}"


async def wait_for_sync(ctl: Controller) -> None:
    """Wait until every informer the controller watches has synced and handed its initial list to the
    controller's handlers (so the queue holds every existing key before the first worker starts)."""
    registrations = ctl.registrations()
    ctl.stats.waiting_for_sync = True
    WAITING.labels(ctl.name).set(1)
    try:
        timeout = FIRST_REPORT_AFTER
        for registration in registrations:
            while not await registration.informer.wait_for_cache_sync(timeout=timeout):
                ctl.log.warning("waiting for informers to sync", reason=sync_problem(ctl))
                timeout = REPORT_EVERY
        # A registration exposes has_synced() only; the gap after the informer's own sync is short.
        while not all(r.has_synced() for r in registrations):  # noqa: ASYNC110
            await asyncio.sleep(SYNC_POLL_INTERVAL)
    finally:
        ctl.stats.waiting_for_sync = False
        WAITING.labels(ctl.name).set(0)
