"""Server-side apply and managedFields bookkeeping (structured-merge-diff semantics on
kubesim.schema.schemas).

- `server_side_apply(live, applied, manager, force, gvk, subresource=None)` merges an apply configuration
  into `live` (None: create-by-apply) and returns the new object with `metadata.managedFields` updated. The
  manager's Apply entry becomes exactly the fields of its configuration; fields it applied last time and no
  longer applies are removed from the object unless another manager owns them; changing a value owned by
  another manager raises `ApplyConflict` (409, Status ready in `.status`) unless `force`, which takes the
  fields over. Lists follow `x-kubernetes-list-type` (map by keys, set by value, atomic as a whole).
- `record_update(old, new, manager, gvk, subresource=None)` updates `new.metadata.managedFields` in place
  for a create/update/patch (operation Update): the writer gains what it added or changed, other managers
  lose those fields, everyone loses what was removed. A client-supplied non-empty managedFields list on
  `new` is taken as the starting point (that is how clients rewrite ownership), else `old`'s.
An Update's set holds, besides leaves and list items, each map, struct and non-atomic list the old object
lacked (FieldsV1's `.`), the old object read as the apiserver's Go-typed one (`kubesim.merge.zero`); a
create compares with the kind's zero object, in one walk (`kubesim.merge.created`).
Both accept `now` (RFC 3339) for deterministic timestamps. Untracked as in the apiserver: apiVersion, kind,
metadata name/namespace/uid/generation/resourceVersion/creationTimestamp/selfLink/managedFields; writes to
the main resource do not track `.status` and /status writes track only `.status`. An object without any
managedFields that gets applied to is first owned by the pseudo manager "before-first-apply", as upstream.
Limits: no version conversion (entries of another apiVersion are compared as if they were this one),
list items without keys are addressed by index (upstream rejects them), struct fields embedded by value
are known for the served kinds' types only (others count as pointers), managedFields inside an apply
configuration are ignored (upstream: 400), and CRs without a status subresource still do not track
`.status` from main-resource writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kubesim.merge import zero
from kubesim.merge.created import added_sections
from kubesim.merge.fieldset import (
    FieldSet,
    Path,
    compare,
    field_set,
    from_fields_v1,
    path_string,
    to_fields_v1,
)
from kubesim.merge.merging import merge, remove_path
from kubesim.schema import schemas
from kubesim.status.body import status_body
from kubesim.storage.records import format_time

JSON = dict[str, Any]
GVK = tuple[str, str, str]

_UNTRACKED: FieldSet = {("f:apiVersion",), ("f:kind",), ("f:metadata",)} | {
    ("f:metadata", "f:" + name)
    for name in (
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "resourceVersion",
    )
}


_STATUS: Path = ("f:status",)
_MANAGED_FIELDS: Path = ("f:metadata", "f:managedFields")


class ApplyConflict(Exception):
    """409 Conflict of an apply; `.status` is the Status body to send."""

    def __init__(self, status: JSON) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code = 409


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str | None = None
    fields: FieldSet = field(default_factory=set)
    raw: JSON | None = None  # the stored entry, reused as long as nothing about it changes

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # appliers keep one entry whatever apiVersion they use
        version = self.api_version if self.operation == "Update" else ""
        return self.manager, self.operation, self.subresource, version

    def describe(self) -> str:
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


def _now() -> str:
    return format_time(time.time())


def _api_version(gvk: GVK) -> str:
    return f"{gvk[0]}/{gvk[1]}" if gvk[0] else gvk[1]


def _content(obj: JSON | None) -> JSON:
    """The object without managedFields (what ownership is computed over)."""
    if not obj:
        return {}
    result = dict(obj)
    metadata = result.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        result["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return result


def _status_only(obj: JSON | None) -> JSON:
    return {"status": obj["status"]} if obj and "status" in obj else {}


def _tracked(fields: FieldSet, subresource: str | None) -> FieldSet:
    if subresource == "status":
        return {p for p in fields if p[:1] == _STATUS}
    return {p for p in fields if p[:1] != _STATUS and p not in _UNTRACKED and p[:2] != _MANAGED_FIELDS}


def _decode(obj: JSON | None) -> list[_Entry]:
    entries = []
    for raw in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict) or (not raw.get("manager") and not raw.get("fieldsV1")):
            continue
        entries.append(
            _Entry(
                manager=str(raw.get("manager", "")),
                operation=str(raw.get("operation", "Update")),
                api_version=str(raw.get("apiVersion", "")),
                subresource=str(raw.get("subresource", "")),
                time=raw.get("time"),
                fields=from_fields_v1(raw.get("fieldsV1") or {}),
                raw=raw,
            )
        )
    return entries


def _encode(entries: list[_Entry]) -> list[JSON]:
    entries = sorted(
        (e for e in entries if e.fields),
        key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource),
    )
    result = []
    for entry in entries:
        if entry.raw is not None:
            result.append(entry.raw)
            continue
        raw: JSON = {"manager": entry.manager, "operation": entry.operation, "apiVersion": entry.api_version}
        if entry.time:
            raw["time"] = entry.time
        raw["fieldsType"] = "FieldsV1"
        raw["fieldsV1"] = to_fields_v1(entry.fields)
        if entry.subresource:
            raw["subresource"] = entry.subresource
        result.append(raw)
    return result


def _store(obj: JSON, entries: list[_Entry]) -> None:
    metadata = obj.setdefault("metadata", {})
    encoded = _encode(entries)
    if encoded:
        metadata["managedFields"] = encoded
    else:
        metadata.pop("managedFields", None)


def _own(entries: list[_Entry], wanted: _Entry) -> _Entry:
    for entry in entries:
        if entry.identity == wanted.identity:
            return entry
    entries.append(wanted)
    return wanted


def conflict_status(conflicts: list[tuple[_Entry, Path]]) -> JSON:
    """The 409 Status of an apply conflict, worded as the apiserver does."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {entry.describe()}",
            "field": path_string(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(path)}"
    else:
        lines: list[str] = []
        for describe in sorted({entry.describe() for entry, _ in conflicts}):
            lines.append(f"conflicts with {describe}:")
            lines.extend(
                f"- {path_string(path)}" for entry, path in conflicts if entry.describe() == describe
            )
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return status_body(
        "Failure",
        message=message,
        reason="Conflict",
        details={"causes": causes},
        code=409,
    )


