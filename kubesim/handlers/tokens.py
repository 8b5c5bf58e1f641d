"""The TokenRequest API (`POST .../serviceaccounts/<name>/token`, `kubectl create token`): a token that
authenticates as the service account until it expires or the account is deleted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim.api.context import ApiContext, json_response
from kubesim.api.request import Target, decode_object, read_body
from kubesim.auth.authn import API_AUDIENCES
from kubesim.auth.middleware import AUTH_KEY
from kubesim.status import errors
from kubesim.storage.store import format_time

JSON = dict[str, Any]
DEFAULT_EXPIRATION = 3600  # seconds, upstream's default expirationSeconds
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2**32


def _expiration(spec: JSON) -> int:
    value = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
    if value is None:
        return DEFAULT_EXPIRATION
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.bad_request("spec.expirationSeconds must be an integer")
    if value < MIN_EXPIRATION or value > MAX_EXPIRATION:
        limit = "less than 10 minutes" if value < MIN_EXPIRATION else "greater than 2^32 seconds"
        cause = {
            "reason": "FieldValueInvalid",
            "field": "spec.expirationSeconds",
            "message": f"Invalid value: {value}: may not specify a duration {limit}",
        }
        raise errors.invalid("TokenRequest", "authentication.k8s.io", "", [cause])
    return value


async def create_token(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    body = await read_body(request, ctx.max_body_bytes)
    obj = decode_object(body, request.headers.get("Content-Type", ""), "TokenRequest") if body else {}
    if not isinstance(obj, dict) or obj.get("kind") not in (None, "", "TokenRequest"):
        raise errors.bad_request("the object provided is unrecognized (must be of type TokenRequest)")
    account = ctx.store.entry("serviceaccounts", target.namespace, target.name)
    if account is None:
        raise errors.not_found("serviceaccounts", "", target.name)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    seconds = _expiration(spec)
    audiences = tuple(a for a in spec.get("audiences") or [] if isinstance(a, str))
    expires = ctx.store.now() + seconds
    uid = str(account.obj.get("metadata", {}).get("uid", ""))
    token = request.app[AUTH_KEY].authenticator.issue(target.namespace, target.name, uid, audiences, expires)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    answer = {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {**(meta or {}), "name": target.name, "namespace": target.namespace},
        "spec": {**spec, "expirationSeconds": seconds, "audiences": list(audiences or API_AUDIENCES)},
        "status": {"token": token, "expirationTimestamp": format_time(expires)},
    }
    return json_response(answer, 201)
