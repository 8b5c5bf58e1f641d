"""The Pod Security Standards' restricted profile, checked on a pod spec in plain Python.

The rules are the documented ones (kubernetes.io/docs/concepts/security/pod-security-standards, "Baseline"
and "Restricted"), applied to the fields a controller-manager's pod can set: host namespaces and ports,
privileged containers, capabilities, hostPath and other volume types, privilege escalation, non-root, and the
seccomp profile. A violation is a sentence naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESTRICTED_VOLUME_SOURCES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
ALLOWED_SECCOMP = {"RuntimeDefault", "Localhost"}


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        *spec.get("initContainers", []),
        *spec.get("containers", []),
        *spec.get("ephemeralContainers", []),
    ]


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    """Every way `spec` (a PodSpec) breaks the restricted profile; empty when it complies."""
    found: list[str] = []
    pod_context = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            found.append(f"spec.{field} is true")
    for volume in spec.get("volumes", []):
        sources = set(volume) - {"name"}
        if not sources <= RESTRICTED_VOLUME_SOURCES:
            found.append(f"volume {volume.get('name')} uses {sorted(sources - RESTRICTED_VOLUME_SOURCES)}")
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
    if pod_seccomp is not None and pod_seccomp not in ALLOWED_SECCOMP:
        found.append(f"spec.securityContext.seccompProfile.type is {pod_seccomp}")
    if pod_context.get("runAsUser") == 0:
        found.append("spec.securityContext.runAsUser is 0")
    for container in _containers(spec):
        name = container.get("name")
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"container {name} is privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"container {name} does not set allowPrivilegeEscalation: false")
        if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
            found.append(f"container {name} may run as root (runAsNonRoot unset)")
        if context.get("runAsUser") == 0:
            found.append(f"container {name} has runAsUser 0")
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ALLOWED_SECCOMP:
            found.append(f"container {name} has seccomp profile {seccomp}")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in capabilities.get("drop", []):
            found.append(f"container {name} does not drop ALL capabilities")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"container {name} adds capabilities {capabilities['add']}")
        if any(port.get("hostPort") for port in container.get("ports", [])):
            found.append(f"container {name} uses a hostPort")
    return found