def server_side_apply(
    live: JSON | None,
    applied: JSON,
    manager: str,
    force: bool,
    gvk: GVK,
    subresource: str | None = None,
    *,
    now: str | None = None,
) -> JSON:
    """Merge `applied` into `live` (None: create) owned by `manager`; return the new object."""
    node, custom = schemas.root(gvk), schemas.is_custom(gvk)
    live_content = _content(live)
    config = _content(applied)
    applied_set = _tracked(field_set(config, node, custom=custom), subresource)
    entries = _decode(live)
    if live is not None and not entries and live_content:
        # an object nobody manages yet: its current fields belong to a pseudo updater, as upstream does
        # (what an Update from the zero object finds, as the apiserver's skip-non-applied manager does)
        created = field_set(live_content, node, update=True, custom=custom, state=zero.VALUE)
        fields = _tracked(created, subresource)
        entries = [
            _Entry("before-first-apply", "Update", _api_version(gvk), subresource or "", fields=fields)
        ]
    me = _Entry(manager, "Apply", _api_version(gvk), subresource or "")
    existing = next((e for e in entries if e.identity == me.identity), None)
    others = [e for e in entries if e.identity != me.identity]
    merged: JSON = merge(live_content, config, node, custom=custom)
    if existing is not None:
        owned_elsewhere = set().union(*(e.fields for e in others)) if others else set()
        # only what the merged object holds as leaves or list items (never a map as a whole) is pruned
        present = field_set(merged, node, custom=custom)
        doomed = (present & existing.fields) - applied_set - owned_elsewhere
        # a removed list item takes its fields with it: remove outermost paths only
        for path in sorted(p for p in doomed if not any(p[:n] in doomed for n in range(1, len(p)))):
            remove_path(merged, path, node, owned_elsewhere if custom else None)
    added, modified, removed = (
        _tracked(s, subresource) for s in compare(live_content, merged, node, custom=custom)
    )
    conflicts = sorted(
        ((e, p) for e in others for p in e.fields & (added | modified)), key=lambda c: (c[0].describe(), c[1])
    )
    if conflicts and not force:
        raise ApplyConflict(conflict_status(conflicts))
    for entry in others:
        _drop(entry, added | modified | removed)
    changed = bool(added or modified or removed)
    mine = _own(entries, me)
    if changed or mine.fields != applied_set or mine.time is None:
        mine.time, mine.raw = now or _now(), None
    if mine.fields != applied_set or mine.api_version != me.api_version or mine.raw is None:
        mine.fields, mine.api_version, mine.raw = applied_set, me.api_version, None
    _store(merged, entries)
    return merged


def record_update(
    old: JSON | None,
    new: JSON,
    manager: str,
    gvk: GVK,
    subresource: str | None = None,
    *,
    now: str | None = None,
) -> None:
    """Update `new.metadata.managedFields` in place for a non-apply write by `manager`."""
    node, custom = schemas.root(gvk), schemas.is_custom(gvk)
    if old is None and not (new.get("metadata") or {}).get("managedFields"):
        _record_create(new, manager, gvk, node, custom, now)
        return
    entries = _decode(new) or _decode(old)
    # a status write tracks only .status paths: compare that subtree alone, not the rest to drop it
    scope = _status_only if subresource == "status" else _content
    added, modified, removed = (
        _tracked(s, subresource) for s in compare(scope(old), scope(new), node, custom=custom)
    )
    for entry in entries:
        _drop(entry, added | modified | removed)
    if added or modified:
        mine = _own(entries, _Entry(manager, "Update", _api_version(gvk), subresource or ""))
        mine.fields |= added | modified
        mine.time, mine.raw = now or _now(), None
    _store(new, entries)


def _drop(entry: _Entry, paths: FieldSet) -> None:
    if entry.fields & paths:
        entry.fields -= paths
        entry.raw = None


_CREATE_SKIP = frozenset(("apiVersion", "kind", "status"))
# metadata keys a create's entry leaves out: the untracked ones and managedFields itself
_CREATE_SKIP_META = frozenset([p[1][2:] for p in _UNTRACKED if len(p) == 2] + ["managedFields"])


def _record_create(
    new: JSON, manager: str, gvk: GVK, node: JSON | None, custom: bool, now: str | None
) -> None:
    """Fast path of record_update for a create: everything in the object is new and owned by `manager`."""
    tree = added_sections(new, node, custom=custom, skip=_CREATE_SKIP, skip_meta=_CREATE_SKIP_META)
    if tree.get("f:metadata") == {}:
        del tree["f:metadata"]
    if not tree:
        (new.get("metadata") or {}).pop("managedFields", None)
        return
    entry = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": _api_version(gvk),
        "time": now or _now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": tree,
    }
    new.setdefault("metadata", {})["managedFields"] = [entry]
