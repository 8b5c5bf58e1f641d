"""Per-informer liveness metrics (label `resource`: the informer's name, e.g. "pods.v1", "jobs.v1.batch")."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

LAST_ACTIVITY_AGE = Gauge(
    "informer_last_activity_age_seconds",
    "Seconds since the informer last received a watch event, a bookmark or a completed list.",
    ["resource"],
)
OBJECTS = Gauge("informer_objects", "Objects held in the informer's cache.", ["resource"])
SYNCED = Gauge("informer_synced", "1 once the informer's cache completed its initial list.", ["resource"])
RELISTS = Counter(
    "informer_relists_total", "Completed lists (initial and relists) of the informer.", ["resource"]
)
EXPIRED = Counter(
    "informer_watch_expired_total",
    "410 Gone / Expired answers (resourceVersion compacted away).",
    ["resource"],
)
WATCH_RESTARTS = Counter(
    "informer_watch_restarts_total", "Watch streams opened by the informer.", ["resource"]
)
ERRORS = Counter("informer_list_watch_errors_total", "Failed list or watch attempts.", ["resource"])
DECODE_ERRORS = Counter(
    "informer_decode_errors_total",
    "Objects the informer could not read (missing metadata, wrong types).",
    ["resource"],
)
HANDLER_ERRORS = Counter(
    "informer_handler_errors_total", "Exceptions raised by event handlers of the informer.", ["resource"]
)
