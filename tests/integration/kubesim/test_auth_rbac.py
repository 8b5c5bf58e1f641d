"""kubesim in RBAC mode over HTTP: who gets 401 and 403 (with upstream's wording), service-account tokens from
the TokenRequest API, impersonation, and the access reviews answering as the server decides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubesim import KubeSim
from kubesim.auth.authn import ADMIN_TOKEN
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

RBAC = "/apis/rbac.authorization.k8s.io/v1"
TOKENS = 'alice-token,alice,1001,"devs"\nbob-token,bob,1002\n'


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory, tmp_path: Path) -> KubeSim:
    (tmp_path / "tokens.csv").write_text(TOKENS)
    return await kubesim_factory(
        kubelet=False, authorization_mode="RBAC", token_auth_file=tmp_path / "tokens.csv"
    )


class As:
    """Requests to `sim` with one bearer token (or none)."""

    def __init__(self, api: Api, token: str | None, **headers: str) -> None:
        self.api = api
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.headers.update({k.replace("_", "-"): v for k, v in headers.items()})

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return await self.api.call(method, path, body, headers=self.headers)


@pytest.fixture
async def admin(api: Api) -> As:
    return As(api, ADMIN_TOKEN)


async def grant(
    admin: As, namespace: str, name: str, rules: list[dict[str, Any]], subject: dict[str, str]
) -> None:
    role = {"metadata": {"name": name}, "rules": rules}
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [subject],
    }
    assert (await admin.call("POST", f"{RBAC}/namespaces/{namespace}/roles", role))[0] == 201
    assert (await admin.call("POST", f"{RBAC}/namespaces/{namespace}/rolebindings", binding))[0] == 201


READ_PODS = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]


async def test_requests_are_authorized_by_the_bound_rules(api: Api, admin: As) -> None:
    await admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    alice, bob = As(api, "alice-token"), As(api, "bob-token")
    status, body = await alice.call("GET", "/api/v1/namespaces/team/pods")
    assert status == 403
    assert body["message"] == (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team"'
    )
    assert (body["reason"], body["code"], body["details"]) == ("Forbidden", 403, {"kind": "pods"})
    await grant(admin, "team", "pod-reader", READ_PODS, {"kind": "Group", "name": "devs"})
    assert (await alice.call("GET", "/api/v1/namespaces/team/pods"))[0] == 200
    assert (await alice.call("GET", "/api/v1/namespaces/default/pods"))[0] == 403
    status, body = await alice.call("DELETE", "/api/v1/namespaces/team/pods/p")
    assert status == 403
    assert body["message"].startswith('pods "p" is forbidden: User "alice" cannot delete resource "pods"')
    assert (await bob.call("GET", "/api/v1/namespaces/team/pods"))[0] == 403
    status, body = await bob.call("DELETE", "/api/v1/nodes")
    assert body["message"] == (
        'nodes is forbidden: User "bob" cannot deletecollection resource "nodes" in API group ""'
        " at the cluster scope"
    )
    status, body = await bob.call("GET", "/metrics")
    assert (status, body["message"]) == (403, 'forbidden: User "bob" cannot get path "/metrics"')
    assert (await bob.call("GET", "/apis"))[0] == 200  # discovery: any authenticated user


async def test_bad_credentials_get_401_and_anonymous_sees_only_public_paths(api: Api) -> None:
    status, body = await As(api, "not-a-token").call("GET", "/api/v1/namespaces")
    assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    anonymous = As(api, None)
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        async with api.session.get(api.url + path) as response:
            assert response.status == 200, path
    status, body = await anonymous.call("GET", "/api/v1/namespaces")
    assert status == 403
    assert body["message"].startswith('namespaces is forbidden: User "system:anonymous" cannot list')


async def test_anonymous_auth_off(kubesim_factory: KubeSimFactory) -> None:
    sim = await kubesim_factory(kubelet=False, authorization_mode="RBAC", anonymous_auth=False)
    async with aiohttp.ClientSession() as session:
        api = Api(session, sim.url)
        assert (await api.call("GET", "/api/v1/namespaces"))[0] == 401
        assert (await api.call("GET", "/apis"))[0] == 401
        async with session.get(sim.url + "/healthz") as response:
            assert response.status == 200
        assert (await As(api, ADMIN_TOKEN).call("GET", "/api/v1/namespaces"))[0] == 200


async def test_service_account_tokens_from_the_token_request_api(api: Api, admin: As) -> None:
    path = "/api/v1/namespaces/default/serviceaccounts/bot/token"
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    status, body = await admin.call("POST", path, request)
    assert (status, body["message"]) == (404, 'serviceaccounts "bot" not found')
    await admin.call("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "bot"}})
    status, body = await admin.call("POST", path, {**request, "spec": {"expirationSeconds": 60}})
    assert status == 422 and "may not specify a duration less than 10 minutes" in body["message"]
    status, issued = await admin.call("POST", path, request)
    assert status == 201 and issued["kind"] == "TokenRequest" and issued["spec"]["expirationSeconds"] == 3600
    bot = As(api, issued["status"]["token"])

    status, review = await bot.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert status == 201
    assert review["status"]["userInfo"]["username"] == "system:serviceaccount:default:bot"
    assert review["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert (await bot.call("GET", "/api/v1/namespaces/default/pods"))[0] == 403
    await grant(admin, "default", "bot-reads", READ_PODS, {"kind": "ServiceAccount", "name": "bot"})
    assert (await bot.call("GET", "/api/v1/namespaces/default/pods"))[0] == 200

    token_review = {"spec": {"token": issued["status"]["token"]}}
    status, reviewed = await admin.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews", token_review)
    assert status == 201 and reviewed["status"]["authenticated"] is True
    assert reviewed["status"]["user"]["username"] == "system:serviceaccount:default:bot"
    assert reviewed["status"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
    status, reviewed = await admin.call(
        "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {"spec": {"token": "x"}}
    )
    assert status == 201 and "authenticated" not in reviewed["status"] and reviewed["status"]["error"]
    # TokenReview is not for everyone
    assert (await bot.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews", token_review))[0] == 403
    delegator = {
        "metadata": {"name": "bot-delegates"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:auth-delegator",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}],
    }
    assert (await admin.call("POST", f"{RBAC}/clusterrolebindings", delegator))[0] == 201
    assert (await bot.call("POST", "/apis/authentication.k8s.io/v1/tokenreviews", token_review))[0] == 201

    await admin.call("DELETE", "/api/v1/namespaces/default/serviceaccounts/bot")
    assert (await bot.call("GET", "/api/v1/namespaces/default/pods"))[0] == 401


async def test_impersonation_needs_the_impersonate_verb(api: Api, admin: As) -> None:
    whoami = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, review = await As(api, ADMIN_TOKEN, Impersonate_User="bob", Impersonate_Group="devs").call(
        "POST", whoami, {}
    )
    assert status == 201
    assert review["status"]["userInfo"] == {"username": "bob", "groups": ["devs", "system:authenticated"]}
    sa = await As(api, ADMIN_TOKEN, Impersonate_User="system:serviceaccount:ns1:robot").call(
        "POST", whoami, {}
    )
    assert sa[1]["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:ns1",
        "system:authenticated",
    ]
    # with system:unauthenticated among the groups asked for, system:authenticated is not added
    headers = [
        ("Authorization", f"Bearer {ADMIN_TOKEN}"),
        ("Impersonate-User", "ghost"),
        ("Impersonate-Group", "system:masters"),
        ("Impersonate-Group", "system:unauthenticated"),
        ("Impersonate-Extra-Scope", "a"),
    ]
    async with api.session.post(api.url + whoami, json={}, headers=headers) as response:
        assert response.status == 201
        review = await response.json()
    assert review["status"]["userInfo"] == {
        "username": "ghost",
        "groups": ["system:masters", "system:unauthenticated"],
        "extra": {"scope": ["a"]},
    }
    status, body = await As(api, ADMIN_TOKEN, Impersonate_Group="devs").call("POST", whoami, {})
    assert status == 500 and "without impersonating a user" in body["message"]
    # header names are case-insensitive: a lower-case one asks for impersonation too
    lower = [("Authorization", f"Bearer {ADMIN_TOKEN}"), ("impersonate-user", "carol")]
    async with api.session.post(api.url + whoami, json={}, headers=lower) as response:
        assert response.status == 201
        assert (await response.json())["status"]["userInfo"]["username"] == "carol"
    status, body = await As(api, "alice-token", Impersonate_User="bob").call("POST", whoami, {})
    assert (status, body["message"]) == (
        403,
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" '
        "at the cluster scope",
    )
    role = {
        "metadata": {"name": "impersonate-bob"},
        "rules": [
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]}
        ],
    }
    binding = {
        "metadata": {"name": "impersonate-bob"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "impersonate-bob",
        },
        "subjects": [{"kind": "User", "name": "alice"}],
    }
    assert (await admin.call("POST", f"{RBAC}/clusterroles", role))[0] == 201
    assert (await admin.call("POST", f"{RBAC}/clusterrolebindings", binding))[0] == 201
    status, review = await As(api, "alice-token", Impersonate_User="bob").call("POST", whoami, {})
    assert status == 201 and review["status"]["userInfo"]["username"] == "bob"
    # the groups alice asks for are checked too
    status, body = await As(
        api, "alice-token", Impersonate_User="bob", Impersonate_Group="system:masters"
    ).call("POST", whoami, {})
    assert status == 403 and 'cannot impersonate resource "groups"' in body["message"]


async def test_access_reviews_answer_with_the_authorizer(api: Api, admin: As) -> None:
    await grant(admin, "default", "pod-reader", READ_PODS, {"kind": "User", "name": "alice"})
    sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    asked = {"namespace": "default", "verb": "list", "resource": "pods"}
    spec: dict[str, Any] = {"user": "alice", "resourceAttributes": asked}
    status, review = await admin.call("POST", sar, {"spec": spec})
    assert status == 201
    assert review["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "pod-reader/default" of Role "pod-reader" to User "alice"',
    }
    denied = {**spec, "resourceAttributes": {"verb": "delete", "resource": "nodes"}}
    assert (await admin.call("POST", sar, {"spec": denied}))[1]["status"] == {"allowed": False}
    status, body = await admin.call("POST", sar, {"spec": {"resourceAttributes": {"verb": "get"}}})
    assert status == 422 and "at least one of user or group must be specified" in body["message"]
    both = {**spec, "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}
    assert (await admin.call("POST", sar, {"spec": both}))[0] == 422

    local = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews"
    assert (await admin.call("POST", local, {"metadata": {"namespace": "default"}, "spec": spec}))[1][
        "status"
    ]["allowed"]
    elsewhere = {**spec, "resourceAttributes": {**asked, "namespace": "other"}}
    assert (await admin.call("POST", local, {"spec": elsewhere}))[0] == 422
    assert (await admin.call("POST", local, {"metadata": {"namespace": "other"}, "spec": spec}))[0] == 400

    alice = As(api, "alice-token")
    ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    ask = {"spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}}
    assert (await alice.call("POST", ssar, ask))[1]["status"]["allowed"] is True
    ask["spec"]["resourceAttributes"]["namespace"] = "kube-system"
    assert (await alice.call("POST", ssar, ask))[1]["status"]["allowed"] is False
    assert (await alice.call("POST", sar, {"spec": spec}))[0] == 403  # reviewing others needs a grant

    rules_review = {"spec": {"namespace": "default"}}
    status, rules = await admin.call(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", rules_review
    )
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in rules["status"]["resourceRules"]
    status, rules = await alice.call(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", rules_review
    )
    assert status == 201
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in rules["status"][
        "resourceRules"
    ]
    assert {
        "verbs": ["get"],
        "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
    } in rules["status"]["nonResourceRules"]


async def test_always_allow_mode_allows_everyone(kubesim_factory: KubeSimFactory) -> None:
    sim = await kubesim_factory(kubelet=False)
    async with aiohttp.ClientSession() as session:
        api = Api(session, sim.url)
        spec = {"user": "nobody", "resourceAttributes": {"verb": "delete", "resource": "nodes"}}
        status, review = await api.call(
            "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {"spec": spec}
        )
        assert (status, review["status"]) == (201, {"allowed": True})
        assert (await As(api, "nonsense").call("GET", "/api/v1/nodes"))[0] == 200
        status, review = await api.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
        assert review["status"]["userInfo"]["username"] == "kubesim-admin"
