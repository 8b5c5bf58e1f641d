"""The manager's configuration: one pydantic-settings model, every field a kube-controller-manager-style flag.

The manager's own flags are the fields of `Settings`; each controller declares its own (`ControllerFlags`,
next to its class), and `Settings.with_flags` makes the model of a process with those controllers installed.

Precedence, highest first: command-line flags (passed as init keyword arguments) > environment
``AIOKCM_<FLAG>`` (e.g. ``AIOKCM_KUBE_API_QPS``, ``AIOKCM_CONTROLLERS=*,-job``) > the ``--config`` YAML file
(keys are the flag names, with dashes or underscores) > the defaults below. `Settings.load` applies all four.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from manager.config.durations import parse_duration

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def _duration(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str | int | float) else value


def _comma_list(value: Any) -> Any:
    """Accept "a,b" (flags, env) as well as YAML lists; blanks are dropped as pflag's StringSlice does."""
    if isinstance(value, str):
        value = value.split(",")
    if isinstance(value, list | tuple):
        return [str(item).strip() for item in value if str(item).strip()]
    return value


Duration = Annotated[float, BeforeValidator(_duration)]
CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_list)]

# The --config file for the Settings being built; read by the file source in settings_customise_sources.
_config_values: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "aiokcm_config_values", default=None
)


class ConfigFileError(ValueError):
    """The --config file cannot be read, is not YAML, or names a setting that does not exist."""


