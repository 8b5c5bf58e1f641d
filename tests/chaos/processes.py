"""The processes under test: kubesim on a fixed port (so a restart keeps the URL the managers know) and two
manager replicas with leader election on short leases; each can be paused, resumed, killed and restarted."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tests.chaos.schedule import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD

AIOKCM = Path(sys.executable).parent / "aiokcm"
CONTROLLERS = "job-controller,replicaset-controller,deployment-controller"
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubesim_supports_data_dir() -> bool:
    """Whether this kubesim keeps its objects across a restart (`--data-dir`)."""
    help_text = subprocess.run(
        [sys.executable, "-m", "kubesim.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    return "--data-dir" in help_text


def _clean_env() -> dict[str, str]:
    """The environment without AIOKCM_* variables (ours, like AIOKCM_CHAOS_SECONDS, are no manager flags)."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("AIOKCM_")}


@dataclass
class KubesimProcess:
    workdir: Path
    seed: int
    durable: bool
    port: int = field(default_factory=free_port)
    proc: asyncio.subprocess.Process | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def audit_path(self) -> Path:
        return self.workdir / "audit.log"

    async def start(self) -> None:
        args = [sys.executable, "-m", "kubesim.cli", "--port", str(self.port), "--seed", str(self.seed)]
        args += ["--audit-log-path", str(self.audit_path), "--log-level", "warning"]
        if self.durable:
            args += ["--data-dir", str(self.workdir / "kubesim-data")]
        self.starts += 1
        log_path = self.workdir / f"kubesim-{self.starts}.log"
        with log_path.open("wb") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *args, stdout=asyncio.subprocess.PIPE, stderr=log, env=_clean_env()
            )
        assert self.proc.stdout is not None
        try:
            ready = await asyncio.wait_for(self.proc.stdout.readline(), START_TIMEOUT)
        except TimeoutError:
            ready = b""
        if not ready.startswith(b"kubesim ready at "):
            await self.stop(hard=True)
            raise RuntimeError(f"kubesim did not start: {ready!r}; see {log_path}")

    def signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signum)

    async def stop(self, hard: bool = False) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL if hard else signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self.proc = None


@dataclass
class ManagerReplica:
    """One manager slot ("a" or "b"); each start is a new process with a new leader-election identity."""

    slot: str
    workdir: Path
    master: str
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    paused: bool = False
    identities: dict[int, str] = field(default_factory=dict)  # pid -> identity, every process this slot ran
    exits: list[int] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.workdir / f"manager-{self.slot}-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        args = [
            str(AIOKCM),
            f"--master={self.master}",
            f"--controllers={CONTROLLERS}",
            "--leader-elect=true",
            f"--leader-elect-lease-duration={LEASE_DURATION}s",
            f"--leader-elect-renew-deadline={RENEW_DEADLINE}s",
            f"--leader-elect-retry-period={RETRY_PERIOD}s",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--bind-address=127.0.0.1",
            "--port=0",
            "--log-format=json",
            "--shutdown-grace-period=1s",
        ]
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=_clean_env())
        self.paused = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def identity(self) -> str | None:
        """The identity of the current process, once it has logged it."""
        if self.proc is None:
            return None
        if self.proc.pid not in self.identities:
            for line in self.log_path.read_bytes().splitlines():
                if b"leader election enabled" in line:
                    try:
                        self.identities[self.proc.pid] = orjson.loads(line)["identity"]
                    except (orjson.JSONDecodeError, KeyError):
                        continue
        return self.identities.get(self.proc.pid)

    def pause(self) -> None:
        if self.running and self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.running and self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def kill_and_restart(self) -> None:
        """kill -9, and a new process at once (one synchronous step: the supervisor never sees the gap)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.exits.append(-9)
        self.start()

    def restart_if_exited(self) -> bool:
        """A replica that exited on its own (lost leadership exits 1) is started again, as a Deployment's
        pod would be; True if it was."""
        if self.proc is None or self.proc.poll() is None:
            return False
        self.exits.append(self.proc.returncode)
        self.start()
        return True

    async def stop(self) -> None:
        if self.proc is None:
            return
        self.resume()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(asyncio.to_thread(self.proc.wait), 10)
            except TimeoutError:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait)
