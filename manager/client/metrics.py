"""client-go's REST client metrics (component-base names), on prometheus_client's default registry.

The series written on every request (`rest_client_requests_total`, `rest_client_request_duration_seconds`, and
`rest_client_rate_limiter_duration_seconds` when a rate limiter is on) are plain counters and FastHistograms
turned into metric families at scrape time: prometheus_client's
labelled children take a lock per observation, a visible share of a controller's CPU per request
(docs/design/performance.md). The others stay prometheus_client objects: they are off the hot path.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import Counter
from prometheus_client.core import REGISTRY, CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from manager.metrics.families import ScrapeTimeHistogram
from manager.metrics.fasthistogram import FastHistogram

_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class RequestStats(Collector):
    """Counts per (code, method, host); latency and rate limiter wait histograms per (verb, host)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str], int] = {}
        self.durations = ScrapeTimeHistogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            _LATENCY_BUCKETS,
        )
        self.throttled = ScrapeTimeHistogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            _LATENCY_BUCKETS,
        )

    def count(self, code: str, method: str, host: str) -> None:
        key = (code, method, host)
        self.requests[key] = self.requests.get(key, 0) + 1

    def duration(self, verb: str, host: str) -> FastHistogram:
        return self.durations.labels(verb, host)

    def rate_limiter(self, verb: str, host: str) -> FastHistogram:
        return self.throttled.labels(verb, host)

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=["code", "method", "host"],
        )
        for request_labels, value in list(self.requests.items()):
            requests.add_metric(list(request_labels), value)
        yield requests
        yield self.durations.family()
        yield self.throttled.family()


REQUESTS = RequestStats()
REGISTRY.register(REQUESTS)

REQUEST_RETRIES = Counter(
    "rest_client_request_retries_total",
    "Number of request retries, partitioned by status code, verb, and host.",
    ["code", "verb", "host"],
)
