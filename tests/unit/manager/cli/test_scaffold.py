"""`aiokcm new controller`: the files it writes, and bad input (exit 2, one line)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import yaml

from manager.cli import main as cli
from manager.cli.scaffold import snake_case

GREETING = ("new", "controller", "--group", "demo.example.com", "--version", "v1", "--kind", "Greeting")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_writes_an_installable_package(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "greeting"
    before = sys.modules.get("greeting_operator")  # the installed example's, once something imported it
    code, out, err = run(capsys, *GREETING, "--dir", str(target))
    assert (code, err) == (0, "")
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "Makefile",
        "README.md",
        "config/crd/greetings.demo.example.com.yaml",
        "config/rbac/role.yaml",
        "greeting_operator/__init__.py",
        "greeting_operator/controller.py",
        "greeting_operator/resource.py",
        "pyproject.toml",
        "tests/test_greeting.py",
    ]
    assert f"wrote 10 files into {target}" in out
    for source in target.rglob("*.py"):
        ast.parse(source.read_text(), str(source))
    assert "{{" not in "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    pyproject = (target / "pyproject.toml").read_text()
    assert '[project.entry-points."aiokcm.controllers"]' in pyproject
    assert 'greeting-controller = "greeting_operator.controller:GreetingController"' in pyproject
    assert 'asyncio_mode = "auto"' in pyproject
    documents = list(yaml.safe_load_all((target / "config/rbac/role.yaml").read_text()))
    role = next(d for d in documents if d["metadata"]["name"] == "aiokcm:controller:greeting-controller")
    assert [d["kind"] for d in documents].count("Role") == 1
    assert {"apiGroups": ["demo.example.com"], "resources": ["greetings/status"], "verbs": ["patch"]} in (
        role["rules"]
    )
    # Imported from the target for the manifests, then dropped: an installed package of that name stays.
    assert sys.modules.get("greeting_operator") is before


def test_the_shipped_crd_is_what_aiokcm_crd_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "pkg"
    assert run(capsys, *GREETING, "--dir", str(target), "--package", "hello_ops")[0] == 0
    monkeypatch.chdir(target)
    monkeypatch.setattr(sys, "path", [str(target), *sys.path])
    code, out, _ = run(capsys, "crd", "hello_ops.resource:Greeting")
    for name in [n for n in sys.modules if n.startswith("hello_ops")]:
        monkeypatch.delitem(sys.modules, name)
    assert code == 0
    assert out == (target / "config/crd/greetings.demo.example.com.yaml").read_text()
    spec = yaml.safe_load(out)["spec"]
    assert spec["versions"][0]["subresources"] == {"status": {}}
    assert spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] == ["message"]


def test_compound_kinds_get_snake_case_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "x"
    argv = ("new", "controller", "--group=cache.example.org", "--version=v1alpha1", "--kind=RedisPolicy")
    assert run(capsys, *argv, f"--dir={target}")[0] == 0
    assert (target / "redis_policy_operator/controller.py").is_file()
    assert "redis-policy-controller" in (target / "pyproject.toml").read_text()
    assert (target / "config/crd/redispolicies.cache.example.org.yaml").is_file()
    assert "REDIS_POLICIES = RedisPolicy.gvr()" in (target / "redis_policy_operator/resource.py").read_text()
    assert snake_case("HTTPRoute") == "httproute"


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (("--group", "Demo.example.com"), '--group "Demo.example.com"'),
        (("--group", "nodots"), '--group "nodots"'),
        (("--group", "demo..example.com"), '--group "demo..example.com"'),
        (("--version", "1"), '--version "1"'),
        (("--version", "V1"), '--version "V1"'),
        (("--kind", "greeting"), '--kind "greeting"'),
        (("--kind", "Greet-ing"), '--kind "Greet-ing"'),
        (("--kind", "G" * 64), "--kind"),
        (("--package", "my-ops"), '--package "my-ops"'),
        (("--package", "class"), '--package "class"'),
        (("--colour", "red"), '"--colour"'),
        (("--kind",), "flag needs an argument: --kind"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    args: tuple[str, ...], culprit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *GREETING, "--dir", str(tmp_path / "t"), *args)
    lines = err.splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and lines[0].startswith("aiokcm: error: ") and culprit in lines[0], err
    assert not (tmp_path / "t").exists()


def test_missing_options_and_other_things_to_make(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, culprit in [
        (("new", "controller", "--group", "a.b", "--kind", "K"), "needs --version"),
        (("new",), "not nothing"),
        (("new", "webhook"), 'not "webhook"'),
    ]:
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and culprit in err, err


def test_an_existing_non_empty_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, _, err = run(capsys, *GREETING, "--dir", str(tmp_path))
    assert code == 2 and f"--dir {tmp_path} exists and is not an empty directory" in err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(capsys, *GREETING, "--dir", str(empty))[0] == 0  # an empty directory is fine
    code, _, err = run(capsys, *GREETING, "--dir", str(tmp_path / "keep.txt"))
    assert code == 2 and "is not an empty directory" in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "new", "--help")
    assert code == 0 and out.startswith("Usage: aiokcm new controller --group GROUP")
    assert "aiokcm new controller" in run(capsys, "--help")[1]
