"""Server-side apply over HTTP on maps whose keys are not schema fields: an `additionalProperties` map of
objects and the unknown keys of an `x-kubernetes-preserve-unknown-fields` object. structured-merge-diff's
ToFieldSet lists each such key as a member of its own (FieldsV1 `f:<key>: {".": {}, ...}`); struct fields
are not members. Unknown keys of a preserve-unknown-fields object are typed as the deduced type: nested
objects are granular maps (their keys members too), lists atomic. The member decides what a later apply
by the same manager removes and what two managers share."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import run_kubectl, wait_for
from tests.kubesim_api import Api

Obj = dict[str, Any]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RIGS = "/apis/example.com/v1/namespaces/default/rigs"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, seed=1)


def _rig_crd() -> Obj:
    slot = {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}}
    spec = {
        "type": "object",
        "properties": {
            "slots": {"type": "object", "additionalProperties": slot},
            "extra": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"known": {"type": "string"}},
            },
        },
    }
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
    }
    names = {"plural": "rigs", "singular": "rig", "kind": "Rig", "listKind": "RigList"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rigs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": names, "versions": [version]},
    }


def _rig(spec: Obj) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Rig", "metadata": {"name": "r"}, "spec": spec}


def _applied(obj: Obj, manager: str) -> Obj:
    [entry] = [
        e for e in obj["metadata"]["managedFields"] if e["manager"] == manager and e["operation"] == "Apply"
    ]
    fields: Obj = entry["fieldsV1"]
    return fields


async def _apply(api: Api, manager: str, spec: Obj, force: bool = False) -> tuple[int, Any]:
    query = f"fieldManager={manager}" + ("&force=true" if force else "")
    return await api.call("PATCH", f"{RIGS}/r?{query}", _rig(spec), content_type=APPLY)


@pytest.fixture
async def rigs(api: Api) -> Api:
    await api.ok("POST", CRDS, _rig_crd())
    return api


async def test_each_applied_key_of_a_map_of_objects_is_a_member(rigs: Api) -> None:
    status, rig = await _apply(rigs, "a", {"slots": {"x": {"size": 1}, "y": {"size": 2, "color": "red"}}})
    assert status == 201, rig
    assert _applied(rig, "a") == {
        "f:spec": {
            "f:slots": {
                "f:x": {".": {}, "f:size": {}},
                "f:y": {".": {}, "f:color": {}, "f:size": {}},
            }
        }
    }


async def test_a_key_the_manager_stops_applying_is_removed_with_what_others_added_to_it(rigs: Api) -> None:
    await _apply(rigs, "a", {"slots": {"x": {"size": 1}, "y": {"size": 2}}})
    # another writer adds a field inside y with a merge patch: it owns y.color, not the key y
    await rigs.ok(
        "PATCH", f"{RIGS}/r?fieldManager=u", {"spec": {"slots": {"y": {"color": "red"}}}}, content_type=MERGE
    )
    status, rig = await _apply(rigs, "a", {"slots": {"x": {"size": 1}}})
    assert status == 200, rig
    # the applier owned the key y: it goes as a whole, as a list item it owned would
    assert rig["spec"]["slots"] == {"x": {"size": 1}}
    assert _applied(rig, "a") == {"f:spec": {"f:slots": {"f:x": {".": {}, "f:size": {}}}}}
    assert [e["manager"] for e in rig["metadata"]["managedFields"]] == ["a"]


async def test_two_managers_keep_their_own_keys(rigs: Api) -> None:
    status, _ = await _apply(rigs, "a", {"slots": {"x": {"size": 1}}})
    assert status == 201
    status, rig = await _apply(rigs, "b", {"slots": {"y": {"size": 2}}})
    assert status == 200, rig
    assert rig["spec"]["slots"] == {"x": {"size": 1}, "y": {"size": 2}}
    assert _applied(rig, "b") == {"f:spec": {"f:slots": {"f:y": {".": {}, "f:size": {}}}}}
    # both apply the key z with the same value: shared, no conflict
    for manager, own in (("a", {"x": {"size": 1}}), ("b", {"y": {"size": 2}})):
        status, rig = await _apply(rigs, manager, {"slots": {**own, "z": {"size": 3}}})
        assert status == 200, rig
    # a stops applying x and z: x goes, z stays (b still applies it, key and field)
    status, rig = await _apply(rigs, "a", {"extra": {"known": "k"}})
    assert status == 200, rig
    assert rig["spec"]["slots"] == {"y": {"size": 2}, "z": {"size": 3}}
    assert _applied(rig, "a") == {"f:spec": {"f:extra": {"f:known": {}}}}


async def test_a_conflict_on_a_keys_field_names_its_path_unless_forced(rigs: Api) -> None:
    await _apply(rigs, "a", {"slots": {"x": {"size": 1}}})
    # another key, or another field of the same key: no conflict
    status, _ = await _apply(rigs, "b", {"slots": {"x": {"color": "blue"}, "w": {"size": 9}}})
    assert status == 200
    status, body = await _apply(rigs, "b", {"slots": {"x": {"size": 5}}})
    assert status == 409, body
    assert [c["field"] for c in body["details"]["causes"]] == [".spec.slots.x.size"]
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "a": .spec.slots.x.size'
    status, rig = await _apply(rigs, "b", {"slots": {"x": {"size": 5}}}, force=True)
    assert status == 200, rig
    assert rig["spec"]["slots"] == {"x": {"size": 5}}  # b dropped w and x.color, which it alone applied
    assert _applied(rig, "a") == {"f:spec": {"f:slots": {"f:x": {}}}}  # the key alone: a lost x.size
    assert _applied(rig, "b") == {"f:spec": {"f:slots": {"f:x": {".": {}, "f:size": {}}}}}


async def test_preserve_unknown_fields_keys_are_members_and_deduced_granular(rigs: Api) -> None:
    extra = {"known": "k", "free": {"deep": {"v": 1}, "list": [1, 2]}, "flag": True}
    status, rig = await _apply(rigs, "a", {"extra": extra})
    assert status == 201, rig
    assert _applied(rig, "a") == {
        "f:spec": {
            "f:extra": {
                "f:flag": {},
                "f:free": {".": {}, "f:deep": {".": {}, "f:v": {}}, "f:list": {}},
                "f:known": {},
            }
        }
    }
    # b adds a key inside the deduced map without conflict; a dropping free removes free as a whole
    status, rig = await _apply(rigs, "b", {"extra": {"free": {"deep": {"w": 2}}}})
    assert status == 200, rig
    assert _applied(rig, "b") == {
        "f:spec": {"f:extra": {"f:free": {".": {}, "f:deep": {".": {}, "f:w": {}}}}}
    }
    status, rig = await _apply(rigs, "a", {"extra": {"known": "k"}})
    assert status == 200, rig
    # b owns the keys free and deep: they stay, with b's field only
    assert rig["spec"]["extra"] == {"known": "k", "free": {"deep": {"w": 2}}}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
async def test_kubectl_server_side_apply_of_a_map_of_objects(rigs: Api, sim: KubeSim, tmp_path: Path) -> None:
    await wait_for(lambda: rigs.call("GET", RIGS), message="rigs served")

    async def apply(manager: str, spec: Obj, *extra: str) -> tuple[int, str, str]:
        manifest = tmp_path / f"{manager}.yaml"
        manifest.write_text(yaml.safe_dump(_rig(spec) | {"metadata": {"name": "r", "namespace": "default"}}))
        return await run_kubectl(
            sim.kubeconfig,
            tmp_path / "cache",
            "apply",
            "--server-side",
            f"--field-manager={manager}",
            "-f",
            str(manifest),
            *extra,
        )

    code, _, err = await apply("ops", {"slots": {"x": {"size": 1}, "y": {"size": 2}}})
    assert code == 0, err
    code, _, err = await apply("ops", {"slots": {"x": {"size": 1}}})
    assert code == 0, err
    code, out, err = await run_kubectl(
        sim.kubeconfig, tmp_path / "cache", "get", "rig", "r", "-o", "json", "--show-managed-fields"
    )
    assert code == 0, err
    rig = orjson.loads(out)
    assert rig["spec"]["slots"] == {"x": {"size": 1}}
    assert _applied(rig, "ops") == {"f:spec": {"f:slots": {"f:x": {".": {}, "f:size": {}}}}}
    code, _, err = await apply("other", {"slots": {"x": {"size": 7}}})
    assert code != 0
    assert "conflict" in err and ".spec.slots.x.size" in err, err
    code, _, err = await apply("other", {"slots": {"x": {"size": 7}}}, "--force-conflicts")
    assert code == 0, err
