"""kubesim's own certificate authority and serving certificate, so that it can serve HTTPS by itself.

kubectl sends a bearer token only over TLS, so an RBAC-mode kubesim driven by kubectl needs HTTPS. Like
kubeadm, kubesim makes a self-signed CA and a serving certificate for the addresses it listens on (always
127.0.0.1, ::1 and localhost), and writes the CA into the kubeconfig as `certificate-authority-data`. The
same CA verifies client certificates (CN = user, O = groups) when a client presents one, as kube-apiserver's
`--client-ca-file` does; `issue_client_cert` makes such a certificate. Keys are ECDSA P-256: making them
takes milliseconds. Nothing is written to disk but a temporary file while `ssl` loads the chain.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
LOCAL_NAMES = ("127.0.0.1", "::1", "localhost")


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _alt_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed CA (certificate and key, PEM) signing kubesim's serving and client certificates."""

    cert_pem: str
    key_pem: str

    @classmethod
    def create(cls, common_name: str = "kubesim-ca") -> CertificateAuthority:
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(_name(common_name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(_cert_pem(cert), _key_pem(key))

    def _sign(
        self, subject: x509.Name, usage: x509.ObjectIdentifier, alt_names: tuple[str, ...] = ()
    ) -> tuple[str, str]:
        ca_cert = x509.load_pem_x509_certificate(self.cert_pem.encode())
        ca_key = serialization.load_pem_private_key(self.key_pem.encode(), password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise ValueError("kubesim's CA key is not an ECDSA key")
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if alt_names:
            names = [_alt_name(n) for n in dict.fromkeys(alt_names)]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return _cert_pem(builder.sign(ca_key, hashes.SHA256())), _key_pem(key)

    def issue_serving_cert(self, hosts: tuple[str, ...] = ()) -> tuple[str, str]:
        """(certificate, key) PEM for a server answering at `hosts` and the loopback names."""
        names = (*hosts, *LOCAL_NAMES)
        return self._sign(_name("kubesim"), ExtendedKeyUsageOID.SERVER_AUTH, names)

    def issue_client_cert(self, user: str, groups: tuple[str, ...] = ()) -> tuple[str, str]:
        """(certificate, key) PEM authenticating as `user` in `groups` (CN and O, as upstream reads them)."""
        return self._sign(_name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH)

    def server_context(self, hosts: tuple[str, ...] = ()) -> ssl.SSLContext:
        """A server-side context with a fresh serving certificate; client certificates are asked for and,
        when given, must be signed by this CA."""
        cert_pem, key_pem = self.issue_serving_cert(hosts)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        load_chain(context, cert_pem, key_pem)
        context.load_verify_locations(cadata=self.cert_pem)
        context.verify_mode = ssl.CERT_OPTIONAL
        return context


def load_chain(context: ssl.SSLContext, cert_pem: str, key_pem: str) -> None:
    """`ssl` loads certificates only from files: a private temporary one, removed at once."""
    fd, path = tempfile.mkstemp(prefix="kubesim-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(cert_pem + key_pem)
        context.load_cert_chain(path)
    finally:
        os.unlink(path)
