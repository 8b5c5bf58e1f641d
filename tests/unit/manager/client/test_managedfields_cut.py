"""Decoding a watch line without its managedFields must give exactly decode-then-strip, for any input."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from manager.client.managedfields import cut_managed_fields, decode_watch_line_stripped
from manager.client.watch import decode_watch_line
from tests.unit.manager.client.json_fuzz import mutate, random_entry, random_string, random_value

ENTRY = {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2024-05-01T10:00:00Z"}
FIELDS: dict[str, Any] = {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}}}}}


def expected(line: bytes) -> Any:
    """The reference: decode everything, then drop the top-level object's managedFields."""
    event_type, obj = decode_watch_line(line)
    meta = obj.get("metadata")
    if type(meta) is dict:
        meta.pop("managedFields", None)
    return event_type, obj


def outcome(decode: Any, line: bytes) -> Any:
    try:
        return decode(line)
    except ValueError as exc:
        return ValueError, type(exc)


def line_of(obj: dict[str, Any], event_type: str = "MODIFIED") -> bytes:
    return orjson.dumps({"type": event_type, "object": obj})


def pod(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", **meta},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "args": ["a]", "]"]}]},
        "status": {"phase": "Running"},
    }


def assert_same(line: bytes) -> None:
    assert outcome(decode_watch_line_stripped, line) == outcome(expected, line)


def test_a_pod_is_cut_and_decodes_to_decode_then_strip() -> None:
    line = line_of(pod(managedFields=[{**ENTRY, "fieldsType": "FieldsV1", "fieldsV1": FIELDS}] * 2))
    cut = cut_managed_fields(line)
    assert cut is not None and b"fieldsV1" not in cut  # the fast path is taken
    assert_same(line)
    event_type, obj = decode_watch_line_stripped(line)
    assert event_type == "MODIFIED" and "managedFields" not in obj["metadata"]
    assert obj["spec"]["containers"][0]["args"] == ["a]", "]"]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(pod(), id="no managedFields"),
        pytest.param(pod(managedFields=[]), id="empty array"),
        pytest.param(pod(managedFields=[{**ENTRY, "manager": "ctl[0]"}]), id="] in a string"),
        pytest.param(pod(managedFields=[{**ENTRY, "manager": "x],"}, ENTRY]), id="],  in a string"),
        pytest.param(pod(managedFields=[{**ENTRY, "manager": 'a\\"]}"'}]), id="escaped quote and backslash"),
        pytest.param(pod(managedFields=[{"fieldsV1": {'k:{"name":"a]b"}': {}}}]), id="] in a fieldsV1 key"),
        pytest.param(pod(managedFields=[{**ENTRY, "manager": "k\u00e9\u2603"}]), id="non-ASCII"),
        pytest.param(pod(managedFields=None), id="null"),
        pytest.param(pod(managedFields=[[1, 2], {"a": [3]}]), id="nested arrays"),
        pytest.param(pod(managedFields=[1, "two", None, True]), id="not entries"),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {"template": {"metadata": {"managedFields": [ENTRY]}}}},
            id="only a template's",
        ),
        pytest.param(
            {
                "spec": {"template": {"metadata": {"managedFields": [ENTRY]}}},
                "metadata": {"name": "p", "managedFields": [ENTRY]},
            },
            id="template's first, then the top-level one",
        ),
        pytest.param(
            {
                "spec": {"template": {"metadata": {"managedFields": [ENTRY]}}},
                "metadata": {"name": "p", "managedFields": None},
            },
            id="template's array, top-level null",
        ),
        pytest.param(
            {"metadata": {"name": "p", 'x"managedFields': [ENTRY], "managedFields": [ENTRY]}},
            id='key ending in \\"managedFields',
        ),
        pytest.param(
            {
                "metadata": {
                    "name": "p",
                    "annotations": {"a": '{"managedFields":[1]}'},
                    "managedFields": [ENTRY],
                }
            },
            id="annotation holding the pattern",
        ),
        pytest.param(
            {
                "spec": {"x": {"managedFields": [{"y": "]"}]}},
                "metadata": {"name": "p", "managedFields": [ENTRY]},
            },
            id="custom resource's spec field",
        ),
        pytest.param(
            pod(managedFields=[ENTRY], labels={"managedFields": "x"}), id="label named managedFields"
        ),
        pytest.param({"metadata": "not an object"}, id="metadata not an object"),
        pytest.param({"kind": "Status"}, id="no metadata"),
    ],
)
def test_tricky_objects_decode_to_decode_then_strip(obj: dict[str, Any]) -> None:
    assert_same(line_of(obj))


