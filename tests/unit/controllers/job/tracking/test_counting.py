"""Conditions (ensureJobConditionStatus), pod counting and the uncountedTerminatedPods bookkeeping."""

from __future__ import annotations

from typing import Any

from controllers.job.conditions import SUSPENDED, ensure_condition, is_job_finished
from controllers.job.indexed.intervals import COMPLETION_INDEX_KEY, Intervals
from controllers.job.indexed.state import (
    pods_with_delayed_deletion,
    replacement_failure_counts,
    succeeded_indexes,
)
from controllers.job.spec import TRACKING_FINALIZER
from controllers.job.tracking.counting import (
    clean_uncounted,
    is_pod_failed,
    new_finished_pods,
    past_backoff_limit_on_failure,
    plan_tracking,
    uncounted_sets,
)

T0 = 1_800_000_000.0


def job(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"template": {"spec": {}}, **spec},
        "status": {},
    }


def pod(
    uid: str, phase: str, *, finalizer: bool = True, index: int | None = None, **meta: Any
) -> dict[str, Any]:
    annotations = {} if index is None else {COMPLETION_INDEX_KEY: str(index)}
    return {
        "metadata": {
            "uid": uid,
            "name": uid,
            "namespace": "ns",
            "finalizers": [TRACKING_FINALIZER] if finalizer else [],
            "annotations": annotations,
            **meta,
        },
        "status": {"phase": phase},
    }


def test_ensure_condition_semantics() -> None:
    conds: list[dict[str, Any]] = []
    assert not ensure_condition(conds, SUSPENDED, "False", "JobResumed", "Job resumed", T0)
    assert conds == []  # a False condition is never appended
    assert ensure_condition(conds, SUSPENDED, "True", "JobSuspended", "Job suspended", T0)
    assert conds[0]["lastProbeTime"] == conds[0]["lastTransitionTime"] == "2027-01-15T08:00:00Z"
    assert not ensure_condition(conds, SUSPENDED, "True", "JobSuspended", "Job suspended", T0 + 5)
    assert ensure_condition(conds, SUSPENDED, "False", "JobResumed", "Job resumed", T0 + 5)
    assert len(conds) == 1 and conds[0]["status"] == "False" and conds[0]["reason"] == "JobResumed"
    assert conds[0]["lastTransitionTime"] == "2027-01-15T08:00:05Z"


def test_is_job_finished() -> None:
    j = job()
    assert not is_job_finished(j)
    j["status"]["conditions"] = [{"type": "FailureTarget", "status": "True"}]
    assert not is_job_finished(j)
    j["status"]["conditions"].append({"type": "Failed", "status": "True"})
    assert is_job_finished(j)


def test_pod_failed_depends_on_replacement_policy() -> None:
    deleting = pod("a", "Running", deletionTimestamp="2027-01-01T00:00:00Z")
    assert is_pod_failed(deleting, job())
    assert not is_pod_failed(deleting, job(podReplacementPolicy="Failed"))
    assert not is_pod_failed(deleting, job(podFailurePolicy={"rules": []}))
    assert is_pod_failed(pod("b", "Failed"), job(podReplacementPolicy="Failed"))
    assert not is_pod_failed(pod("c", "Succeeded", deletionTimestamp="x"), job())


def test_new_finished_pods_skips_counted_and_expected() -> None:
    j = job()
    j["status"]["uncountedTerminatedPods"] = {"succeeded": ["s1"], "failed": ["f1"]}
    pods = [
        pod("s1", "Succeeded"),
        pod("s2", "Succeeded"),
        pod("s3", "Succeeded", finalizer=False),
        pod("f1", "Failed"),
        pod("f2", "Failed"),
        pod("f3", "Failed"),
        pod("r", "Running"),
    ]
    succeeded, failed = new_finished_pods(j, pods, uncounted_sets(j["status"]), {"f3"})
    assert [p["metadata"]["uid"] for p in succeeded] == ["s2"]
    assert [p["metadata"]["uid"] for p in failed] == ["f2"]


