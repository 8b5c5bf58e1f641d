"""Decoding of Kubernetes protobuf request bodies for the objects kubectl's generators send that way
(`kubectl create namespace|configmap|secret|deployment|job|cronjob|service|serviceaccount|role|...`).

The body is the `k8s\\x00` magic then a runtime.Unknown envelope (typeMeta, raw). Field numbers below were
read off bytes kubectl 1.32 actually sends. Non-pointer fields arrive even when zero, so zero values are
dropped unless the field is a pointer (`?` kinds). Fields not listed are skipped, as a server would prune."""

from __future__ import annotations

import base64
from typing import Any

JSON = dict[str, Any]
MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"

# kinds: s string, i int, b bool, y bytes (base64 in JSON), ms map<string,string>, my map<string,bytes>,
# mq map<string,Quantity>, ios IntOrString, a trailing "?" keeps zero values (pointer fields),
# [X] a repeated X, anything else a message name.
Field = tuple[str, str]
M: dict[str, dict[int, Field]] = {
    "Unknown": {
        1: ("typeMeta", "TypeMeta"),
        2: ("raw", "y"),
        3: ("contentEncoding", "s"),
        4: ("contentType", "s"),
    },
    "TypeMeta": {1: ("apiVersion", "s"), 2: ("kind", "s")},
    "ObjectMeta": {
        1: ("name", "s"),
        2: ("generateName", "s"),
        3: ("namespace", "s"),
        5: ("uid", "s"),
        6: ("resourceVersion", "s"),
        11: ("labels", "ms"),
        12: ("annotations", "ms"),
        13: ("ownerReferences", "[OwnerReference]"),
        14: ("finalizers", "[s]"),
    },
    "OwnerReference": {
        1: ("kind", "s"),
        3: ("name", "s"),
        4: ("uid", "s"),
        5: ("apiVersion", "s"),
        6: ("controller", "b?"),
        7: ("blockOwnerDeletion", "b?"),
    },
    "LabelSelector": {1: ("matchLabels", "ms"), 2: ("matchExpressions", "[LabelSelectorRequirement]")},
    "LabelSelectorRequirement": {1: ("key", "s"), 2: ("operator", "s"), 3: ("values", "[s]")},
    "ObjectReference": {
        1: ("kind", "s"),
        2: ("namespace", "s"),
        3: ("name", "s"),
        4: ("uid", "s"),
        5: ("apiVersion", "s"),
        6: ("resourceVersion", "s"),
        7: ("fieldPath", "s"),
    },
    "LocalObjectReference": {1: ("name", "s")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "[s]")},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "ms"),
        3: ("binaryData", "my"),
        4: ("immutable", "b?"),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "my"),
        3: ("type", "s"),
        4: ("stringData", "ms"),
        5: ("immutable", "b?"),
    },
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta"),
        2: ("secrets", "[ObjectReference]"),
        3: ("imagePullSecrets", "[LocalObjectReference]"),
        4: ("automountServiceAccountToken", "b?"),
    },
    "Deployment": {1: ("metadata", "ObjectMeta"), 2: ("spec", "DeploymentSpec")},
    "DeploymentSpec": {
        1: ("replicas", "i?"),
        2: ("selector", "LabelSelector"),
        3: ("template", "PodTemplateSpec"),
        4: ("strategy", "DeploymentStrategy"),
        5: ("minReadySeconds", "i"),
        6: ("revisionHistoryLimit", "i?"),
        7: ("paused", "b"),
        9: ("progressDeadlineSeconds", "i?"),
    },
    "DeploymentStrategy": {1: ("type", "s"), 2: ("rollingUpdate", "RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "ios"), 2: ("maxSurge", "ios")},
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodSpec")},
    "PodSpec": {
        2: ("containers", "[Container]"),
        3: ("restartPolicy", "s"),
        4: ("terminationGracePeriodSeconds", "i?"),
        5: ("activeDeadlineSeconds", "i?"),
        6: ("dnsPolicy", "s"),
        7: ("nodeSelector", "ms"),
        8: ("serviceAccountName", "s"),
        10: ("nodeName", "s"),
        11: ("hostNetwork", "b"),
        16: ("hostname", "s"),
        17: ("subdomain", "s"),
        19: ("schedulerName", "s"),
        20: ("initContainers", "[Container]"),
        24: ("priorityClassName", "s"),
    },
    "Container": {
        1: ("name", "s"),
        2: ("image", "s"),
        3: ("command", "[s]"),
        4: ("args", "[s]"),
        5: ("workingDir", "s"),
        6: ("ports", "[ContainerPort]"),
        7: ("env", "[EnvVar]"),
        8: ("resources", "ResourceRequirements"),
        13: ("terminationMessagePath", "s"),
        14: ("imagePullPolicy", "s"),
        16: ("stdin", "b"),
        17: ("stdinOnce", "b"),
        18: ("tty", "b"),
        20: ("terminationMessagePolicy", "s"),
    },
    "ContainerPort": {
        1: ("name", "s"),
        2: ("hostPort", "i"),
        3: ("containerPort", "i"),
        4: ("protocol", "s"),
        5: ("hostIP", "s"),
    },
    "EnvVar": {1: ("name", "s"), 2: ("value", "s")},
    "ResourceRequirements": {1: ("limits", "mq"), 2: ("requests", "mq")},
    "Job": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec")},
    "JobSpec": {
        1: ("parallelism", "i?"),
        2: ("completions", "i?"),
        3: ("activeDeadlineSeconds", "i?"),
        4: ("selector", "LabelSelector"),
        5: ("manualSelector", "b?"),
        6: ("template", "PodTemplateSpec"),
        7: ("backoffLimit", "i?"),
        8: ("ttlSecondsAfterFinished", "i?"),
        9: ("completionMode", "s"),
        10: ("suspend", "b?"),
    },
    "CronJob": {1: ("metadata", "ObjectMeta"), 2: ("spec", "CronJobSpec")},
    "CronJobSpec": {
        1: ("schedule", "s"),
        2: ("startingDeadlineSeconds", "i?"),
        3: ("concurrencyPolicy", "s"),
        4: ("suspend", "b?"),
        5: ("jobTemplate", "JobTemplateSpec"),
        6: ("successfulJobsHistoryLimit", "i?"),
        7: ("failedJobsHistoryLimit", "i?"),
        8: ("timeZone", "s"),
    },
    "JobTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec")},
    "Service": {1: ("metadata", "ObjectMeta"), 2: ("spec", "ServiceSpec")},
    "ServiceSpec": {
        1: ("ports", "[ServicePort]"),
        2: ("selector", "ms"),
        3: ("clusterIP", "s"),
        4: ("type", "s"),
        10: ("externalName", "s"),
        18: ("clusterIPs", "[s]"),
    },
    "ServicePort": {
        1: ("name", "s"),
        2: ("protocol", "s"),
        3: ("port", "i"),
        4: ("targetPort", "ios"),
        5: ("nodePort", "i"),
    },
    "Role": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[PolicyRule]")},
    "ClusterRole": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[PolicyRule]")},
    "PolicyRule": {
        1: ("verbs", "[s]"),
        2: ("apiGroups", "[s]"),
        3: ("resources", "[s]"),
        4: ("resourceNames", "[s]"),
        5: ("nonResourceURLs", "[s]"),
    },
    "RoleBinding": {1: ("metadata", "ObjectMeta"), 2: ("subjects", "[Subject]"), 3: ("roleRef", "RoleRef")},
    "ClusterRoleBinding": {
        1: ("metadata", "ObjectMeta"),
        2: ("subjects", "[Subject]"),
        3: ("roleRef", "RoleRef"),
    },
    "Subject": {1: ("kind", "s"), 2: ("apiGroup", "s"), 3: ("name", "s"), 4: ("namespace", "s")},
    "RoleRef": {1: ("apiGroup", "s"), 2: ("kind", "s"), 3: ("name", "s")},
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", "s"),
        2: ("verb", "s"),
        3: ("group", "s"),
        4: ("version", "s"),
        5: ("resource", "s"),
        6: ("subresource", "s"),
        7: ("name", "s"),
    },
    "NonResourceAttributes": {1: ("path", "s"), 2: ("verb", "s")},
    "SelfSubjectRulesReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SelfSubjectRulesReviewSpec")},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "s")},
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta")},
}


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    pos, out = 0, []
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited string")
    return value.decode("utf-8")


