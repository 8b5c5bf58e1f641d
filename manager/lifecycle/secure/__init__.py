"""Secure serving for the manager's HTTP server, as kube-controller-manager's: HTTPS with a given or
self-signed certificate (tls), and delegated authentication and authorization by the API server
(delegated, filter)."""

from manager.lifecycle.secure.certs import CertificateError
from manager.lifecycle.secure.delegated import DelegatedAuth, ReviewClient, UserInfo
from manager.lifecycle.secure.filter import delegated_auth_middleware
from manager.lifecycle.secure.tls import ServingTLS

__all__ = [
    "CertificateError",
    "DelegatedAuth",
    "ReviewClient",
    "ServingTLS",
    "UserInfo",
    "delegated_auth_middleware",
]
