"""docs/writing-a-controller.md's walk-through, "From an empty folder to an installed operator", against
examples/greeting-operator: its commands still exist and parse (and those that print the package's files print
them as shipped), its code excerpts are the example's code, and the scaffold still writes the example."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from manager.cli import flags
from manager.cli import main as cli
from manager.cli.controllers_flag import select
from manager.cli.plugins import discover

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "greeting-operator"
DOC = (ROOT / "docs" / "writing-a-controller.md").read_text()
SECTION = DOC.split("## From an empty folder to an installed operator", 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return [str(b) for b in re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)]


def commands(program: str) -> list[list[str]]:
    lines = [line for block in blocks("sh") for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(program + " ")]


def files(root: Path) -> dict[str, str]:
    """The package's files (without what running and installing it leave behind)."""
    caches = {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not any(part in caches or part.endswith(".egg-info") for part in p.relative_to(root).parts)
    }


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AIOKCM_CONTROLLERS", "AIOKCM_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def test_the_scaffold_command_writes_the_example(tmp_path: Path) -> None:
    (new,) = [c for c in commands("aiokcm") if c[1:2] == ["new"]]
    dir_at = new.index("--dir")
    assert new[dir_at + 1] == EXAMPLE.name
    assert cli.main([*new[1:dir_at], "--dir", str(tmp_path / "out"), *new[dir_at + 2 :]]) == 0
    generated, shipped = files(tmp_path / "out"), files(EXAMPLE)
    assert generated.keys() == shipped.keys()
    for name, text in generated.items():  # the example is the scaffold's output: regenerate it after a change
        assert text == shipped[name], (
            f"examples/greeting-operator/{name} differs from what the scaffold writes"
        )


def test_the_code_excerpts_are_the_examples_code() -> None:
    excerpts = blocks("python")
    assert len(excerpts) == 2
    for block in excerpts:
        first, _, body = block.partition("\n")
        path = re.fullmatch(r"# examples/greeting-operator/(\S+) \(excerpt\)", first)
        assert path, first
        assert body in (EXAMPLE / path.group(1)).read_text(), f"the doc's excerpt of {path.group(1)} drifted"


def test_aiokcm_crd_and_rbac_print_the_shipped_manifests(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLE)
    printed = [c for c in commands("aiokcm") if c[1] in ("crd", "rbac")]
    assert [c[1] for c in printed] == ["crd", "rbac"]
    for command in printed:
        redirect = command.index(">")
        assert cli.main(command[1:redirect]) == 0, command
        assert capsys.readouterr().out == (EXAMPLE / command[redirect + 1]).read_text(), command


def test_the_example_is_installed_off_by_default_and_enabled_as_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    installed = discover()  # the example's entry point: `make test` installs it (pip install --no-deps -e)
    (greeting,) = [c for c in installed if c.name == "greeting-controller"]
    assert (greeting.aliases, greeting.enabled_by_default, greeting.load_error) == (
        ("greeting",),
        False,
        None,
    )
    assert getattr(greeting.cls, "flags", None) is None  # no flags: --help and the README stay as they are
    assert ["aiokcm", "--list-controllers"] in commands("aiokcm")
    (run,) = [c for c in commands("aiokcm") if c[1].startswith("--controllers")]
    parsed = flags.parse_args(run[1:], flags.settings_class(installed))
    enabled = {c.name for c in select(parsed.values["controllers"], installed)}
    assert {"greeting-controller", "job-controller"} <= enabled


def test_kubectl_pip_and_helm_commands_name_what_exists() -> None:
    for command in commands("kubectl"):
        if command[1] == "apply":
            assert (EXAMPLE / command[command.index("-f") + 1]).exists(), command
    assert commands("pip") == [["pip", "install", "-e", "."]] and (EXAMPLE / "pyproject.toml").is_file()
    values = yaml.safe_load((ROOT / "charts" / "aiokcm" / "values.yaml").read_text())
    (helm,) = commands("helm")
    assert (ROOT / helm[3]).is_dir(), helm
    for index, arg in enumerate(helm):
        if arg == "--set":
            node = values
            for key in helm[index + 1].split("=", 1)[0].split("."):
                assert isinstance(node, dict) and key in node, f"the chart has no value {helm[index + 1]}"
                node = node[key]
    assert f"{{{EXAMPLE.name}}}" not in SECTION
