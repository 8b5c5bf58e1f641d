"""The package `aiokcm new controller` writes passes its own tests as generated.

Its tests run in a child process with this project's interpreter from the package's directory, as
`make test` there runs them: its pyproject's pytest settings (asyncio mode, pythonpath ".") put the package on
sys.path, so it needs no installation, and its entry point is not needed since `run_controllers` takes the
controller class. The slow test installs it for real (`pip install --no-deps -e` into a fresh venv that sees
this one's packages) and checks that aiokcm then finds its entry point.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from manager.cli import main as cli

GREETING = ("new", "controller", "--group", "demo.example.com", "--version", "v1", "--kind", "Greeting")


def generate(target: Path) -> None:
    assert cli.main([*GREETING, "--dir", str(target)]) == 0


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIOKCM_", "PYTEST_", "PYTHONPATH"))}


def test_the_generated_package_passes_its_tests(tmp_path: Path) -> None:
    target = tmp_path / "greeting-operator"
    generate(target)
    result = subprocess.run(
        ["make", "test", f"PYTHON={sys.executable}"],
        cwd=target,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


@pytest.mark.slow
def test_the_generated_package_installs_next_to_aiokcm(tmp_path: Path) -> None:
    target = tmp_path / "greeting-operator"
    generate(target)
    env_dir = tmp_path / "venv"
    # A venv that sees this one's packages (aiokcm included), so --no-deps resolves nothing (pip still fetches
    # the build backend, as `make test`'s own installs do).
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # addsitedir, not a plain path line: this venv's own .pth files (aiokcm's editable install) must run too.
    parent = Path(next((env_dir / "lib").glob("python*"))) / "site-packages" / "parent.pth"
    parent.write_text(f"import site; site.addsitedir({site!r})\n")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(target)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    listed = subprocess.run(
        [
            str(python),
            "-c",
            "import sys; from manager.cli.main import main; sys.exit(main())",
            "--list-controllers",
        ],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split()[1:] for line in listed.stdout.splitlines()}
    assert rows["greeting-controller"] == ["greeting", "off"]
    assert "job-controller" in rows
