"""kube-controller-manager's --controllers grammar, as a table."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint

import pytest

from manager.cli.controllers_flag import SelectionError, normalise, select
from manager.cli.plugins import GROUP, RegistryError, check_unique, discover, load_entry_point
from manager.lifecycle.descriptor import ControllerInfo


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


# ---- discovery through entry points (manager.cli.plugins) ---------------------------------------------


class GoodController:
    name = "good-controller"
    aliases = ("good",)
    enabled_by_default = False


class Nameless:
    aliases = ()
    enabled_by_default = True


class StringAliases:
    name = "x-controller"
    aliases = "x"
    enabled_by_default = True


class MaybeDefault:
    name = "maybe-controller"
    aliases = ()
    enabled_by_default = "yes"


def entry(name: str, attr: str) -> EntryPoint:
    return EntryPoint(name=name, value=f"{__name__}:{attr}", group=GROUP)


def test_an_entry_point_becomes_controller_info() -> None:
    info = load_entry_point(entry("good-controller", "GoodController"))
    assert (info.name, info.aliases, info.enabled_by_default, info.cls) == (
        "good-controller",
        ("good",),
        False,
        GoodController,
    )
    assert info.entry_point == f"good-controller = {__name__}:GoodController"


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ("Missing", "failed to load: AttributeError"),
        ("Nameless", "no valid class attribute `name`"),
        ("StringAliases", "`aliases` must be a tuple of names"),
        ("MaybeDefault", "`enabled_by_default` must be True or False"),
    ],
)
def test_broken_entry_points_are_named(attr: str, message: str) -> None:
    with pytest.raises(RegistryError) as info:
        load_entry_point(entry("broken", attr))
    assert f'entry point "broken = {__name__}:{attr}"' in str(info.value)
    assert message in str(info.value)


def test_two_controllers_may_not_share_a_name_or_alias() -> None:
    good = load_entry_point(entry("good-controller", "GoodController"))
    clash = ControllerInfo("other-controller", ("good",), True, object, "other = pkg:Other")
    with pytest.raises(RegistryError, match='"good" is claimed by both'):
        check_unique([good, clash])
    check_unique([good])


def test_installed_controllers_satisfy_the_contract() -> None:
    installed = discover()  # whatever this checkout registers, loaded for real
    assert [c.name for c in installed] == sorted(c.name for c in installed)
    assert select(["*"], installed) == [c for c in installed if c.enabled_by_default]
