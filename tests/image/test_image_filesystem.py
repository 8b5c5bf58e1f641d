"""The image's virtualenv, built on the host by the Dockerfile's own build-stage commands (tests/image/
dockerfile.py replays them under a scratch root; pip resolves the dependencies from the package index, as
`docker build` does), then run as the final stage runs it: the manager starts, and kubesim is absent.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.image.dockerfile import REPO, exec_form, host_path, load, replay

pytestmark = pytest.mark.slow
# The virtualenv measured 80 MB when this was written, 49 MB of it kubernetes-asyncio (the sandbox extra's
# kubernetes-validate alone would add 108 MB); 98.5 MB before uvloop, whose unstripped library adds 13.6 MB
# (docs/image.md). The limit keeps a margin for dependency updates, not for new dependencies.
MAX_VIRTUALENV_MB = 120


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("image-root")
    replay(load().stage("build"), root)
    return root


@pytest.fixture(scope="module")
def entrypoint(root: Path) -> list[str]:
    (args,) = load().stages[-1].all("ENTRYPOINT")
    command = exec_form(args)
    assert command is not None
    return [str(host_path(root, command[0])), *command[1:]]


@pytest.fixture
def clean_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Nothing of this checkout on the path, no configuration: as in the container."""
    yield {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_entry_point_starts(entrypoint: list[str], clean_env: dict[str, str], tmp_path: Path) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    done = run([*entrypoint, "--version"], clean_env, tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, f"aiokcm {version}"), done.stderr
    helped = run([*entrypoint, "--help"], clean_env, tmp_path)
    assert helped.returncode == 0 and "--kubeconfig" in helped.stdout, helped.stderr
    listed = run([*entrypoint, "--list-controllers"], clean_env, tmp_path)
    assert listed.returncode == 0 and "job-controller" in listed.stdout, listed.stderr


@pytest.mark.parametrize("module", ["kubesim", "kubernetes_validate", "jsonpatch", "pytest"])
def test_the_sandbox_extra_and_test_tools_are_absent(
    module: str, root: Path, clean_env: dict[str, str], tmp_path: Path
) -> None:
    python = str(host_path(root, "/opt/aiokcm/bin/python"))
    done = run([python, "-c", f"import {module}"], clean_env, tmp_path)
    assert done.returncode == 1 and f"No module named '{module}'" in done.stderr, done.stderr
    assert not host_path(root, "/opt/aiokcm/bin/kubesim").exists()


def test_sandbox_without_the_extra_says_how_to_install_it(
    entrypoint: list[str], clean_env: dict[str, str], tmp_path: Path
) -> None:
    done = run([*entrypoint, "--sandbox", "--port=0", "--leader-elect=false"], clean_env, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "pip install 'aiokcm[sandbox]'" in done.stderr.strip().splitlines()[-1]


def test_the_virtualenv_is_small(root: Path, record_property: Callable[[str, object], None]) -> None:
    venv = host_path(root, "/opt/aiokcm")
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    megabytes = size / 1e6
    record_property("virtualenv_mb", round(megabytes, 1))
    print(f"image virtualenv: {megabytes:.1f} MB")
    assert megabytes < MAX_VIRTUALENV_MB
    assert not (venv / "bin" / "pip").exists()  # built --without-pip: pip stays in the build stage
    assert not any(venv.rglob("__pycache__/*kubesim*"))
    assert os.access(venv / "bin" / "aiokcm", os.X_OK)
