"""Fault injection for kubesim: dropped watches, compacted history, failing and slow requests.

Used from Python (`sim.faults.fail(500, verb="list", resource="pods")`) or over the admin HTTP paths:

    POST   /kubesim/faults/close-watches   close every open watch now
    POST   /kubesim/faults/compact         compact the history: watches resuming from an older RV get 410
    POST   /kubesim/faults/errors          {"verb", "resource", "fraction", "code": 500|429|409,
                                            "retry_after", "count"}
    POST   /kubesim/faults/latency         {"seconds", "verb", "resource"}
    GET    /kubesim/faults                 the active rules
    DELETE /kubesim/faults                 remove every rule

Verbs are Kubernetes audit verbs (get, list, watch, create, update, patch, delete, deletecollection); a rule's
`resource` is a plural, optionally group-qualified ("pods", "jobs.batch", also matching their subresources), a
subresource ("pods/status", "jobs.batch/status"), or "*".
Which request fails is decided by one random generator seeded from `seed`, so a run is reproducible.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from kubesim.faults.rules import (
    AUDIT_VERBS,
    ERROR_CODES,
    ErrorRule,
    LatencyRule,
    RequestInfo,
    error_response,
    request_info,
    selector,
)
from kubesim.status.body import status_body

ADMIN_PREFIX = "/kubesim/"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Faults:
    """The fault switchboard of one kubesim; `bind` connects it to the store's compaction and watch hub."""

    seed: int | None = None
    errors: list[ErrorRule] = field(default_factory=list)
    latencies: list[LatencyRule] = field(default_factory=list)
    _compact: Callable[[], object] | None = None
    _close_watches: Callable[[], object] | None = None

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._ids = itertools.count(1)

    def bind(
        self,
        *,
        compact: Callable[[], object] | None = None,
        close_watches: Callable[[], object] | None = None,
    ) -> None:
        if compact is not None:
            self._compact = compact
        if close_watches is not None:
            self._close_watches = close_watches

    # -- the faults themselves -------------------------------------------------------------------------------
    def close_watches(self) -> object:
        """Close every open watch now; clients see the stream end and must resume from their last RV."""
        if self._close_watches is None:
            raise RuntimeError("faults are not bound to a watch hub")
        return self._close_watches()

    def compact(self) -> object:
        """Drop the event history: any watch or list resuming from an RV older than now gets 410 Expired."""
        if self._compact is None:
            raise RuntimeError("faults are not bound to a store")
        return self._compact()

    def fail(
        self,
        code: int = 500,
        *,
        fraction: float = 1.0,
        verb: str | list[str] | None = None,
        resource: str | list[str] | None = None,
        retry_after: int = 1,
        count: int | None = None,
    ) -> ErrorRule:
        """Fail `fraction` of the requests matching verb/resource with `code` (500, 429 or 409)."""
        if code not in ERROR_CODES:
            raise ValueError(f"code must be one of {ERROR_CODES}, got {code!r}")
        if not 0.0 <= fraction <= 1.0:
            raise ValueError("fraction must be between 0 and 1")
        if count is not None and count < 0:
            raise ValueError("count must not be negative")
        if retry_after < 0:
            raise ValueError("retry_after must not be negative")
        rule = ErrorRule(
            verbs=selector(verb, AUDIT_VERBS, "verb"),
            resources=selector(resource, None, "resource"),
            code=code,
            fraction=float(fraction),
            retry_after=int(retry_after),
            count=count,
            id=next(self._ids),
        )
        self.errors.append(rule)
        return rule

    def add_latency(
        self, seconds: float, *, verb: str | list[str] | None = None, resource: str | list[str] | None = None
    ) -> LatencyRule:
        """Delay the requests matching verb/resource by `seconds`."""
        if seconds < 0:
            raise ValueError("seconds must not be negative")
        rule = LatencyRule(
            verbs=selector(verb, AUDIT_VERBS, "verb"),
            resources=selector(resource, None, "resource"),
            seconds=float(seconds),
            id=next(self._ids),
        )
        self.latencies.append(rule)
        return rule

    def clear(self) -> None:
        """Remove every error and latency rule."""
        self.errors.clear()
        self.latencies.clear()

    # -- decisions -------------------------------------------------------------------------------------------
    def latency_for(self, info: RequestInfo) -> float:
        return sum(rule.seconds for rule in self.latencies if rule.matches(info))

    def error_for(self, info: RequestInfo) -> ErrorRule | None:
        """The first rule failing this request; each fractional rule consumes one draw of the seeded RNG."""
        for rule in self.errors:
            if rule.count is not None and rule.injected >= rule.count:
                continue
            if not rule.matches(info):
                continue
            if rule.fraction < 1.0 and self._random.random() >= rule.fraction:
                continue
            rule.injected += 1
            return rule
        return None

    @property
    def active(self) -> bool:
        return bool(self.errors or self.latencies)

    # -- aiohttp wiring --------------------------------------------------------------------------------------
    async def screen(self, request: web.Request) -> web.Response | None:
        """Delay `request` as the latency rules say; the injected error answering it, if a rule fails it."""
        if request.path.startswith(ADMIN_PREFIX):
            return None
        info = request_info(request.method, request.path, request.query)
        if info is None:
            return None
        delay = self.latency_for(info)
        if delay > 0:
            await asyncio.sleep(delay)
        rule = self.error_for(info)
        return error_response(rule, info) if rule is not None else None

    @property
    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/kubesim/faults", self._get_rules),
            web.delete("/kubesim/faults", self._clear_rules),
            web.post("/kubesim/faults/close-watches", self._post_close_watches),
            web.post("/kubesim/faults/compact", self._post_compact),
            web.post("/kubesim/faults/errors", self._post_error),
            web.post("/kubesim/faults/latency", self._post_latency),
        ]

    def add_routes(self, app: web.Application) -> None:
        app.add_routes(self.routes)

    # -- admin HTTP handlers ---------------------------------------------------------------------------------
    def _rules_json(self) -> dict[str, Any]:
        return {
            "errors": [r.as_json() for r in self.errors],
            "latency": [r.as_json() for r in self.latencies],
        }

    async def _get_rules(self, request: web.Request) -> web.Response:
        return _json(200, self._rules_json())

    async def _clear_rules(self, request: web.Request) -> web.Response:
        self.clear()
        return _json(200, self._rules_json())

    async def _post_close_watches(self, request: web.Request) -> web.Response:
        return _json(200, {"closed": _plain(self.close_watches())})

    async def _post_compact(self, request: web.Request) -> web.Response:
        return _json(200, {"compacted": _plain(self.compact())})

    async def _post_error(self, request: web.Request) -> web.Response:
        try:
            body = await _body(request)
            rule = self.fail(
                int(body.get("code", 500)),
                fraction=float(body.get("fraction", 1.0)),
                verb=body.get("verb"),
                resource=body.get("resource"),
                retry_after=int(body.get("retry_after", body.get("retryAfter", 1))),
                count=None if body.get("count") is None else int(body["count"]),
            )
        except (ValueError, TypeError) as exc:
            return _bad_request(str(exc))
        return _json(201, rule.as_json())

    async def _post_latency(self, request: web.Request) -> web.Response:
        try:
            body = await _body(request)
            rule = self.add_latency(
                float(body.get("seconds", 0.0)), verb=body.get("verb"), resource=body.get("resource")
            )
        except (ValueError, TypeError) as exc:
            return _bad_request(str(exc))
        return _json(201, rule.as_json())


def _plain(value: object) -> object:
    return value if isinstance(value, int | str | float | bool | type(None) | list | dict) else str(value)


def _json(status: int, body: object) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _bad_request(message: str) -> web.Response:
    return _json(400, status_body("Failure", message=message, reason="BadRequest", details={}, code=400))


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"malformed JSON body: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body
