"""The manager's own identity in a cluster it was handed admin access to (the sandbox, the testing kit).

A ServiceAccount (`system:serviceaccount:<ns>:aiokcm`) bound to exactly the roles `aiokcm rbac --controllers
<the enabled set>` generates (manager/cli/rbac.py, the same functions), applied with server-side apply, and a
token for it from the TokenRequest API. A manager running with that token proves at every run that the
generated RBAC is enough: a missing rule is a 403 in its log and a workload that does not converge.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import aiohttp

from manager.cli.controllers_flag import KnownController
from manager.cli.rbac import ControllerRbac, Identity, rbac_documents
from manager.config.settings import Settings

FIELD_MANAGER = "aiokcm-sandbox"
TOKEN_SECONDS = 24 * 3600  # a sandbox or a test never outlives it; the TokenRequest API allows up to 2^32


class IdentityError(RuntimeError):
    """The cluster refused to set up the manager's identity; the message names the object."""


class DescribedController(KnownController, Protocol):
    """What the generator needs of a ControllerInfo (or of a controller class wrapped as one)."""

    @property
    def cls(self) -> Any: ...


def controller_rbac(controllers: Iterable[DescribedController]) -> list[ControllerRbac]:
    """The generator's view of the enabled controllers: their names and declared `rbac` rules."""
    return [
        ControllerRbac(c.name, tuple(getattr(c.cls, "rbac", ())), tuple(c.aliases), c.enabled_by_default)
        for c in controllers
    ]


def manager_identity(settings: Settings) -> Identity:
    """As `aiokcm rbac` names it with default options: the ServiceAccount in the Lease's namespace."""
    namespace = settings.leader_elect_resource_namespace
    return Identity(
        namespace=namespace,
        lease_name=settings.leader_elect_resource_name,
        lease_namespace=namespace,
    )


def service_account_user(identity: Identity) -> str:
    """The user name the manager authenticates as with the ServiceAccount's token."""
    return f"system:serviceaccount:{identity.namespace}:{identity.service_account}"


def identity_objects(controllers: Iterable[ControllerRbac], identity: Identity) -> list[dict[str, Any]]:
    """The namespace and ServiceAccount, then everything `aiokcm rbac` prints for `controllers`."""
    namespaces = dict.fromkeys((identity.namespace, identity.lease_namespace))
    return [
        *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": identity.service_account, "namespace": identity.namespace},
        },
        *rbac_documents(list(controllers), identity),
    ]


def _path(obj: dict[str, Any]) -> str:
    """The object's URL: only the few kinds identity_objects makes."""
    kind, metadata = obj["kind"], obj["metadata"]
    plural = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts"}.get(kind) or (
        kind.lower() + "s"
    )
    prefix = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    namespace = metadata.get("namespace")
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{where}/{plural}/{metadata['name']}"


async def apply_identity(
    session: aiohttp.ClientSession, controllers: Iterable[ControllerRbac], identity: Identity
) -> str:
    """Apply the identity's objects through `session` (which must be allowed to: an admin's) and return a
    token for the ServiceAccount. Applying again brings the roles back to the declarations (a rule removed
    from a controller disappears from its role) and removes the roles and bindings of controllers no longer
    enabled, so a kept sandbox cluster follows the code and the flags."""
    objects = identity_objects(controllers, identity)
    await _prune_controller_roles(session, identity, {o["metadata"]["name"] for o in objects})
    await apply_objects(session, objects)
    return await request_token(session, identity)


async def apply_objects(session: aiohttp.ClientSession, objects: Iterable[dict[str, Any]]) -> None:
    """Server-side apply each of `objects` (the kinds identity_objects makes), forcing conflicts."""
    for obj in objects:
        async with session.patch(
            _path(obj),
            params={"fieldManager": FIELD_MANAGER, "force": "true"},
            json=obj,
            headers={"Content-Type": "application/apply-patch+yaml"},
        ) as response:
            if response.status >= 300:
                detail = (await response.text())[:200]
                raise IdentityError(f"cannot apply {obj['kind']} {obj['metadata']['name']}: {detail}")


async def request_token(session: aiohttp.ClientSession, identity: Identity) -> str:
    """A token for the identity's ServiceAccount from the TokenRequest API."""
    account = f"/api/v1/namespaces/{identity.namespace}/serviceaccounts/{identity.service_account}"
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    }
    async with session.post(f"{account}/token", json=request) as response:
        if response.status != 201:
            detail = (await response.text())[:200]
            raise IdentityError(f"cannot get a token for {identity.service_account}: {detail}")
        token: str = (await response.json())["status"]["token"]
    return token


async def _prune_controller_roles(
    session: aiohttp.ClientSession, identity: Identity, wanted: set[str]
) -> None:
    """Delete the per-controller ClusterRoles and bindings (`<prefix>:controller:*`) not in `wanted`."""
    prefix = identity.controller_role("")
    for plural in ("clusterrolebindings", "clusterroles"):
        collection = f"/apis/rbac.authorization.k8s.io/v1/{plural}"
        async with session.get(collection) as response:
            if response.status != 200:
                raise IdentityError(f"cannot list {plural}: {(await response.text())[:200]}")
            names = [item["metadata"]["name"] for item in (await response.json()).get("items") or []]
        for name in names:
            if name.startswith(prefix) and name not in wanted:
                async with session.delete(f"{collection}/{name}") as response:
                    if response.status not in (200, 202, 404):
                        raise IdentityError(f"cannot delete {plural} {name}: {(await response.text())[:200]}")
