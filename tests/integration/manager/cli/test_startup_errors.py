"""Start-up errors of the real `aiokcm` console script, run as a subprocess: a configuration that cannot be
used exits 2 with one line naming the file and the problem (never a traceback); an API server that cannot be
reached keeps the manager running, warning and not ready.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import trustme
import yaml

from tests.helpers import wait_for

AIOKCM = Path(sys.executable).parent / "aiokcm"
FLAGS = ("--leader-elect=false", "--bind-address=127.0.0.1", "--port=0", "--controllers=job")
# Variables that would let the manager find a configuration on its own.
_FOUND_BY = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def kubeconfig(server: str, cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
            "users": [{"name": "u", "user": user or {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIOKCM_") and k not in _FOUND_BY}
    return {**env, "HOME": str(home), **extra}


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    expected: tuple[str, ...]  # fragments of the one error line
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str


def cases(work: Path) -> dict[str, Case]:
    """Each bad configuration, with the files it names written under `work`."""
    https = f"https://127.0.0.1:{closed_port()}"
    ca = trustme.CA()
    files = {
        "malformed.yaml": "apiVersion: v1\nclusters: [\n  bad",
        "list.yaml": "- just\n- a list\n",
        "missing-ca.yaml": kubeconfig(https, {"certificate-authority": str(work / "absent-ca.crt")}),
        "garbage.crt": "not a certificate",
        "garbage-ca.yaml": kubeconfig(https, {"certificate-authority": str(work / "garbage.crt")}),
        "garbage-ca-data.yaml": kubeconfig(
            https, {"certificate-authority-data": base64.b64encode(b"junk").decode()}
        ),
        "ca.crt": ca.cert_pem.bytes().decode(),
        "garbage-client-cert.yaml": kubeconfig(
            https,
            {"certificate-authority": str(work / "ca.crt")},
            {"client-certificate": str(work / "garbage.crt"), "client-key": str(work / "garbage.crt")},
        ),
        "no-context.yaml": kubeconfig(https).replace("current-context: x", "current-context: y"),
    }
    for name, text in files.items():
        (work / name).write_text(text)

    def with_file(name: str, *expected: str) -> Case:
        return Case(("--kubeconfig", str(work / name)), (f"kubeconfig {work / name}", *expected))

    return {
        "malformed": with_file("malformed.yaml", "is not valid YAML at line 3, column 6"),
        "not-a-mapping": with_file("list.yaml", "is not a kubeconfig: expected a mapping, found list"),
        "missing-ca-file": with_file("missing-ca.yaml", str(work / "absent-ca.crt")),
        "garbage-ca-file": with_file(
            "garbage-ca.yaml", f"certificate authority file {work / 'garbage.crt'}: no certificate"
        ),
        "garbage-ca-data": with_file("garbage-ca-data.yaml", "certificate authority (inline data)"),
        "garbage-client-cert": with_file(
            "garbage-client-cert.yaml", f"client certificate file {work / 'garbage.crt'}"
        ),
        "unknown-context": with_file("no-context.yaml", "Expected object with name y"),
        "kubeconfig-flag-missing": Case(
            ("--kubeconfig", str(work / "nowhere")),
            (f"cannot read --kubeconfig {work / 'nowhere'}: no such file or directory",),
        ),
        "kubeconfig-env-missing": Case(
            (),
            (f"no cluster configuration found: KUBECONFIG names {work / 'nowhere'}, which does not exist",),
            (("KUBECONFIG", str(work / "nowhere")),),
        ),
        "nothing-configured": Case(
            (),
            (
                "no cluster configuration found",
                "KUBECONFIG is unset",
                f"{work / '.kube' / 'config'} does not exist",
                "KUBERNETES_SERVICE_HOST is unset (not in a pod)",
            ),
        ),
        "in-cluster-without-token": Case(
            (),
            ("in-cluster configuration (KUBERNETES_SERVICE_HOST is set", "token"),
            (("KUBERNETES_SERVICE_HOST", "127.0.0.1"), ("KUBERNETES_SERVICE_PORT", str(closed_port()))),
        ),
    }


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("startup")


@pytest.fixture(scope="module")
def catalogue(work: Path) -> dict[str, Case]:
    return cases(work)


@pytest.fixture(scope="module")
def outcomes(work: Path, catalogue: dict[str, Case]) -> Iterator[dict[str, Outcome]]:
    """Every case run once, concurrently (a process start costs about a second of CPU)."""
    processes = {
        name: subprocess.Popen(
            [str(AIOKCM), *FLAGS, *case.args],
            env=environment(work, **dict(case.env)),
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, case in catalogue.items()
    }
    results = {}
    for name, process in processes.items():
        _, err = process.communicate(timeout=60)
        results[name] = Outcome(process.returncode, err)
    yield results


@pytest.mark.parametrize(
    "name",
    [
        "malformed",
        "not-a-mapping",
        "missing-ca-file",
        "garbage-ca-file",
        "garbage-ca-data",
        "garbage-client-cert",
        "unknown-context",
        "kubeconfig-flag-missing",
        "kubeconfig-env-missing",
        "nothing-configured",
        "in-cluster-without-token",
    ],
)
def test_an_unusable_configuration_exits_2_with_one_line(
    name: str, outcomes: dict[str, Outcome], catalogue: dict[str, Case]
) -> None:
    outcome = outcomes[name]
    errors = [line for line in outcome.stderr.splitlines() if line.startswith("aiokcm: error:")]
    assert (outcome.code, len(errors)) == (2, 1), outcome.stderr
    assert "Traceback" not in outcome.stderr
    for fragment in catalogue[name].expected:
        assert fragment in errors[0], errors[0]


def test_sandbox_without_the_extra_names_the_pip_command(tmp_path: Path) -> None:
    """A kubesim that cannot be imported (as in the image: the extra is not installed) is bad input."""
    hidden = tmp_path / "hide" / "kubesim"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'kubesim'\", name='kubesim')\n"
    )
    env = environment(tmp_path, PYTHONPATH=str(hidden.parent))
    done = subprocess.run(
        [str(AIOKCM), *FLAGS, "--sandbox"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "aiokcm: error: --sandbox needs kubesim, which is not installed (No module named 'kubesim'): "
        "pip install 'aiokcm[sandbox]'"
    )


@pytest.mark.slow
async def test_an_unreachable_api_server_leaves_the_manager_running_warning_and_not_ready(
    tmp_path: Path,
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(f"http://127.0.0.1:{closed_port()}"))
    process = await asyncio.create_subprocess_exec(
        str(AIOKCM),
        *FLAGS,
        "--log-format=json",
        "--shutdown-grace-period=1s",
        "--kubeconfig",
        str(config),
        env=environment(tmp_path),
        cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    events: list[dict[str, Any]] = []

    async def read() -> None:
        assert process.stderr is not None
        async for raw in process.stderr:
            try:
                events.append(json.loads(raw))
            except ValueError:
                continue

    reader = asyncio.create_task(read())
    try:
        served = await wait_for(
            lambda: [e for e in events if e.get("event") == "serving health and metrics"], timeout=20
        )
        url = served[0]["url"]

        async def readyz() -> tuple[int, str]:
            async with aiohttp.ClientSession() as session, session.get(f"{url}/readyz?verbose") as response:
                return response.status, await response.text()

        def warnings() -> list[dict[str, Any]]:
            return [e for e in events if e.get("event") == "waiting for informers to sync"]

        # Logged after 5 s, then every 30 s while the informers cannot list; it names the unsynced resources
        # (and, once the client has given up retrying the connection, the informer's last error).
        warned = await wait_for(warnings, timeout=30)
        assert "jobs.v1.batch: not synced" in warned[0]["reason"]
        status, body = await readyz()
        assert status == 500 and "[-]informers failed" in body, body
        assert process.returncode is None  # still running, retrying
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 40)
        await reader
