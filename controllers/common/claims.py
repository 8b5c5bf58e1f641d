"""Controller-ref manager: which pods a controller owns (upstream: pkg/controller/controller_ref_manager.go
`PodControllerRefManager.ClaimPods`, `AdoptPod`, `ReleasePod`).

For each pod of the candidate list (same namespace as the owner):
- controlled by another UID → ignored;
- controlled by us and the selector matches → claimed;
- controlled by us and no longer matching → released (not while the owner is being deleted); a NotFound or
  Invalid answer to the release patch is ignored;
- orphan, matching, owner not being deleted, pod not being deleted → adopted; before the first adoption of a
  claim pass, the owner is re-read uncached (`recheck_owner`) and must have the same UID and no
  deletionTimestamp, otherwise every adoption of that pass fails. A NotFound answer to the adopt patch is
  ignored.

Patches are strategic-merge-patch bodies (send them as `application/strategic-merge-patch+json`);
`metadata.uid` is a precondition on the pod's identity.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controllers.common.podutil import Obj, Selector, is_terminating, labels_of, meta, new_controller_ref
from manager import controller_owner

PatchPod = Callable[[str, str, Obj], Awaitable[object]]  # (namespace, name, strategic-merge-patch body)
GetOwner = Callable[[], Awaitable[Mapping[str, Any]]]  # uncached GET of the owner


def adopt_patch(
    owner: Mapping[str, Any], api_version: str, kind: str, pod_uid: str, finalizers: Sequence[str] = ()
) -> Obj:
    """Adds the controller ownerReference (and optional finalizers) to the pod with UID `pod_uid`."""
    metadata: Obj = {"ownerReferences": [new_controller_ref(owner, api_version, kind)], "uid": pod_uid}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"metadata": metadata}


def release_patch(pod_uid: str, owner_uids: Iterable[str], finalizers: Sequence[str] = ()) -> Obj:
    """Deletes the ownerReferences with the given owner UIDs (and optional finalizers) from pod `pod_uid`."""
    metadata: Obj = {
        "uid": pod_uid,
        "ownerReferences": [{"$patch": "delete", "uid": uid} for uid in owner_uids],
    }
    if finalizers:
        metadata["$deleteFromPrimitiveList/finalizers"] = list(finalizers)
    return {"metadata": metadata}


def api_status(exc: BaseException) -> int | None:
    """HTTP status of an API error (the manager client's errors carry `.status`)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class ClaimError(Exception):
    """All errors of a claim pass; str() is the single message, or `[m1, m2, …]` for several."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        self.errors = list(errors)
        text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
        super().__init__(text)


@dataclass
class ControllerRefManager:
    """Claims pods for one owner during one sync (create a new one per sync: the owner recheck is cached)."""

    owner: Mapping[str, Any]
    api_version: str  # of the owner, e.g. "apps/v1"
    kind: str  # of the owner, e.g. "ReplicaSet"
    selector: Selector
    patch_pod: PatchPod
    recheck_owner: GetOwner
    finalizers: Sequence[str] = ()  # added on adoption, removed on release (Job tracking finalizer)
    extra_match: Callable[[Mapping[str, Any]], bool] | None = None
    dependent_kind: str = "Pod"  # for messages: the Deployment controller claims ReplicaSets
    _rechecked: bool = field(default=False, init=False)
    _adopt_error: Exception | None = field(default=None, init=False)

    @property
    def owner_uid(self) -> str:
        return str(meta(self.owner).get("uid", ""))

    def matches(self, pod: Mapping[str, Any]) -> bool:
        if not self.selector.matches(labels_of(pod)):
            return False
        return self.extra_match is None or self.extra_match(pod)

    async def claim_pods(self, pods: Iterable[Obj]) -> list[Obj]:
        """The pods we own after this pass; raises ClaimError (after trying every pod) if any patch failed."""
        claimed: list[Obj] = []
        errors: list[BaseException] = []
        for pod in pods:
            try:
                if await self.claim_pod(pod):
                    claimed.append(pod)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise ClaimError(errors)
        return claimed

    async def claim_pod(self, pod: Obj) -> bool:
        ref = controller_owner(pod)
        owner_deleting = is_terminating(self.owner)
        if ref is not None:
            if ref.get("uid") != self.owner_uid:
                return False
            if self.matches(pod):
                return True
            if not owner_deleting:
                await self.release(pod)
            return False
        if owner_deleting or not self.matches(pod) or is_terminating(pod):
            return False
        owner_ns = meta(self.owner).get("namespace")
        if owner_ns and owner_ns != meta(pod).get("namespace"):
            return False
        try:
            await self.adopt(pod)
        except Exception as exc:
            if api_status(exc) == 404:
                return False
            raise
        return True

    async def adopt(self, pod: Obj) -> None:
        m = meta(pod)
        reason = await self._check_can_adopt()
        if reason is not None:
            pod_ref = f"{m.get('namespace')}/{m.get('name')} ({m.get('uid')})"
            raise RuntimeError(f"can't adopt {self.dependent_kind} {pod_ref}: {reason}")
        body = adopt_patch(self.owner, self.api_version, self.kind, str(m.get("uid", "")), self.finalizers)
        await self.patch_pod(str(m.get("namespace", "")), str(m.get("name", "")), body)

    async def release(self, pod: Obj) -> None:
        m = meta(pod)
        body = release_patch(str(m.get("uid", "")), [self.owner_uid], self.finalizers)
        try:
            await self.patch_pod(str(m.get("namespace", "")), str(m.get("name", "")), body)
        except Exception as exc:
            # 404: the pod is gone; 422: no such ownerReference any more or the pod was re-created.
            if api_status(exc) not in (404, 422):
                raise

    async def _check_can_adopt(self) -> Exception | None:
        if not self._rechecked:
            self._adopt_error = await self._recheck()
            self._rechecked = True
        return self._adopt_error

    async def _recheck(self) -> Exception | None:
        m = meta(self.owner)
        ns, name = m.get("namespace"), m.get("name")
        try:
            fresh = await self.recheck_owner()
            fm = meta(fresh)
            if fm.get("uid") != self.owner_uid:
                got, wanted = fm.get("uid"), self.owner_uid
                gone = f"original {self.kind} {ns}/{name} is gone"
                raise RuntimeError(f"{gone}: got uid {got}, wanted {wanted}")
        except Exception as exc:
            return RuntimeError(f"can't recheck DeletionTimestamp: {exc}")
        if fm.get("deletionTimestamp"):
            return RuntimeError(f"{ns}/{name} has just been deleted at {fm['deletionTimestamp']}")
        return None
