"""managedFields over HTTP in the shapes a real kube-apiserver writes them (structured-merge-diff's Update
sets: a map, struct or non-atomic list the old object lacked is a member, FieldsV1's '.'), for creates,
updates, status writes and server-side apply."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

Obj = dict[str, Any]
PODS = "/api/v1/namespaces/default/pods"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GIZMOS = "/apis/example.com/v1/namespaces/default/gizmos"
APPLY = "application/apply-patch+yaml"
UID = "6a1b0e0c-0000-4000-8000-000000000001"
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": UID, "controller": True}
OWNER_KEY = f'k:{{"uid":"{UID}"}}'


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, seed=1)


def _entry(obj: Obj, manager: str, operation: str = "Update") -> Obj:
    entries: list[Obj] = obj["metadata"]["managedFields"]
    [entry] = [e for e in entries if e["manager"] == manager and e["operation"] == operation]
    return entry


def _fields(obj: Obj, manager: str, operation: str = "Update") -> Obj:
    fields: Obj = _entry(obj, manager, operation)["fieldsV1"]
    return fields


async def test_a_controller_created_pod_has_the_upstream_shape(api: Api) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "labels": {"app": "p"},
            "finalizers": ["example.com/keep"],
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "env": [{"name": "A", "value": "1"}],
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "1"}},
                }
            ]
        },
    }
    created = await api.ok("POST", f"{PODS}?fieldManager=kube-controller-manager", pod)
    fields = _fields(created, "kube-controller-manager")
    assert fields["f:metadata"] == {
        "f:finalizers": {".": {}, 'v:"example.com/keep"': {}},
        "f:labels": {".": {}, "f:app": {}},
        "f:ownerReferences": {".": {}, OWNER_KEY: {}},  # OwnerReference is an atomic struct
    }
    container = fields["f:spec"]["f:containers"]['k:{"name":"c"}']  # containers: no omitempty, no '.'
    assert "." not in fields["f:spec"]["f:containers"]
    assert container["."] == {} and container["f:image"] == {}
    assert container["f:env"] == {".": {}, 'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}}
    assert container["f:ports"] == {
        ".": {},
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}, "f:protocol": {}},
    }
    assert container["f:resources"] == {".": {}, "f:requests": {".": {}, "f:cpu": {}}}
    assert "." not in fields["f:spec"], "PodSpec is embedded by value"

    # an update that adds an owner and a finalizer: the lists exist, only the new items are the updater's
    changed = copy.deepcopy(created)
    other = OWNER | {"uid": UID.replace("1", "2"), "controller": False, "name": "other"}
    changed["metadata"]["ownerReferences"].append(other)
    changed["metadata"]["finalizers"].append("example.com/second")
    updated = await api.ok("PUT", f"{PODS}/p?fieldManager=adopter", changed)
    assert _fields(updated, "adopter") == {
        "f:metadata": {
            "f:finalizers": {'v:"example.com/second"': {}},
            "f:ownerReferences": {OWNER_KEY.replace("1", "2"): {}},
        }
    }


def _deployment() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }


async def test_deployment_create_and_status_conditions(api: Api) -> None:
    created = await api.ok("POST", f"{DEPLOYS}?fieldManager=kubectl-create", _deployment())
    spec = _fields(created, "kubectl-create")["f:spec"]
    assert "." not in spec and "." not in spec["f:strategy"] and "." not in spec["f:template"]
    assert spec["f:strategy"]["f:rollingUpdate"] == {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}
    assert spec["f:template"]["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert spec["f:selector"] == {}, "LabelSelector is atomic"

    available = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
    status = copy.deepcopy(created) | {"status": {"conditions": [available], "replicas": 0}}
    first = await api.ok("PUT", f"{DEPLOYS}/d/status?fieldManager=controller", status)
    conditions = _fields(first, "controller")["f:status"]["f:conditions"]
    assert conditions == {
        ".": {},  # a list the status lacked: a member of its own
        'k:{"type":"Available"}': {".": {}, "f:reason": {}, "f:status": {}, "f:type": {}},
    }
    progressing = {"type": "Progressing", "status": "True"}
    second_status = copy.deepcopy(first)
    second_status["status"]["conditions"].append(progressing)
    second = await api.ok("PUT", f"{DEPLOYS}/d/status?fieldManager=other", second_status)
    assert _fields(second, "other") == {
        "f:status": {"f:conditions": {'k:{"type":"Progressing"}': {".": {}, "f:status": {}, "f:type": {}}}}
    }


def _gizmo_crd() -> Obj:
    spec_schema = {
        "type": "object",
        "properties": {
            "size": {"type": "integer"},
            "colors": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "parts": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                },
            },
        },
    }
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
    }
    names = {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": names, "versions": [version]},
    }


def _gizmo(name: str) -> Obj:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gizmo",
        "metadata": {
            "name": name,
            "labels": {"a": "b"},
            "finalizers": ["example.com/f"],
            "ownerReferences": [OWNER],
        },
        "spec": {"size": 1, "colors": ["red"], "parts": [{"name": "x", "n": 1}]},
    }


async def test_custom_resource_create_update_and_apply(api: Api) -> None:
    await api.ok("POST", CRDS, _gizmo_crd())
    expected = {
        "f:metadata": {  # metadata itself is never tracked: no '.' although the zero object lacks it
            "f:finalizers": {".": {}, 'v:"example.com/f"': {}},
            "f:labels": {".": {}, "f:a": {}},
            "f:ownerReferences": {".": {}, OWNER_KEY: {}},
        },
        "f:spec": {
            ".": {},  # a custom resource's zero object is unstructured: every map and list is new
            "f:colors": {".": {}, 'v:"red"': {}},
            "f:parts": {".": {}, 'k:{"name":"x"}': {".": {}, "f:n": {}, "f:name": {}}},
            "f:size": {},
        },
    }
    created = await api.ok("POST", f"{GIZMOS}?fieldManager=maker", _gizmo("g1"))
    assert _fields(created, "maker") == expected

    # the same object reached by an update of a bare one records the same fields
    bare = await api.ok(
        "POST",
        f"{GIZMOS}?fieldManager=maker",
        {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g2"}},
    )
    full = _gizmo("g2")
    full["metadata"]["resourceVersion"] = bare["metadata"]["resourceVersion"]
    updated = await api.ok("PUT", f"{GIZMOS}/g2?fieldManager=maker", full)
    assert _fields(updated, "maker") == expected

    # an applier's own entry lists what it applied (ToFieldSet): list items, no '.' for maps and lists
    applied = await api.ok("PATCH", f"{GIZMOS}/g3?fieldManager=applier", _gizmo("g3"), content_type=APPLY)
    assert _fields(applied, "applier", "Apply") == {
        "f:metadata": {
            "f:finalizers": {'v:"example.com/f"': {}},
            "f:labels": {"f:a": {}},
            "f:ownerReferences": {OWNER_KEY: {}},
        },
        "f:spec": {
            "f:colors": {'v:"red"': {}},
            "f:parts": {'k:{"name":"x"}': {".": {}, "f:n": {}, "f:name": {}}},
            "f:size": {},
        },
    }
