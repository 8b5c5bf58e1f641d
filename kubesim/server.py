"""The aiohttp application: routes, middlewares, and the seed objects of a fresh cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from kubesim.types import SEED_NAMESPACES

if TYPE_CHECKING:
    from kubesim.sim import KubeSim

VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0-kubesim", "gitCommit": "0" * 40,
    "gitTreeState": "clean", "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.4", "compiler": "gc",
    "platform": "linux/amd64",
}


def seed_cluster(sim: KubeSim) -> None:
    for name in SEED_NAMESPACES:
        if sim.store.entry("namespaces", "", name) is None:
            sim.store.create("namespaces", {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})


async def version(request: web.Request) -> web.Response:
    return web.Response(body=orjson.dumps(VERSION), content_type="application/json")


def build_app(sim: KubeSim) -> web.Application:
    middlewares = [sim.faults.middleware] if sim.faults is not None else []
    app = web.Application(middlewares=middlewares, client_max_size=sim.max_body_bytes)
    app.router.add_get("/version", version)
    if sim.faults is not None:
        app.router.add_routes(sim.faults.routes)
    return app
