"""Where the API server is and how to authenticate: kubernetes-asyncio's loaders, nothing else of it.

kubernetes-asyncio is imported only when a configuration is loaded (importing it takes most of a second),
so `import manager.client` stays cheap for tools and tests that never load one.

kubernetes-asyncio reads kubeconfig files (tokens, token files, exec plugins, client certificates, CA
data) and the in-cluster service-account mount. We turn the resulting `Configuration` into what our own
connections need: a base URL, an SSL context and a coroutine returning fresh auth headers
(exec-plugin tokens and projected service-account tokens expire; the loaders know how to refresh them).
"""

from __future__ import annotations

import base64
import inspect
import os
import platform
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class ConfigError(Exception):
    """No usable cluster configuration; the one-line message names the file (or source) and the problem."""


def default_user_agent() -> str:
    """`aiokcm/<version> (<os>/<arch>) python/<version>`, as client-go's DefaultKubernetesUserAgent names the
    binary, its version and platform; component clients append `/<component>`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("aiokcm")
    except PackageNotFoundError:
        ours = "unknown"
    python = ".".join(map(str, sys.version_info[:3]))
    return f"aiokcm/v{ours} ({sys.platform}/{platform.machine().lower() or 'unknown'}) python/{python}"


@dataclass
class RestConfig:
    """Everything needed to talk to one API server."""

    host: str
    ssl_context: ssl.SSLContext | None = None
    tls_server_name: str | None = None
    user_agent: str = field(default_factory=lambda: default_user_agent())
    _configuration: Any = None  # kubernetes_asyncio Configuration, for token refresh hooks
    _loader: Any = None  # kubeconfig loader, for exec-plugin token refresh
    _static_headers: dict[str, str] = field(default_factory=dict)
    _force_exec: bool = False
    _client_cert_file: str | None = None
    # Bumped whenever the client certificate changes: connections opened with the old one must go.
    credentials_generation: int = 0
    # The token refresh hook last seen to be a plain function, or a coroutine one (see _ran_hook_now).
    _plain_hook: Any = None
    _awaited_hook: Any = None

    async def auth_headers(self) -> dict[str, str]:
        """Current auth headers; runs the loaders' refresh logic so expiring tokens are replaced in time."""
        cfg = self._configuration
        if cfg is None:
            return dict(self._static_headers)
        loader = self._loader
        if self._exec_plugin_due():
            self._force_exec = False
            await loader.load_from_exec_plugin()
            if getattr(loader, "token", None):
                cfg.api_key["BearerToken"] = loader.token
            self._reload_client_certificate(loader)
        return self._headers_with(await cfg.get_api_key_with_prefix("BearerToken"))

    def auth_headers_now(self) -> dict[str, str] | None:
        """`auth_headers()` without a coroutine when nothing needs awaiting (no exec plugin run due, no
        coroutine refresh hook: the common case, taken on every request); None when it must be awaited."""
        cfg = self._configuration
        if cfg is None:
            return dict(self._static_headers)
        if self._loader is not None and self._exec_plugin_due():
            return None
        hook = cfg.refresh_api_key_hook
        if hook is not None and not self._ran_hook_now(hook, cfg):
            return None
        # What Configuration.get_api_key_with_prefix returns once its refresh hook is out of the way.
        token = cfg.api_key.get("BearerToken")
        if token and (prefix := cfg.api_key_prefix.get("BearerToken")):
            token = f"{prefix} {token}"
        return self._headers_with(token)

    def _ran_hook_now(self, hook: Any, cfg: Any) -> bool:
        """Run a token refresh hook that is a plain function (the in-cluster loader's, which re-reads the
        rotated service-account token when due) as get_api_key_with_prefix would, without its coroutine;
        False for a coroutine hook, which auth_headers() awaits."""
        if hook is not self._plain_hook:
            if hook is self._awaited_hook or inspect.iscoroutinefunction(hook):
                self._awaited_hook = hook
                return False
            self._plain_hook = hook
        result = hook(cfg)
        if inspect.isawaitable(result):  # a plain function handing back a coroutine: await it from now on
            if inspect.iscoroutine(result):
                result.close()
            self._plain_hook, self._awaited_hook = None, hook
            return False
        return True

    def _headers_with(self, token: str | None) -> dict[str, str]:
        headers = dict(self._static_headers)
        cfg = self._configuration
        if token:
            headers["Authorization"] = token if " " in token else f"Bearer {token}"
        elif cfg.username or cfg.password:
            raw = f"{cfg.username or ''}:{cfg.password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        return headers

    def _reload_client_certificate(self, loader: Any) -> None:
        """An exec plugin may hand out a client certificate instead of a token (and a new one when the old
        one is refused): load it into the TLS context, which new connections use."""
        cert_file = loader.__dict__.get("cert_file")
        if not cert_file or self.ssl_context is None or cert_file == self._client_cert_file:
            return
        self.ssl_context.load_cert_chain(cert_file, keyfile=loader.__dict__.get("key_file"))
        self._client_cert_file = cert_file
        self.credentials_generation += 1

    def _exec_plugin_due(self) -> bool:
        """Run the exec plugin again only when its credential expired or the server refused it (a plugin
        without expirationTimestamp is run once, at load)."""
        loader = self._loader
        user = getattr(loader, "_user", None) if loader is not None else None
        if user is None or "exec" not in user:
            return False
        if self._force_exec:
            return True
        expiry = getattr(loader, "exec_plugin_expiry", None)
        if expiry is None:
            return False
        from kubernetes_asyncio.config import kube_config

        return bool(kube_config._is_expired(expiry))

    async def refresh_after_unauthorized(self) -> None:
        """Force a credential refresh after a 401 (an exec token may have been revoked early)."""
        loader = self._loader
        if loader is not None and hasattr(loader, "exec_plugin_expiry"):
            del loader.exec_plugin_expiry
        self._force_exec = True


