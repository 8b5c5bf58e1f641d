"""An API server restored from a backup (kubesim restarted on the same port from a copy of its data
directory taken earlier: the same objects and UIDs, resourceVersions lower than the manager has seen): the
ReplicaSet controller forgets the expectations it held against the lost history and syncs again, instead of
waiting out the expectations' 5-minute timeout while its ReplicaSet has no pods."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager import PODS, REPLICASETS
from manager.client.rest import create_client
from manager.informers import Backoff
from manager.testing import controller_of, run_manager
from tests.helpers import wait_for
from tests.integration.controllers.replicaset.harness import NS, rs_manifest


async def test_expectations_of_a_lost_history_do_not_hold_back_the_restored_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import manager.informers

    factory = manager.informers.InformerFactory

    def quick(*args: Any, **kwargs: Any) -> Any:
        return factory(*args, **{"backoff": Backoff(initial=0.05, maximum=0.2), **kwargs})

    monkeypatch.setattr(manager.informers, "InformerFactory", quick)
    live, backup = tmp_path / "live", tmp_path / "backup"
    seed = await KubeSim(port=0, nodes=1, data_dir=live).start()
    port = seed.port
    client = await create_client(master=seed.url, qps=0, max_retries=1, max_retry_after=0.05)
    await client.create(REPLICASETS, rs_manifest("web", 0))
    await seed.stop()
    shutil.copytree(live, backup)  # the backup: "web" at 0 replicas, resourceVersions low
    first = await KubeSim(port=port, nodes=1, data_dir=live).start()
    restored: KubeSim | None = None

    async def pods(count: int) -> bool:
        listed = await client.list(PODS, NS, label_selector="app=web")
        return len(listed["items"]) == count

    try:
        async with run_manager(first.url, ReplicaSetController) as running:
            ctl = controller_of(running, ReplicaSetController)
            await client.patch(REPLICASETS, "web", {"spec": {"replicas": 2}}, NS)
            await wait_for(lambda: pods(2), timeout=15, message="pods before the restore")
            # Creations in flight when the server went away: the restored history will never show them.
            ctl.expectations.expect_creations(f"{NS}/web", 3)
            await first.stop()
            restored = await KubeSim(port=port, nodes=1, data_dir=backup).start()
            restored.api.too_new_wait = 0.2
            await client.patch(REPLICASETS, "web", {"spec": {"replicas": 2}}, NS)
            await wait_for(lambda: pods(2), timeout=15, message="pods for the restored ReplicaSet")
    finally:
        await client.close()
        if restored is not None:
            await restored.stop()
        await first.stop()