def test_protocol_never_counts_twice() -> None:
    j = job(completions=3)
    status: dict[str, Any] = {"succeeded": 0, "failed": 0}
    pods = [pod("s1", "Succeeded"), pod("f1", "Failed"), pod("r", "Running")]
    plan = plan_tracking(
        j, status, pods, uncounted=(set(), set()), expected_rm=set(), finishing=False,
        prev_succeeded=Intervals(), delayed_per_index={},
    )  # fmt: skip
    assert plan.changed
    assert status["uncountedTerminatedPods"] == {"succeeded": ["s1"], "failed": ["f1"]}
    assert [p["metadata"]["uid"] for p in plan.remove_finalizer] == ["s1", "f1"]
    # a restart after the flush but before finalizer removal: same pods, recorded UIDs are not added again
    j["status"] = status
    again = plan_tracking(
        j, status, pods, uncounted=uncounted_sets(status), expected_rm=set(), finishing=False,
        prev_succeeded=Intervals(), delayed_per_index={},
    )  # fmt: skip
    assert not again.changed
    assert status["uncountedTerminatedPods"] == {"succeeded": ["s1"], "failed": ["f1"]}
    # finalizers removed: uncounted UIDs move into the counters exactly once
    assert clean_uncounted(status, {"r"})
    assert status["succeeded"] == 1 and status["failed"] == 1
    assert status["uncountedTerminatedPods"] == {"succeeded": [], "failed": []}
    assert not clean_uncounted(status, {"r"})


def test_finishing_counts_unfinished_pods_as_failed() -> None:
    j = job()
    status: dict[str, Any] = {}
    pods = [pod("r", "Running"), pod("s", "Succeeded"), pod("gone", "Running", finalizer=False)]
    plan = plan_tracking(
        j, status, pods, uncounted=(set(), set()), expected_rm=set(), finishing=True,
        prev_succeeded=Intervals(), delayed_per_index={},
    )  # fmt: skip
    assert status["uncountedTerminatedPods"] == {"succeeded": ["s"], "failed": ["r"]}
    assert len(plan.remove_finalizer) == 2


def test_ignored_failures_not_counted() -> None:
    j = job(
        podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    )
    p = pod("f", "Failed")
    p["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    status: dict[str, Any] = {}
    plan = plan_tracking(
        j, status, [p], uncounted=(set(), set()), expected_rm=set(), finishing=False,
        prev_succeeded=Intervals(), delayed_per_index={},
    )  # fmt: skip
    assert status["uncountedTerminatedPods"]["failed"] == []
    assert plan.policy_actions["Ignore"] == 1 and len(plan.remove_finalizer) == 1


def test_indexed_succeeded_by_index_and_delayed_failed_pod() -> None:
    j = job(completionMode="Indexed", completions=4, backoffLimitPerIndex=2)
    j["status"]["completedIndexes"] = "0"
    pods = [
        pod("s0", "Succeeded", index=0),
        pod("s2", "Succeeded", index=2),
        pod("s2b", "Succeeded", index=2),
        pod("f1", "Failed", index=1),
        pod("bad", "Succeeded", index=9),
    ]
    prev, cur = succeeded_indexes(j, pods)
    assert str(prev) == "0" and str(cur) == "0,2"
    delayed = pods_with_delayed_deletion(j, pods, succeeded=cur, failed=Intervals(), expected_rm=set())
    assert list(delayed) == [1]
    status: dict[str, Any] = {}
    plan = plan_tracking(
        j, status, pods, uncounted=(set(), set()), expected_rm=set(), finishing=False,
        prev_succeeded=prev, delayed_per_index=delayed,
    )  # fmt: skip
    assert plan.new_succeeded_indexes == [2, 2]
    assert {p["metadata"]["uid"] for p in plan.remove_finalizer} == {"s0", "s2", "s2b", "bad"}
    assert status["uncountedTerminatedPods"] == {"succeeded": [], "failed": []}
    assert replacement_failure_counts(j, delayed[1]) == (1, 0)


def test_on_failure_restart_counts() -> None:
    j = job(backoffLimit=2)
    j["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    running = pod("r", "Running")
    running["status"]["containerStatuses"] = [{"name": "m", "restartCount": 1}]
    assert not past_backoff_limit_on_failure(j, [running])
    running["status"]["initContainerStatuses"] = [{"name": "i", "restartCount": 1}]
    assert past_backoff_limit_on_failure(j, [running])  # >= backoffLimit
    j["spec"]["backoffLimit"] = 0
    running["status"]["initContainerStatuses"] = []
    assert past_backoff_limit_on_failure(j, [running])  # > 0 when the limit is 0