def test_duplicate_metadata_keys_take_the_last_as_orjson_does() -> None:
    first = b'{"name":"a","managedFields":[{"manager":"m"}]}'
    second = b'{"name":"b","managedFields":[{"manager":"n"}]}'
    for line in (
        b'{"type":"ADDED","object":{"metadata":' + first + b',"metadata":' + second + b"}}",
        b'{"type":"ADDED","object":{"metadata":' + first + b',"metadata":{"name":"b"}}}',
        b'{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[],"managedFields":[{"m":1}]}}}',
    ):
        assert_same(line)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"name":"p","managedFields": [{"a":"b"}]}}}', id="ws"
        ),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"name":"p","managedFields":[{"a":"b"}] }}}', id="ws2"
        ),
        pytest.param(
            b'{ "type" : "ADDED" , "object" : { "metadata" : { "managedFields":[] } } }', id="spaced"
        ),
    ],
)
def test_whitespace_variants(line: bytes) -> None:
    assert_same(line)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not json", id="garbage"),
        pytest.param(b"[1,2]", id="not an object"),
        pytest.param(b'{"type":"ADDED"}', id="no object"),
        pytest.param(
            b'{"type":1,"object":{"metadata":{"managedFields":[{"a":"b"}]}}}', id="type not a string"
        ),
        pytest.param(b'{"type":"ADDED","object":[]}', id="object not an object"),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"b"}', id="cut off inside"
        ),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"b"}]}', id="cut off after"
        ),
        pytest.param(b'{"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"b"}]}}}x', id="trailing"),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"name":"\xff","managedFields":[]}}}',
            id="bad UTF-8 outside",
        ),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"\xc3"}]}}}', id="bad UTF-8 inside"
        ),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"]}}},"x":"y"}]}}}',
            id="] then junk",
        ),
    ],
)
def test_malformed_lines_fail_as_before(line: bytes) -> None:
    assert outcome(decode_watch_line_stripped, line) == outcome(expected, line)
    assert outcome(expected, line)[0] is ValueError


def test_the_one_documented_exception_a_defect_only_inside_the_cut_array() -> None:
    """The array is discarded unread, so a syntax error confined to it is not seen (see the module doc)."""
    line = b'{"type":"ADDED","object":{"metadata":{"name":"p","managedFields":[{"a":,,}]}}}'
    assert outcome(expected, line)[0] is ValueError
    assert decode_watch_line_stripped(line) == ("ADDED", {"metadata": {"name": "p"}})


# ---------------------------------------------------------------------------------------------- fuzzing
def random_object(rng: random.Random) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": random_string(rng)}
    for _ in range(rng.randint(0, 2)):
        meta[random_string(rng)] = random_value(rng, 1)
    if rng.random() < 0.8:
        meta["managedFields"] = (
            [random_entry(rng) for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.9
            else random_value(rng, 1)
        )
    parts = [("metadata", meta), ("spec", random_value(rng, 0)), ("status", random_value(rng, 1))]
    rng.shuffle(parts)
    return dict(parts)


def test_fuzz_valid_lines_always_decode_to_decode_then_strip() -> None:
    rng = random.Random(4)
    cut = 0
    for _ in range(3000):
        line = line_of(random_object(rng))
        cut += cut_managed_fields(line) is not None
        assert_same(line)
    assert cut > 1000  # the fast path was exercised, not only the fallback


def test_fuzz_mutated_lines_fail_as_before_unless_the_defect_is_inside_the_cut() -> None:
    rng = random.Random(5)
    accepted_invalid = 0
    for _ in range(3000):
        line = mutate(line_of(random_object(rng)), rng)
        ours, reference = outcome(decode_watch_line_stripped, line), outcome(expected, line)
        if ours == reference:
            continue
        # The only allowed difference: the reference fails and the whole defect lies in the cut array.
        assert reference[0] is ValueError and ours[0] is not ValueError
        start = line.find(b'"managedFields":[') + len(b'"managedFields":')
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(line[start : line.find(b"]", start) + 1])
        accepted_invalid += 1
    assert accepted_invalid < 100, accepted_invalid


# ---------------------------------------------------------------------------------------- informer wiring
def test_only_transforms_that_drop_managed_fields_get_the_cut() -> None:
    from manager.apimachinery.resources import PODS
    from manager.client.config import RestConfig
    from manager.client.managedfields import decode_watch_span_stripped
    from manager.client.rest import ApiClient
    from manager.client.watch import decode_watch_span
    from manager.informers import SharedInformer
    from manager.informers.transform import (
        chain,
        drops_managed_fields,
        project_metadata,
        strip_managed_fields,
    )

    def keep(obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    assert drops_managed_fields(strip_managed_fields) and drops_managed_fields(project_metadata)
    assert drops_managed_fields(chain(strip_managed_fields, keep))
    assert not drops_managed_fields(keep) and not drops_managed_fields(chain(keep, strip_managed_fields))
    assert not drops_managed_fields(chain())
    client = ApiClient(RestConfig(host="http://127.0.0.1:1"))
    for transform, decoder in [
        (None, decode_watch_span_stripped),
        (chain(strip_managed_fields, keep), decode_watch_span_stripped),
        (keep, decode_watch_span),
    ]:
        informer = SharedInformer(client, PODS, transform=transform)
        assert informer.reflector.decode_span is decoder
    metadata_only = SharedInformer(client, PODS, metadata_only=True)
    assert metadata_only.reflector.decode_span is decode_watch_span_stripped


async def test_a_transform_that_wants_managed_fields_still_gets_them() -> None:
    from manager.apimachinery.resources import PODS
    from manager.client.config import RestConfig
    from manager.client.rest import ApiClient
    from manager.informers import SharedInformer

    seen: list[Any] = []

    def keep(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"].get("managedFields"))
        return obj

    entries = [{**ENTRY, "fieldsType": "FieldsV1", "fieldsV1": FIELDS}]
    line = line_of(pod(managedFields=entries))

    class OneRead:
        async def spans(self) -> Any:
            yield [(line, 0, len(line))]

    client = ApiClient(RestConfig(host="http://127.0.0.1:1"))
    for transform, expected_fields in [(keep, entries), (None, None)]:
        informer = SharedInformer(client, PODS, transform=transform)
        await informer.reflector._consume_events(OneRead())  # type: ignore[arg-type]
        cached = informer.indexer.get("ns", "p")
        assert cached is not None and cached["metadata"].get("managedFields") == expected_fields
    assert seen == [entries]
