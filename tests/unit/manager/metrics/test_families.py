"""Scrape-time metric families: what a registry exposes for them."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from manager import ScrapeTimeCollector, ScrapeTimeCounter, ScrapeTimeHistogram


def exposition(collector: ScrapeTimeCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_counter_and_histogram_series_as_prometheus_exposes_them() -> None:
    collector = ScrapeTimeCollector()
    syncs = collector.add(ScrapeTimeCounter("demo_syncs", "Syncs.", ["result"]))
    duration = collector.add(
        ScrapeTimeHistogram("demo_seconds", "Sync time.", ["result"], buckets=(0.1, 1.0))
    )
    syncs.labels("ok").inc()
    syncs.labels("ok").inc(2)
    for value in (0.05, 0.1, 0.5, 3.0):
        duration.labels("ok").observe(value)
    text = exposition(collector)
    assert 'demo_syncs_total{result="ok"} 3.0' in text
    assert 'demo_seconds_bucket{le="0.1",result="ok"} 2.0' in text  # le is inclusive, as Prometheus'
    assert 'demo_seconds_bucket{le="1.0",result="ok"} 3.0' in text
    assert 'demo_seconds_bucket{le="+Inf",result="ok"} 4.0' in text
    assert 'demo_seconds_count{result="ok"} 4.0' in text
    assert 'demo_seconds_sum{result="ok"} 3.65' in text


def test_a_series_appears_once_counted_and_labels_are_checked() -> None:
    collector = ScrapeTimeCollector()
    syncs = collector.add(ScrapeTimeCounter("demo_syncs", "Syncs.", ["result", "action"]))
    assert 'result="' not in exposition(collector)
    assert syncs.labels("ok", "create") is syncs.labels("ok", "create")
    with pytest.raises(ValueError, match="expected labels"):
        syncs.labels("ok")
    syncs.labels("ok", "create").inc()
    assert 'demo_syncs_total{action="create",result="ok"} 1.0' in exposition(collector)
