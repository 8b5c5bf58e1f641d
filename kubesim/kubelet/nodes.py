"""The Node objects the simulated kubelet registers: Ready, with capacity, addresses and nodeInfo."""

from __future__ import annotations

import random
import uuid
from typing import Any

NODE_PREFIX = "kubesim-node-"
KUBELET_VERSION = "v1.32.0"

Obj = dict[str, Any]


def node_name(index: int) -> str:
    """1-based: kubesim-node-1 .. kubesim-node-N."""
    return f"{NODE_PREFIX}{index}"


def host_ip(index: int) -> str:
    return f"172.18.0.{index + 1}"


def pod_ip(node_index: int, serial: int) -> str:
    """Each node owns 10.(100+i).0.0/16, enough for every pod a simulation can create."""
    return f"10.{100 + node_index}.{(serial // 250) % 256}.{serial % 250 + 2}"


def pod_ip_serial(ip: str) -> int:
    """The serial `pod_ip` made `ip` from (0 for an address it did not make)."""
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return 0
    return int(parts[2]) * 250 + int(parts[3]) - 2


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def node_object(index: int, now: str, rng: random.Random) -> Obj:
    name = node_name(index)
    capacity = {
        "cpu": "8",
        "memory": "32863084Ki",
        "ephemeral-storage": "102626232Ki",
        "hugepages-2Mi": "0",
        "pods": "110",
    }
    allocatable = {**capacity, "cpu": "7800m", "memory": "32248684Ki"}
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "kubesim",
                "type": "kubesim",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{100 + index}.0.0/16", "podCIDRs": [f"10.{100 + index}.0.0/16"]},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": kind,
                    "status": status,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
                for kind, status, reason, message in conditions
            ],
            "addresses": [
                {"type": "InternalIP", "address": host_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _uuid(rng).replace("-", ""),
                "systemUUID": _uuid(rng),
                "bootID": _uuid(rng),
                "kernelVersion": "6.1.0-kubesim",
                "osImage": "kubesim simulated node",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
