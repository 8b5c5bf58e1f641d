"""The ``aiokcm`` command: kube-controller-manager-style flags, then the manager runs until signalled.

Flags (``manager.cli.flags``) are ``--flag value`` or ``--flag=value``; every setting also comes from the
environment (``AIOKCM_<FLAG>``) and the ``--config`` YAML file (or ``AIOKCM_CONFIG``). Bad input exits 2 with
one line naming the culprit. Subcommands (``rbac``, ``crd``, ``new``) live in ``manager.cli.commands``.

The installed controllers are loaded before the flags are read, since each declares flags of its own
(``ControllerFlags``); the rest of the manager (the cluster wiring, kubernetes-asyncio) is imported only once
the daemon is about to run. ``--version`` answers without loading anything.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from manager.cli.commands import discover_controllers, run_command
from manager.cli.eventloop import EventLoopUnavailable, loop_factory
from manager.cli.flags import (
    COMMANDS,
    UsageError,
    enabled_controllers,
    help_text,
    load_settings,
    parse_args,
    settings_class,
)
from manager.config.settings import Settings
from manager.lifecycle.descriptor import ControllerInfo

USAGE_EXIT_CODE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"aiokcm: error: {exc}", file=sys.stderr)
        return USAGE_EXIT_CODE
    except KeyboardInterrupt:  # Ctrl-C before the manager's own signal handlers are installed
        print("aiokcm: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str]) -> int:
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:], package_version())
    if "--version" in argv:
        print(f"aiokcm {package_version()}")
        return 0
    # The installed controllers declare flags of their own: they are loaded before the flags are read.
    installed = discover_controllers()
    settings_cls = settings_class(installed)
    parsed = parse_args(argv, settings_cls)
    if "help" in parsed.actions:
        print(help_text(settings_cls))
        return 0
    if "version" in parsed.actions:
        print(f"aiokcm {package_version()}")
        return 0
    if "list-controllers" in parsed.actions:
        print(controllers_table(installed))
        return 0
    settings = load_settings(parsed, settings_cls)
    _check_kubeconfig(settings)
    enabled = enabled_controllers(settings, installed)
    from manager.cli.logging import configure_logging

    try:
        _, factory = loop_factory(settings.event_loop)
    except EventLoopUnavailable as exc:
        raise UsageError(str(exc)) from None
    configure_logging(settings.log_format, settings.log_level)
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(serve(settings, enabled))


def controllers_table(controllers: Sequence[ControllerInfo]) -> str:
    if not controllers:
        return "no controllers are installed (entry-point group aiokcm.controllers is empty)"
    rows = [("NAME", "ALIASES", "DEFAULT")]
    for c in controllers:
        default = "on" if c.enabled_by_default else "off"
        rows.append(
            (c.name, ",".join(c.aliases) or "-", f"broken: {c.load_error}" if c.load_error else default)
        )
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "\n".join(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}" for r in rows)


def package_version() -> str:
    try:
        return version("aiokcm")
    except PackageNotFoundError:
        return "unknown"


def _check_kubeconfig(settings: Settings) -> None:
    """An unreadable --kubeconfig is bad input (kubernetes-asyncio would call it a malformed file)."""
    path = settings.kubeconfig
    if not path or settings.sandbox:  # --sandbox writes its own kubeconfig
        return
    try:
        with open(os.path.expanduser(path), "rb"):
            pass
    except OSError as exc:
        raise UsageError(f"cannot read --kubeconfig {path}: {(exc.strerror or str(exc)).lower()}") from None


async def serve(settings: Settings, controllers: Sequence[ControllerInfo]) -> int:
    """Run the manager (after starting the sandbox when asked) until it is told to stop."""
    import structlog

    from manager.cli.sandbox import SandboxApplyError
    from manager.client.config import ConfigError
    from manager.lifecycle.cluster import install
    from manager.lifecycle.manager import Manager
    from manager.lifecycle.secure import CertificateError
    from manager.lifecycle.server import ServerBindError

    log = structlog.get_logger(__name__)
    sandbox = None
    if settings.sandbox:
        from manager.cli import sandbox as sandbox_module

        try:
            sandbox = await sandbox_module.Sandbox.start(settings, controllers)
        except sandbox_module.SandboxUnavailable as exc:
            raise UsageError(str(exc)) from None
        settings = settings.model_copy(update={"kubeconfig": str(sandbox.manager_kubeconfig), "master": None})
    try:
        if sandbox is not None and settings.sandbox_apply:
            created = await sandbox.apply(settings.sandbox_apply)
            log.info("sandbox manifests applied", created=created, paths=settings.sandbox_apply)
        return await Manager(settings, controllers, install=install).run()
    except (ServerBindError, CertificateError, SandboxApplyError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:
        if type(exc).__name__ == "ConfigException":  # kubernetes_asyncio: no usable kubeconfig/in-cluster
            raise UsageError(f"cannot load the cluster configuration (--kubeconfig): {exc}") from None
        log.error("startup failed", exc_info=exc)
        print(f"aiokcm: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if sandbox is not None:
            await sandbox.stop()
