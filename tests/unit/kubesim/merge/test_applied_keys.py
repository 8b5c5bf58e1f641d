"""kubesim.merge.fieldset: an apply configuration's set lists map keys as members, struct fields not
(structured-merge-diff's ToFieldSet), and types the undeclared keys of a preserve-unknown-fields object
as the deduced type (granular maps, atomic lists); an Update's set is unchanged by that."""

from __future__ import annotations

from typing import Any

from kubesim.merge.fieldset import field_set, to_fields_v1
from kubesim.merge.merging import remove_path
from kubesim.merge.zero import VALUE

_SLOT = {"type": "object", "properties": {"a": {"type": "integer"}}}
_NODE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "m": {"type": "object", "additionalProperties": _SLOT},
        "p": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"k": {"type": "object", "properties": {"z": {"type": "integer"}}}},
        },
        "s": _SLOT,
    },
}
_VALUE = {"m": {"x": {"a": 1}, "e": {}}, "p": {"k": {"z": 1}, "u": {"v": [1], "w": {"y": 2}}}, "s": {"a": 3}}


def test_an_apply_set_has_map_keys_as_members_and_struct_fields_not() -> None:
    assert field_set(_VALUE, _NODE) == {
        ("f:m", "f:x"),
        ("f:m", "f:x", "f:a"),
        ("f:m", "f:e"),
        ("f:p", "f:k", "f:z"),
        ("f:p", "f:u"),
        ("f:p", "f:u", "f:v"),
        ("f:p", "f:u", "f:w"),
        ("f:p", "f:u", "f:w", "f:y"),
        ("f:s", "f:a"),
    }
    assert to_fields_v1(field_set(_VALUE, _NODE))["f:m"] == {"f:e": {}, "f:x": {".": {}, "f:a": {}}}


def test_an_update_set_over_a_value_in_place_is_unchanged() -> None:
    # keys already in place are no members of an Update's set: only what the old object lacked is
    assert field_set(_VALUE, _NODE, update=True, custom=True, state=VALUE) == {
        ("f:m",),
        ("f:m", "f:x"),
        ("f:m", "f:x", "f:a"),
        ("f:m", "f:e"),
        ("f:p",),
        ("f:p", "f:k"),
        ("f:p", "f:k", "f:z"),
        ("f:p", "f:u"),
        ("f:p", "f:u", "f:v"),
        ("f:p", "f:u", "f:w"),
        ("f:p", "f:u", "f:w", "f:y"),
        ("f:s",),
        ("f:s", "f:a"),
    }


def test_null_map_keys_are_members_of_a_custom_resources_apply_set_declared_nulls_not() -> None:
    value = {"m": {"x": None}, "p": {"k": None, "u": None}, "s": {"a": None}, "e": {}}
    assert field_set(value, _NODE, custom=True) == {("f:m", "f:x"), ("f:p", "f:u")}
    assert field_set(value, _NODE) == set()  # built-in kinds: the merge drops nulls, so does the set


def test_remove_path_leaves_an_emptied_key_owned_elsewhere_null() -> None:
    obj = {"m": {"x": {"a": 1}}, "s": {"a": 2}}
    remove_path(obj, ("f:m", "f:x", "f:a"), _NODE, {("f:m", "f:x")})
    assert obj == {"m": {"x": None}, "s": {"a": 2}}
    remove_path(obj, ("f:s", "f:a"), _NODE, {("f:s",)})  # a struct field: no key, dropped
    assert obj == {"m": {"x": None}}
    emptied = {"m": {"x": {"a": 1}}}
    remove_path(emptied, ("f:m", "f:x", "f:a"), _NODE)
    assert emptied == {}
