"""`decode_object_stripped`: a write's answer decoded without its top-level metadata.managedFields."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from manager.client.managedfields import cut_managed_fields, decode_object_stripped

ENTRY = {"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}}


def expected(body: bytes) -> Any:
    """The reference: decode everything, then drop the top-level object's managedFields."""
    obj = orjson.loads(body)
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is dict:
        meta.pop("managedFields", None)
    return obj


def test_an_object_is_cut_and_decodes_to_decode_then_strip() -> None:
    obj = {"metadata": {"name": "p", "managedFields": [ENTRY, ENTRY]}, "spec": {"args": ["a]", "]"]}}
    body = orjson.dumps(obj)
    cut = cut_managed_fields(body)
    assert cut is not None and b"fieldsV1" not in cut  # the fast path is taken
    assert decode_object_stripped(body) == expected(body) == {"metadata": {"name": "p"}, "spec": obj["spec"]}


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"metadata": {"name": "p"}}, id="no managedFields"),
        pytest.param({"metadata": {"name": "p", "managedFields": []}}, id="empty array"),
        pytest.param({"metadata": {"managedFields": [{**ENTRY, "manager": "x],"}]}}, id="] in a string"),
        pytest.param({"metadata": {"managedFields": [{**ENTRY, "manager": "k\u00e9"}]}}, id="non-ASCII"),
        pytest.param({"metadata": {"managedFields": [[1], {"a": [2]}]}}, id="nested arrays"),
        pytest.param(
            {"spec": {"template": {"metadata": {"managedFields": [ENTRY]}}}, "metadata": {"name": "p"}},
            id="only a template's",
        ),
        pytest.param(
            {"spec": {"x": {"managedFields": [ENTRY]}}, "metadata": {"managedFields": [ENTRY]}},
            id="a nested one first, then the top-level one",
        ),
        pytest.param(
            {"metadata": {"annotations": {"a": '{"managedFields":[1]}'}, "managedFields": [ENTRY]}},
            id="annotation holding the pattern",
        ),
        pytest.param({"metadata": "not an object"}, id="metadata not an object"),
        pytest.param({"kind": "Status", "status": "Success"}, id="no metadata"),
        pytest.param([{"metadata": {"managedFields": [ENTRY]}}], id="not an object"),
    ],
)
def test_tricky_bodies_decode_to_decode_then_strip(obj: Any) -> None:
    body = orjson.dumps(obj)
    assert decode_object_stripped(body) == expected(body)


def test_malformed_bodies_fail_as_orjson_does() -> None:
    for body in (b'{"metadata":{"managedFields":[{"a":1}]}', b"", b"{"):
        with pytest.raises(orjson.JSONDecodeError):
            decode_object_stripped(body)
