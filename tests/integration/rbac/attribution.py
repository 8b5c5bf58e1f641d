"""Hold each controller to its own role, although the manager is one ServiceAccount with the union of them.

Every component of the manager sends its own User-Agent (`aiokcm/... /<component>`: a controller's name,
`shared-informers`, `event-broadcaster`, `leader-election`). A middleware put in front of kubesim's (by
wrapping `kubesim.server.audit.middlewares`, which build_app asks for its outer middlewares) remembers the
User-Agent of the request being served, and the authorizer is wrapped so that a resource request from a
controller's own client is allowed only by that controller's role (the event broadcaster's by the manager's
role, the leader elector's by the leader-election Role). The shared informers serve several
controllers at once, so their list/watch requests stay under the union (kubesim's RBAC decision).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any

from aiohttp import web

from kubesim import KubeSim
from kubesim.server import audit
from tests.integration.rbac.rules import Permission, covers, permissions

USER_AGENT: ContextVar[str] = ContextVar("kubesim_test_user_agent", default="")
CONTROLLER_ROLE_PREFIX = "aiokcm:controller:"
# The manager's own components and the role generated for each (manager/cli/rbac.py).
COMPONENT_ROLES = {
    "event-broadcaster": "aiokcm:manager",
    "delegated-auth": "aiokcm:manager",
    "leader-election": "aiokcm-leader-election",
}


@web.middleware
async def remember_user_agent(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    USER_AGENT.set(request.headers.get("User-Agent", ""))
    return await handler(request)


@contextlib.contextmanager
def user_agents_remembered() -> Iterator[None]:
    """While active, a KubeSim started remembers each request's User-Agent in USER_AGENT."""
    original = audit.middlewares
    audit.middlewares = lambda: [remember_user_agent, *original()]
    try:
        yield
    finally:
        audit.middlewares = original


def component_roles(objects: list[dict[str, Any]]) -> dict[str, list[Permission]]:
    """component (a controller's name, the event broadcaster, the leader elector) → its role's permissions."""
    roles = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] in ("ClusterRole", "Role")}
    held = {
        name.removeprefix(CONTROLLER_ROLE_PREFIX): permissions([obj])
        for name, obj in roles.items()
        if name.startswith(CONTROLLER_ROLE_PREFIX)
    }
    held.update({c: permissions([roles[r]]) for c, r in COMPONENT_ROLES.items() if r in roles})
    return held


def hold_controllers_to_their_roles(sim: KubeSim, objects: list[dict[str, Any]], user: str) -> list[str]:
    """Wrap `sim`'s authorizer: `user`'s resource requests from a controller's own client need that
    component's role; anything else (the shared informers, discovery) is decided by kubesim as before.
    Returns the list where each resource request of `user` is noted: "<component> <verb> <resource> <name>".
    """
    asked: list[str] = []
    auth = sim.auth
    assert auth is not None
    roles = component_roles(objects)
    authorize = auth.authorize

    def decide(who: Any, attrs: Any) -> tuple[bool, str]:
        allowed, reason = authorize(who, attrs)
        component = USER_AGENT.get().rsplit("/", 1)[-1]
        if who.name == user and attrs.resource_request:
            asked.append(f"{component} {attrs.verb} {attrs.resource} {attrs.name}".rstrip())
        if not allowed or who.name != user or not attrs.resource_request or component not in roles:
            return allowed, reason
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        names = (attrs.name,) if attrs.name else ()
        wanted = Permission("", attrs.group, resource, attrs.verb, names)
        if any(covers(p, wanted) for p in roles[component]):
            return True, reason
        return False, f"not in the role of {component}"

    auth.authorize = decide  # type: ignore[method-assign,assignment]
    return asked
