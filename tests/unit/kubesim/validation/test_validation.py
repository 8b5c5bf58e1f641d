"""kubesim.validation: causes and messages as kube-apiserver words them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.admission.defaults import apply_defaults
from kubesim.schema import schemas
from kubesim.validation.common import DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG, go_repr
from kubesim.validation.job import parse_indexes
from kubesim.validation.objects import invalid_message, unknown_fields, validate, validate_status

UID = "11111111-2222-3333-4444-555555555555"
NOW = "2026-01-01T00:00:10Z"
EARLIER = "2026-01-01T00:00:00Z"


def _messages(causes: list[dict[str, Any]]) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in causes]


def _pod(**spec: Any) -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }
    apply_defaults("pods", pod)
    return pod


def _job(**spec: Any) -> dict[str, Any]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default", "uid": UID},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
            },
            **spec,
        },
    }
    apply_defaults("jobs.batch", job)
    return job


def _rs(labels: dict[str, str], selector: dict[str, Any] | None) -> dict[str, Any]:
    rs: dict[str, Any] = {
        "metadata": {"name": "r", "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            }
        },
    }
    if selector is not None:
        rs["spec"]["selector"] = selector
    apply_defaults("replicasets.apps", rs)
    return rs


def test_valid_objects_have_no_causes() -> None:
    assert validate("pods", _pod(), None) == []
    assert validate("jobs.batch", _job(), None) == []
    assert validate("replicasets.apps", _rs({"a": "b"}, {"matchLabels": {"a": "b"}}), None) == []


def test_name_messages_exactly_as_the_reference() -> None:
    pod = _pod()
    pod["metadata"]["name"] = "Bad_Name"
    causes = validate("pods", pod, None)
    assert causes == [
        {
            "reason": "FieldValueInvalid",
            "field": "metadata.name",
            "message": f'Invalid value: "Bad_Name": {DNS1123_SUBDOMAIN_MSG}',
        }
    ]
    assert invalid_message("Pod", "Bad_Name", causes) == (
        'Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    namespace = {"metadata": {"name": "a.b"}}
    assert _messages(validate("namespaces", namespace, None)) == [
        f'metadata.name: Invalid value: "a.b": {DNS1123_LABEL_MSG}'
    ]
    long_name = {"metadata": {"name": "x" * 64}}
    assert _messages(validate("namespaces", long_name, None)) == [
        f'metadata.name: Invalid value: "{"x" * 64}": must be no more than 63 characters'
    ]
    assert _messages(
        validate("services", {"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}, None)
    )[0].startswith('metadata.name: Invalid value: "1svc": a DNS-1035 label')
    assert (
        validate("roles.rbac.authorization.k8s.io", {"metadata": {"name": "system:controller:x"}}, None) == []
    )


def test_name_or_generate_name_required_and_generate_name_checked() -> None:
    assert validate("configmaps", {"metadata": {}}, None) == [
        {
            "reason": "FieldValueRequired",
            "field": "metadata.name",
            "message": "Required value: name or generateName is required",
        }
    ]
    assert validate("configmaps", {"metadata": {"generateName": "web-"}}, None) == []
    causes = validate("configmaps", {"metadata": {"generateName": "Web-"}}, None)
    assert [c["field"] for c in causes] == ["metadata.generateName"]


def test_label_and_annotation_messages() -> None:
    obj = {
        "metadata": {
            "name": "x",
            "labels": {"bad key!": "v", "ok": "bad value!", "a/b/c": "x"},
            "annotations": {"-bad": "x"},
        }
    }
    messages = _messages(validate("configmaps", obj, None))
    assert messages[0].startswith(
        'metadata.labels: Invalid value: "bad key!": name part must consist of '
        "alphanumeric characters, '-', '_' or '.'"
    )
    assert messages[1].startswith(
        'metadata.labels: Invalid value: "bad value!": a valid label must be an empty '
        "string or consist of alphanumeric characters"
    )
    assert messages[2].startswith('metadata.labels: Invalid value: "a/b/c": a qualified name must consist of')
    assert messages[2].endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
    assert messages[3].startswith('metadata.annotations: Invalid value: "-bad": name part must consist of')
    too_long_value = {"metadata": {"name": "x", "labels": {"k": "v" * 64}}}
    assert _messages(validate("configmaps", too_long_value, None)) == [
        f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 characters'
    ]


def test_owner_references_messages() -> None:
    refs = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "b", "uid": "2", "controller": True},
        {"apiVersion": "", "kind": "", "name": "", "uid": ""},
    ]
    messages = _messages(validate("configmaps", {"metadata": {"name": "x", "ownerReferences": refs}}, None))
    assert messages == [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
        "metadata.ownerReferences: Invalid value: Only one reference can have Controller set to true. Found "
        '"true" in references for Job/a and Job/b',
    ]


def test_pod_messages() -> None:
    no_containers = _pod()
    no_containers["spec"]["containers"] = []
    assert _messages(validate("pods", no_containers, None)) == ["spec.containers: Required value"]
    bad = _pod(restartPolicy="Sometimes")
    bad["spec"]["containers"] = [
        {"name": "c", "image": "", "imagePullPolicy": "Always"},
        {"name": "c", "image": "i", "imagePullPolicy": "Always"},
        {"image": "i", "imagePullPolicy": "Always"},
    ]
    assert _messages(validate("pods", bad, None)) == [
        "spec.containers[0].image: Required value",
        'spec.containers[1].name: Duplicate value: "c"',
        "spec.containers[2].name: Required value",
        'spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never"',
    ]


def test_pod_update_is_restricted() -> None:
    old = _pod()
    image_change = copy.deepcopy(old)
    image_change["spec"]["containers"][0]["image"] = "busybox:2"
    assert validate("pods", image_change, old) == []
    bind = copy.deepcopy(old)
    bind["spec"]["nodeName"] = "node-1"
    assert validate("pods", bind, old) == []
    other = copy.deepcopy(old)
    other["spec"]["restartPolicy"] = "Never"
    causes = validate("pods", other, old)
    assert [(c["field"], c["reason"]) for c in causes] == [("spec", "FieldValueForbidden")]
    assert causes[0]["message"].startswith("Forbidden: pod updates may not change fields other than")


def test_replicaset_selector_messages() -> None:
    mismatch = _rs({"app": "x", "b": "y"}, {"matchLabels": {"app": "other"}})
    causes = validate("replicasets.apps", mismatch, None)
    assert _messages(causes) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x", '
        '"b":"y"}: `selector` does not match template `labels`'
    ]
    assert _messages(validate("replicasets.apps", _rs({"a": "b"}, None), None)) == [
        "spec.selector: Required value"
    ]
    assert _messages(validate("replicasets.apps", _rs({"a": "b"}, {}), None)) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"
    ]
    negative = _rs({"a": "b"}, {"matchLabels": {"a": "b"}})
    negative["spec"]["replicas"] = -1
    negative["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert _messages(validate("replicasets.apps", negative, None)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]
    old = _rs({"a": "b"}, {"matchLabels": {"a": "b"}})
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"a": "b", "c": "d"}}
    new["spec"]["template"]["metadata"]["labels"]["c"] = "d"
    assert [c["field"] for c in validate("replicasets.apps", new, old)] == ["spec.selector"]


def test_job_spec_messages() -> None:
    job = _job(parallelism=-1, completions=-2, backoffLimit=-3)
    assert _messages(validate("jobs.batch", job, None)) == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        "spec.completions: Invalid value: -2: must be greater than or equal to 0",
        "spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
    ]
    always = _job()
    always["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert _messages(validate("jobs.batch", always, None)) == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
    ]
    assert _messages(validate("jobs.batch", _job(completionMode="Sometimes"), None)) == [
        'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'
    ]
    assert _messages(validate("jobs.batch", _job(backoffLimitPerIndex=1), None)) == [
        "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"
    ]
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}
    on_failure = _job(podFailurePolicy=policy)
    on_failure["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert _messages(validate("jobs.batch", on_failure, None)) == [
        'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when '
        "podFailurePolicy is specified"
    ]
    assert _messages(validate("jobs.batch", _job(managedBy="x" * 70), None)) == [
        f'spec.managedBy: Invalid value: "{"x" * 70}": '
        'must be a domain-prefixed path (such as "acme.io/foo")',
        "spec.managedBy: Too long: may not be longer than 63",
    ]
    assert validate("jobs.batch", _job(managedBy="kueue.x-k8s.io/manager"), None) == []


def test_job_selector_messages() -> None:
    manual = _job(manualSelector=True, selector={"matchLabels": {"app": "other"}})
    manual["spec"]["template"]["metadata"] = {"labels": {"app": "mine"}}
    assert _messages(validate("jobs.batch", manual, None)) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"mine"}: `selector` does not '
        "match template `labels`"
    ]
    wrong_uid = _job()
    wrong_uid["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] = "other"
    fields = [c["field"] for c in validate("jobs.batch", wrong_uid, None)]
    assert "spec.selector" in fields


def test_job_update_immutability() -> None:
    old = _job()
    new = copy.deepcopy(old)
    new["spec"]["completionMode"] = "Indexed"
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    assert [c["field"] for c in validate("jobs.batch", new, old)] == ["spec.completionMode", "spec.template"]
    assert validate("jobs.batch", copy.deepcopy(old), old) == []
    suspended = _job(suspend=True)
    relabelled = copy.deepcopy(suspended)
    relabelled["spec"]["template"]["metadata"]["annotations"] = {"x": "y"}
    relabelled["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert validate("jobs.batch", relabelled, suspended) == []
    parallel = copy.deepcopy(old)
    parallel["spec"]["parallelism"] = 5
    assert validate("jobs.batch", parallel, old) == []


def _status(job: dict[str, Any], **status: Any) -> dict[str, Any]:
    new = copy.deepcopy(job)
    new["status"] = status
    return new


def _cond(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True"}


def test_job_status_rules() -> None:
    running = _status(_job(), startTime=EARLIER, active=1)
    good = _status(
        running,
        startTime=EARLIER,
        completionTime=NOW,
        succeeded=1,
        conditions=[_cond("SuccessCriteriaMet"), _cond("Complete")],
    )
    assert validate_status("jobs.batch", good, running) == []
    cases = {
        "cannot set Complete=True condition without the SuccessCriteriaMet=true condition": _status(
            running, startTime=EARLIER, completionTime=NOW, conditions=[_cond("Complete")]
        ),
        "cannot set Failed=True condition without the FailureTarget=true condition": _status(
            running, startTime=EARLIER, conditions=[_cond("Failed")]
        ),
        "cannot set Complete=True and Failed=true conditions": _status(
            running,
            startTime=EARLIER,
            completionTime=NOW,
            conditions=[
                _cond("SuccessCriteriaMet"),
                _cond("Complete"),
                _cond("FailureTarget"),
                _cond("Failed"),
            ],
        ),
    }
    for message, new in cases.items():
        messages = [c["message"] for c in validate_status("jobs.batch", new, running)]
        assert f"Invalid value: {message}" in messages, (message, messages)
    no_time = _status(running, startTime=EARLIER, conditions=[_cond("SuccessCriteriaMet"), _cond("Complete")])
    assert "status.completionTime: Required value: completionTime is required for Complete jobs" in _messages(
        validate_status("jobs.batch", no_time, running)
    )
    active = _status(
        running,
        startTime=EARLIER,
        active=1,
        completionTime=NOW,
        conditions=[_cond("SuccessCriteriaMet"), _cond("Complete")],
    )
    assert "status.active: Invalid value: 1: active>0 is invalid for finished job" in _messages(
        validate_status("jobs.batch", active, running)
    )
    ready = _status(running, startTime=EARLIER, active=1, ready=2)
    assert _messages(validate_status("jobs.batch", ready, running)) == [
        "status.ready: Invalid value: 2: cannot set more ready pods than active"
    ]
    decreasing = _status(_status(running, startTime=EARLIER, failed=3), startTime=EARLIER, failed=1)
    assert _messages(
        validate_status("jobs.batch", decreasing, _status(running, startTime=EARLIER, failed=3))
    ) == ["status.failed: Invalid value: 1: cannot decrease the failed counter"]
    reopened = _status(running, startTime=EARLIER)
    assert (
        "status.conditions: Invalid value: cannot disable the terminal Complete=True condition"
        in _messages(validate_status("jobs.batch", reopened, good))
    )


def test_job_status_rules_only_fire_on_changed_fields() -> None:
    inconsistent = _status(_job(), startTime=EARLIER, active=1, ready=3)
    bumped = _status(inconsistent, startTime=EARLIER, active=1, ready=3, failed=1)
    assert validate_status("jobs.batch", bumped, inconsistent) == []


def test_indexes_format() -> None:
    assert parse_indexes("0,2-4,7", 8) == ([(0, 0), (2, 4), (7, 7)], None)
    assert parse_indexes("3,1", 8)[1] == "non-increasing order, previous: 3, current: 1"
    assert parse_indexes("9", 8)[1] == 'too large index: "9"'
    assert parse_indexes("a", 8)[1] == 'cannot convert string to integer for index: "a"'
    indexed = _job(completions=4, parallelism=4, completionMode="Indexed")
    bad = _status(indexed, completedIndexes="5")
    assert _messages(validate_status("jobs.batch", bad, indexed)) == [
        'status.completedIndexes: Invalid value: "5": error parsing completedIndexes: too large index: "5"'
    ]


def test_lease_and_events() -> None:
    lease = {
        "metadata": {"name": "aiokcm", "namespace": "kube-system"},
        "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1},
    }
    assert _messages(validate("leases.coordination.k8s.io", lease, None)) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    ]
    untimed = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "regarding": {"kind": "Pod", "namespace": "other", "name": "p"},
        "type": "Odd",
        "deprecatedCount": 3,
    }
    assert _messages(validate("events", untimed, None)) == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace',
        "eventTime: Required value",
        'type: Invalid value: "": has invalid value: Odd',
        'deprecatedCount: Invalid value: "": needs to be unset',
    ]
    timed = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "team"},
        "regarding": {"kind": "Node", "name": "n"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "type": "Normal",
        "reportingController": "",
        "reportingInstance": "x" * 129,
        "action": "",
        "reason": "R",
    }
    assert _messages(validate("events", timed, None)) == [
        'involvedObject.namespace: Invalid value: "": does not match event.namespace',
        "reportingController: Required value",
        'reportingController: Invalid value: "": name part must be non-empty',
        'reportingInstance: Invalid value: "": can have at most 128 characters',
        "action: Required value",
    ]
    core_timed = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingInstance": "i",
        "action": "a",
        "reason": "r",
    }
    assert _messages(validate("events", core_timed, None)) == [
        "reportingComponent: Required value",
        'reportingComponent: Invalid value: "": name part must be non-empty',
    ]
    legacy = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "x",
    }
    assert validate("events", legacy, None) == []


def test_crd_basics() -> None:
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    key = "customresourcedefinitions.apiextensions.k8s.io"
    assert validate(key, crd, None) == []
    bad: dict[str, Any] = copy.deepcopy(crd)
    bad["spec"]["group"] = "example"
    bad["spec"]["scope"] = "Galaxy"
    assert _messages(validate(key, bad, None)) == [
        'metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "example": should be a domain with at least one dot',
        'spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"',
    ]


def test_invalid_message_list_form() -> None:
    causes = [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"},
        {"reason": "FieldValueInvalid", "message": "Invalid value: 1: x", "field": "spec.b"},
    ]
    assert (
        invalid_message("Job.batch", "j", causes)
        == 'Job.batch "j" is invalid: [spec.a: Required value, spec.b: Invalid value: 1: x]'
    )


def test_unknown_fields_from_schemas() -> None:
    pod = _pod()
    pod["spec"]["foo"] = 1
    pod["spec"]["containers"][0]["bar"] = {"x": 1}
    pod["metadata"]["labels"] = {"any": "label"}
    assert unknown_fields(("", "v1", "Pod"), pod) == [".spec.containers[0].bar", ".spec.foo"]
    assert unknown_fields(("", "v1", "Pod"), _pod()) == []
    gvk = ("example.com", "v1", "Widget")
    schemas.register_crd_schema(
        gvk,
        {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    )
    try:
        widget = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "bogus": 1},
            "spec": {"size": 1, "colour": "red"},
            "status": {"anything": True},
        }
        assert unknown_fields(gvk, widget) == [".metadata.bogus", ".spec.colour"]
        schemas.register_crd_schema(gvk, {"type": "object", "properties": {"spec": {"type": "object"}}})
        assert unknown_fields(gvk, widget) == [".metadata.bogus", ".spec.size", ".spec.colour", ".status"]
    finally:
        schemas.unregister_crd_schema(gvk)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('a"b', '"a\\"b"'),
        (3, "3"),
        (True, "true"),
        (None, "null"),
        ({}, "map[string]string(nil)"),
    ],
)
def test_go_repr(value: Any, expected: str) -> None:
    assert go_repr(value) == expected


def test_custom_resources_follow_their_crd_schema() -> None:
    gvk = ("example.com", "v1", "Widget")
    schemas.register_crd_schema(
        gvk,
        {
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "colour": {"type": "string", "enum": ["red", "blue"]},
                        "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                        "port": {"x-kubernetes-int-or-string": True},
                        "tags": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
                        "mode": {"type": "string", "default": "fast"},
                    },
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            },
        },
    )
    try:

        def widget(**spec: Any) -> dict[str, Any]:
            return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}

        assert validate("widgets.example.com", widget(size=3, port="http"), None) == []
        assert _messages(validate("widgets.example.com", widget(size="3"), None)) == [
            'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"'
        ]
        assert _messages(
            validate(
                "widgets.example.com", widget(size=0, colour="green", name="ABCDEF", tags=["a", "b"]), None
            )
        ) == [
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
            'spec.colour: Unsupported value: "green": supported values: "red", "blue"',
            "spec.name: Too long: may not be longer than 5",
            "spec.name: Invalid value: \"ABCDEF\": spec.name in body should match '^[a-z]+$'",
            "spec.tags: Too many: 2: must have at most 1 items",
        ]
        assert _messages(validate("widgets.example.com", widget(), None)) == ["spec.size: Required value"]
        missing_spec = widget()
        del missing_spec["spec"]
        assert _messages(validate("widgets.example.com", missing_spec, None)) == ["spec: Required value"]
        bad_status = widget(size=1)
        bad_status["status"] = {"ready": "yes"}
        assert [c["field"] for c in validate_status("widgets.example.com", bad_status, widget(size=1))] == [
            "status.ready"
        ]
        defaulted = widget(size=1)
        apply_defaults("widgets.example.com", defaulted)
        assert defaulted["spec"]["mode"] == "fast"
    finally:
        schemas.unregister_crd_schema(gvk)


def test_custom_objects_without_object_rules_still_check_their_fields() -> None:
    gvk = ("example.com", "v1", "Gadget")
    schemas.register_crd_schema(
        gvk,
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "inner": {
                            "type": "object",
                            "properties": {
                                "deep": {"type": "object", "required": ["x"]},
                                "n": {"type": "integer"},
                            },
                        },
                        "counts": {
                            "type": "object",
                            "additionalProperties": {"type": "integer", "minimum": 0},
                        },
                        "plain": {"type": "string"},
                    },
                }
            },
        },
    )
    try:

        def gadget(**spec: Any) -> dict[str, Any]:
            return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec}

        resource = "gadgets.example.com"
        assert (
            validate(resource, gadget(plain="p", inner={"n": 1, "deep": {"x": 1}}, counts={"a": 0}), None)
            == []
        )
        assert _messages(
            validate(resource, gadget(inner={"n": "1", "deep": {}}, counts={"a": -1}), None)
        ) == [
            'spec.inner.n: Invalid value: "string": spec.inner.n in body must be of type integer: "string"',
            "spec.inner.deep.x: Required value",
            "spec.counts.a: Invalid value: -1: spec.counts.a in body should be greater than or equal to 0",
        ]
        assert _messages(validate(resource, gadget(inner=[1], plain=2), None)) == [
            'spec.inner: Invalid value: "array": spec.inner in body must be of type object: "array"',
            'spec.plain: Invalid value: "integer": spec.plain in body must be of type string: "integer"',
        ]
    finally:
        schemas.unregister_crd_schema(gvk)


def test_managed_fields_entries_are_checked() -> None:
    obj = {
        "metadata": {
            "name": "x",
            "managedFields": [
                {"manager": "m", "operation": "Patch", "fieldsType": "FieldsV2"},
                {"manager": "m", "operation": "Update", "fieldsType": "FieldsV1"},
            ],
        }
    }
    assert _messages(validate("configmaps", obj, None)) == [
        'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`',
        'metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`',
    ]


def test_long_job_name_fails_on_the_template_labels() -> None:
    job = _job()
    name = "j" * 64
    job["metadata"]["name"] = name
    job["spec"]["template"]["metadata"]["labels"]["job-name"] = name
    job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] = name
    messages = _messages(validate("jobs.batch", job, None))
    assert f'spec.template.labels: Invalid value: "{name}": must be no more than 63 characters' in messages


def test_config_map_keys() -> None:
    cm = {
        "metadata": {"name": "c"},
        "data": {"ok.key": "1", "bad key": "2"},
        "binaryData": {"ok.key": "eA=="},
    }
    assert _messages(validate("configmaps", cm, None)) == [
        'data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric '
        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
        "validation is '[-._a-zA-Z0-9]+')",
        'binaryData: Invalid value: "ok.key": duplicate of key present in data',
    ]


def test_replica_set_status_counters() -> None:
    old = _rs({"a": "b"}, {"matchLabels": {"a": "b"}})
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 3, "availableReplicas": 1}
    assert _messages(validate_status("replicasets.apps", new, old)) == [
        "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas"
    ]
    new["status"] = {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2, "observedGeneration": -1}
    assert _messages(validate_status("replicasets.apps", new, old)) == [
        "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
        "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas",
    ]