class Settings(BaseSettings):
    """Every setting of the aiokcm manager; the field name with dashes is the command-line flag."""

    model_config = SettingsConfigDict(env_prefix="AIOKCM_", extra="forbid", validate_default=True)

    kubeconfig: str | None = Field(
        None,
        description="Path to a kubeconfig file. Without it and --master: the in-cluster service account "
        "inside a pod, else $KUBECONFIG or ~/.kube/config.",
    )
    master: str | None = Field(
        None,
        description="URL of the API server (host:port alone means https); overrides the kubeconfig's server.",
    )
    controllers: CommaList = Field(
        ["*"],
        description="Controllers to enable: '*' enables all on-by-default controllers, 'foo' enables foo, "
        "'-foo' disables foo; the first explicit mention wins. Aliases are accepted.",
    )
    kube_api_qps: float = Field(
        20.0, description="Sustained queries per second to the API server; <= 0 disables rate limiting."
    )
    kube_api_burst: int = Field(30, ge=0, description="Burst of queries allowed above --kube-api-qps.")
    leader_elect: bool = Field(
        True, description="Run controllers only while holding the leader lease (for replicas > 1)."
    )
    leader_elect_lease_duration: Duration = Field(
        15.0, gt=0, description="How long non-leaders wait after a missed renewal before taking the lease."
    )
    leader_elect_renew_deadline: Duration = Field(
        10.0, gt=0, description="How long the leader keeps retrying renewal before giving up (and exiting)."
    )
    leader_elect_retry_period: Duration = Field(
        2.0, gt=0, description="Wait between attempts to acquire or renew the lease."
    )
    leader_elect_resource_name: str = Field("aiokcm", min_length=1, description="Name of the Lease object.")
    leader_elect_resource_namespace: str = Field(
        "kube-system", min_length=1, description="Namespace of the Lease object."
    )
    apiserver_probe_interval: Duration = Field(
        5.0,
        ge=0,
        description="How often the API server's /readyz is probed (every second while it fails) for the "
        "apiserver readiness check and to end informer backoff at once when it answers again; 0 disables.",
    )
    apiserver_probe_timeout: Duration = Field(
        3.0, gt=0, description="How long one probe of the API server may take before it counts as failed."
    )
    apiserver_probe_failure_threshold: int = Field(
        3, ge=1, description="Failed probes in a row before the apiserver readiness check fails."
    )
    watch_idle_timeout: Duration = Field(
        75.0,
        gt=0,
        description="A watch that sends nothing, not even a bookmark, for this long is presumed dead and "
        "reopened; keep it above the API server's bookmark interval (about 1m for kube-apiserver).",
    )
    bind_address: str = Field("0.0.0.0", description="Address the health/metrics server listens on.")
    secure_port: int = Field(
        10257,
        ge=0,
        le=65535,
        description="HTTPS port of /healthz, /metrics and /debug/*, with delegated authentication and "
        "authorization; 0 picks a free port (logged).",
    )
    port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Deprecated: serve plain HTTP without authentication on this port instead of HTTPS on "
        "--secure-port (the sandbox, local tests); 0 picks a free port.",
    )
    cert_dir: str | None = Field(
        None,
        description="Directory of the self-signed serving certificate (aiokcm.crt, aiokcm.key), made when "
        "missing; ignored with --tls-cert-file. Default: a new one in memory at each start.",
    )
    tls_cert_file: str | None = Field(
        None, description="PEM serving certificate (chain) for HTTPS; reloaded when the file changes."
    )
    tls_private_key_file: str | None = Field(None, description="PEM private key of --tls-cert-file.")
    client_ca_file: str | None = Field(
        None,
        description="Accept client certificates signed by these CAs: the CommonName is the user, the "
        "Organizations its groups.",
    )
    authentication_token_webhook_cache_ttl: Duration = Field(
        10.0, ge=0, description="How long TokenReview answers are cached."
    )
    authorization_webhook_cache_authorized_ttl: Duration = Field(
        10.0, ge=0, description="How long 'authorized' SubjectAccessReview answers are cached."
    )
    authorization_webhook_cache_unauthorized_ttl: Duration = Field(
        10.0, ge=0, description="How long 'unauthorized' SubjectAccessReview answers are cached."
    )
    authorization_always_allow_paths: CommaList = Field(
        ["/healthz", "/readyz", "/livez"],
        description="Paths served without authentication or authorization (a trailing * matches a prefix).",
    )
    log_format: Literal["json", "console"] | None = Field(
        None, description="Log format: json or console; default json unless stderr is a terminal."
    )
    log_level: str = Field("info", description="Minimum log level: debug, info, warning, error, critical.")
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field(
        "auto", description="Event loop: uvloop, asyncio's own, or auto (uvloop when it is installed)."
    )
    shutdown_grace_period: Duration = Field(
        30.0, ge=0, description="On SIGTERM/SIGINT, how long in-flight work may run before it is cancelled."
    )
    sandbox: bool = Field(False, description="Start an embedded kubesim API server and run against it.")
    sandbox_port: int = Field(
        0, ge=0, le=65535, description="Port of the embedded kubesim; 0 picks a free one."
    )
    sandbox_apply: CommaList = Field(
        [], description="YAML files or directories applied into the sandbox at start (repeatable)."
    )
    sandbox_data_dir: str | None = Field(
        None,
        description="Keep the sandbox cluster in this directory and continue from it on the next start; "
        "default: in memory, gone at exit.",
    )
    sandbox_authorization_mode: Literal["RBAC", "AlwaysAllow"] = Field(
        "RBAC",
        description="RBAC: the sandbox serves HTTPS and enforces RBAC, the manager running as its own "
        "ServiceAccount bound to the generated roles; AlwaysAllow: plain HTTP, everything allowed.",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _known_level(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in LOG_LEVELS:
            return value.strip().lower()
        raise ValueError(f"unknown log level {value!r}; use one of {', '.join(LOG_LEVELS)}")

    @field_validator("master", mode="before")
    @classmethod
    def _master_url(cls, value: Any) -> Any:
        """An http(s) URL; a bare host[:port] gets https:// as client-go's DefaultServerURL gives it."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text:
            return None
        if "://" not in text:
            text = "https://" + text
        parts = urlsplit(text)
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok or " " in text:
            raise ValueError("expected the API server's URL, e.g. https://10.0.0.1:6443")
        return text

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_format(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _tls_files_paired(self) -> Self:
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file must be given together")
        return self

    @model_validator(mode="after")
    def _lease_timings_consistent(self) -> Self:
        # The same relations client-go's leader elector enforces (retry jitter factor 1.2).
        if self.leader_elect_renew_deadline >= self.leader_elect_lease_duration:
            raise ValueError("--leader-elect-renew-deadline must be less than --leader-elect-lease-duration")
        if self.leader_elect_renew_deadline <= 1.2 * self.leader_elect_retry_period:
            raise ValueError(
                "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        file_settings = InitSettingsSource(settings_cls, init_kwargs=_config_values.get() or {})
        return init_settings, env_settings, file_settings

    @classmethod
    def load(cls, flags: Mapping[str, Any] | None = None, config_file: str | Path | None = None) -> Self:
        """Build settings from flags (field name → raw value), the environment and an optional YAML file."""
        token = _config_values.set(read_config_file(config_file, cls.model_fields) if config_file else {})
        try:
            return cls(**dict(flags or {}))
        finally:
            _config_values.reset(token)

    @classmethod
    def with_flags(cls, flag_models: Iterable[type[ControllerFlags]]) -> type[Settings]:
        """The settings model of a process whose controllers declare these flags (each model once; a flag
        name declared twice, or clashing with one of the manager's, is an error naming the models)."""
        models = tuple(dict.fromkeys(flag_models))
        if not models:
            return cls
        key = (cls, models)
        if key not in _composed:
            owners: dict[str, str] = dict.fromkeys(cls.model_fields, "the manager")
            fields: dict[str, Any] = {}
            for model in models:
                for name, info in model.model_fields.items():
                    if name in owners:
                        flag = "--" + name.replace("_", "-")
                        raise ValueError(
                            f"flag {flag} of {model.__qualname__} is also declared by {owners[name]}"
                        )
                    owners[name] = model.__qualname__
                    fields[name] = (info.annotation, info)
            _composed[key] = create_model(cls.__name__, __base__=cls, __module__=cls.__module__, **fields)
        return _composed[key]


class ControllerFlags(BaseModel):
    """The base of a controller's own flags: one field per flag (the field name with dashes is the flag), each
    with a default and a `description` (the help text), e.g.::

        class JobFlags(ControllerFlags):
            concurrent_job_syncs: int = Field(5, gt=0, description="Jobs synced concurrently.")

    Set it as the controller's `flags` class attribute: `aiokcm --help`, the environment (`AIOKCM_<FLAG>`) and
    the `--config` file then know it. Read the values with `JobFlags.of(ctx.settings)`.
    """

    model_config = ConfigDict(frozen=True)

    @classmethod
    def of(cls, settings: BaseModel) -> Self:
        """This model's values out of the process settings (defaults for flags the settings do not carry,
        e.g. a test's plain `Settings`)."""
        return cls(**{name: getattr(settings, name) for name in cls.model_fields if hasattr(settings, name)})


_composed: dict[tuple[type[Settings], tuple[type[ControllerFlags], ...]], type[Settings]] = {}


def is_duration(settings_cls: type[BaseModel], field: str) -> bool:
    """Whether a field takes a Go-style duration (for help text)."""
    metadata = settings_cls.model_fields[field].metadata
    return any(isinstance(m, BeforeValidator) and m.func is _duration for m in metadata)


def field_for_key(key: str) -> str:
    """Map a flag or file key ("leader-elect", "--leader-elect", "leader_elect") to the field name."""
    return key.lstrip("-").replace("-", "_")


def read_config_file(path: str | Path, known: Mapping[str, Any]) -> dict[str, Any]:
    """Read a YAML mapping of settings (keys with dashes or underscores, each one of `known`); errors name the
    file and key."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigFileError(f"cannot read --config {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ConfigFileError(f"--config {path} is not valid YAML{line}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"--config {path} must be a mapping of setting names to values")
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = field_for_key(str(key))
        if name not in known:
            raise ConfigFileError(f'--config {path}: unknown setting "{key}"')
        values[name] = value
    return values
