"""OwnerReferencesPermissionEnforcement over HTTP (kubesim.auth.ownerrefs): changing ownerReferences
on an update needs `delete` on the object; adding a blocking reference needs `update` on the owner's
`finalizers`; creating, unblocking references and unchanged references need neither. Off by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubesim import KubeSim
from kubesim.auth.authn import ADMIN_TOKEN
from kubesim.cli import build_parser
from kubesim.pytest_plugin import KubeSimFactory
from tests.integration.kubesim.test_auth_rbac import As, grant
from tests.kubesim_api import Api

TOKENS = "dev-token,dev,1001\n"
NS = "team"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
WRITE_CONFIGMAPS = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]}
DELETE_CONFIGMAPS = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"]}
JOB_FINALIZERS = {"apiGroups": ["batch"], "resources": ["jobs/finalizers"], "verbs": ["update"]}
BLOCKING = (
    "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
)


async def _sim(factory: KubeSimFactory, tmp_path: Path, **options: Any) -> KubeSim:
    (tmp_path / "tokens.csv").write_text(TOKENS)
    return await factory(
        kubelet=False, authorization_mode="RBAC", token_auth_file=tmp_path / "tokens.csv", **options
    )


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory, tmp_path: Path) -> KubeSim:
    return await _sim(
        kubesim_factory, tmp_path, enable_admission_plugins=["OwnerReferencesPermissionEnforcement"]
    )


async def _setup(api: Api, rules: list[dict[str, Any]]) -> tuple[As, dict[str, Any]]:
    """The namespace, an owner Job, and `dev` bound to `rules` in it: (dev, the owner Job)."""
    admin = As(api, ADMIN_TOKEN)
    assert (await admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}))[0] == 201
    job = {
        "metadata": {"name": "owner"},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            },
        },
    }
    status, owner = await admin.call("POST", JOBS, job)
    assert status == 201, owner
    await grant(admin, NS, "dev", rules, {"kind": "User", "name": "dev"})
    return As(api, "dev-token"), owner


def _ref(owner: dict[str, Any], block: bool | None) -> dict[str, Any]:
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "owner", "uid": owner["metadata"]["uid"]}
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def _configmap(name: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "ownerReferences": list(refs)}, "data": {"k": "v"}}


async def test_a_blocking_reference_needs_update_on_the_owners_finalizers(api: Api) -> None:
    dev, owner = await _setup(api, [WRITE_CONFIGMAPS])
    status, body = await dev.call("POST", CONFIGMAPS, _configmap("blocked", _ref(owner, True)))
    assert status == 403, body
    assert body["message"] == f'configmaps "blocked" is forbidden: {BLOCKING}: , <nil>'
    assert (body["reason"], body["details"]) == ("Forbidden", {"name": "blocked", "kind": "configmaps"})
    assert (await As(api, ADMIN_TOKEN).call("GET", f"{CONFIGMAPS}/blocked"))[0] == 404  # nothing written
    # creating needs no delete right, and a reference that does not block needs no finalizers right
    for block in (None, False):
        status, body = await dev.call(
            "POST", CONFIGMAPS, _configmap(f"free-{block}".lower(), _ref(owner, block))
        )
        assert status == 201, body
    await grant(As(api, ADMIN_TOKEN), NS, "dev-finalizers", [JOB_FINALIZERS], {"kind": "User", "name": "dev"})
    status, body = await dev.call("POST", CONFIGMAPS, _configmap("blocked", _ref(owner, True)))
    assert status == 201, body


async def test_changing_references_on_update_needs_delete_on_the_object(api: Api) -> None:
    dev, owner = await _setup(api, [WRITE_CONFIGMAPS])
    status, created = await dev.call("POST", CONFIGMAPS, _configmap("cm", _ref(owner, False)))
    assert status == 201, created
    unchanged = {**created, "data": {"k": "changed"}}
    status, updated = await dev.call("PUT", f"{CONFIGMAPS}/cm", unchanged)
    assert status == 200, updated  # the same references: nothing more to check
    released = {**updated, "metadata": {**updated["metadata"], "ownerReferences": []}}
    status, body = await dev.call("PUT", f"{CONFIGMAPS}/cm", released)
    assert status == 403, body
    assert body["message"] == (
        'configmaps "cm" is forbidden: cannot set an ownerRef on a resource you can\'t delete: , <nil>'
    )
    await grant(As(api, ADMIN_TOKEN), NS, "dev-delete", [DELETE_CONFIGMAPS], {"kind": "User", "name": "dev"})
    # turning blockOwnerDeletion on is adding a blocking reference: the owner's finalizers too
    blocking = {**updated, "metadata": {**updated["metadata"], "ownerReferences": [_ref(owner, True)]}}
    status, body = await dev.call("PUT", f"{CONFIGMAPS}/cm", blocking)
    assert (status, body["message"]) == (403, f'configmaps "cm" is forbidden: {BLOCKING}: , <nil>')
    status, body = await dev.call("PUT", f"{CONFIGMAPS}/cm", released)
    assert status == 200, body


async def test_an_owner_kind_the_server_does_not_serve_cannot_block(api: Api) -> None:
    dev, owner = await _setup(api, [WRITE_CONFIGMAPS])
    ref = {**_ref(owner, True), "apiVersion": "example.com/v1", "kind": "Widget"}
    status, body = await dev.call("POST", CONFIGMAPS, _configmap("cm", ref))
    assert status == 403, body
    assert body["message"] == (
        'configmaps "cm" is forbidden: cannot set blockOwnerDeletion in this case because cannot find '
        'RESTMapping for APIVersion example.com/v1 Kind Widget: no matches for kind "Widget" in version '
        '"example.com/v1"'
    )


async def test_off_by_default(kubesim_factory: KubeSimFactory, tmp_path: Path) -> None:
    plain = await _sim(kubesim_factory, tmp_path)
    async with aiohttp.ClientSession() as session:
        api = Api(session, plain.url)
        dev, owner = await _setup(api, [WRITE_CONFIGMAPS])
        status, body = await dev.call("POST", CONFIGMAPS, _configmap("blocked", _ref(owner, True)))
        assert status == 201, body


def test_an_unknown_plugin_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown admission plugin 'NoSuchPlugin'"):
        KubeSim(enable_admission_plugins=["NoSuchPlugin"])


def test_the_flag_takes_kube_apiservers_name() -> None:
    args = build_parser().parse_args(["--enable-admission-plugins", "OwnerReferencesPermissionEnforcement"])
    assert args.enable_admission_plugins == ["OwnerReferencesPermissionEnforcement"]
    assert build_parser().parse_args([]).enable_admission_plugins == []
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--enable-admission-plugins", "NamespaceLifecycle"])


async def test_a_cluster_scoped_owner_needs_the_right_at_the_cluster_scope(api: Api) -> None:
    """The owner's resource is found from its apiVersion and kind; a Node is not in the namespace, so a
    Role there granting nodes/finalizers is not enough, a ClusterRole is."""
    dev, _ = await _setup(api, [WRITE_CONFIGMAPS])
    admin = As(api, ADMIN_TOKEN)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "owner-node",
        "uid": "u-1",
        "blockOwnerDeletion": True,
    }
    node_finalizers = {"apiGroups": [""], "resources": ["nodes/finalizers"], "verbs": ["update"]}
    await grant(admin, NS, "dev-nodes", [node_finalizers], {"kind": "User", "name": "dev"})
    status, body = await dev.call("POST", CONFIGMAPS, _configmap("cm", node))
    assert (status, body["message"]) == (403, f'configmaps "cm" is forbidden: {BLOCKING}: , <nil>')
    role = {"metadata": {"name": "dev-nodes"}, "rules": [node_finalizers]}
    binding = {
        "metadata": {"name": "dev-nodes"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "dev-nodes"},
        "subjects": [{"kind": "User", "name": "dev"}],
    }
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    assert (await admin.call("POST", f"{rbac}/clusterroles", role))[0] == 201
    assert (await admin.call("POST", f"{rbac}/clusterrolebindings", binding))[0] == 201
    status, body = await dev.call("POST", CONFIGMAPS, _configmap("cm", node))
    assert status == 201, body