def _map_entry(value: bytes, kind: str) -> tuple[str, Any]:
    key, item = "", b""
    for number, _, raw in _fields(value):
        if number == 1:
            key = _text(raw)
        elif number == 2:
            item = raw
    if kind == "ms":
        return key, _text(item) if item else ""
    if kind == "my":
        return key, base64.b64encode(item).decode()
    quantity = decode_message(item, {1: ("string", "s")}) if item else {}
    return key, quantity.get("string", "")


def _scalar(kind: str, value: Any) -> Any:
    if kind == "s":
        return _text(value)
    if kind == "i":
        return _signed(value)
    if kind == "b":
        return bool(value)
    if kind == "y":
        return value
    if kind == "ios":
        parts = decode_message(value, {1: ("type", "i"), 2: ("intVal", "i"), 3: ("strVal", "s")})
        return parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
    return decode_message(value, M[kind])


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False, b"") or value == {} or value == []


def decode_message(data: bytes, spec: dict[int, Field]) -> JSON:
    obj: JSON = {}
    for number, _, value in _fields(data):
        field = spec.get(number)
        if field is None:
            continue
        name, kind = field
        keep_zero = kind.endswith("?")
        kind = kind.rstrip("?")
        if kind in ("ms", "my", "mq"):
            key, item = _map_entry(value, kind)
            obj.setdefault(name, {})[key] = item
        elif kind.startswith("["):
            obj.setdefault(name, []).append(_scalar(kind[1:-1], value))
        else:
            decoded = _scalar(kind, value)
            if keep_zero or not _is_zero(decoded):
                obj[name] = decoded
    return obj


def decode(body: bytes) -> JSON:
    """A protobuf request body as the JSON object it stands for; ProtobufError when it cannot be read."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    envelope = decode_message(body[len(MAGIC) :], M["Unknown"])
    type_meta = envelope.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in M or kind in ("Unknown", "TypeMeta"):
        raise ProtobufError(f"protobuf decoding of kind {kind!r} is not supported")
    obj = {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind}
    obj.update(decode_message(envelope.get("raw", b""), M[kind]))
    return obj
