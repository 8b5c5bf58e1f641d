"""Static checks of the Dockerfile and .dockerignore (no container engine needed)."""

from __future__ import annotations

import re
import tomllib

import pytest

from tests.image.dockerfile import REPO, dockerignore, exec_form, ignored, key_values, load

PINNED_BASE = re.compile(r"^python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?$")
OCI_LABELS = ("title", "description", "version", "licenses", "revision", "base.name", "base.digest")


def project_version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


def test_every_stage_starts_from_the_same_exactly_pinned_base() -> None:
    dockerfile = load()
    bases = {
        stage.base for stage in dockerfile.stages if stage.base not in {s.name for s in dockerfile.stages}
    }
    assert len(bases) == 1, bases
    (base,) = bases
    assert PINNED_BASE.match(base), f"{base} is not python:3.11.<patch>-slim-bookworm[@sha256:...]"


def test_the_final_stage_runs_as_a_numeric_non_root_user_without_a_shell() -> None:
    final = load().stages[-1]
    (user,) = final.all("USER")
    assert re.fullmatch(r"[1-9]\d*(:\d+)?", user), user
    (entrypoint,) = final.all("ENTRYPOINT")
    assert exec_form(entrypoint) == ["/opt/aiokcm/bin/aiokcm"]  # exec form: no /bin/sh -c
    assert final.all("RUN") == []  # nothing in the final image needs a shell, even at build time
    assert final.all("COPY") == ["--from=build /opt/aiokcm /opt/aiokcm"]  # the virtualenv, nothing else


def test_oci_labels_carry_the_project_version() -> None:
    final = load().stages[-1]
    labels = {k: v for args in final.all("LABEL") for k, v in key_values(args).items()}
    missing = [name for name in OCI_LABELS if f"org.opencontainers.image.{name}" not in labels]
    assert not missing, missing
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert f"VERSION={project_version()}" in final.all("ARG")
    base = load().args["PYTHON_IMAGE"]
    name, _, digest = base.partition("@")
    assert labels["org.opencontainers.image.base.name"] == f"docker.io/library/{name}"
    assert labels["org.opencontainers.image.base.digest"] == digest


def test_the_build_stage_installs_no_extra_and_no_kubesim() -> None:
    build = load().stage("build")
    copied = [args.split()[0] for args in build.all("COPY")]
    assert "kubesim" not in copied and "tests" not in copied
    (run,) = build.all("RUN")
    assert "install /wheels/aiokcm-*.whl" in run and "[" not in run  # the wheel alone: no [sandbox]


@pytest.mark.parametrize(
    "path", [".venv", ".git", "tests", "kubesim", "benchmarks", "manager/cli/__pycache__"]
)
def test_dockerignore_leaves_out(path: str) -> None:
    assert ignored(path, dockerignore())


def test_dockerignore_keeps_what_the_build_copies() -> None:
    sources = [
        source
        for stage in load().stages
        for args in stage.all("COPY")
        if not args.startswith("--from")
        for source in args.split()[:-1]
    ]
    assert sources, "the build stage copies nothing"
    kept = [source for source in sources if not ignored(source, dockerignore())]
    assert kept == sources
