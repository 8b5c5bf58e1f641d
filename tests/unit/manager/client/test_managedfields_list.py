"""Decoding a LIST body without its items' managedFields gives exactly decode-then-strip, for any input."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from manager.client.managedfields import KEY, OPEN, array_end
from manager.client.managedfields_list import cut_list_managed_fields, decode_list_stripped, strip_items
from tests.unit.manager.client.json_fuzz import mutate, random_entry, random_string, random_value

ENTRY = {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2024-05-01T10:00:00Z"}
FIELDS: dict[str, Any] = {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}}}}}
FULL = {**ENTRY, "fieldsType": "FieldsV1", "fieldsV1": FIELDS}


def expected(raw: bytes) -> Any:
    """The reference: decode everything, then drop every item's metadata.managedFields."""
    page = orjson.loads(raw)
    for item in page.get("items") or [] if isinstance(page, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
            item["metadata"].pop("managedFields", None)
    return page


def failed(result: Any) -> bool:
    return type(result) is tuple and result[0] == "error"  # orjson never gives a tuple


def outcome(decode: Any, raw: bytes) -> Any:
    try:
        return decode(raw)
    except (ValueError, AttributeError, TypeError) as exc:
        return "error", type(exc)


def assert_same(raw: bytes) -> None:
    assert outcome(decode_list_stripped, raw) == outcome(expected, raw)


def fast_path(raw: bytes) -> bool:
    """Whether the cut body is accepted (the decode of the original bytes is skipped)."""
    cut = cut_list_managed_fields(raw)
    if cut is None:
        return False
    try:
        page = orjson.loads(cut[0])
    except orjson.JSONDecodeError:
        return False
    return strip_items(page) == cut[1]


def list_of(*items: Any, **extra: Any) -> bytes:
    return orjson.dumps(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "items": list(items)}
        | extra
    )


def pod(name: str = "p", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7", **meta},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "args": ["a]", "]"]}]},
        "status": {"phase": "Running"},
    }


def test_every_items_managed_fields_are_cut_and_the_rest_is_intact() -> None:
    items = [pod(f"p{i}", managedFields=[FULL, ENTRY]) for i in range(50)]
    raw = list_of(*items)
    cut = cut_list_managed_fields(raw)
    assert cut is not None and cut[1] == 50 and b"fieldsV1" not in cut[0]
    assert fast_path(raw)
    page = decode_list_stripped(raw)
    assert page == expected(raw)
    assert [item["metadata"]["name"] for item in page["items"]] == [f"p{i}" for i in range(50)]
    assert all("managedFields" not in item["metadata"] for item in page["items"])
    assert page["items"][3]["spec"]["containers"][0]["args"] == ["a]", "]"]
    assert page["metadata"] == {"resourceVersion": "9"}