def _ssl_context(cfg: Any) -> ssl.SSLContext | None:
    if not str(cfg.host).startswith("https"):
        return None
    try:
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise ConfigError(_tls_file_problem("certificate authority", cfg.ssl_ca_cert, exc)) from None
    if cfg.cert_file:
        try:
            context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
        except (OSError, ValueError) as exc:
            files = cfg.cert_file + (f" (key {cfg.key_file})" if cfg.key_file else "")
            raise ConfigError(_tls_file_problem("client certificate", files, exc)) from None
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _tls_file_problem(what: str, path: str | None, exc: Exception) -> str:
    """kubernetes-asyncio writes inline *-data fields to temporary files: say so instead of naming those."""
    from kubernetes_asyncio.config import kube_config

    inline = path in getattr(kube_config, "_temp_files", {}).values()
    source = f"{what} (inline data)" if inline else f"{what} file {path}"
    if isinstance(exc, ssl.SSLError) and exc.reason:  # NO_CERTIFICATE_OR_CRL_FOUND: not PEM, or empty
        reason = exc.reason.lower().replace("_", " ")
    else:
        reason = (getattr(exc, "strerror", None) or str(exc)).lower()
    return f"{source}: {reason}"


def _finish(cfg: Any, loader: Any, master: str | None) -> RestConfig:
    if master:
        cfg.host = master
    host = str(cfg.host).rstrip("/")
    return RestConfig(
        host=host,
        ssl_context=_ssl_context(cfg),
        tls_server_name=getattr(cfg, "tls_server_name", None),
        _configuration=cfg,
        _loader=loader,
        _client_cert_file=cfg.cert_file or None,
    )


def with_scheme(master: str) -> str:
    """`host:port` without a scheme means https, as in client-go's `--master` handling."""
    return master if "://" in master else f"https://{master}"


