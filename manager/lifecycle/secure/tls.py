"""The HTTPS server's TLS context: the serving certificate (given or self-signed), the optional client CA,
and the reload of --tls-cert-file/--tls-private-key-file when they change on disk.

Reloading loads the new pair into the same `ssl.SSLContext`: OpenSSL copies the certificate into each
connection at its handshake, so connections already open keep the old one and new ones get the new one. A
pair that does not load (a half-written file, a key that does not match) is logged and retried at the next
check; the old certificate stays in use meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from manager.lifecycle.secure.certs import CertificateError, ensure_self_signed, self_signed_pem

log = structlog.get_logger(__name__)

RELOAD_INTERVAL = 5.0  # seconds between checks of the certificate files' modification times


def _signature(*paths: Path) -> tuple[tuple[int, int, int], ...]:
    stats = [path.stat() for path in paths]
    return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in stats)


class ServingTLS:
    """An `ssl.SSLContext` for the server, kept up to date with its certificate files."""

    def __init__(
        self,
        cert_file: Path | None,
        key_file: Path | None,
        *,
        client_ca_file: str | None = None,
        cert_dir: Path | None = None,
        bind_address: str = "0.0.0.0",
        reload_interval: float = RELOAD_INTERVAL,
    ) -> None:
        # Not create_default_context: it would trust the system's CAs for client certificates too, and
        # --client-ca-file must be the only issuer of users.
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.reload_interval = reload_interval
        self._watched: tuple[Path, Path] | None = None
        self._signature: tuple[tuple[int, int, int], ...] = ()
        self._task: asyncio.Task[None] | None = None
        if client_ca_file:
            try:
                self.context.load_verify_locations(cafile=client_ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise CertificateError(f"--client-ca-file {client_ca_file}: {_reason(exc)}") from None
            self.context.verify_mode = ssl.CERT_OPTIONAL  # a token is the other way in
        if cert_file is not None and key_file is not None:
            self._watched = (cert_file, key_file)
            self._signature = self._load(cert_file, key_file, "--tls-cert-file")
        elif cert_dir is not None:
            self._load(*ensure_self_signed(cert_dir, bind_address), "--cert-dir")
        else:
            self._load_in_memory(bind_address)

    @classmethod
    def from_settings(cls, settings: Any, reload_interval: float = RELOAD_INTERVAL) -> ServingTLS:
        return cls(
            Path(settings.tls_cert_file) if settings.tls_cert_file else None,
            Path(settings.tls_private_key_file) if settings.tls_private_key_file else None,
            client_ca_file=settings.client_ca_file,
            cert_dir=Path(settings.cert_dir) if settings.cert_dir else None,
            bind_address=settings.bind_address,
            reload_interval=reload_interval,
        )

    @property
    def verifies_clients(self) -> bool:
        return self.context.verify_mode != ssl.CERT_NONE

    def _load(self, cert_file: Path, key_file: Path, flag: str) -> tuple[tuple[int, int, int], ...]:
        try:
            signature = _signature(cert_file, key_file)
            self.context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            raise CertificateError(f"{flag} {cert_file} / {key_file}: {_reason(exc)}") from None
        return signature

    def _load_in_memory(self, bind_address: str) -> None:
        cert_pem, key_pem = self_signed_pem(bind_address)
        with _as_files(cert_pem, key_pem) as (cert_path, key_path):
            self._load(cert_path, key_path, "self-signed certificate")

    def reload_if_changed(self) -> bool:
        """Load the watched pair again if either file changed since the last good load; True if it did."""
        if self._watched is None:
            return False
        cert_file, key_file = self._watched
        try:
            if _signature(cert_file, key_file) == self._signature:
                return False
            self._signature = self._load(cert_file, key_file, "--tls-cert-file")
        except (OSError, CertificateError) as exc:
            log.warning("serving certificate not reloaded; keeping the current one", error=str(exc))
            return False
        log.info("serving certificate reloaded", cert_file=str(cert_file))
        return True

    def start(self) -> None:
        if self._watched is not None and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch(), name="serving-cert-reload")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.reload_interval)
            self.reload_if_changed()


@contextlib.contextmanager
def _as_files(cert_pem: bytes, key_pem: bytes) -> Iterator[tuple[Path, Path]]:
    """The ssl module loads certificates from files only: anonymous memory files where Linux has them (a
    read-only root filesystem, as the chart runs, has no writable /tmp), else a private temporary directory;
    gone once loaded either way."""
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fds = [os.memfd_create("aiokcm-serving-cert"), os.memfd_create("aiokcm-serving-key")]
        try:
            for fd, pem in zip(fds, (cert_pem, key_pem), strict=True):
                os.write(fd, pem)
            yield Path(f"/proc/self/fd/{fds[0]}"), Path(f"/proc/self/fd/{fds[1]}")
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="aiokcm-cert-") as directory:
        cert_path, key_path = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_path.write_bytes(cert_pem)
        key_path.write_bytes(key_pem)
        yield cert_path, key_path


def _reason(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)
