"""Realistic pods and their wire bytes for the informer benchmarks (shape: a ReplicaSet-owned pod with
probes, volumes, tolerations, a 5-condition status and two managedFields entries; ~5.9 KB of compact JSON
with managedFields, ~3.5 KB without)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson

from manager.client.config import RestConfig
from manager.client.rest import ApiClient

OWNER_UID = "8d2a3c1e-0000-4000-8000-000000000000"


def _entry(fields: list[str]) -> dict[str, Any]:
    return {".": {}, **{f"f:{name}": {} for name in fields}}


def managed_fields() -> list[dict[str, Any]]:
    condition = _entry(["lastProbeTime", "lastTransitionTime", "status", "type"])
    controller = {
        "f:metadata": {
            "f:generateName": {},
            "f:labels": _entry(["app", "pod-template-hash", "tier", "version"]),
            "f:ownerReferences": {".": {}, f'k:{{"uid":"{OWNER_UID}"}}': {}},
        },
        "f:spec": {
            "f:containers": {
                'k:{"name":"app"}': {
                    ".": {},
                    "f:env": {
                        ".": {},
                        'k:{"name":"LOG_LEVEL"}': _entry(["name", "value"]),
                        'k:{"name":"POD_NAME"}': {**_entry(["name"]), "f:valueFrom": _entry(["fieldRef"])},
                    },
                    "f:image": {},
                    "f:imagePullPolicy": {},
                    "f:name": {},
                    "f:ports": {
                        ".": {},
                        'k:{"containerPort":8080,"protocol":"TCP"}': _entry(
                            ["containerPort", "name", "protocol"]
                        ),
                    },
                    "f:readinessProbe": {
                        **_entry(["failureThreshold", "periodSeconds", "successThreshold", "timeoutSeconds"]),
                        "f:httpGet": _entry(["path", "port", "scheme"]),
                    },
                    "f:resources": {
                        ".": {},
                        "f:limits": _entry(["memory"]),
                        "f:requests": _entry(["cpu", "memory"]),
                    },
                    "f:terminationMessagePath": {},
                    "f:terminationMessagePolicy": {},
                    "f:volumeMounts": {
                        ".": {},
                        'k:{"mountPath":"/etc/config"}': _entry(["mountPath", "name", "readOnly"]),
                    },
                },
            },
            **{
                f"f:{k}": {}
                for k in (
                    "dnsPolicy",
                    "enableServiceLinks",
                    "restartPolicy",
                    "schedulerName",
                    "securityContext",
                    "serviceAccountName",
                    "terminationGracePeriodSeconds",
                )
            },
            "f:volumes": {
                ".": {},
                'k:{"name":"config"}': {
                    ".": {},
                    "f:configMap": _entry(["defaultMode", "name"]),
                    "f:name": {},
                },
            },
        },
    }
    kubelet = {
        "f:status": {
            "f:conditions": {
                f'k:{{"type":"{t}"}}': condition
                for t in ("ContainersReady", "Initialized", "PodReadyToStartContainers", "Ready")
            },
            **{
                f"f:{k}": {}
                for k in ("containerStatuses", "hostIP", "hostIPs", "phase", "podIP", "startTime")
            },
            "f:podIPs": {".": {}, 'k:{"ip":"10.244.1.23"}': _entry(["ip"])},
        }
    }
    return [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2024-05-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": controller,
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2024-05-01T10:00:05Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": kubelet,
            "subresource": "status",
        },
    ]


def make_pod(i: int, rv: int | None = None, with_managed_fields: bool = True) -> dict[str, Any]:
    token_volume = f"kube-api-access-{i % 99999:05d}"
    meta: dict[str, Any] = {
        "name": f"web-7c9f8d6b5-{i:06d}",
        "generateName": "web-7c9f8d6b5-",
        "namespace": f"team-{i % 50:02d}",
        "uid": str(uuid.UUID(int=i + (1 << 100))),
        "resourceVersion": str(rv or 1_000_000 + i),
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "labels": {"app": "web", "pod-template-hash": "7c9f8d6b5", "tier": "frontend", "version": "v1.42.0"},
        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7c9f8d6b5",
                "uid": OWNER_UID,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if with_managed_fields:
        meta["managedFields"] = managed_fields()
    container = {
        "name": "app",
        "image": "registry.example.com/team/web:v1.42.0",
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
        ],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
        "readinessProbe": {
            "failureThreshold": 3,
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {"mountPath": "/etc/config", "name": "config", "readOnly": True},
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": token_volume,
                "readOnly": True,
            },
        ],
    }
    spec = {
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "nodeName": f"node-{i % 500:03d}",
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {
                "effect": "NoExecute",
                "key": f"node.kubernetes.io/{k}",
                "operator": "Exists",
                "tolerationSeconds": 300,
            }
            for k in ("not-ready", "unreachable")
        ],
        "volumes": [
            {"name": "config", "configMap": {"defaultMode": 420, "name": "web-config"}},
            {
                "name": token_volume,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                "name": "kube-root-ca.crt",
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace",
                                    }
                                ]
                            }
                        },
                    ],
                },
            },
        ],
    }
    conditions = [
        {"lastProbeTime": None, "lastTransitionTime": "2024-05-01T10:00:04Z", "status": "True", "type": t}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    host_ip, pod_ip = f"10.0.{i % 250}.{i % 200}", f"10.244.{i % 250}.{i % 240}"
    status = {
        "conditions": conditions,
        "containerStatuses": [
            {
                "containerID": "containerd://" + uuid.UUID(int=i).hex * 2,
                "image": "registry.example.com/team/web:v1.42.0",
                "imageID": "registry.example.com/team/web@sha256:" + "ab" * 32,
                "lastState": {},
                "name": "app",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": "2024-05-01T10:00:03Z"}},
            }
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": "Running",
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "qosClass": "Burstable",
        "startTime": "2024-05-01T10:00:01Z",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def store_pods(store: Any, n: int) -> None:
    """Create the N fixture pods in a kubesim store (the server assigns resourceVersion and uid)."""
    for i in range(n):
        pod = make_pod(i)
        pod["metadata"].pop("resourceVersion")
        pod["metadata"].pop("uid")
        store.create("pods", pod)


def list_pages(n: int, page_size: int = 500) -> list[bytes]:
    """The bytes of a paged PodList of `n` pods, as an API server sends them."""
    pages = []
    for start in range(0, n, page_size):
        items = [make_pod(i) for i in range(start, min(n, start + page_size))]
        meta = {"resourceVersion": "2000000"}
        if start + page_size < n:
            meta["continue"] = f"token-{start + page_size}"
        pages.append(orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items}))
    return pages


def watch_lines(n: int, first_rv: int = 3_000_000, event_type: str = "MODIFIED") -> list[bytes]:
    """One newline-terminated watch event per pod, each with a new resourceVersion."""
    return [
        orjson.dumps({"type": event_type, "object": make_pod(i, rv=first_rv + i)}) + b"\n" for i in range(n)
    ]


def chunks(lines: list[bytes], size: int = 65536) -> Iterator[bytes]:
    """Cut a byte stream of watch lines into socket-read-sized chunks (events straddle chunk borders)."""
    blob = b"".join(lines)
    for start in range(0, len(blob), size):
        yield blob[start : start + size]


class PagedListClient(ApiClient):
    """An ApiClient whose LIST answers come from memory: the reflector's own paging and decoding run
    unchanged, only the HTTP transport is skipped."""

    def __init__(self, pages: list[bytes]) -> None:
        super().__init__(RestConfig(host="http://in-memory"))
        self.pages = pages

    async def list_raw(self, *args: Any, continue_token: str | None = None, **kwargs: Any) -> bytes:
        index = 0 if continue_token is None else int(continue_token.split("-")[1]) // 500
        return self.pages[index]


class FakeContent:
    def __init__(self, data: list[bytes]) -> None:
        self.data = data
        self.position = 0

    async def iter_any(self) -> AsyncIterator[bytes]:
        while self.position < len(self.data):  # a new reader continues where the last one stopped
            await asyncio.sleep(0)  # a socket read suspends: handler tasks run in between, as in production
            self.position += 1
            yield self.data[self.position - 1]


class FakeResponse:
    """What WatchStream reads: `.content.iter_any()` chunks, then `.close()`."""

    def __init__(self, data: list[bytes]) -> None:
        self.content = FakeContent(data)

    def close(self) -> None:
        pass
