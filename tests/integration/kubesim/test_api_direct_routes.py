"""API paths go straight to their route (`LimitedApplication.serve_directly`), skipping aiohttp's URL
dispatcher: the route, match info and answers must be those the dispatcher gives, and anything unusual (an
`Expect:` header, a path the route's pattern does not match) must still take aiohttp's own path."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request
from aiohttp.web_urldispatcher import Resource

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from kubesim.server.limits import LimitedApplication
from tests.kubesim_api import Api

PATHS = [
    "/api/v1",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/a%2Fb",
    "/apis/apps/v1/namespaces/default/deployments/web/scale",
    "/apis//apps",
    "/api/v1/namespaces/caf%C3%A9/pods",
    "/api/",
]


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "POST", "PATCH", "DELETE", "PROPFIND"])
async def test_direct_route_is_the_dispatchers(sim: KubeSim, method: str, path: str) -> None:
    app = sim.app
    assert isinstance(app, LimitedApplication)
    request = make_mocked_request(method, path, app=app)
    resolved = await app.router.resolve(request)
    served = dict(app._direct)
    prefix = next(p for p in served if request.rel_url.path_safe.startswith(p))
    route = served[prefix]
    assert resolved.route is route
    assert isinstance(route.resource, Resource)
    assert dict(resolved) == route.resource._match(request.rel_url.path_safe)


async def test_request_app_and_match_info_on_the_direct_path(sim: KubeSim, api: Api) -> None:
    # the TokenRequest handler reads request.app (the match info's current app)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}
    status, body = await api.call("POST", "/api/v1/namespaces/default/serviceaccounts", account)
    assert status == 201, body
    status, body = await api.call(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status == 201, body
    assert body["status"]["token"]


async def test_expect_continue_takes_aiohttps_path(sim: KubeSim, api: Api) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "expect"}, "data": {"a": "b"}}
    async with api.session.post(
        f"{api.url}/api/v1/namespaces/default/configmaps", json=configmap, expect100=True
    ) as response:
        assert response.status == 201, await response.text()
    status, body = await api.call("GET", "/api/v1/namespaces/default/configmaps/expect")
    assert status == 200 and body["data"] == {"a": "b"}


async def test_a_path_the_pattern_does_not_match_is_a_not_found_status(sim: KubeSim, api: Api) -> None:
    # `{tail:.*}` does not match a newline: the dispatcher finds no route, and aiohttp's 404 becomes a Status
    async with api.session.get(f"{api.url}/api/v1/namespaces/a%0Ab/pods") as response:
        assert response.status == 404
        body = await response.json()
    assert body["kind"] == "Status" and body["reason"] == "NotFound"


async def test_a_paths_match_is_remembered_and_shared(sim: KubeSim, api: Api) -> None:
    # the second request for a path reuses the frozen match info of the first: the same route, the same
    # match, whatever the method; a path the pattern does not match is never remembered
    app = sim.app
    assert isinstance(app, LimitedApplication)
    path = "/api/v1/namespaces/default/configmaps"
    for method in ("GET", "POST", "GET"):
        status, _ = await api.call(
            method, path, {"metadata": {"name": "shared"}} if method == "POST" else None
        )
        assert status in (200, 201)
    _, match_info = app._matches[path]
    assert match_info.route is dict(app._direct)["/api/"]
    assert dict(match_info) == {"tail": "v1/namespaces/default/configmaps"}
    assert match_info.current_app is app
    for _ in range(2):
        async with api.session.get(f"{api.url}/api/v1/namespaces/a%0Ab/pods") as response:
            assert response.status == 404
    assert "/api/v1/namespaces/a%0Ab/pods" not in app._matches
