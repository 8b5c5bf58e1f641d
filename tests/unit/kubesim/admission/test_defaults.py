"""kubesim.admission.defaults: what kube-apiserver fills in for each type."""

from __future__ import annotations

import copy
from typing import Any

from kubesim.admission.defaults import apply_defaults
from kubesim.admission.defaults_pod import image_pull_policy, parse_quantity, qos_class

UID = "0b5b0e7e-1111-2222-3333-444455556666"


def _pod_spec() -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "c",
                "image": "busybox:1.36",
                "ports": [{"containerPort": 80}],
                "livenessProbe": {"httpGet": {"port": 80}},
            }
        ]
    }


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default", "uid": UID},
        "spec": {"template": {"spec": {**_pod_spec(), "restartPolicy": "Never"}}, **spec},
    }


def test_pod_defaults_admission_and_status() -> None:
    pod = {"metadata": {"name": "p"}, "spec": _pod_spec()}
    apply_defaults("pods", pod)
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["serviceAccountName"] == "default"
    assert spec["serviceAccount"] == "default"
    assert spec["tolerations"] == [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["resources"] == {}
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    again = copy.deepcopy(pod)
    apply_defaults("pods", again)
    assert again == pod, "defaulting is idempotent"


def test_pod_keeps_explicit_values_and_existing_tolerations() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            **_pod_spec(),
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],
        },
    }
    apply_defaults("pods", pod)
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 0
    assert pod["spec"]["priority"] == 2000001000
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_image_pull_policy() -> None:
    assert image_pull_policy("nginx") == "Always"
    assert image_pull_policy("nginx:latest") == "Always"
    assert image_pull_policy("localhost:5000/nginx") == "Always"
    assert image_pull_policy("localhost:5000/nginx:1.2") == "IfNotPresent"
    assert image_pull_policy("nginx@sha256:abc") == "IfNotPresent"


def test_qos_classes_and_requests_defaulted_from_limits() -> None:
    limits = {"cpu": "500m", "memory": "64Mi"}
    pod: dict[str, Any] = {
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": dict(limits)}}]}
    }
    apply_defaults("pods", pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == limits
    assert pod["status"]["qosClass"] == "Guaranteed"
    burstable = {"containers": [{"resources": {"requests": {"cpu": "100m"}}}]}
    assert qos_class(burstable) == "Burstable"
    equal_units = {
        "containers": [
            {
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1000m", "memory": "1024Mi"},
                }
            }
        ]
    }
    assert qos_class(equal_units) == "Guaranteed"
    assert parse_quantity("1.5Gi") == 1.5 * 2**30
    assert parse_quantity("bogus") is None


def test_job_defaults_and_generated_selector() -> None:
    job = _job()
    apply_defaults("jobs.batch", job)
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    expected_labels = {
        "job-name": "pi",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID,
        "batch.kubernetes.io/controller-uid": UID,
    }
    assert spec["template"]["metadata"]["labels"] == expected_labels
    assert job["metadata"]["labels"] == expected_labels
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 30
    assert "enableServiceLinks" not in spec["template"]["spec"], "SetDefaults_Pod is for pods only"
    assert "tolerations" not in spec["template"]["spec"]


