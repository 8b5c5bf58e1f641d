"""The self-signed serving certificate used when no --tls-cert-file is given.

As kube-controller-manager (apiserver's ``MaybeDefaultWithSelfSignedCerts``): a certificate for localhost,
127.0.0.1, ::1, the host name and the bind address, kept in ``<cert-dir>/aiokcm.crt|.key`` and reused on the
next start when --cert-dir is given, else made afresh in a private temporary directory each start.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_NAME, KEY_NAME = "aiokcm.crt", "aiokcm.key"
VALIDITY = datetime.timedelta(days=365)


class CertificateError(Exception):
    """The serving certificate cannot be read, made or written; the message names the file."""


def serving_names(bind_address: str) -> tuple[list[str], list[ipaddress.IPv4Address | ipaddress.IPv6Address]]:
    """DNS names and IP addresses the self-signed certificate is valid for."""
    dns = ["localhost", socket.gethostname()]
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    try:
        bound = ipaddress.ip_address(bind_address)
    except ValueError:
        if bind_address:
            dns.append(bind_address)
    else:
        if not bound.is_unspecified and bound not in ips:
            ips.append(bound)
    return list(dict.fromkeys(dns)), ips


def self_signed_pem(bind_address: str, now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """A new P-256 key and a self-signed serving certificate for it, both PEM."""
    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    dns, ips = serving_names(bind_address)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"aiokcm@{int(now.timestamp())}")])
    alt_names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    alt_names += [x509.IPAddress(ip) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def ensure_self_signed(cert_dir: Path, bind_address: str) -> tuple[Path, Path]:
    """``<cert_dir>/aiokcm.crt|.key``: reused when both exist, else made (the key readable by us only)."""
    cert_path, key_path = cert_dir / CERT_NAME, cert_dir / KEY_NAME
    if cert_path.is_file() and key_path.is_file():
        return cert_path, key_path
    cert_pem, key_pem = self_signed_pem(bind_address)
    try:
        cert_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as key_file:
            key_file.write(key_pem)
        cert_path.write_bytes(cert_pem)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise CertificateError(f"--cert-dir {cert_dir}: cannot write the certificate: {reason}") from None
    return cert_path, key_path