@pytest.mark.parametrize(
    ("raw", "fast"),
    [
        pytest.param(list_of(), False, id="empty list"),
        pytest.param(list_of(items=None), False, id="items null"),
        pytest.param(b'{"kind":"PodList","metadata":{}}', False, id="no items"),
        pytest.param(list_of(pod("a"), pod("b")), False, id="no managedFields at all"),
        pytest.param(list_of(pod("a"), pod("b", managedFields=[ENTRY]), pod("c")), True, id="some without"),
        pytest.param(list_of(pod(managedFields=[]), pod("b", managedFields=[ENTRY])), True, id="empty array"),
        pytest.param(list_of(pod(managedFields=None), pod("b", managedFields=[ENTRY])), True, id="null"),
        pytest.param(
            list_of(pod(annotations={"a": '{"managedFields":[1]}'}, managedFields=[ENTRY])),
            True,
            id="annotation value holding the pattern",
        ),
        pytest.param(
            list_of(pod(annotations={"a": 'x\\"managedFields\\":[{"}]'}, managedFields=[ENTRY])),
            True,
            id="escaped quotes and backslashes in a string",
        ),
        pytest.param(
            list_of(pod(managedFields=[{**ENTRY, "manager": 'a\\"]}"'}]), pod("b", managedFields=[ENTRY])),
            True,
            id="] in a managedFields string",
        ),
        pytest.param(
            list_of(pod(managedFields=[{"fieldsV1": {'k:{"name":"a]b"}': {}}}]), pod("b", managedFields=[])),
            True,
            id="] in a fieldsV1 key",
        ),
        pytest.param(
            list_of(pod(managedFields=[[1, 2], {"a": [3]}]), pod("b", managedFields=[ENTRY])),
            True,
            id="nested arrays",
        ),
        pytest.param(
            list_of(pod(managedFields=[{"a": [{}]}]), pod("b", managedFields=[ENTRY])),
            False,
            id="nested array of objects passing the shape check",
        ),
        pytest.param(
            list_of(pod(managedFields=[1, "two", None]), pod("b", managedFields=[ENTRY])),
            True,
            id="not entries: left uncut, popped",
        ),
        pytest.param(
            list_of(
                pod(managedFields=[{**ENTRY, "manager": "k\u00e9\u2603"}]), pod("b", managedFields=[ENTRY])
            ),
            True,
            id="non-ASCII in one array: that one decoded in full",
        ),
        pytest.param(
            list_of(pod(labels={"l": "\u00e9\U0001f600"}, managedFields=[ENTRY])),
            True,
            id="unicode elsewhere",
        ),
        pytest.param(
            list_of(
                pod("a", managedFields=[ENTRY]),
                {"metadata": {"name": "rs"}, "spec": {"template": {"metadata": {"managedFields": [ENTRY]}}}},
            ),
            False,
            id="a template's managedFields",
        ),
        pytest.param(
            list_of(
                {"metadata": {"name": "c", "managedFields": [ENTRY]}, "spec": {'x"managedFields': [ENTRY]}}
            ),
            False,
            id='custom resource key ending in \\"managedFields',
        ),
        pytest.param(
            list_of({"metadata": {"name": "c"}, "data": {"managedFields": "[]", "x": '"managedFields":[]'}}),
            False,
            id="configmap data",
        ),
        pytest.param(
            list_of(pod(managedFields=[ENTRY], labels={"managedFields": "x"})), True, id="label named so"
        ),
        pytest.param(
            orjson.dumps({"metadata": {"managedFields": [ENTRY]}, "items": [pod(managedFields=[ENTRY])]}),
            False,
            id="in the list's own metadata",
        ),
        pytest.param(
            list_of({"metadata": "x"}, [1], "s", None, pod(managedFields=[ENTRY])), True, id="odd items"
        ),
        pytest.param(
            b'{"items":[{"metadata":{"name":"a","managedFields":[{"m":1}],"managedFields":[{"m":2}]}}]}',
            False,
            id="duplicate managedFields key",
        ),
        pytest.param(
            b'{"items":[{"metadata":{"managedFields":[{"m":1}]},"metadata":{"name":"b"}}]}',
            False,
            id="duplicate metadata key",
        ),
        pytest.param(
            b'{"items":[{"metadata":{"managedFields":[{"m":1}]}}],"items":[{"metadata":{"managedFields":[]}}]}',
            False,
            id="duplicate items key",
        ),
        pytest.param(
            b'{"items":[{"metadata":{"name":"p","managedFields": [{"a":"b"}]}}]}', False, id="whitespace"
        ),
        pytest.param(
            b'{ "items" : [ { "metadata" : { "managedFields":[{"a":"b"}] } } ] }', True, id="spaced around"
        ),
        pytest.param(
            b'{"items":[{"metadata":{"managedFields":[{"a":"b"}]}},{"metadata":{"managedFields":[]}}]}',
            True,
            id="adjacent",
        ),
        pytest.param(
            b'{"items":[{"metadata":{"managedFields":[{"a":"]"}]}},{"metadata":{"managedFields":[{"b":1}]}}]}',
            True,
            id="] in a string before a second cut",
        ),
        pytest.param(
            list_of(pod(managedFields=[{"a": "}]"}]), pod("b", managedFields=[ENTRY])),
            False,
            id="}] in a string: the cut is made and refused",
        ),
        pytest.param(b"[1,2]", False, id="not an object"),
    ],
)
def test_tricky_lists_decode_to_decode_then_strip(raw: bytes, fast: bool) -> None:
    assert_same(raw)
    assert fast_path(raw) is fast


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not json", id="garbage"),
        pytest.param(b'{"items":[{"metadata":{"managedFields":[{"a":"b"}', id="cut off inside"),
        pytest.param(b'{"items":[{"metadata":{"managedFields":[{"a":"b"}]}}]', id="cut off after"),
        pytest.param(b'{"items":[{"metadata":{"managedFields":[{"a":"b"}]}}]}x', id="trailing"),
        pytest.param(b'{"items":[{"metadata":{"name":"\xff","managedFields":[]}}]}', id="bad UTF-8 outside"),
        pytest.param(b'{"items":[{"metadata":{"managedFields":[{"a":"\xc3"}]}}]}', id="bad UTF-8 inside"),
        pytest.param(b'{"items":[{"metadata":{"managedFields":[{"a":"]}}},"x":"y"}]}}]}', id="] then junk"),
    ],
)
def test_malformed_bodies_fail_as_before(raw: bytes) -> None:
    assert failed(outcome(expected, raw))
    assert outcome(decode_list_stripped, raw) == outcome(expected, raw)


