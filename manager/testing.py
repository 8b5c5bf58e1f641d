"""A testing kit for controller authors: kubesim and a manager running your controllers, in a pytest test.

    from manager.testing import run_controllers, wait_for

    async def test_greeting_gets_its_configmap() -> None:
        async with run_controllers(GreetingController) as env:
            await env.client.create(GREETINGS, {...})
            await wait_for(lambda: env.controller(GreetingController).lister(CONFIGMAPS).get("default", "hi"))

`run_controllers` starts an in-process kubesim (three Ready nodes and the simulated kubelet), then the real
Manager with the cluster wiring (client, shared informers, events) and only the given controller classes,
built-in or your own, without leader election; it returns once every controller's informers have synced, and
stops the manager and kubesim on the way out. `run_manager` does the same against an API server you already
run (a `kubesim` fixture with a manual clock, faults...). Your controllers' own flags (`ControllerFlags`) take
their defaults unless `flags=` sets them. Tests need an asyncio pytest plugin (pytest-asyncio).

With `rbac=True` (run_controllers' default) the manager runs as its own ServiceAccount bound to exactly the
roles `aiokcm rbac` generates for the controllers under test, against a kubesim enforcing RBAC: a rule
missing from a controller's `rbac` declaration fails the test (a 403 in the log, a state never reached),
as it would fail in a cluster: `env.denials` lists the manager's requests kubesim refused, and the block
fails on leaving when there are any. `env.client` is kubesim's admin.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from kubesim import KubeSim
from kubesim.kubeconfig import write_kubeconfig
from manager.cli.sandbox import OWNER_REFERENCES_ADMISSION, admin_session
from manager.cli.sandbox_identity import (
    apply_identity,
    controller_rbac,
    manager_identity,
)
from manager.client.rest import ApiClient, create_client
from manager.config.settings import Settings
from manager.controller.base import Controller
from manager.lifecycle.cluster import install
from manager.lifecycle.descriptor import ControllerInfo
from manager.lifecycle.manager import Manager

__all__ = ["TestEnv", "controller_of", "record_denials", "run_controllers", "run_manager", "wait_for"]

SERVICE_ACCOUNTS = "system:serviceaccounts"  # the group of every service account: the manager's identity
T = TypeVar("T")
C = TypeVar("C", bound=Controller)


@overload
async def wait_for(
    condition: Callable[[], Awaitable[T | None]],
    timeout: float = ...,
    interval: float = ...,
    message: str = ...,
) -> T: ...


@overload
async def wait_for(
    condition: Callable[[], T | None], timeout: float = ..., interval: float = ..., message: str = ...
) -> T: ...


async def wait_for(
    condition: Callable[[], T | Awaitable[T | None] | None],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> T:
    """Poll `condition` (plain or async) until it returns a truthy value and return that value (a condition
    returning `X | None`, None while not yet, gives an `X`); fail with an AssertionError naming `message` and
    the last value after `timeout` seconds. Never sleep to synchronise."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        last = result
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}; last value: {last!r}")
        await asyncio.sleep(interval)


def controller_info(cls: type[Controller]) -> ControllerInfo:
    """How the manager sees a controller class that did not come through an entry point."""
    origin = f"{cls.name} = {cls.__module__}:{cls.__qualname__}"
    return ControllerInfo(cls.name, cls.aliases, cls.enabled_by_default, cls, origin)


def controller_of(manager: Manager, cls: type[C]) -> C:
    """The running instance of controller class `cls` in `manager`."""
    for instance in manager.cluster.controllers if manager.cluster is not None else ():
        if isinstance(instance, cls):
            return instance
    raise LookupError(f"{cls.__name__} is not running in this manager")


@contextlib.asynccontextmanager
async def run_manager(
    master: str,
    *controllers: type[Controller],
    flags: Mapping[str, Any] | None = None,
    sync_timeout: float = 10.0,
    wait_for_sync: bool = True,
    rbac: bool = False,
    ca_pem: str | None = None,
) -> AsyncIterator[Manager]:
    """Run the manager with `controllers` against the API server at `master` for the `async with` block;
    yields it once every controller's informers have synced.

    `rbac=True`: the manager authenticates as its ServiceAccount, bound (by kubesim's admin token, so
    `master` must be a kubesim) to the roles `aiokcm rbac` generates for `controllers`; `ca_pem` is the CA
    of a kubesim serving HTTPS. Only a kubesim in RBAC mode enforces them.

    No leader election, the health server on a free port of 127.0.0.1, no client-side rate limit, a 2 s
    shutdown grace period; `flags` (by field name, e.g. `{"concurrent_job_syncs": 2}`) sets any other.
    `wait_for_sync=False` yields once the controllers are built, without waiting for their informers (to
    test a controller whose resource is not served yet)."""
    settings_cls = Settings.with_flags(c.flags for c in controllers if c.flags is not None)
    options: dict[str, Any] = {
        "master": master,
        "leader_elect": False,
        "bind_address": "127.0.0.1",
        "port": 0,
        "kube_api_qps": 0,
        "shutdown_grace_period": 2.0,
        **(flags or {}),
    }
    settings = settings_cls(**options)
    infos = [controller_info(c) for c in controllers]
    credentials = tempfile.TemporaryDirectory(prefix="aiokcm-rbac-") if rbac else None
    if credentials is not None:
        async with admin_session(master, ca_pem) as session:
            token = await apply_identity(session, controller_rbac(infos), manager_identity(settings))
        kubeconfig = write_kubeconfig(Path(credentials.name) / "kubeconfig", master, ca_pem, token)
        settings = settings.model_copy(update={"kubeconfig": str(kubeconfig)})
    manager = Manager(settings, infos, install=install)
    running = asyncio.create_task(manager.run(handle_signals=False), name="manager-under-test")
    try:

        def synced() -> bool:
            if running.done():
                running.result()  # start-up failed: raise its error here
                raise RuntimeError("the manager stopped during start-up")
            cluster = manager.cluster
            return (
                cluster is not None
                and len(cluster.controllers) == len(controllers)
                and (
                    not wait_for_sync
                    or all(all(r.has_synced() for r in c.registrations()) for c in cluster.controllers)
                )
            )

        await wait_for(synced, sync_timeout, message="the controllers' informers to sync")
        yield manager
    finally:
        manager.request_shutdown("test done")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(running, 10.0)
        if credentials is not None:
            credentials.cleanup()


