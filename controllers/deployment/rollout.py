"""One sync of one Deployment: the working copy, the ReplicaSets, and the writes every strategy shares
(upstream: pkg/controller/deployment/sync.go `getAllReplicaSetsAndSyncRevision`, `getNewReplicaSet`,
`scaleReplicaSet`, `cleanupDeployment`, `syncDeploymentStatus`; progress.go `syncRolloutStatus`)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from controllers.common.podutil import Obj, meta, new_controller_ref
from controllers.deployment import conditions as cond
from controllers.deployment.annotations import (
    REVISION,
    max_revision,
    set_new_rs_annotations,
    set_replicas_annotations,
)
from controllers.deployment.hashing import POD_TEMPLATE_HASH_LABEL, compute_hash, equal_ignore_hash
from controllers.deployment.replicas import (
    by_creation,
    max_surge,
    new_rs_new_replicas,
    rs_replicas,
    spec_replicas,
)
from manager import DEPLOYMENTS, REPLICASETS, AlreadyExists, ApiError, controller_owner

if TYPE_CHECKING:
    from controllers.deployment.controller import DeploymentController

SCALING_REPLICA_SET = "ScalingReplicaSet"


def deep_copy(obj: Obj) -> Obj:
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def error_message(exc: BaseException) -> str:
    """What Go prints for an API error: the Status message, else the text."""
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc)


@dataclass
class Rollout:
    """The state of one syncDeployment: `d` is a private copy of the Deployment, edited then written."""

    ctl: DeploymentController
    d: Obj
    rs_list: list[Obj]
    requeue_after: float | None = None  # set when a progress-deadline check is due
    now: float = field(default_factory=time.time)

    @property
    def name(self) -> str:
        return str(self.d["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.d["metadata"].get("namespace") or "")

    @property
    def status(self) -> Obj:
        s: Obj = self.d.setdefault("status", {})
        return s

    def event(self, kind: str, reason: str, message: str) -> None:
        self.ctl.recorder.event(self.d, kind, reason, message)

    # ------------------------------------------------------------------ writes
    async def update_status(self) -> None:
        written = await self.ctl.client.update_status(DEPLOYMENTS, self.d)
        self._written(written)

    async def update_deployment(self) -> None:
        written = await self.ctl.client.update(DEPLOYMENTS, self.d)
        self._written(written)

    def _written(self, written: Obj) -> None:
        self.ctl.written_deployment(written)
        self.d = deep_copy(written)

    async def update_rs(self, before: Obj, after: Obj) -> Obj:
        written = await self.ctl.client.update(REPLICASETS, after)
        self.ctl.written_replicaset(written)
        self.rs_list = [written if rs is before else rs for rs in self.rs_list]
        return written

    # ------------------------------------------------------------------ new and old ReplicaSets
    def find_new(self) -> Obj | None:
        """The oldest ReplicaSet whose template equals the Deployment's (pod-template-hash ignored)."""
        template = self.d["spec"].get("template") or {}
        for rs in by_creation(self.rs_list):
            if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
                return rs
        return None

    def old_replicasets(self, new_rs: Obj | None) -> list[Obj]:
        uid = meta(new_rs).get("uid") if new_rs is not None else None
        return [rs for rs in self.rs_list if uid is None or meta(rs).get("uid") != uid]

    async def all_replicasets(self, create: bool) -> tuple[Obj | None, list[Obj]]:
        """getAllReplicaSetsAndSyncRevision: (new ReplicaSet or None, all old ones)."""
        old = self.old_replicasets(self.find_new())
        new_rs = await self.new_replicaset(old, create)
        return new_rs, self.old_replicasets(new_rs)

    async def new_replicaset(self, old: list[Obj], create: bool) -> Obj | None:
        existing = self.find_new()
        new_revision = max_revision(old) + 1
        if existing is not None:
            return await self._sync_existing(existing, new_revision)
        if not create:
            return None
        return await self._create_new(old, new_revision)

    async def _sync_existing(self, rs: Obj, new_revision: int) -> Obj:
        annotations = dict(meta(rs).get("annotations") or {})
        changed = set_new_rs_annotations(
            self.d, annotations, new_revision, True, spec_replicas(self.d), max_surge(self.d)
        )
        min_ready = int(self.d["spec"].get("minReadySeconds") or 0)
        if changed or int((rs.get("spec") or {}).get("minReadySeconds") or 0) != min_ready:
            after = {
                **rs,
                "metadata": {**rs["metadata"], "annotations": annotations},
                "spec": {**rs["spec"], "minReadySeconds": min_ready},
            }
            return await self.update_rs(rs, after)
        needs_update = self._set_revision(annotations.get(REVISION, ""))
        if cond.has_progress_deadline(self.d) and cond.get_condition(self.status, cond.PROGRESSING) is None:
            msg = f'Found new replica set "{meta(rs)["name"]}"'
            cond.set_condition(
                self.status, cond.new_condition(cond.PROGRESSING, "True", cond.FOUND_NEW_RS, msg, self.now)
            )
            needs_update = True
        if needs_update:
            await self.update_status()
        return rs

    def _set_revision(self, value: str) -> bool:
        annotations = self.d["metadata"].setdefault("annotations", {})
        if annotations.get(REVISION) == value:
            return False
        annotations[REVISION] = value
        return True

    def _new_rs_body(self, old: list[Obj], new_revision: int) -> tuple[Obj, int]:
        spec = self.d["spec"]
        template = deep_copy(spec.get("template") or {})
        hash_value = compute_hash(template, self.status.get("collisionCount"))
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), POD_TEMPLATE_HASH_LABEL: hash_value}
        selector = deep_copy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH_LABEL: hash_value}
        body: Obj = {
            "apiVersion": REPLICASETS.api_version,
            "kind": REPLICASETS.kind,
            "metadata": {
                "name": f"{self.name}-{hash_value}",
                "namespace": self.namespace,
                "ownerReferences": [new_controller_ref(self.d, DEPLOYMENTS.api_version, DEPLOYMENTS.kind)],
                "labels": dict(tmeta["labels"]),
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": template,
            },
        }
        replicas = new_rs_new_replicas(self.d, [*old, body], 0)
        body["spec"]["replicas"] = replicas
        annotations: dict[str, str] = {}
        set_new_rs_annotations(
            self.d, annotations, new_revision, False, spec_replicas(self.d), max_surge(self.d)
        )
        body["metadata"]["annotations"] = annotations
        return body, replicas

    async def _create_new(self, old: list[Obj], new_revision: int) -> Obj:
        body, replicas = self._new_rs_body(old, new_revision)
        rs_name = body["metadata"]["name"]
        already_exists = False
        try:
            created = await self.ctl.client.create(REPLICASETS, body, self.namespace)
        except AlreadyExists:
            existing = self.ctl.replicasets.indexer.get(self.namespace, rs_name)
            if existing is None:
                raise  # not in the cache yet: try again later
            ref = controller_owner(existing)
            same = equal_ignore_hash(
                (existing.get("spec") or {}).get("template") or {}, self.d["spec"]["template"]
            )
            if ref is None or ref.get("uid") != meta(self.d).get("uid") or not same:
                # A hash collision: a different template behind that name. The next hash includes the count.
                self.status["collisionCount"] = int(self.status.get("collisionCount") or 0) + 1
                self.ctl.log.info(
                    "hash collision, bumping collisionCount", deployment=self.name, replicaset=rs_name
                )
                await self.update_status()
                raise
            created, already_exists = existing, True
        except ApiError as exc:
            if exc.has_cause("NamespaceTerminating"):
                raise
            msg = f'Failed to create new replica set "{rs_name}": {error_message(exc)}'
            if cond.has_progress_deadline(self.d):
                cond.set_condition(
                    self.status,
                    cond.new_condition(cond.PROGRESSING, "False", cond.FAILED_RS_CREATE, msg, self.now),
                )
                with contextlib.suppress(ApiError):  # the create error is what is reported and retried
                    await self.update_status()
            self.event("Warning", cond.FAILED_RS_CREATE, msg)
            raise
        if not already_exists:
            self.ctl.written_replicaset(created)
            self.rs_list.append(created)
            if replicas > 0:
                self.event(
                    "Normal", SCALING_REPLICA_SET, f"Scaled up replica set {rs_name} from 0 to {replicas}"
                )
        needs_update = self._set_revision(str(new_revision))
        if not already_exists and cond.has_progress_deadline(self.d):
            msg = f'Created new replica set "{rs_name}"'
            cond.set_condition(
                self.status, cond.new_condition(cond.PROGRESSING, "True", cond.NEW_RS_CREATED, msg, self.now)
            )
            needs_update = True
        if needs_update:
            await self.update_status()
        return created

    # ------------------------------------------------------------------ scaling
    async def scale_rs_and_record(self, rs: Obj, new_scale: int) -> tuple[bool, Obj]:
        if rs_replicas(rs) == new_scale:
            return False, rs
        return await self.scale_rs(rs, new_scale)

    async def scale_rs(self, rs: Obj, new_scale: int) -> tuple[bool, Obj]:
        """Set the size and the desired/max annotations; a ScalingReplicaSet event when the size changed."""
        replicas = spec_replicas(self.d)
        annotations = dict(meta(rs).get("annotations") or {})
        old_scale = rs_replicas(rs)
        size_changed = old_scale != new_scale
        annotations_changed = set_replicas_annotations(annotations, replicas, replicas + max_surge(self.d))
        if not size_changed and not annotations_changed:
            return False, rs
        after = {
            **rs,
            "metadata": {**rs["metadata"], "annotations": annotations},
            "spec": {**rs["spec"], "replicas": new_scale},
        }
        written = await self.update_rs(rs, after)
        if size_changed:
            direction = "up" if new_scale > old_scale else "down"
            self.event(
                "Normal",
                SCALING_REPLICA_SET,
                f"Scaled {direction} replica set {meta(rs)['name']} from {old_scale} to {new_scale}",
            )
        return size_changed, written

    # ------------------------------------------------------------------ history and status
    async def sync_deployment_status(self, all_rss: list[Obj], new_rs: Obj | None) -> None:
        new_status = cond.calculate_status(self.d, all_rss, new_rs, self.now)
        if not same_status(new_status, self.d.get("status") or {}):
            self.d["status"] = new_status
            await self.update_status()

    async def sync_rollout_status(self, all_rss: list[Obj], new_rs: Obj | None) -> None:
        """Status plus the Progressing/ReplicaFailure conditions; when nothing changed, a deadline check is
        scheduled instead (requeueStuckDeployment)."""
        new_status = cond.calculate_status(self.d, all_rss, new_rs, self.now)
        cond.rollout_status(self.d, new_status, all_rss, new_rs, self.now)
        if same_status(new_status, self.d.get("status") or {}):
            self.requeue_after = cond.stuck_requeue_delay(self.d, new_status, self.now)
            return
        self.d["status"] = new_status
        await self.update_status()


def _significant(status: Obj) -> Obj:
    """A status without zero counters and empty lists: a Go client omits them, so they equal absence."""
    return {k: v for k, v in status.items() if v not in (0, None, [], {})}


def same_status(a: Obj, b: Obj) -> bool:
    return _significant(a) == _significant(b)
