"""YAML request bodies read as kube-apiserver reads them (sigs.k8s.io/yaml: go-yaml, then JSON): map keys
become strings (`1: x` is `"1": x`), timestamp-like scalars stay strings, `!!binary` is its decoded text,
and what JSON cannot hold (a null key, .inf, .nan) is refused; aliases and nesting are bounded."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import yaml

from kubesim.validation.nesting import MAX_DEPTH

_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class BodyLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents whose aliases expand to a huge tree (a YAML "billion laughs" would
    explode when serialised), as go-yaml refuses "excessive aliasing"."""

    max_expanded_nodes = 1_000_000
    max_depth = MAX_DEPTH
    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        if self.depth > self.max_depth:
            raise yaml.YAMLError("exceeded max depth")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def expanded(current: yaml.Node) -> int:
            known = sizes.get(id(current))
            if known is None:
                children: list[Any] = []
                if isinstance(current, yaml.SequenceNode):
                    children = current.value
                elif isinstance(current, yaml.MappingNode):
                    children = [n for pair in current.value for n in pair]
                known = sizes[id(current)] = 1 + sum(expanded(child) for child in children)
            return known

        if expanded(node) > self.max_expanded_nodes:
            raise yaml.YAMLError("document contains excessive aliasing")
        return self.construct_document(node)

    yaml_implicit_resolvers = {  # go-yaml keeps timestamp-like scalars as strings in a generic map
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=deep)
        if all(type(key) is str for key in mapping):
            return mapping
        return {_json_key(key): value for key, value in mapping.items()}

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):  # JSON has no such number: go's json.Marshal refuses it
            shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise yaml.YAMLError(f"json: unsupported value: {shown}")
        return value

    def construct_binary_text(self, node: yaml.ScalarNode) -> str:
        try:
            return base64.b64decode(self.construct_scalar(node), validate=False).decode("utf-8", "replace")
        except (binascii.Error, ValueError) as exc:
            raise yaml.YAMLError(f"cannot decode !!binary data: {exc}") from None


BodyLoader.add_constructor("tag:yaml.org,2002:float", BodyLoader.construct_yaml_float)
BodyLoader.add_constructor("tag:yaml.org,2002:binary", BodyLoader.construct_binary_text)


def _json_key(key: Any) -> str:
    """A map key as sigs.k8s.io/yaml writes it into JSON."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key):
            return ".nan"
        if math.isinf(key):
            return ".inf" if key > 0 else "-.inf"
        text = repr(key)
        return text[:-2] if text.endswith(".0") else text
    go_type = "<nil>" if key is None else type(key).__name__
    raise yaml.YAMLError(f"unsupported map key of type: {go_type}, key: {key!r}")
