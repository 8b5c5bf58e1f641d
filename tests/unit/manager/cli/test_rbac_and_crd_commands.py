"""`aiokcm rbac` and `aiokcm crd`: YAML on stdout, exit 2 with one line on bad input."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from manager import Controller, CustomResource, PolicyRule
from manager.cli import commands
from manager.cli import main as cli
from manager.cli.rbac import merge_rules
from manager.lifecycle.descriptor import ControllerInfo


class Alpha(Controller):
    name = "alpha-controller"
    aliases = ("alpha",)
    rbac = (
        PolicyRule(("batch",), ("jobs",), ("watch", "get", "list")),
        PolicyRule(("",), ("pods",), ("delete",)),
        PolicyRule(("",), ("configmaps",), ("get",), ("lock",)),
    )


class Beta(Controller):
    name = "beta-controller"
    rbac = (
        PolicyRule(("batch",), ("jobs",), ("get", "update")),
        PolicyRule(("",), ("pods",), ("create", "delete")),
    )


class Gamma(Controller):
    name = "gamma-controller"
    enabled_by_default = False
    rbac = (PolicyRule(("example.io",), ("things",), ("*",)),)


def info(cls: type[Controller]) -> ControllerInfo:
    return ControllerInfo(
        cls.name, cls.aliases, cls.enabled_by_default, cls, f"{cls.name} = t:{cls.__name__}"
    )


@pytest.fixture(autouse=True)
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "discover", lambda: [info(Alpha), info(Beta), info(Gamma)])
    monkeypatch.delenv("AIOKCM_CONTROLLERS", raising=False)
    monkeypatch.delenv("AIOKCM_CONFIG", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rules_are_merged_deduplicated_and_sorted() -> None:
    merged = merge_rules([*Beta.rbac, *Alpha.rbac, *Alpha.rbac])
    assert [r.to_dict() for r in merged] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["lock"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "update", "watch"]},
    ]
    assert merge_rules(reversed([*Beta.rbac, *Alpha.rbac])) == merged


def documents(out: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out)}


def test_rbac_prints_a_cluster_role_per_enabled_controller_the_managers_and_the_leader_election_role(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "rbac", "--leader-elect-resource-namespace", "ops")
    assert code == 0, err
    printed = documents(out)
    roles = ["aiokcm:manager", "aiokcm:controller:alpha-controller", "aiokcm:controller:beta-controller"]
    assert [name for kind, name in printed if kind == "ClusterRole"] == roles  # gamma is off by default
    assert [name for kind, name in printed if kind == "ClusterRoleBinding"] == roles
    beta = printed["ClusterRole", "aiokcm:controller:beta-controller"]["rules"]
    assert beta == [r.to_dict() for r in merge_rules(Beta.rbac)]
    binding = printed["ClusterRoleBinding", "aiokcm:controller:beta-controller"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "aiokcm", "namespace": "ops"}]
    role = printed["Role", "aiokcm-leader-election"]
    assert role["metadata"] == {"name": "aiokcm-leader-election", "namespace": "ops"}
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "update"],
            "resourceNames": ["aiokcm"],
        },
    ]
    assert ("RoleBinding", "aiokcm-leader-election") in printed


def test_rbac_follows_controllers_and_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "rbac", "--controllers", "gamma-controller", "--name-prefix=ops", "--service-account", "kcm"
    )
    assert code == 0
    printed = documents(out)
    assert printed["ClusterRole", "ops:controller:gamma-controller"]["rules"] == [
        {"apiGroups": ["example.io"], "resources": ["things"], "verbs": ["*"]}
    ]
    assert [name for kind, name in printed if kind == "ClusterRole"] == [
        "ops:manager",
        "ops:controller:gamma-controller",
    ]
    assert printed["RoleBinding", "ops-leader-election"]["subjects"][0]["name"] == "kcm"
    code, out, _ = run(capsys, "rbac", "--controllers=*,-alpha")
    assert [name for kind, name in documents(out) if kind == "ClusterRole"] == [
        "aiokcm:manager",
        "aiokcm:controller:beta-controller",
    ]


def test_rbac_writes_a_kustomize_base_and_the_charts_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    code, out, err = run(capsys, "rbac", f"--output-dir={tmp_path}")
    assert code == 0, err
    kustomization = yaml.safe_load((tmp_path / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in tmp_path.iterdir() if p.name != "kustomization.yaml"
    )
    assert (
        (tmp_path / "role.yaml")
        .read_text()
        .startswith(f"# Generated by `aiokcm rbac --output-dir={tmp_path}`")
    )
    code, out, err = run(capsys, "rbac", "--chart", "--controllers=*,gamma-controller")
    assert code == 0, err
    data = yaml.safe_load(out)
    assert [(c["name"], c["enabledByDefault"]) for c in data["controllers"]] == [
        ("alpha-controller", True),
        ("beta-controller", True),
        ("gamma-controller", False),
    ]
    assert data["controllers"][0]["aliases"] == ["alpha"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("rbac", "--controllers", "nope"), '"nope" is not in the list of known controllers'),
        (("rbac", "--bogus"), "unknown flag: --bogus"),
        (("rbac", "extra"), 'unexpected argument "extra"'),
        (("rbac", "--list-controllers"), "is not an option of aiokcm rbac"),
        (("rbac", "--output-dir"), "--output-dir needs a value"),
        (("rbac", "--chart=yes"), "--chart takes no value"),
        (("rbac", "--chart", "--output-dir=x"), "--output-dir and --chart exclude each other"),
        (("rbac", "--output-dir=/nonexistent/dir"), "cannot write /nonexistent/dir/"),
        (("crd",), "takes one argument"),
        (("crd", "a:B", "c:D"), "takes one argument"),
        (("crd", "nocolon"), '"nocolon" is not module:Class'),
        (("crd", "no_such_module_here:X"), "cannot import no_such_module_here"),
        (("crd", "manager:Controller"), "is not a CustomResource subclass"),
        (("crd", "manager:NoSuch"), "is not a CustomResource subclass"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == cli.USAGE_EXIT_CODE
    assert out == ""
    assert message in err and err.count("\n") == 1 and err.startswith("aiokcm: error: ")


class _Spec(BaseModel):
    size: int


class Thing(CustomResource):
    group = "example.io"
    version = "v1"
    kind = "Thing"
    spec: _Spec


class _Tree(BaseModel):
    children: list[_Tree] = []


class Tree(CustomResource):
    group = "example.io"
    version = "v1"
    kind = "Tree"
    spec: _Tree


def test_crd_prints_the_generated_definition(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    module = types.ModuleType("crd_models_for_test")
    module.Thing = Thing  # type: ignore[attr-defined]
    module.Tree = Tree  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "crd_models_for_test", module)
    code, out, err = run(capsys, "crd", "crd_models_for_test:Thing")
    assert code == 0, err
    definition = yaml.safe_load(out)
    assert definition["metadata"]["name"] == "things.example.io"
    schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    code, out, err = run(capsys, "crd", "crd_models_for_test:Tree")
    assert code == 2 and "recursive" in err


@pytest.mark.parametrize("command", ["rbac", "crd"])
def test_subcommand_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0 and out.startswith(f"Usage: aiokcm {command}")


def test_the_main_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "aiokcm rbac [--controllers ...]" in out and "aiokcm crd <module:Class>" in out
