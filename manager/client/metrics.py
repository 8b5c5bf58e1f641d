"""client-go's REST client metrics (component-base names), on prometheus_client's default registry."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)

REQUESTS_TOTAL = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
)
REQUEST_DURATION = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_LATENCY_BUCKETS,
)
RATE_LIMITER_DURATION = Histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_LATENCY_BUCKETS,
)
REQUEST_RETRIES = Counter(
    "rest_client_request_retries_total",
    "Number of request retries, partitioned by status code, verb, and host.",
    ["code", "verb", "host"],
)
