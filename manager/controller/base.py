"""The controller API: what built-in and third-party controllers are written against.

A controller is a class registered under the entry-point group ``aiokcm.controllers``::

    class PipelineController(Controller):
        name = "pipeline-controller"
        aliases = ("pipeline",)
        flags = PipelineFlags                 # a ControllerFlags model: --concurrent-pipeline-syncs, ...
        concurrency = "concurrent_pipeline_syncs"  # or a number
        rbac = (PolicyRule(("example.com",), ("pipelines",), ("get", "list", "watch", "update")),)
        watches = (For(PIPELINES), Owns(PODS))

        async def reconcile(self, request: Request) -> Result | None:
            pipeline = self.lister(PIPELINES).get_by_key(request.key)
            ...

The reconcile contract (Request, Result, TerminalError) is in manager.controller.reconcile; the watch
declarations in manager.controller.watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, Unpack, cast

import structlog

from manager.apimachinery.objects import split_key
from manager.apimachinery.resources import GroupVersionResource, ObjT
from manager.config.settings import ControllerFlags, Settings
from manager.controller.reconcile import Request, Result
from manager.controller.watches import For, Watch
from manager.controller.worker import ReconcileStats, debug_state
from manager.workqueue import RateLimiter, RateLimitingQueue, default_controller_rate_limiter

if TYPE_CHECKING:
    from manager.apimachinery.customresource import CustomResource
    from manager.client.rest import ApiClient
    from manager.controller.typed import TypedLister
    from manager.events import EventRecorder
    from manager.informers import HandlerRegistration, InformerFactory, Lister, Selectors, SharedInformer


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One RBAC rule the controller needs (rendered into the ClusterRole by the deployment tooling)."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        rule = {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }
        if self.resource_names:
            rule["resourceNames"] = list(self.resource_names)
        return rule


T = TypeVar("T", bound=Hashable)
M = TypeVar("M", bound="CustomResource")
_MAX_LISTERS_BY_ID = 64  # the identity cache of Controller.lister()


@dataclass(frozen=True)
class SecondaryQueue(Generic[T]):
    """A work queue beside the controller's key queue, with its own workers and handler (e.g. the Job
    controller's `job_orphan_pod` queue). Return them from `Controller.secondary_queues()`: the default
    `run()` runs them once the informers have synced, and `drain()` stops them."""

    queue: RateLimitingQueue[T]
    handler: Callable[[T], Awaitable[None]]
    workers: int = 1


@dataclass
class ControllerContext:
    """Everything the manager hands a controller. Built by the manager; tests may build a minimal one."""

    settings: Settings
    health: Any  # manager.lifecycle.healthz.HealthChecks
    logger: Any  # a structlog BoundLogger
    client: ApiClient | None = None
    informers: InformerFactory | None = None
    events: Callable[[str], EventRecorder] | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    # Called with each controller once constructed (the cluster wiring uses it to register handlers before the
    # informers start).
    on_created: Callable[[Controller], None] | None = None

    def recorder(self, component: str) -> EventRecorder:
        """An event recorder whose events name `component` as their source (without an event
        pipeline in this context, one that only logs)."""
        if self.events is None:
            from manager.events import LogOnlyEventRecorder

            return LogOnlyEventRecorder(component)
        return self.events(component)


class Controller:
    """Base class of every controller. Subclasses set the class attributes and implement `reconcile`.

    Class attributes:
    - `name`: canonical name, e.g. "job-controller"; `aliases`, e.g. ("job",); `enabled_by_default`.
    - `flags`: a `ControllerFlags` model of the controller's own command-line flags (manager.config.settings);
      `aiokcm --help`, `AIOKCM_<FLAG>` and `--config` pick them up; read them with `Flags.of(ctx.settings)`.
    - `concurrency`: number of workers, or the name of a flag holding it.
    - `queue_name`: the work queue's name in `workqueue_*` metrics (default: name without "-controller").
    - `rate_limiter`: a zero-argument factory of the queue's rate limiter (default: client-go's controller
      limiter, max(per item 5 ms·2^n ≤ 1000 s, 10 qps burst 100)).
    - `rbac`: the PolicyRules it needs; `watches`: its informers and event mappings (`For`, `Owns`,
      `Watches`, `WatchesWith`); override `declare_watches()` instead when they depend on the instance.
    - secondary queues: override `secondary_queues()` to run more queues, each with its own handler and
      workers, beside the reconcile workers (see `SecondaryQueue`); `run_queue()` runs one by hand.
    - `need_leader_election`: False starts the controller right after the informer caches sync, on
      standby replicas too (for controllers that only read or only touch replica-local state); True (the
      default) starts it once this replica holds the leader lease.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    enabled_by_default: ClassVar[bool] = True
    flags: ClassVar[type[ControllerFlags] | None] = None
    concurrency: ClassVar[int | str] = 1
    queue_name: ClassVar[str | None] = None
    rate_limiter: ClassVar[Callable[[], RateLimiter[Any]]] = default_controller_rate_limiter
    rbac: ClassVar[tuple[PolicyRule, ...]] = ()
    watches: ClassVar[tuple[Watch, ...]] = ()
    need_leader_election: ClassVar[bool] = True

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.log = structlog.get_logger(type(self).__module__).bind(controller=self.name)
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(
            self.workqueue_name(), rate_limiter=type(self).rate_limiter()
        )
        self._registered = False
        self._watched: list[Watch] = []
        self._registrations: list[HandlerRegistration] = []
        self._recorder: EventRecorder | None = None
        self._typed_listers: dict[type[CustomResource], TypedLister[Any]] = {}
        # resource -> (the factory's generation, its informer) for selector-less lookups: a reconcile asks
        # for its listers every time, and resolving the declared watch then the factory key each time
        # showed in profiles. The generation changes when the factory forgets an informer.
        self._informer_cache: dict[GroupVersionResource[Any], tuple[int, SharedInformer[Any]]] = {}
        # id(resource) -> (resource, generation, lister): the resource objects a reconcile passes are module
        # constants, and an identity lookup skips the frozen dataclass' Python-level __hash__ (the resource
        # is held, so its id cannot be reused while the entry exists).
        self._listers_by_id: dict[int, tuple[GroupVersionResource[Any], int, Lister[Any]]] = {}
        self.stats = ReconcileStats()
        if ctx.on_created is not None:
            ctx.on_created(self)

    # ------------------------------------------------------------------ what subclasses implement
    async def reconcile(self, request: Request) -> Result | None:
        raise NotImplementedError(f"{type(self).__name__} must implement reconcile()")

    def declare_watches(self) -> Iterable[Watch]:
        """The controller's watches; by default the `watches` class attribute."""
        return type(self).watches

    def secondary_queues(self) -> Iterable[SecondaryQueue[Any]]:
        """Queues the default `run()` works on beside the reconcile queue; none by default. Return the same
        queue objects every time (they outlive a restart of `run()`)."""
        return ()

    # ------------------------------------------------------------------ one-line helpers for subclasses
    def workqueue_name(self) -> str:
        if self.queue_name:
            return self.queue_name
        return self.name.removesuffix("-controller").replace("-", "_") or type(self).__name__.lower()

    def workers(self) -> int:
        """`concurrency` resolved against the settings."""
        if not isinstance(self.concurrency, str):
            return self.concurrency
        flags = type(self).flags
        if flags is not None and self.concurrency in flags.model_fields:
            return int(getattr(flags.of(self.ctx.settings), self.concurrency))
        return int(getattr(self.ctx.settings, self.concurrency))

    def informer(
        self, resource: GroupVersionResource[ObjT], **selectors: Unpack[Selectors]
    ) -> SharedInformer[ObjT]:
        """The shared informer for `resource` (the same one every controller asking alike gets).

        Without selectors, a resource this controller watches resolves to the informer of that watch.
        """
        factory = self.ctx.informers
        if factory is None:
            raise RuntimeError("this ControllerContext has no informer factory")
        if selectors and any(selectors.values()):
            return factory.informer(resource, **selectors)
        cached = self._informer_cache.get(resource)
        if cached is not None and cached[0] == factory.generation:
            return cast("SharedInformer[ObjT]", cached[1])
        declared = next((w for w in self.declare_watches() if w.resource == resource), None)
        informer = factory.informer(resource, **(declared.selectors() if declared is not None else {}))
        self._informer_cache[resource] = (factory.generation, informer)
        return informer

    def lister(self, resource: GroupVersionResource[ObjT], **selectors: Unpack[Selectors]) -> Lister[ObjT]:
        """The informer's cache, read as the resource's object type:
        `self.lister(PODS).get_by_key("ns/name")`, `.by_index(...)`, `.by_namespace(...)`."""
        if selectors:
            return self.informer(resource, **selectors).lister
        # a reconcile's usual call, several times per reconcile: one identity lookup
        factory = self.ctx.informers
        hit = self._listers_by_id.get(id(resource))
        if hit is not None and hit[0] is resource and factory is not None and hit[1] == factory.generation:
            return cast("Lister[ObjT]", hit[2])
        lister = self.informer(resource).lister
        if factory is not None:
            if len(self._listers_by_id) >= _MAX_LISTERS_BY_ID:  # resources built per call: stay bounded
                self._listers_by_id.clear()
            self._listers_by_id[id(resource)] = (resource, factory.generation, lister)
        return lister

    def typed_lister(self, model: type[M]) -> TypedLister[M]:
        """The informer cache of custom resource `model`, read as validated models (validated once per
        object version, see `TypedLister`); the same instance on every call."""
        from manager.controller.typed import TypedLister

        typed = self._typed_listers.get(model)
        if typed is None:
            typed = self._typed_listers[model] = TypedLister(model, self.lister(model.gvr()))
        return typed

    async def get_typed(self, model: type[M], request: Request) -> M | None:
        """The object of `request` as a validated `model`, or None when it is not in the cache.

        An object the CRD schema accepted but the model rejects gets an `Invalid` condition (reason
        `InvalidSpec`, the message naming the field) and a Warning event, once per change, then this raises
        `InvalidObject`, a `TerminalError`: nothing to retry until the object changes. Catch it to release
        the finalizer of an invalid object being deleted (`invalid.object` is the raw object). A valid
        object loses a stale `Invalid` condition."""
        from manager.controller.typed import InvalidObject, clear_invalid, report_invalid

        try:
            typed = self.typed_lister(model).get_by_key(request.key)
        except InvalidObject as invalid:
            await report_invalid(self.client, self.recorder, model, invalid)
            raise
        if typed is not None:
            await clear_invalid(self.client, model, typed.raw)
        return typed

    @property
    def recorder(self) -> EventRecorder:
        """The event recorder for this controller (source component = its name)."""
        if self._recorder is None:
            self._recorder = self.ctx.recorder(self.name)
        return self._recorder

    @property
    def client(self) -> ApiClient:
        if self.ctx.client is None:
            raise RuntimeError("this ControllerContext has no API client")
        return self.ctx.client

    def enqueue(self, request: Request) -> None:
        self.queue.add(request)

    def enqueue_after(self, request: Request, delay: float) -> None:
        self.queue.add_after(request, delay)

    # ------------------------------------------------------------------ lifecycle
    def setup(self) -> None:
        """Register the event handlers on the shared informers (idempotent).

        The manager calls it for every enabled controller before it starts the informers, so handlers see the
        initial list; `run()` calls it too, for controllers run outside a manager.
        """
        if self._registered:
            return
        listened: set[int] = set()
        for watch in self.declare_watches():
            informer = self.informer(watch.resource, **watch.selectors())
            handler = watch.event_handler(self, self.queue.add)
            registration = informer.add_event_handler(handler, watch.resync_period, inline=watch.inline)
            self._registrations.append(registration)
            self._watched.append(watch)
            if id(informer) not in listened:
                listened.add(id(informer))
                informer.add_history_listener(self.on_new_history)
        self._registered = True

    def on_new_history(self) -> None:
        """One of this controller's informers relisted from an API server that started a new history (its
        resourceVersions went backwards: restored from a backup, or an emulator restarted empty).

        By default every object of the `For` resources is queued again. A controller that keeps
        expectations of its own writes (they may never be observed now) forgets them first: override, clear,
        then call `super().on_new_history()`."""
        self.log.warning("the API server has a new history: syncing every object again")
        for watch in self._watched:
            if isinstance(watch, For):
                for key in self.informer(watch.resource, **watch.selectors()).lister.list_keys():
                    self.queue.add(Request(*split_key(key)))

    async def run(self) -> None:
        """Wait for the informers to sync, then run `workers()` reconcile workers (and the workers of every
        `secondary_queues()` entry) until cancelled.

        Restartable: the queues and the handlers survive, so a second `run()` after a crash resumes.
        """
        from manager.controller.worker import run_workers

        self.setup()
        if self.ctx.informers is not None:
            self.ctx.informers.start()  # idempotent; the manager has normally started them already
        secondaries = list(self.secondary_queues())
        if not secondaries:
            await run_workers(self)
            return
        async with asyncio.TaskGroup() as group:
            group.create_task(run_workers(self))
            for secondary in secondaries:
                group.create_task(self.run_queue(secondary.queue, secondary.handler, secondary.workers))

    async def wait_for_sync(self) -> None:
        """Wait until every informer this controller watches has synced and handed its initial list to the
        controller's handlers."""
        from manager.controller.cachesync import wait_for_sync

        self.setup()
        await wait_for_sync(self)

    async def run_queue(
        self, queue: RateLimitingQueue[T], handler: Callable[[T], Awaitable[None]], workers: int = 1
    ) -> None:
        """Run `workers` workers on `queue` once the informers have synced, until cancelled, the queue shuts
        down or the manager begins stopping. An item whose `handler` raises is retried through the queue's
        rate limiter; one that succeeds has its failures forgotten."""
        from manager.controller.worker import run_queue

        self.setup()
        await run_queue(self, queue, handler, workers)

    async def drain(self) -> None:
        """Graceful stop: refuse new keys, let in-flight reconciles (and secondary items) finish, make the
        workers return."""
        await asyncio.gather(
            self.queue.shut_down_with_drain(),
            *(secondary.queue.shut_down_with_drain() for secondary in self.secondary_queues()),
        )

    def sync_problem(self) -> str | None:
        """Why the workers are waiting for the informers (each unsynced one and its last list error), or
        None; the manager fails this controller's readiness check with it."""
        from manager.controller.cachesync import sync_problem

        return sync_problem(self)

    def debug_state(self) -> dict[str, Any]:
        """Queue, workers and the last reconcile error, merged into /debug/controllers."""
        return debug_state(self)

    def watched(self) -> list[Watch]:
        return list(self._watched)

    def registrations(self) -> list[HandlerRegistration]:
        """The handler registrations made by `setup()` (each knows whether it got the initial list)."""
        return list(self._registrations)
