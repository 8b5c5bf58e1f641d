"""The second half of the malformed-request table (no tests of its own): malformed query parameters,
bodies, content types, sizes, conflicts and missing objects, for every resource of test_strict_cases."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.integration.kubesim.test_strict_cases import (
    APPLY,
    JSON_PATCH,
    MERGE,
    RESOURCES,
    STRATEGIC,
    Case,
    Resource,
    deep_nesting,
    dumps_case,
    with_value,
    wrong_quantities,
    wrong_types,
)

BAD_QUERIES = (
    "timeoutSeconds=-x",
    "timeoutSeconds=1.5",
    "limit=x",
    "limit=1_000",
    "limit=1e3",
    "limit=99999999999999999999",
    "watch=maybe",
    "allowWatchBookmarks=x",
    "sendInitialEvents=perhaps",
    "resourceVersion=abc",
    "resourceVersionMatch=Bogus",  # ListOptions validation: 422
    "resourceVersionMatch=Exact",  # without a resourceVersion: 422
    "labelSelector=%28%28%28",
    "labelSelector=a%20b%20c",
    "fieldSelector=metadata.name",
    "fieldSelector=spec.unknown%3Dx",
)


def bad_queries() -> Iterator[Case]:
    for res in RESOURCES:
        for query in BAD_QUERIES:
            codes = frozenset((422,)) if query.startswith("resourceVersionMatch") else frozenset((400,))
            yield Case(f"list ?{query}", "GET", f"{res.collection}?{query}", codes)
            if "Selector" in query or "Seconds" in query or "limit" in query:  # deletecollection: ListOptions
                path = f"{res.collection}?{query}"
                yield Case(f"deletecollection ?{query}", "DELETE", path, codes, unchanged=res.item)
        yield Case(
            "delete ?gracePeriodSeconds=x",
            "DELETE",
            res.item + "?gracePeriodSeconds=x",
            frozenset((400,)),
            unchanged=res.item,
        )
        yield Case(
            "delete ?propagationPolicy=Never",
            "DELETE",
            res.item + "?propagationPolicy=Never",
            frozenset((422,)),  # DeleteOptions validation
            unchanged=res.item,
        )
        yield Case(
            "create ?dryRun=Maybe",
            "POST",
            res.collection + "?dryRun=Maybe",
            frozenset((422,)),
            dumps_case(with_value(res.valid, ("metadata", "name"), "fresh")),
            absent=f"{res.collection}/fresh",
        )
        yield Case(
            "create ?fieldValidation=Loose",
            "POST",
            res.collection + "?fieldValidation=Loose",
            frozenset((400,)),
            dumps_case(with_value(res.valid, ("metadata", "name"), "fresh")),
            absent=f"{res.collection}/fresh",
        )
        yield Case(
            "merge patch ?force=true",
            "PATCH",
            res.item + "?force=true",
            frozenset((422,)),
            b"{}",
            MERGE,
            unchanged=res.item,
        )
        for label, applied in _applied_gvk_variants(res.valid):
            yield Case(
                f"apply {label}",
                "PATCH",
                res.item + "?fieldManager=t&force=true",
                frozenset((400,)),
                dumps_case(applied),
                APPLY,
                unchanged=res.item,
            )
        yield Case(
            "apply without fieldManager",
            "PATCH",
            res.item,
            frozenset((422,)),
            dumps_case(res.valid),
            APPLY,
            unchanged=res.item,
        )
        # a list or get at a resourceVersion the store has not reached (a watch from one waits, as upstream)
        yield Case(
            "list at a future resourceVersion",
            "GET",
            res.collection + "?resourceVersion=999999999",
            frozenset((504,)),
        )
        yield Case(
            "get at a future resourceVersion",
            "GET",
            res.item + "?resourceVersion=999999999",
            frozenset((504,)),
        )


BAD_BODIES = (
    b"{",
    b"[1,2",
    b'"x"',
    b"[]",
    b"null",
    b"42",
    b"\xff\xfe",
    b'{"metadata": []}',
    b'{"metadata": {"name": 5}}',
    b'{"kind": "Secret"}',
    b'{"apiVersion": "v9"}',
)
BAD_PATCHES = {  # undecodable patches are 400; a JSON patch that fails on the object, 422 (upstream patcher)
    b"{": 400,
    b'"x"': 400,
    b"[{}]": 400,
    b'[{"op": "bogus", "path": "/a"}]': 400,
    b'[{"op": "remove", "path": "/nope"}]': 422,
    b'[{"op": "test", "path": "/metadata/name", "value": "other"}]': 422,
}
MEDIA_TYPES = {  # 415 for an unknown media type; protobuf is known, and these bytes do not decode
    "text/plain": 415,
    "application/xml": 415,
    "application/vnd.kubernetes.protobuf": 400,
}


def _applied_gvk_variants(valid: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Applied objects that name another group/version/kind than the endpoint's, or carry managedFields:
    upstream's field manager refuses them (400) where other writes would fill in apiVersion and kind."""
    bare = {k: v for k, v in valid.items() if k not in ("apiVersion", "kind")}
    yield "without apiVersion and kind", bare
    yield "without apiVersion", {"kind": valid["kind"], **bare}
    yield "without kind", {"apiVersion": valid["apiVersion"], **bare}
    yield "of another version", {**valid, "apiVersion": valid["apiVersion"] + "beta9"}
    yield "of another kind", {**valid, "kind": "Secret"}
    yield "with an unparsable apiVersion", {**valid, "apiVersion": "a/b/c"}
    managed = [{"manager": "x", "operation": "Apply"}]
    yield "with managedFields", with_value(valid, ("metadata", "managedFields"), managed)


