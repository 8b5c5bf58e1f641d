"""The chaos run's pure parts, without processes: the schedule, the invariants, the leadership judge."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.chaos import workload
from tests.chaos.invariants import ClusterState, jobs_running_during, unfinished
from tests.chaos.leadership import (
    LeaseTimeline,
    SocketOwners,
    WriteAudit,
    parse_micro_time,
    split_brain_windows,
)
from tests.chaos.schedule import DISRUPTIONS, LEASE_DURATION, build_schedule

Obj = dict[str, Any]
_uids = itertools.count(1)


def test_the_same_seed_gives_the_same_schedule() -> None:
    first = build_schedule(7, 60, restart_supported=True)
    assert first == build_schedule(7, 60, restart_supported=True)
    assert first != build_schedule(8, 60, restart_supported=True)
    assert all(a.at <= b.at for a, b in itertools.pairwise(first))
    assert {s.action for s in first} >= {
        "pause_leader",
        "kill_manager",
        "pause_apiserver",
        "restart_apiserver",
    }


def test_restarts_are_left_out_without_a_durable_kubesim_and_disruptions_never_overlap() -> None:
    steps = build_schedule(3, 120, restart_supported=False)
    disruptions = [s for s in steps if s.action in DISRUPTIONS]
    assert "restart_apiserver" not in {s.action for s in steps}
    for before, after in itertools.pairwise(disruptions):
        busy = before.params.get("seconds", 0) + (LEASE_DURATION if before.action == "pause_leader" else 0)
        assert after.at >= before.at + busy, (before, after)
    assert all(s.at < 120 for s in steps)
    with pytest.raises(ValueError, match="positive"):
        build_schedule(1, 0, restart_supported=False)


def _meta(name: str, rv: int, owner: str | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}", "resourceVersion": str(rv), **extra}
    if owner is not None:
        meta["ownerReferences"] = [{"uid": owner, "controller": True}]
    return meta


def _pod(name: str, rv: int, owner: str, phase: str = "Running", index: str | None = None) -> Obj:
    annotations = {} if index is None else {"batch.kubernetes.io/job-completion-index": index}
    return {"metadata": _meta(name, rv, owner, annotations=annotations), "status": {"phase": phase}}


def test_a_job_over_its_parallelism_or_with_an_index_twice_is_reported() -> None:
    state = ClusterState()
    job = {
        "metadata": _meta("j", 1, labels={"chaos/kind": "indexed"}),
        "spec": workload.job("j", "indexed")["spec"],
    }
    state.apply("jobs", "ADDED", job)
    assert state.apply("pods", "ADDED", _pod("p0", 2, "uid-j", index="0")) == []
    assert state.apply("pods", "ADDED", _pod("p1", 3, "uid-j", index="1")) == []
    problems = state.apply("pods", "ADDED", _pod("p2", 4, "uid-j", index="1"))
    assert problems == [
        "Job j: 3 live pods over parallelism 2",
        "Job j: two live pods for index ['1']",
    ]
    # a terminating pod beyond parallelism is allowed, as upstream allows it
    deleting = _pod("p2", 5, "uid-j", index="1")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert state.apply("pods", "MODIFIED", deleting) == []


def _rs(replicas: int, rv: int, status_replicas: int) -> Obj:
    return {
        "metadata": _meta(workload.REPLICASET, rv, generation=rv),
        "spec": {"replicas": replicas},
        "status": {"replicas": status_replicas, "observedGeneration": rv},
    }


def _deleting(pod: Obj) -> Obj:
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


def test_a_replicaset_scale_down_binds_the_pods_once_the_pod_stream_has_passed_it() -> None:
    state = ClusterState()
    state.apply("replicasets", "ADDED", _rs(3, 1, 3))
    for n in range(3):
        assert state.apply("pods", "ADDED", _pod(f"p{n}", 2 + n, "uid-rs-scaled")) == []
    state.apply("replicasets", "MODIFIED", _rs(2, 6, 3))  # asked, not settled
    state.apply("replicasets", "MODIFIED", _rs(2, 10, 2))  # settled at rv 10, once p2 went at rv 8
    # a pod event older than the settled status: its deletions may not have reached the test yet
    assert state.apply("pods", "MODIFIED", _pod("p0", 7, "uid-rs-scaled")) == []
    assert state.apply("pods", "MODIFIED", _deleting(_pod("p2", 8, "uid-rs-scaled"))) == []
    # a pod made after the settled scale-down with no scale-up asking for it
    assert state.apply("pods", "ADDED", _pod("p3", 11, "uid-rs-scaled")) == []  # ahead of the ReplicaSets
    assert state.progress("replicasets", 12) == [
        "ReplicaSet rs-scaled: 3 live pods, at most 2 allowed (p0, p1, p3)"
    ]


def _y_rs(rv: int, replicas: int, generation: int, observed: int, status_replicas: int) -> Obj:
    return {
        "metadata": _meta("web-7d4c99495f", rv, generation=generation),
        "spec": {"replicas": replicas},
        "status": {"replicas": status_replicas, "observedGeneration": observed},
    }


def _y_pod(name: str, rv: int) -> Obj:
    return _pod(name, rv, "uid-web-7d4c99495f")


def test_a_status_counting_a_lagging_cache_does_not_bound_the_pods_created_before_it() -> None:
    # seed 197543 ("web-7d4c99495f: 3 live pods, at most 2 allowed"), as the likeliest story: the ReplicaSet
    # was scaled to 3 and its third pod created; the Deployment scaled it back to 2 (its pods not all
    # available) before that pod reached the ReplicaSet controller's cache (pod events behind ReplicaSet
    # events: a new leader's first burst, or a cut watch), and the controller, waiting for the pod
    # (expectations), wrote status replicas 2 for spec 2 from its cache. The pod is the cluster's third until
    # the controller sees it and deletes one: upstream allows it.
    state = ClusterState()
    state.apply("replicasets", "MODIFIED", _y_rs(100, 2, 2, 2, 2))  # settled at 2
    assert state.apply("pods", "ADDED", _y_pod("p0", 50)) == []
    assert state.apply("pods", "ADDED", _y_pod("p1", 90)) == []
    state.apply("replicasets", "MODIFIED", _y_rs(110, 3, 3, 2, 2))
    assert state.apply("pods", "ADDED", _y_pod("p2", 111)) == []
    state.apply("replicasets", "MODIFIED", _y_rs(112, 3, 3, 3, 2))  # the cache lacks p2
    assert state.apply("replicasets", "MODIFIED", _y_rs(120, 2, 4, 3, 2)) == []
    assert state.apply("replicasets", "MODIFIED", _y_rs(121, 2, 4, 4, 2)) == []  # "settled": p2 unseen
    assert state.apply("pods", "MODIFIED", _y_pod("p2", 122)) == []  # ahead of the ReplicaSet stream
    assert state.progress("replicasets", 123) == []  # three pods made before rv 121 refute its 2
    # reported aside, with what it was judged by: the refuted status (s!), each pod's creation
    [(excused, evidence)] = state.excused.items()
    assert excused == "ReplicaSet web-7d4c99495f: 3 live pods (p0, p1, p2)"
    assert "121:2s!" in evidence and "100:2s," in evidence and "p2 created@111" in evidence
    # the controller sees p2 and deletes one; its next status is settled for real, and binds
    assert state.apply("pods", "MODIFIED", _deleting(_y_pod("p2", 125))) == []
    assert state.apply("replicasets", "MODIFIED", _y_rs(126, 2, 4, 4, 2)) == []
    assert state.apply("pods", "ADDED", _y_pod("p3", 130)) == []
    assert state.progress("replicasets", 131) == [
        "ReplicaSet web-7d4c99495f: 3 live pods, at most 2 allowed (p0, p1, p3)"
    ]


def test_a_lagging_status_is_refuted_only_by_pods_created_before_it() -> None:
    # a new leader whose cache lacks p1 makes p2 and counts p0 and p2 as settled: still a breach of the
    # settled 2 before it, which p0 and p1 do not refute
    state = ClusterState()
    assert state.apply("pods", "ADDED", _y_pod("p0", 50)) == []
    assert state.apply("pods", "ADDED", _y_pod("p1", 90)) == []
    state.apply("replicasets", "MODIFIED", _y_rs(100, 2, 2, 2, 2))
    assert state.apply("pods", "ADDED", _y_pod("p2", 130)) == []
    assert state.apply("replicasets", "MODIFIED", _y_rs(131, 2, 2, 2, 2)) == [
        "ReplicaSet web-7d4c99495f: 3 live pods, at most 2 allowed (p0, p1, p2)"
    ]
    # the versions a lagging status may need are kept while its pods live: none forgotten here
    assert state.bounds["uid-web-7d4c99495f"].versions[0][0] == 100


def test_a_scale_up_after_a_settled_scale_down_raises_the_bound_the_pods_meet_later() -> None:
    # seed 82185: 4 -> 1 settled at rv 20, then 2 at rv 30 before any pod event passed rv 20
    state = ClusterState()
    state.apply("replicasets", "ADDED", _rs(4, 1, 4))
    state.apply("replicasets", "MODIFIED", _rs(1, 20, 1))
    state.apply("replicasets", "MODIFIED", _rs(2, 30, 1))
    assert state.apply("pods", "ADDED", _pod("p0", 5, "uid-rs-scaled")) == []
    assert state.apply("pods", "ADDED", _pod("p1", 31, "uid-rs-scaled")) == []
    # ahead of the ReplicaSet stream (at rv 30): judged once that stream shows nothing came in between
    assert state.apply("pods", "ADDED", _pod("p2", 32, "uid-rs-scaled")) == []
    problems = state.progress("replicasets", 33)
    assert problems == ["ReplicaSet rs-scaled: 3 live pods, at most 2 allowed (p0, p1, p2)"]
    assert state.suspects == []


def _web_rs(rv: int, replicas: int, generation: int, observed: int, status_replicas: int | None) -> Obj:
    status = {} if status_replicas is None else {"replicas": status_replicas, "observedGeneration": observed}
    return {
        "metadata": _meta("web-665d84c76d", rv, generation=generation),
        "spec": {"replicas": replicas},
        "status": status,
    }


def _web_pod(suffix: str, rv: int, phase: str = "Running") -> Obj:
    return _pod(f"web-665d84c76d-{suffix}", rv, "uid-web-665d84c76d", phase=phase)


# seed 560432, the new ReplicaSet of the last rollout: (rv, spec.replicas, generation, observedGeneration,
# status.replicas), as kubesim stored them; its pods were created at rv 512, 531 and 552
WEB_RS_VERSIONS = [
    (506, 1, 1, 0, None),
    (515, 1, 1, 1, 0),
    (517, 1, 1, 1, 1),
    (520, 1, 1, 1, 1),
    (528, 2, 2, 1, 1),
    (534, 2, 2, 2, 1),
    (536, 2, 2, 2, 2),
    (541, 2, 2, 2, 2),
    (549, 3, 3, 2, 2),
    (555, 3, 3, 3, 2),
    (557, 3, 3, 3, 3),
    (563, 3, 3, 3, 3),
]


def _web_timeline_until_the_third_pod(state: ClusterState) -> None:
    """The ReplicaSet stream up to rv 541, the pod stream up to rv 554: the scale to 3 at rv 549 that the
    third pod was created for has not reached the test yet (streams of two resources are not ordered)."""
    for version in WEB_RS_VERSIONS[:8]:
        state.apply("replicasets", "MODIFIED", _web_rs(*version))
    for suffix, rv in [("gwz67", 512), ("2z2kv", 531), ("fqrrq", 552)]:
        assert state.apply("pods", "ADDED", _web_pod(suffix, rv, phase="Pending")) == []
        assert state.apply("pods", "MODIFIED", _web_pod(suffix, rv + 2)) == []


def test_pods_ahead_of_the_replicaset_stream_wait_for_the_scale_up_they_were_created_for() -> None:
    # seed 560432 reported "web-665d84c76d: 3 live pods, at most 2 allowed" at the third pod's ADDED
    state = ClusterState()
    _web_timeline_until_the_third_pod(state)
    assert len(state.suspects) == 2  # rv 552 and 554, both over the 2 known so far
    for version in WEB_RS_VERSIONS[8:]:
        assert state.apply("replicasets", "MODIFIED", _web_rs(*version)) == []
    assert state.suspects == []
    assert state.apply("pods", "MODIFIED", _web_pod("fqrrq", 562)) == []


def test_pods_ahead_of_the_replicaset_stream_are_still_judged_when_it_catches_up() -> None:
    # the same timeline, but the ReplicaSet was never scaled to 3: the third pod is over its bound
    state = ClusterState()
    _web_timeline_until_the_third_pod(state)
    problems = state.progress("replicasets", 560)  # e.g. another ReplicaSet's event: no version up to 560
    expected = (
        "ReplicaSet web-665d84c76d: 3 live pods, at most 2 allowed "
        "(web-665d84c76d-2z2kv, web-665d84c76d-fqrrq, web-665d84c76d-gwz67)"
    )
    assert problems == [expected]
    assert expected in state.seen_at  # the run reports it at the time its pods were seen
    evidence = state.evidence[expected]  # and what it was judged by
    assert "judged at pods rv 55" in evidence and "versions " in evidence
    assert all(f"web-665d84c76d-{suffix}@" in evidence for suffix in ("2z2kv", "fqrrq", "gwz67"))
    # a scale to 3 taken back and settled at 2 before the third pod: a breach, though the test saw the 3
    state = ClusterState()
    _web_timeline_until_the_third_pod(state)
    assert state.apply("replicasets", "MODIFIED", _web_rs(550, 3, 3, 2, 2)) == []
    assert state.apply("replicasets", "MODIFIED", _web_rs(551, 2, 4, 4, 2)) == []
    assert state.progress("replicasets", 555) == [expected]


def test_pods_ahead_at_the_end_are_judged_with_what_came_and_relist_gaps_are_not_judged() -> None:
    state = ClusterState()
    _web_timeline_until_the_third_pod(state)
    assert state.judge_pending() == [
        "ReplicaSet web-665d84c76d: 3 live pods, at most 2 allowed "
        "(web-665d84c76d-2z2kv, web-665d84c76d-fqrrq, web-665d84c76d-gwz67)"
    ]
    # the ReplicaSet stream relisted at rv 560 after its last event at 541: the versions in between are
    # unknown, so the pods as of rv 552..554 cannot be judged; from rv 560 on they are
    state = ClusterState()
    for version in WEB_RS_VERSIONS[:8]:
        state.apply("replicasets", "MODIFIED", _web_rs(*version))
    assert state.replace("replicasets", [_web_rs(560, 2, 4, 4, 2)], 560) == []
    for suffix, rv in [("gwz67", 512), ("2z2kv", 531), ("fqrrq", 552)]:
        assert state.apply("pods", "ADDED", _web_pod(suffix, rv)) == []
    assert state.apply("pods", "MODIFIED", _web_pod("fqrrq", 561)) == []
    assert len(state.suspects) == 1
    assert state.progress("replicasets", 561) != []
    # the same when the pods were seen before the relist
    state = ClusterState()
    _web_timeline_until_the_third_pod(state)
    assert state.replace("replicasets", [_web_rs(560, 2, 4, 4, 2)], 560) == []
    assert state.suspects == []


def test_unfinished_names_what_has_not_converged() -> None:
    state = ClusterState()
    job = {
        "metadata": _meta("j", 1, labels={"chaos/kind": "plain"}),
        "spec": workload.job("j", "plain")["spec"],
        "status": {"succeeded": 6, "conditions": [{"type": "Complete", "status": "True"}]},
    }
    state.apply("jobs", "ADDED", job)
    for n in range(5):
        state.apply("pods", "ADDED", _pod(f"p{n}", 2 + n, "uid-j", phase="Succeeded"))
    assert "Job j: 5 succeeded pods for 6 completions" in unfinished(state)
    state.apply("pods", "ADDED", _pod("p5", 9, "uid-j", phase="Succeeded"))
    assert [p for p in unfinished(state) if p.startswith("Job")] == []


def _lease(holder: str, acquired: float, renewed: float) -> Obj:
    def micro(seconds: float) -> str:
        return f"2026-01-01T00:00:{seconds:09.6f}Z"

    return {"spec": {"holderIdentity": holder, "acquireTime": micro(acquired), "renewTime": micro(renewed)}}


def test_a_write_after_the_lease_expired_or_was_taken_is_not_the_leaders() -> None:
    timeline = LeaseTimeline(lease_duration=4.0)
    for renewed in (1.0, 2.0, 3.0):
        timeline.observe(_lease("a", 1.0, renewed))
    timeline.observe(_lease("b", 10.0, 10.0))
    base = timeline.records[0][1] - 1.0  # the MicroTimes of 00:00:01 as Unix seconds, minus one
    assert timeline.leader_at("a", base + 4.0) is None
    assert timeline.leader_at("a", base + 7.5) is None  # within the slack for a request in flight
    assert timeline.leader_at("a", base + 9.5) == "its lease expired 2.5s before"
    assert timeline.leader_at("b", base + 11.0) is None
    assert timeline.leader_at("c", base + 11.0) == "had never acquired the lease"
    assert timeline.holders() == ["a", "b"]
    assert timeline.leader_then(base + 3.5) == "a (acquired 2.5s, renewed 0.5s before)"
    assert timeline.leader_then(base + 12.0) == "b (acquired 2.0s, renewed 2.0s before)"
    assert timeline.leader_then(base) == "none yet"
    assert split_brain_windows([20.0, 21.0, 40.0], after=5.0) == [(19.0, 26.0), (39.0, 45.0)]


def test_audit_lines_are_attributed_through_the_socket_owner(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    line = {"time": 1.0, "verb": "create", "path": "/api/v1/namespaces/chaos/pods", "code": 201}
    log.write_bytes(
        orjson.dumps(
            {
                **line,
                "userAgent": "aiokcm/v1 (linux/x86_64) python/3.11/job-controller",
                "peer": "127.0.0.1:5000",
            }
        )
        + b"\n"
        + orjson.dumps({**line, "userAgent": "aiokcm-chaos-test", "peer": "127.0.0.1:5001"})
        + b'\n{"cut'
    )
    owners = SocketOwners(server_port=1)
    owners.owner_of_port[5000] = 42
    audit = WriteAudit(log, owners, identity_of_pid={42: "replica-a"})
    audit.poll([])
    assert [(identity, w.port) for identity, w in audit.attributed] == [("replica-a", 5000)]
    assert audit.unattributed == []


def test_a_relist_is_checked_as_a_whole() -> None:
    state = ClusterState()
    job = {
        "metadata": _meta("j", 1, labels={"chaos/kind": "plain"}),
        "spec": workload.job("j", "plain")["spec"],
    }
    state.apply("jobs", "ADDED", job)
    pods = [_pod(f"p{n}", 2 + n, "uid-j") for n in range(4)]
    assert state.replace("pods", pods, 10) == ["Job j: 4 live pods over parallelism 3"]
    assert state.replace("pods", pods[:3], 11) == []


def test_the_jobs_running_during_a_split_brain_window() -> None:
    state = ClusterState()
    done = {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"}
    for name, created, conditions in [
        ("before", "2026-01-01T00:00:00Z", [done]),
        ("during", "2026-01-01T00:00:05Z", []),
        ("after", "2026-01-01T00:00:30Z", []),
    ]:
        meta = _meta(name, 1, creationTimestamp=created)
        state.apply("jobs", "ADDED", {"metadata": meta, "spec": {}, "status": {"conditions": conditions}})
    start = parse_micro_time("2026-01-01T00:00:20.000000Z")
    assert jobs_running_during(state, [(start, start + 5)]) == {"during"}
    assert jobs_running_during(state, []) == frozenset()
