"""aiokcm and aiokcm-kubesim (packaging/kubesim) split the repository's packages between them: the
production install carries no kubesim and none of its dependencies; the `sandbox` extra brings both."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from tests.image.dockerfile import REPO

KUBESIM_ONLY = {"kubernetes-validate", "jsonpatch"}


def project(path: str) -> dict[str, Any]:
    return tomllib.loads((REPO / path).read_text())


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_the_two_distributions_pin_each_other_at_one_version() -> None:
    aiokcm, kubesim = project("pyproject.toml"), project("packaging/kubesim/pyproject.toml")
    version = aiokcm["project"]["version"]
    assert kubesim["project"]["version"] == version
    assert aiokcm["project"]["optional-dependencies"]["sandbox"] == [f"aiokcm-kubesim=={version}"]
    assert f"aiokcm=={version}" in kubesim["project"]["dependencies"]


def test_kubesim_and_its_dependencies_are_not_in_the_production_install() -> None:
    aiokcm = project("pyproject.toml")
    assert not names(aiokcm["project"]["dependencies"]) & KUBESIM_ONLY
    included = aiokcm["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not [pattern for pattern in included if pattern.startswith("kubesim")]
    assert set(aiokcm["project"]["scripts"]) == {"aiokcm"}
    assert "pytest11" not in aiokcm["project"].get("entry-points", {})


def test_the_kubesim_distribution_carries_kubesim_its_command_and_its_pytest_plugin() -> None:
    kubesim = project("packaging/kubesim/pyproject.toml")
    assert kubesim["tool"]["setuptools"]["packages"]["find"] == {"where": ["../.."], "include": ["kubesim*"]}
    assert names(kubesim["project"]["dependencies"]) >= KUBESIM_ONLY
    assert kubesim["project"]["scripts"] == {"kubesim": "kubesim.cli:main"}
    assert kubesim["project"]["entry-points"]["pytest11"] == {"kubesim": "kubesim.pytest_plugin"}