YAML_TAILS = (  # after a valid head: what sigs.k8s.io/yaml cannot turn into JSON, or refuses
    b"  labels:\n    ~: x\n",  # a null map key
    b"  annotations:\n    a: .inf\n",  # a number JSON has not
    b"  annotations:\n    a: !!python/object:os.system ls\n",  # a tag no safe loader constructs
    b"  annotations:\n" + b"".join(b"  " * (i + 2) + b"a:\n" for i in range(250)) + b"  " * 252 + b"b\n",
)


def _yaml_cases(res: Resource, fresh: str) -> Iterator[Case]:
    for i, tail in enumerate(YAML_TAILS):
        head = f"apiVersion: {res.valid['apiVersion']}\nkind: {res.valid['kind']}\nmetadata:\n".encode()
        for name, method, path, content_type, check in (
            ("fresh", "POST", res.collection, "application/yaml", {"absent": fresh}),
            (res.name, "PUT", res.item, "application/yaml", {"unchanged": res.item}),
            (res.name, "PATCH", res.item + "?fieldManager=t&force=true", APPLY, {"unchanged": res.item}),
        ):
            body = head + f"  name: {name}\n".encode() + tail
            label = f"YAML body {i} {method} {content_type}"
            yield Case(label, method, path, frozenset((400,)), body, content_type, **check)


def bad_bodies() -> Iterator[Case]:
    for res in RESOURCES:
        fresh = f"{res.collection}/fresh"
        yield from _yaml_cases(res, fresh)
        for body in BAD_BODIES:
            yield Case(f"create {body[:20]!r}", "POST", res.collection, frozenset((400,)), body, absent=fresh)
            yield Case(f"update {body[:20]!r}", "PUT", res.item, frozenset((400,)), body, unchanged=res.item)
        for content_type, code in MEDIA_TYPES.items():
            yield Case(
                f"create as {content_type}",
                "POST",
                res.collection,
                frozenset((code,)),
                dumps_case(res.valid),
                content_type,
                absent=fresh,
            )
        yield Case(
            "patch as application/json",
            "PATCH",
            res.item,
            frozenset((415,)),
            b"{}",
            "application/json",
            unchanged=res.item,
        )
        if res.custom:
            yield Case(
                "strategic merge patch of a custom resource",
                "PATCH",
                res.item,
                frozenset((415,)),
                b"{}",
                STRATEGIC,
                unchanged=res.item,
            )
        for body, code in BAD_PATCHES.items():
            patch_type = JSON_PATCH if body.startswith(b"[") else MERGE
            yield Case(
                f"patch {body[:30]!r}",
                "PATCH",
                res.item,
                frozenset((code,)),
                body,
                patch_type,
                unchanged=res.item,
            )
        big = dumps_case(with_value(res.valid, ("metadata", "annotations"), {"big": "x" * (70 * 1024)}))
        yield Case("create past the body limit", "POST", res.collection, frozenset((413,)), big, absent=fresh)
        yield Case("update past the body limit", "PUT", res.item, frozenset((413,)), big, unchanged=res.item)
        yield Case(
            "create of an existing name",
            "POST",
            res.collection,
            frozenset((409,)),
            dumps_case(res.valid),
            unchanged=res.item,
        )
        stale = with_value(res.valid, ("metadata", "resourceVersion"), "1")
        yield Case(
            "update at a stale resourceVersion",
            "PUT",
            res.item,
            frozenset((409,)),
            dumps_case(stale),
            unchanged=res.item,
        )
        other = with_value(res.valid, ("metadata", "name"), "other")
        yield Case(
            "update naming another object",
            "PUT",
            res.item,
            frozenset((400,)),
            dumps_case(other),
            unchanged=res.item,
        )
        for method in ("GET", "PUT", "PATCH", "DELETE"):
            body = (
                dumps_case(with_value(res.valid, ("metadata", "name"), "missing"))
                if method == "PUT"
                else b"{}"
                if method == "PATCH"
                else b""
            )
            yield Case(
                f"{method} of a missing object",
                method,
                f"{res.collection}/missing",
                frozenset((404,)),
                body,
                MERGE if method == "PATCH" else "application/json",
                absent=f"{res.collection}/missing",
            )


def all_cases() -> list[Case]:
    return [*wrong_types(), *wrong_quantities(), *deep_nesting(), *bad_queries(), *bad_bodies()]