def test_job_labels_come_from_user_template_labels_first() -> None:
    job = _job()
    job["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    apply_defaults("jobs.batch", job)
    assert job["metadata"]["labels"] == {"app": "pi"}
    assert job["spec"]["template"]["metadata"]["labels"]["app"] == "pi"
    assert job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == UID


def test_job_variants() -> None:
    work_queue = _job(parallelism=3)
    apply_defaults("jobs.batch", work_queue)
    assert "completions" not in work_queue["spec"]
    assert work_queue["spec"]["parallelism"] == 3
    per_index = _job(completions=4, completionMode="Indexed", backoffLimitPerIndex=1)
    apply_defaults("jobs.batch", per_index)
    assert per_index["spec"]["backoffLimit"] == 2**31 - 1
    with_policy = _job(
        podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    )
    apply_defaults("jobs.batch", with_policy)
    assert with_policy["spec"]["podReplacementPolicy"] == "Failed"
    assert with_policy["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    manual = _job(manualSelector=True, selector={"matchLabels": {"a": "b"}})
    apply_defaults("jobs.batch", manual)
    assert manual["spec"]["selector"] == {"matchLabels": {"a": "b"}}
    assert "labels" not in manual["spec"]["template"].get("metadata", {})


def test_job_status_leaves_out_empty_omitempty_fields_as_the_go_types_do() -> None:
    finished = _job()
    finished["status"] = {
        "active": 0,
        "succeeded": 1,
        "failed": 0,
        "ready": 0,
        "terminating": 0,
        "completedIndexes": "",
        "conditions": [],
        "uncountedTerminatedPods": {"succeeded": [], "failed": []},
    }
    apply_defaults("jobs.batch", finished)
    assert finished["status"] == {"succeeded": 1, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}
    running = _job()
    running["status"] = {"active": 2, "uncountedTerminatedPods": {"succeeded": ["a"], "failed": []}}
    apply_defaults("jobs.batch", running)
    assert running["status"] == {"active": 2, "uncountedTerminatedPods": {"succeeded": ["a"]}}
    pointers = _job()
    pointers["status"] = {"ready": 0, "terminating": 0}  # pointers upstream: their zeros are kept
    apply_defaults("jobs.batch", pointers)
    assert pointers["status"] == {"ready": 0, "terminating": 0}


def test_replicaset_and_deployment_defaults() -> None:
    template = {"metadata": {"labels": {"a": "b"}}, "spec": _pod_spec()}
    rs: dict[str, Any] = {
        "metadata": {"name": "r"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template},
    }
    apply_defaults("replicasets.apps", rs)
    assert rs["spec"]["replicas"] == 1
    assert rs["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert "labels" not in rs["metadata"], "apps/v1 does not copy template labels"
    deployment = copy.deepcopy(rs)
    apply_defaults("deployments.apps", deployment)
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert deployment["spec"]["revisionHistoryLimit"] == 10
    assert deployment["spec"]["progressDeadlineSeconds"] == 600
    recreate: dict[str, Any] = {"spec": {"strategy": {"type": "Recreate"}}}
    apply_defaults("deployments.apps", recreate)
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}


def test_cronjob_defaults() -> None:
    template = {"spec": {**_pod_spec(), "restartPolicy": "Never"}}
    cronjob: dict[str, Any] = {
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}
    }
    apply_defaults("cronjobs.batch", cronjob)
    spec = cronjob["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"


def test_namespace_service_secret_defaults() -> None:
    namespace: dict[str, Any] = {"metadata": {"name": "team-a"}}
    apply_defaults("namespaces", namespace)
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert namespace["status"] == {"phase": "Active"}
    assert "spec" not in namespace  # the `kubernetes` finalizer is the create strategy's, not a default
    service: dict[str, Any] = {
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"ports": [{"port": 80}]},
    }
    apply_defaults("services", service)
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["sessionAffinity"] == "None"
    assert service["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert service["spec"]["clusterIP"].startswith("10.96.")
    assert service["spec"]["clusterIPs"] == [service["spec"]["clusterIP"]]
    secret: dict[str, Any] = {"metadata": {"name": "s"}}
    apply_defaults("secrets", secret)
    assert secret["type"] == "Opaque"
    untouched = {"metadata": {"name": "cm"}}
    apply_defaults("configmaps", untouched)
    assert untouched == {"metadata": {"name": "cm"}}


def test_host_network_pods_get_host_ports() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {**_pod_spec(), "hostNetwork": True}}
    apply_defaults("pods", pod)
    assert pod["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP", "hostPort": 80}]
