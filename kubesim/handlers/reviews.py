"""Access and identity reviews, answered at once and never stored: TokenReview and SelfSubjectReview
(authentication.k8s.io/v1); SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview and
SelfSubjectRulesReview (authorization.k8s.io/v1). They ask the server's own authenticator and authorizer
(kubesim.auth), so `kubectl auth can-i` and `kubectl auth whoami` answer as the server would decide."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim.admission.pipeline import Write
from kubesim.api.context import ApiContext
from kubesim.api.request import Target
from kubesim.auth.attributes import Attributes
from kubesim.auth.middleware import AUTH_KEY, request_user
from kubesim.auth.service import Auth
from kubesim.auth.user import MASTERS, UserInfo
from kubesim.status import errors

JSON = dict[str, Any]
_ALL_RULES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _spec_user(spec: JSON) -> UserInfo:
    groups = tuple(g for g in spec.get("groups") or [] if isinstance(g, str))
    extra_in = spec.get("extra")
    extra_in = extra_in if isinstance(extra_in, dict) else {}
    extra = {str(k): tuple(str(v) for v in vs) for k, vs in extra_in.items() if isinstance(vs, list)}
    return UserInfo(_str(spec.get("user")), _str(spec.get("uid")), groups, extra)


def _invalid(kind: str, field: str, message: str, value: Any = None) -> errors.ApiError:
    cause = {"reason": "FieldValueInvalid" if value is not None else "FieldValueRequired", "field": field}
    cause["message"] = message
    return errors.invalid(kind, "authorization.k8s.io", "", [cause])


def _attributes(kind: str, spec: JSON, namespace: str = "") -> Attributes:
    """The attributes an access review's spec asks about (checked as upstream's
    ValidateSubjectAccessReviewSpec)."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(resource, dict) == isinstance(non_resource, dict):
        raise _invalid(
            kind,
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            "",
        )
    if isinstance(non_resource, dict):
        if namespace:
            raise _invalid(kind, "spec.nonResourceAttributes", "disallowed on this kind of request", "")
        return Attributes(_str(non_resource.get("verb")), False, path=_str(non_resource.get("path")))
    assert isinstance(resource, dict)
    asked_namespace = _str(resource.get("namespace"))
    if namespace and asked_namespace != namespace:
        raise _invalid(
            kind, "spec.resourceAttributes.namespace", "must match metadata.namespace", asked_namespace
        )
    return Attributes(
        verb=_str(resource.get("verb")),
        group=_str(resource.get("group")),
        version=_str(resource.get("version")),
        resource=_str(resource.get("resource")),
        subresource=_str(resource.get("subresource")),
        namespace=asked_namespace,
        name=_str(resource.get("name")),
    )


def _check_namespace(obj: JSON, namespace: str) -> None:
    """A LocalSubjectAccessReview is in the URL's namespace (as the generic create handler requires)."""
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = namespace


def _access_status(auth: Auth, user: UserInfo, attrs: Attributes) -> JSON:
    allowed, reason = auth.authorize(user, attrs)
    status: JSON = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def _rules_status(auth: Auth, user: UserInfo, namespace: str) -> JSON:
    everything = ([dict(_ALL_RULES)], [{"verbs": ["*"], "nonResourceURLs": ["*"]}])
    if not auth.enforcing:
        return {"resourceRules": everything[0], "nonResourceRules": everything[1], "incomplete": False}
    # system:masters holds every rule (kube-apiserver's privileged-group authorizer), then its RBAC ones
    resource_rules, url_rules = everything if MASTERS in user.groups else ([], [])
    for rule in auth.rbac.rules_for(user, namespace):
        if rule.get("nonResourceURLs"):
            url_rules.append({"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]})
        else:
            shown = {k: rule[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if rule.get(k)}
            shown.setdefault("verbs", [])
            resource_rules.append(shown)
    return {"resourceRules": resource_rules, "nonResourceRules": url_rules, "incomplete": False}


def _token_status(auth: Auth, spec: JSON) -> JSON:
    audiences = tuple(a for a in spec.get("audiences") or [] if isinstance(a, str))
    found = auth.authenticator.token_user(_str(spec.get("token")), audiences)
    if found is None:
        return {"user": {}, "error": "invalid bearer token"}
    user, valid_for = found
    return {"authenticated": True, "user": user.to_json(), "audiences": list(valid_for)}


def answer(auth: Auth, requester: UserInfo, target: Target, obj: JSON) -> JSON:
    """The review with its status filled in."""
    kind = target.rtype.kind
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if kind == "SelfSubjectReview":
        obj["status"] = {"userInfo": requester.to_json()}
    elif kind == "TokenReview":
        if not _str(spec.get("token")):
            raise errors.invalid(
                kind,
                "authentication.k8s.io",
                "",
                [{"reason": "FieldValueRequired", "field": "spec.token", "message": "Required value"}],
            )
        obj["status"] = _token_status(auth, spec)
    elif kind == "SelfSubjectRulesReview":
        obj["status"] = _rules_status(auth, requester, _str(spec.get("namespace")))
    elif kind == "SelfSubjectAccessReview":
        obj["status"] = _access_status(auth, requester, _attributes(kind, spec))
    else:  # SubjectAccessReview, LocalSubjectAccessReview
        if target.namespace:
            _check_namespace(obj, target.namespace)
        user = _spec_user(spec)
        if not user.name and not user.groups:
            raise _invalid(kind, "spec.user", "at least one of user or group must be specified", "")
        obj["status"] = _access_status(auth, user, _attributes(kind, spec, target.namespace))
    obj.setdefault("metadata", {})
    return obj


async def create_review(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    write = Write(ctx, request, target)
    obj = await write.read_object()
    write.check_fields(obj)  # decoded like any object first: a wrongly typed spec is a 400, not a 500
    return write.respond(answer(request.app[AUTH_KEY], request_user(request), target, obj), 201)
