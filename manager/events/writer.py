"""Writing one correlated Event: a create (its answer kept undecoded) or a PATCH of the count, and which
failures are worth another attempt. The broadcaster's lanes call these (manager.events.broadcaster)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from prometheus_client.core import REGISTRY

from manager.apimachinery.resources import EVENTS
from manager.client.errors import AlreadyExists, ApiError, NotFound
from manager.events.correlator import Correlation, Event, EventCorrelator
from manager.metrics.families import ScrapeTimeCollector, ScrapeTimeCounter

if TYPE_CHECKING:
    from manager.client.rest import ApiClient

log = structlog.get_logger("manager.events")

# Counted on every event: a scrape-time family (a plain addition; a prometheus_client child takes a lock).
_COLLECTOR = ScrapeTimeCollector()
EVENTS_SENT = _COLLECTOR.add(
    ScrapeTimeCounter(
        "events_sent", "Events written to the API server, by action (create, patch, skip, error)", ["action"]
    )
)
REGISTRY.register(_COLLECTOR)

# What a write may raise that `failed_write_settled` judges; anything else is the caller's.
WRITE_ERRORS = (ApiError, OSError, TimeoutError)


@functools.cache
def sent(action: str) -> Any:
    """EVENTS_SENT's child for `action`, looked up once; created on first use, so a series appears only once
    something was counted in it."""
    return EVENTS_SENT.labels(action)


@functools.lru_cache(maxsize=1024)
def events_path(namespace: str) -> str:
    """The events collection of `namespace`, as `ApiClient.create` addresses it, built once per namespace."""
    return EVENTS.api_path(namespace)


def create_body(event: Event) -> bytes:
    """The body of `event`'s create: `client.create(EVENTS, event, namespace)`'s very request, sent with
    `request_raw` so the answer stays undecoded unless the event repeats (`update_state_raw`)."""
    return orjson.dumps(event)


def failed_write_settled(exc: BaseException, event: Event) -> bool:
    """After a write raised one of `WRITE_ERRORS`: True when the event is settled anyway (it exists already,
    or the server will never accept it), False when another attempt may succeed."""
    if isinstance(exc, AlreadyExists):
        return True
    sent("error").inc()
    if isinstance(exc, ApiError) and exc.status in (400, 403, 422):  # the server will never accept it
        log.warning("event rejected", reason=event.get("reason"), error=str(exc))
        return True
    log.warning("cannot write event, will retry", error=str(exc))
    return False


async def write_once(client: ApiClient, correlator: EventCorrelator, result: Correlation) -> bool:
    """One attempt; True when done (written, or not worth retrying)."""
    event = result.event
    namespace = event["metadata"]["namespace"]
    try:
        if result.patch is not None:
            try:
                name = event["metadata"]["name"]
                answer = await client.patch(EVENTS, name, result.patch, namespace, strip_managed_fields=True)
                sent("patch").inc()
            except NotFound:  # the event expired meanwhile: create it again
                fresh = {
                    **event,
                    "metadata": {k: v for k, v in event["metadata"].items() if k != "resourceVersion"},
                }
                answer = await client.create(EVENTS, fresh, namespace, strip_managed_fields=True)
                sent("create").inc()
        else:
            raw = await client.request_raw("POST", events_path(namespace), body=create_body(event))
            sent("create").inc()
            if result.key is not None:
                correlator.update_state_raw(raw, result.key)
                return True
            answer = orjson.loads(raw)
    except WRITE_ERRORS as exc:
        return failed_write_settled(exc, event)
    correlator.update_state(answer, result.key)
    return True
