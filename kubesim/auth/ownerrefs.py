"""The OwnerReferencesPermissionEnforcement admission plugin, as upstream's (`plugin/pkg/admission/gc/
gc_admission.go`, `gcPermissionsEnforcement.Validate`): whoever changes an object's ownerReferences on an
update must be allowed to delete the object, and whoever adds a blocking reference (blockOwnerDeletion true,
new or turned on) must be allowed to update the owner's `finalizers` subresource, since such a reference can
hold the owner's foreground deletion. Creating an object needs no delete right (one could as well not have
created it); pods/status is exempt, its strategy keeps ownerReferences."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim.api.context import AdmissionHook, AdmissionRequest
from kubesim.auth.attributes import Attributes
from kubesim.auth.middleware import request_user
from kubesim.auth.service import Auth
from kubesim.resources.catalog import Registry
from kubesim.status import errors

PLUGIN = "OwnerReferencesPermissionEnforcement"
PLUGINS = (PLUGIN,)  # the admission plugins kubesim can enable (kube-apiserver's names)
EXEMPT = (("", "pods", "status"),)
JSON = dict[str, Any]


def _refs(obj: JSON | None) -> list[JSON]:
    if obj is None:
        return []
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)]


def changing_owner_references(obj: JSON, old: JSON | None) -> bool:
    return _refs(obj) != _refs(old) if old is not None else bool(_refs(obj))


def new_blocking_refs(obj: JSON, old: JSON | None) -> list[JSON]:
    """The blocking references of `obj` that `old` lacked, or had without blockOwnerDeletion (by uid)."""
    before = {str(r.get("uid", "")): r for r in _refs(old)}
    found = []
    for ref in _refs(obj):
        if ref.get("blockOwnerDeletion") is not True:
            continue
        was = before.get(str(ref.get("uid", "")))
        if was is None or was.get("blockOwnerDeletion") is not True:
            found.append(ref)
    return found


def _owner_attributes(registry: Registry, ref: JSON, namespace: str) -> list[Attributes]:
    """`update <owner resource>/finalizers` for each resource the reference's apiVersion and kind map to
    (the RESTMapper's answer); a namespaced owner is in the dependent's namespace. ValueError: no mapping."""
    api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
    if api_version.count("/") > 1:
        raise ValueError(f"unexpected GroupVersion string: {api_version}")
    group, _, version = api_version.rpartition("/")
    found = [
        Attributes(
            "update",
            group=t.group,
            version=t.version,
            resource=t.plural,
            subresource="finalizers",
            namespace=namespace if t.namespaced else "",
            name=str(ref.get("name", "")),
        )
        for t in registry
        if t.group == group and t.version == version and t.kind == kind
    ]
    if not found:
        raise ValueError(f'no matches for kind "{kind}" in version "{api_version}"')
    return found


def owner_references_hook(auth: Auth, registry: Registry) -> AdmissionHook:
    """The plugin over `auth`'s authorizer (looked up at each call, so a wrapped one is honoured)."""

    def admit(req: AdmissionRequest) -> None:
        rtype = req.rtype
        if (rtype.group, rtype.plural, req.subresource or "") in EXEMPT:
            return
        if not changing_owner_references(req.obj, req.old):
            return
        user = request_user(req.request)

        def refuse(why: str) -> errors.ApiError:
            return errors.forbidden(rtype.plural, rtype.group, req.name, why)

        if req.old is not None:
            delete = Attributes(
                "delete",
                group=rtype.group,
                version=rtype.version,
                resource=rtype.plural,
                subresource=req.subresource or "",
                namespace=req.namespace,
                name=req.name,
            )
            allowed, reason = auth.authorize(user, delete)
            if not allowed:  # upstream formats the authorizer's reason and error: ", <nil>" when none
                raise refuse(f"cannot set an ownerRef on a resource you can't delete: {reason}, <nil>")
        for ref in new_blocking_refs(req.obj, req.old):
            try:
                records = _owner_attributes(registry, ref, req.namespace)
            except ValueError as exc:
                raise refuse(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
                    f"APIVersion {ref.get('apiVersion', '')} Kind {ref.get('kind', '')}: {exc}"
                ) from None
            for record in records:
                allowed, reason = auth.authorize(user, record)
                if not allowed:
                    raise refuse(
                        "cannot set blockOwnerDeletion if an ownerReference refers to a resource you "
                        f"can't set finalizers on: {reason}, <nil>"
                    )

    return admit


def check_plugins(names: Iterable[str]) -> tuple[str, ...]:
    """`names` if kubesim has every admission plugin named; ValueError naming the first it does not."""
    names = tuple(names)
    unknown = [n for n in names if n not in PLUGINS]
    if unknown:
        raise ValueError(f"unknown admission plugin {unknown[0]!r}: kubesim has {', '.join(PLUGINS)}")
    return names


def enable(names: Iterable[str], auth: Auth, registry: Registry) -> list[AdmissionHook]:
    """The hooks of the admission plugins named (ValueError for one kubesim does not have)."""
    return [owner_references_hook(auth, registry) for n in check_plugins(names) if n == PLUGIN]