def record_denials(sim: KubeSim, user: str = SERVICE_ACCOUNTS) -> list[str]:
    """A list that receives each request of `user` (a user name, or a group such as every service account)
    refused by the running `sim`'s authorizer, described as `verb resource[/subresource].group
    [namespace/][name]` (in-process: wraps `sim.auth.authorize`)."""
    auth = sim.auth
    if auth is None:
        raise RuntimeError("kubesim is not running")
    denials: list[str] = []
    authorize = auth.authorize

    def recording(who: Any, attrs: Any) -> tuple[bool, str]:
        allowed, reason = authorize(who, attrs)
        if not allowed and (who.name == user or user in who.groups):
            resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
            where = "/".join(part for part in (attrs.namespace, attrs.name) if part)
            what = f"{resource}.{attrs.group}" if attrs.resource_request else attrs.path
            denials.append(f"{attrs.verb} {what} {where}".rstrip())
        return allowed, reason

    auth.authorize = recording  # type: ignore[method-assign,assignment]
    return denials


@dataclass
class TestEnv:
    """What `run_controllers` yields: the cluster, a client to it, and the running manager."""

    __test__ = False  # not a test class, whatever pytest's naming rules say

    sim: KubeSim
    client: ApiClient
    manager: Manager
    denials: list[str]  # the manager's requests kubesim's RBAC refused (rbac=True)

    @property
    def url(self) -> str:
        """The API server's URL (on 127.0.0.1: HTTPS with rbac, plain HTTP without)."""
        return self.sim.url

    def controller(self, cls: type[C]) -> C:
        """The running instance of controller class `cls`."""
        return controller_of(self.manager, cls)


@contextlib.asynccontextmanager
async def run_controllers(
    *controllers: type[Controller],
    flags: Mapping[str, Any] | None = None,
    sync_timeout: float = 10.0,
    wait_for_sync: bool = True,
    rbac: bool = True,
    **kubesim_options: Any,
) -> AsyncIterator[TestEnv]:
    """Run kubesim and a manager with `controllers` for the duration of the `async with` block.

    `flags`, `wait_for_sync` and `rbac` as for `run_manager` (`rbac=True` also starts kubesim in RBAC
    mode over HTTPS with its own CA, so kubectl with `env.sim.kubeconfig` acts as the admin, and with
    OwnerReferencesPermissionEnforcement, as the sandbox; `rbac=False`:
    plain HTTP, every request allowed); `kubesim_options` go to `KubeSim` (e.g. `nodes=1`, `kubelet=False`,
    `clock=ManualClock()`)."""
    kubesim_options.setdefault("port", 0)
    kubesim_options.setdefault("nodes", 3)
    if rbac:
        kubesim_options.setdefault("authorization_mode", "RBAC")
        kubesim_options.setdefault("tls", True)  # kubectl sends the kubeconfig's admin token only over TLS
        # as the sandbox: blockOwnerDeletion needs update on the owner's finalizers, as on a real cluster
        kubesim_options.setdefault("enable_admission_plugins", [OWNER_REFERENCES_ADMISSION])
    async with KubeSim(**kubesim_options) as sim:
        denials = record_denials(sim) if rbac else []
        async with run_manager(
            sim.url,
            *controllers,
            flags=flags,
            sync_timeout=sync_timeout,
            wait_for_sync=wait_for_sync,
            rbac=rbac,
            ca_pem=sim.ca_pem,
        ) as manager:
            client = await create_client(kubeconfig=sim.kubeconfig)  # kubesim's admin
            try:
                yield TestEnv(sim, client, manager, denials)
            finally:
                await client.close()
    if denials:
        missing = ", ".join(sorted(set(denials)))
        raise AssertionError(f"kubesim refused the manager (a rule missing from `rbac`?): {missing}")
