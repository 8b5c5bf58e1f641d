"""Settings: precedence flags > env AIOKCM_* > --config file > defaults, validation and file errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from controllers.job.controller import JobFlags
from controllers.replicaset.controller import ReplicaSetFlags
from manager.cli.flags import settings_class
from manager.cli.plugins import discover
from manager.config.settings import ConfigFileError, read_config_file

# The settings of this installation: the manager's own flags and those the installed controllers declare.
Settings = settings_class(discover())


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("AIOKCM_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "aiokcm.yaml"
    path.write_text(text)
    return path


def test_defaults_match_kube_controller_manager() -> None:
    s = Settings.load()
    assert s.controllers == ["*"]
    job, replicaset = JobFlags.of(s), ReplicaSetFlags.of(s)  # the controllers' flags, typed
    assert (job.concurrent_job_syncs, replicaset.concurrent_replicaset_syncs) == (5, 5)
    assert (s.kube_api_qps, s.kube_api_burst) == (20.0, 30)
    assert s.leader_elect is True
    assert (s.leader_elect_lease_duration, s.leader_elect_renew_deadline, s.leader_elect_retry_period) == (
        15.0,
        10.0,
        2.0,
    )
    assert (s.leader_elect_resource_name, s.leader_elect_resource_namespace) == ("aiokcm", "kube-system")
    assert (s.bind_address, s.secure_port, s.port, s.shutdown_grace_period) == ("0.0.0.0", 10257, None, 30.0)
    assert s.authorization_always_allow_paths == ["/healthz", "/readyz", "/livez"]
    assert (
        s.authentication_token_webhook_cache_ttl,
        s.authorization_webhook_cache_authorized_ttl,
        s.authorization_webhook_cache_unauthorized_ttl,
    ) == (10.0, 10.0, 10.0)
    assert job.job_controller_managed_by == "kubernetes.io/job-controller"
    assert s.sandbox_apply == []


def test_every_field_is_documented() -> None:
    undocumented = [name for name, field in Settings.model_fields.items() if not field.description]
    assert undocumented == []


def test_precedence_flags_over_env_over_file_over_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path, "kube-api-qps: 1\nkube_api_burst: 2\nport: 3\nlog-level: debug\n")
    monkeypatch.setenv("AIOKCM_KUBE_API_QPS", "10")
    monkeypatch.setenv("AIOKCM_KUBE_API_BURST", "20")
    s = Settings.load({"kube_api_qps": "100"}, config)
    assert s.kube_api_qps == 100.0  # flag beats env and file
    assert s.kube_api_burst == 20  # env beats file
    assert s.port == 3  # file beats default
    assert s.log_level == "debug"
    assert JobFlags.of(s).concurrent_job_syncs == 5  # default


def test_env_lists_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIOKCM_CONTROLLERS", "*,-job, replicaset")
    monkeypatch.setenv("AIOKCM_SANDBOX_APPLY", "a.yaml,dir")
    s = Settings.load()
    assert s.controllers == ["*", "-job", "replicaset"]
    assert s.sandbox_apply == ["a.yaml", "dir"]


def test_env_booleans_and_durations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIOKCM_LEADER_ELECT", "false")
    monkeypatch.setenv("AIOKCM_LEADER_ELECT_LEASE_DURATION", "1m")
    monkeypatch.setenv("AIOKCM_SHUTDOWN_GRACE_PERIOD", "1500ms")
    s = Settings.load()
    assert s.leader_elect is False
    assert s.leader_elect_lease_duration == 60.0
    assert s.shutdown_grace_period == 1.5


def test_file_values_keep_their_yaml_types(tmp_path: Path) -> None:
    text = "controllers: [job, -replicaset]\nleader-elect: false\nshutdown-grace-period: 5\n"
    config = write(tmp_path, text)
    s = Settings.load({}, config)
    assert s.controllers == ["job", "-replicaset"]
    assert s.leader_elect is False
    assert s.shutdown_grace_period == 5.0


def test_flag_lists_replace_file_lists(tmp_path: Path) -> None:
    config = write(tmp_path, "controllers: [job]\n")
    assert Settings.load({"controllers": ["replicaset"]}, config).controllers == ["replicaset"]


def test_empty_config_file_is_fine(tmp_path: Path) -> None:
    assert Settings.load({}, write(tmp_path, "")).secure_port == 10257


@pytest.mark.parametrize(
    ("flags", "culprit"),
    [
        ({"concurrent_job_syncs": "0"}, "concurrent_job_syncs"),
        ({"concurrent_replicaset_syncs": "-1"}, "concurrent_replicaset_syncs"),
        ({"port": "65536"}, "port"),
        ({"port": "-1"}, "port"),
        ({"secure_port": "65536"}, "secure_port"),
        ({"sandbox_port": "70000"}, "sandbox_port"),
        ({"leader_elect_lease_duration": "abc"}, "leader_elect_lease_duration"),
        ({"log_level": "loud"}, "log_level"),
        ({"log_format": "xml"}, "log_format"),
        ({"shutdown_grace_period": "-1s"}, "shutdown_grace_period"),
        ({"master": "ftp://api:6443"}, "master"),
        ({"master": "https://"}, "master"),
        ({"master": "https://api:99999"}, "master"),
    ],
)
def test_field_validation_names_the_field(flags: dict[str, str], culprit: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings.load(flags)
    assert info.value.errors()[0]["loc"] == (culprit,)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"leader_elect_renew_deadline": "15s"}, "less than --leader-elect-lease-duration"),
        ({"leader_elect_retry_period": "9s"}, "1.2 x --leader-elect-retry-period"),
    ],
)
def test_lease_timings_must_be_consistent(flags: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings.load(flags)
    assert message in str(info.value)


def test_edge_values_accepted() -> None:
    s = Settings.load({"port": "0", "kube_api_qps": "-1", "shutdown_grace_period": "0"})
    assert (s.port, s.kube_api_qps, s.shutdown_grace_period) == (0, -1.0, 0.0)


def test_unknown_init_keys_are_rejected() -> None:
    with pytest.raises(ValidationError):
        Settings.load({"no_such_setting": "1"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port: [1\n", "is not valid YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("portt: 1\n", 'unknown setting "portt"'),
    ],
)
def test_config_file_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError) as info:
        read_config_file(path, Settings.model_fields)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"cannot read --config .*nope\.yaml"):
        Settings.load({}, tmp_path / "nope.yaml")


def test_config_file_does_not_leak_into_later_loads(tmp_path: Path) -> None:
    Settings.load({}, write(tmp_path, "secure-port: 1\n"))
    assert Settings.load().secure_port == 10257


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("http://127.0.0.1:6443", "http://127.0.0.1:6443"),
        ("10.0.0.1:6443", "https://10.0.0.1:6443"),  # client-go's DefaultServerURL adds https://
        ("kube.example", "https://kube.example"),
        ("  ", None),
    ],
)
def test_master_urls(given: str, used: str | None) -> None:
    assert Settings.load({"master": given}).master == used


def test_flags_of_controllers_that_are_not_installed_do_not_exist() -> None:
    core = settings_class([])
    assert "concurrent_job_syncs" not in core.model_fields
    for name in ("concurrent_endpoint_syncs", "concurrent_widget_syncs"):
        assert name not in Settings.model_fields
    with pytest.raises(ValidationError, match="concurrent_endpoint_syncs"):
        Settings.load({"concurrent_endpoint_syncs": "20"})


def test_a_flag_declared_twice_is_an_error_naming_both() -> None:
    from manager import ControllerFlags

    class Mine(ControllerFlags):
        concurrent_job_syncs: int = 1

    from controllers.job.controller import JobFlags
    from manager.config.settings import Settings as Core

    with pytest.raises(ValueError, match=r"--concurrent-job-syncs of .*Mine is also declared by JobFlags"):
        Core.with_flags([JobFlags, Mine])