async def load_config(
    kubeconfig: str | None = None,
    master: str | None = None,
    context: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: str = SERVICE_ACCOUNT_DIR,
) -> RestConfig:
    """Resolve the API server like kube-controller-manager's `--kubeconfig`/`--master` flags.

    - kubeconfig given: load it (master, when also given, overrides its server URL);
    - only master given: talk to it without credentials (`host:port` alone means https);
    - neither: in-cluster config when running in a pod (KUBERNETES_SERVICE_HOST/PORT set; token and CA from
      `service_account_dir`, the token re-read as it rotates), else $KUBECONFIG or ~/.kube/config.
    `environ` and `service_account_dir` exist for tests (default: os.environ and the pod's mount).
    """
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import incluster_config
    from kubernetes_asyncio.config.config_exception import ConfigException

    master = with_scheme(master) if master else None
    cfg = Configuration()
    if kubeconfig:
        return await _from_kubeconfig(cfg, _expand(kubeconfig), "--kubeconfig", context, master)
    if master:
        cfg.host = master
        return RestConfig(host=master.rstrip("/"), ssl_context=_ssl_context(cfg), _configuration=cfg)
    env = os.environ if environ is None else environ
    if env.get(_SERVICE_HOST_ENV):
        try:
            incluster_config.InClusterConfigLoader(
                token_filename=os.path.join(service_account_dir, "token"),
                cert_filename=os.path.join(service_account_dir, "ca.crt"),
                environ=dict(env),
            ).load_and_set(client_configuration=cfg)
        except ConfigException as exc:
            raise ConfigError(
                f"in-cluster configuration ({_SERVICE_HOST_ENV} is set, {service_account_dir}): {exc}"
            ) from None
        return _finish(cfg, None, None)
    default, named = _default_kubeconfig(env)
    return await _from_kubeconfig(cfg, default, "KUBECONFIG" if named else "", context, None)


def _check_kubeconfig_file(path: str, named: str) -> None:
    """Readable YAML holding a mapping, or a ConfigError saying what is wrong and where (kubernetes-asyncio
    would raise a bare YAML traceback or call a missing file an empty configuration)."""
    import yaml

    try:
        with open(path, "rb") as stream:
            document = yaml.safe_load(stream)
    except OSError as exc:
        raise ConfigError(f"cannot read {named}: {(exc.strerror or str(exc)).lower()}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{named} is not valid YAML{where}: {problem}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{named} is not a kubeconfig: expected a mapping, found {type(document).__name__}")


def _expand(path: str) -> str:
    return os.path.expanduser(path)


def _default_kubeconfig(env: Mapping[str, str]) -> tuple[str, bool]:
    """The file $KUBECONFIG names first, else ~/.kube/config, and whether KUBECONFIG named it; a missing file
    is the error client-go's loader reports when nothing configures it."""
    named = env.get("KUBECONFIG", "").split(os.pathsep)[0]
    path = os.path.expanduser(named or os.path.join(env.get("HOME", "~"), ".kube", "config"))
    if not os.path.exists(path):
        raise ConfigError(
            f"no cluster configuration found: KUBECONFIG names {named}, which does not exist"
            if named
            else f"no cluster configuration found: KUBECONFIG is unset, {path} does not exist and "
            f"{_SERVICE_HOST_ENV} is unset (not in a pod); pass --kubeconfig or --master (or try --sandbox)"
        )
    return path, bool(named)


async def _from_kubeconfig(
    cfg: Any, path: str, origin: str, context: str | None, master: str | None
) -> RestConfig:
    """Load one kubeconfig file; every problem with it (or with a file it names) becomes a ConfigError
    naming the file."""
    from kubernetes_asyncio.config import kube_config
    from kubernetes_asyncio.config.config_exception import ConfigException

    named = f"kubeconfig {path}" + (f" ({origin})" if origin else "")
    _check_kubeconfig_file(path, named)
    try:
        loader = await kube_config.load_kube_config(  # read again: relative paths are relative to the file
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except ConfigException as exc:
        raise ConfigError(f"{named}: {exc}") from None
    except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:  # odd shapes of odd files
        raise ConfigError(f"{named}: {type(exc).__name__}: {exc}") from None
    try:
        return _finish(cfg, loader, master)
    except ConfigError as exc:
        raise ConfigError(f"{named}: {exc}") from None
