"""Which failing checks show their reason in the aggregated bodies: only those added with show_reason,
only with ?verbose, on one line and bounded."""

from __future__ import annotations

from manager.lifecycle.healthz import MAX_REASON, HealthChecks


async def test_a_check_added_with_show_reason_shows_it_in_verbose_bodies_only() -> None:
    checks = HealthChecks()
    checks.add("apiserver", lambda: "API server 127.0.0.1:6443 not answering for 12s", show_reason=True)
    checks.add("secretive", lambda: "token abc123 rejected")
    report = await checks.evaluate("readyz")
    assert report.body(verbose=True) == (
        "[-]apiserver failed: API server 127.0.0.1:6443 not answering for 12s\n"
        "[-]secretive failed: reason withheld\n"
        "readyz check failed\n"
    )
    assert "not answering" not in report.body(verbose=False)  # the plain body stays as Kubernetes has it
    assert "[-]apiserver failed: reason withheld\n" in report.body(verbose=False)


async def test_a_shown_reason_is_one_bounded_line() -> None:
    checks = HealthChecks()
    checks.add("informers", lambda: "pods: not synced\n(refused)\t" + "x" * 2000, show_reason=True)
    line = (await checks.evaluate("readyz")).body(verbose=True).splitlines()[0]
    assert line.startswith("[-]informers failed: pods: not synced (refused) xxx") and line.endswith("...")
    assert len(line) == len("[-]informers failed: ") + MAX_REASON


async def test_a_passing_check_with_show_reason_is_just_ok() -> None:
    checks = HealthChecks()
    checks.add("apiserver", lambda: None, show_reason=True)
    report = await checks.evaluate("readyz")
    assert report.body(verbose=False) == "ok"
    assert report.body(verbose=True) == "[+]apiserver ok\nreadyz check passed\n"
