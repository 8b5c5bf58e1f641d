"""Pod subresources a scheduler and `kubectl drain` use: binding (assign a node) and eviction (a delete
through the eviction API; kubesim has no PodDisruptionBudgets, so every eviction is allowed). Both are
creates, so NamespaceLifecycle refuses them in a Terminating namespace."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim.admission import lifecycle
from kubesim.api.context import ApiContext, json_response
from kubesim.api.request import Target, decode_object, read_body
from kubesim.registry.deletion import delete_one
from kubesim.status import errors
from kubesim.status.body import status_body
from kubesim.storage.records import copy_json
from kubesim.storage.store import format_time

JSON = dict[str, Any]
CREATED = status_body("Success", code=201)


async def _body(ctx: ApiContext, request: web.Request, kind: str) -> JSON:
    body = await read_body(request, ctx.max_body_bytes)
    return decode_object(body, request.headers.get("Content-Type", ""), kind)


def _pod(ctx: ApiContext, target: Target) -> JSON:
    entry = ctx.store.entry("pods", target.namespace, target.name)
    if entry is None:
        raise errors.not_found("pods", "", target.name)
    return entry.obj


async def bind_pod(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    binding = await _body(ctx, request, "Binding")
    lifecycle.check_create(ctx, "pods", "", target.namespace, lifecycle.admission_name(binding))
    node = str((binding.get("target") or {}).get("name") or "")
    if not node:
        raise errors.invalid(
            "Binding",
            "",
            target.name,
            [{"reason": "FieldValueRequired", "field": "target.name", "message": "Required value"}],
        )
    pod = _pod(ctx, target)
    assigned = (pod.get("spec") or {}).get("nodeName")
    if assigned:
        raise errors.conflict(
            "pods/binding", "", target.name, f'pod {target.name} is already assigned to node "{assigned}"'
        )
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            "pods/binding",
            "",
            target.name,
            f"pod {target.name} is being deleted, cannot be assigned to a host",
        )
    updated = copy_json(pod)
    updated.setdefault("spec", {})["nodeName"] = node
    status = updated.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": format_time(ctx.clock()),
        }
    )
    status["conditions"] = conditions
    if "All" not in request.query.getall("dryRun", []):
        ctx.store.update("pods", updated, check_resource_version=False)
    return json_response(CREATED, 201)


async def evict_pod(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    eviction = await _body(ctx, request, "Eviction")
    lifecycle.check_create(ctx, "pods", "", target.namespace, lifecycle.admission_name(eviction))
    _pod(ctx, target)
    options = dict(eviction.get("deleteOptions") or {})
    if "All" in request.query.getall("dryRun", []):
        options["dryRun"] = ["All"]
    delete_one(ctx, target.rtype, target.namespace, target.name, options)
    return json_response(CREATED, 201)


def _container_state(pod: JSON, container: str, previous: bool) -> JSON | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            state: JSON | None = status.get("lastState") if previous else status.get("state")
            return state
    return None


async def pod_log(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """Simulated containers print nothing of their own: the log tells what the simulated kubelet did."""
    pod = _pod(ctx, target)
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    container = request.query.get("container") or (containers[0] if len(containers) == 1 else "")
    if not container:
        raise errors.bad_request(
            f"a container name must be specified for pod {target.name}, choose one of: "
            f"[{' '.join(str(c) for c in containers)}]"
        )
    if container not in containers:
        raise errors.bad_request(f"container {container} is not valid for pod {target.name}")
    previous = request.query.get("previous") in ("1", "t", "T", "true", "True", "TRUE")
    state = _container_state(pod, container, previous) or {}
    if previous and not state:
        raise errors.bad_request(
            f'previous terminated container "{container}" in pod "{target.name}" not found'
        )
    if "running" not in state and "terminated" not in state:
        reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
        raise errors.bad_request(
            f'container "{container}" in pod "{target.name}" is waiting to start: {reason}'
        )
    lines = []
    started = (state.get("running") or state.get("terminated") or {}).get("startedAt", "")
    lines.append(f"{started} kubesim: container {container} started")
    if "terminated" in state:
        done = state["terminated"]
        lines.append(
            f"{done.get('finishedAt', '')} kubesim: container {container} exited with code "
            f"{done.get('exitCode', 0)} ({done.get('reason', '')})"
        )
    if request.query.get("timestamps") not in ("1", "t", "T", "true", "True", "TRUE"):
        lines = [line.split(" ", 1)[1] for line in lines]
    tail = request.query.get("tailLines")
    if tail and tail.isdigit():
        lines = lines[-int(tail) :] if int(tail) else []
    return web.Response(text="".join(line + "\n" for line in lines), content_type="text/plain")
