"""client-go's REST client metrics (component-base names), on prometheus_client's default registry.

The series written on every request (`rest_client_requests_total`, `rest_client_request_duration_seconds`, and
`rest_client_rate_limiter_duration_seconds` when a rate limiter is on) are plain counters and FastHistograms
turned into metric families at scrape time: prometheus_client's
labelled children take a lock per observation, a visible share of a controller's CPU per request
(docs/design/performance.md). The others stay prometheus_client objects: they are off the hot path.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import Counter
from prometheus_client.core import REGISTRY, CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from manager.metrics.families import ScrapeTimeHistogram
from manager.metrics.fasthistogram import FastHistogram

_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class VerbSeries:
    """One verb's series against one host: its request counts by status code and its latency histogram,
    written by one call per answer (a client keeps one per verb, so no labels are looked up per request)."""

    __slots__ = ("codes", "latency")

    def __init__(self, codes: dict[int | str, int], latency: FastHistogram) -> None:
        self.codes = codes
        self.latency = latency

    def observe(self, code: int | str, seconds: float) -> None:
        codes = self.codes
        codes[code] = codes.get(code, 0) + 1
        latency = self.latency  # FastHistogram.observe inlined: this runs once per request
        latency.counts[bisect_left(latency.bounds, seconds)] += 1
        latency.sum += seconds


class RequestStats(Collector):
    """Counts per (code, method, host); latency and rate limiter wait histograms per (verb, host)."""

    def __init__(self) -> None:
        # (method, host) -> status code (an int, or "<error>" when no answer came) -> requests
        self.requests: dict[tuple[str, str], dict[int | str, int]] = {}
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

    def count(self, code: int | str, method: str, host: str) -> None:
        codes = self.requests.setdefault((method, host), {})
        codes[code] = codes.get(code, 0) + 1

    def verb(self, method: str, host: str) -> VerbSeries:
        """The series `method` requests to `host` are observed in."""
        return VerbSeries(self.requests.setdefault((method, host), {}), self.duration(method, host))

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
        for (method, host), codes in list(self.requests.items()):
            for code, value in list(codes.items()):
                requests.add_metric([str(code), method, host], value)
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