def test_the_one_documented_exception_a_defect_only_inside_the_cut_arrays() -> None:
    raw = b'{"items":[{"metadata":{"managedFields":[{"a":,,}]}},{"metadata":{"managedFields":[]}}]}'
    assert failed(outcome(expected, raw))
    assert decode_list_stripped(raw) == {"items": [{"metadata": {}}, {"metadata": {}}]}


def test_array_end_applies_the_shape_and_ascii_checks() -> None:
    def end(raw: bytes) -> int:
        return array_end(raw, raw.find(KEY) + OPEN, len(raw))

    assert end(b'"managedFields":[]') == 17
    assert end(b'"managedFields":[{"a":"b"}],') == 26
    assert end(b'"managedFields":[1]') == -1
    assert end(b'"managedFields":[{"a":"\xc3\xa9"}]') == -1
    assert end(b'"managedFields":[{') == -1


# ---------------------------------------------------------------------------------------------- fuzzing
def random_item(rng: random.Random) -> Any:
    if rng.random() < 0.03:
        return random_value(rng, 2)
    meta: dict[str, Any] = {"name": random_string(rng)}
    if rng.random() < 0.3:
        meta[random_string(rng)] = random_value(rng, 1)
    if rng.random() < 0.9:
        meta["managedFields"] = (
            [random_entry(rng) for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.95
            else random_value(rng, 1)
        )
    parts = [("metadata", meta), ("status", random_value(rng, 1))]
    if rng.random() < 0.3:
        parts.append(("spec", random_value(rng, 0)))
    rng.shuffle(parts)
    return dict(parts)


def random_list(rng: random.Random) -> bytes:
    return list_of(*(random_item(rng) for _ in range(rng.randint(0, 6))))


def test_fuzz_valid_lists_always_decode_to_decode_then_strip() -> None:
    rng = random.Random(4)
    fast = 0
    for _ in range(3000):
        raw = random_list(rng)
        fast += fast_path(raw)
        assert_same(raw)
    assert fast > 500, fast  # the fast path was exercised, not only the fallback


def test_fuzz_mutated_lists_fail_as_before_unless_the_defects_are_inside_the_cuts() -> None:
    rng = random.Random(5)
    accepted_invalid = 0
    for _ in range(3000):
        raw = mutate(random_list(rng), rng)
        ours, reference = outcome(decode_list_stripped, raw), outcome(expected, raw)
        if ours == reference:
            continue
        # The only allowed difference: the reference fails and some cut span is not a JSON value.
        assert failed(reference) and not failed(ours)
        spans, at = [], raw.find(KEY)
        while at >= 0:
            close = array_end(raw, at + OPEN, len(raw))
            if close >= 0:
                spans.append(raw[at + OPEN : close + 1])
            at = raw.find(KEY, max(close, at + OPEN))
        assert any(failed(outcome(orjson.loads, span)) for span in spans)
        accepted_invalid += 1
    assert accepted_invalid < 100, accepted_invalid
