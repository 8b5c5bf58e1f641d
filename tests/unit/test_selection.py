"""kube-controller-manager's --controllers grammar, as a table."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from manager.selection import SelectionError, normalise, select


@dataclass(frozen=True)
class Known:
    name: str
    aliases: tuple[str, ...] = ()
    enabled_by_default: bool = True


KNOWN = [
    Known("job-controller", ("job",)),
    Known("replicaset-controller", ("replicaset",)),
    Known("ttl-after-finished-controller", ("ttl-after-finished",)),
    Known("bootstrap-signer-controller", ("bootstrapsigner",), enabled_by_default=False),
]
ALL_DEFAULT = {"job-controller", "replicaset-controller", "ttl-after-finished-controller"}


@pytest.mark.parametrize(
    ("requested", "enabled"),
    [
        (["*"], ALL_DEFAULT),
        ([], set()),  # no '*', nothing named: nothing runs
        (["job-controller"], {"job-controller"}),
        (["job"], {"job-controller"}),  # alias
        (["*", "-job-controller"], ALL_DEFAULT - {"job-controller"}),
        (["*", "-job"], ALL_DEFAULT - {"job-controller"}),  # -alias
        (["-job", "*"], ALL_DEFAULT - {"job-controller"}),  # order of '*' does not matter
        (["job", "-job"], {"job-controller"}),  # first explicit mention wins
        (["-job", "job"], set()),
        (["-job-controller", "job", "*"], ALL_DEFAULT - {"job-controller"}),  # name + alias: one
        (["*", "bootstrap-signer-controller"], ALL_DEFAULT | {"bootstrap-signer-controller"}),
        (["*", "bootstrapsigner"], ALL_DEFAULT | {"bootstrap-signer-controller"}),
        (["bootstrap-signer-controller"], {"bootstrap-signer-controller"}),  # off by default, on when named
        (["*", "-bootstrapsigner"], ALL_DEFAULT),
        (["-replicaset"], set()),  # only disabling: nothing enabled
        (["", " job ", ""], {"job-controller"}),  # blanks dropped, names trimmed
    ],
)
def test_grammar(requested: list[str], enabled: set[str]) -> None:
    assert {c.name for c in select(requested, KNOWN)} == enabled


def test_selection_keeps_registry_order() -> None:
    assert [c.name for c in select(["ttl-after-finished", "job", "replicaset"], KNOWN)] == [
        "job-controller",
        "replicaset-controller",
        "ttl-after-finished-controller",
    ]


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        (["foo"], '"foo" is not in the list of known controllers'),
        (["*", "-foo"], '"foo" is not in the list of known controllers'),  # the name without the dash
        (["job", "-jobs"], '"jobs" is not in the list of known controllers'),
    ],
)
def test_unknown_names_are_errors(requested: list[str], message: str) -> None:
    with pytest.raises(SelectionError) as info:
        select(requested, KNOWN)
    assert str(info.value) == message


def test_every_unknown_name_is_reported() -> None:
    with pytest.raises(SelectionError) as info:
        select(["foo", "bar"], KNOWN)
    assert '"foo"' in str(info.value)
    assert '"bar"' in str(info.value)


def test_normalise_translates_aliases() -> None:
    assert normalise(["*", "-job", "replicaset"], KNOWN) == ["*", "-job-controller", "replicaset-controller"]
