"""The ``aiokcm`` command: kube-controller-manager-style flags, then the manager runs until signalled.

Flags are ``--flag value`` or ``--flag=value``; booleans are ``--flag`` or ``--flag=false`` (as pflag, a
boolean never takes the next argument); list flags take commas and may repeat. Every setting also comes from
the environment (``AIOKCM_<FLAG>``) and the ``--config`` YAML file (or ``AIOKCM_CONFIG``). Bad input exits 2
with one line naming the culprit.

The installed controllers are loaded before the flags are read, since each declares flags of its own
(``ControllerFlags``); the rest of the manager (the cluster wiring, kubernetes-asyncio) is imported only once
the daemon is about to run. ``--version`` answers without loading anything.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, get_args, get_origin

from pydantic import ValidationError

from manager.cli.controllers_flag import SelectionError, select
from manager.cli.plugins import RegistryError, discover
from manager.config.durations import format_duration
from manager.config.settings import ConfigFileError, Settings, is_duration
from manager.lifecycle.descriptor import ControllerInfo

USAGE_EXIT_CODE = 2
_ACTIONS = {
    "help": "Show this help and exit.",
    "version": "Print the version and exit.",
    "list-controllers": "List the installed controllers (name, aliases, on by default) and exit.",
}
# Subcommands: `aiokcm <command> ...`; without one, the flags run the manager.
_COMMANDS = {
    "rbac": "aiokcm rbac [--controllers ...] [--service-account NAME] [--namespace NS] [--name-prefix P] "
    "[--output-dir DIR | --chart] [flags]: print a ClusterRole per enabled controller (its `rbac` rules), "
    "the manager's, their bindings and the leader-election Role and binding as YAML; --output-dir writes "
    "them as a kustomize base, --chart prints the rules data the Helm chart renders from.",
    "crd": "aiokcm crd <module:Class>: print the CustomResourceDefinition generated from a typed custom "
    "resource (a manager.CustomResource subclass) as YAML.",
    "new": "aiokcm new controller --group GROUP --version VERSION --kind KIND [--dir PATH] [--package NAME]: "
    "write a ready, installable operator package (typed resource, controller, tests, CRD, RBAC, README).",
}
_TRUE = {"1", "t", "true", "yes", "y", "on"}
_FALSE = {"0", "f", "false", "no", "n", "off"}


class UsageError(Exception):
    """Bad input; the message is the one line printed before exiting 2."""


@dataclass(frozen=True)
class Flag:
    name: str  # "leader-elect"
    field: str  # "leader_elect"
    kind: str  # bool | list | duration | int | float | string
    description: str
    default: Any


@dataclass
class Parsed:
    values: dict[str, Any] = field(default_factory=dict)
    config: str | None = None
    actions: set[str] = field(default_factory=set)


def _kind(settings_cls: type[Settings], name: str, annotation: Any) -> str:
    if annotation is bool:
        return "bool"
    if get_origin(annotation) is list:
        return "list"
    if is_duration(settings_cls, name):
        return "duration"
    for kind, python_type in (("int", int), ("float", float)):
        if annotation is python_type or python_type in get_args(annotation):
            return kind
    return "string"


def flags(settings_cls: type[Settings] = Settings) -> dict[str, Flag]:
    """The command-line flags, derived from the settings fields (one flag per field)."""
    table = {}
    for name, info in settings_cls.model_fields.items():
        flag_name = name.replace("_", "-")
        kind = _kind(settings_cls, name, info.annotation)
        table[flag_name] = Flag(flag_name, name, kind, info.description or "", info.default)
    return table


def parse_bool(flag: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise UsageError(f'invalid argument "{text}" for "--{flag}" flag: expected true or false')


def parse_args(argv: Sequence[str], settings_cls: type[Settings] = Settings) -> Parsed:
    parsed = Parsed()
    table = flags(settings_cls)
    args = list(argv)
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "-h":
            parsed.actions.add("help")
            continue
        if not arg.startswith("--") or arg == "--":
            raise UsageError(f'unexpected argument "{arg}" (flags look like --name=value)')
        name, has_value, value = arg[2:].partition("=")
        if name in _ACTIONS:
            if not has_value or parse_bool(name, value):
                parsed.actions.add(name)
            continue
        spec = table.get(name)
        if spec is None and name != "config":
            raise UsageError(f"unknown flag: --{name}")
        if spec is not None and spec.kind == "bool":
            parsed.values[spec.field] = parse_bool(name, value) if has_value else True
            continue
        if not has_value:
            if index >= len(args):
                raise UsageError(f"flag needs an argument: --{name}")
            value = args[index]
            index += 1
        if spec is None:
            parsed.config = value
        elif spec.kind == "list":  # repeated list flags accumulate, as pflag's StringSlice
            parsed.values.setdefault(spec.field, []).extend(v.strip() for v in value.split(",") if v.strip())
        else:
            parsed.values[spec.field] = value
    return parsed


def describe_validation_error(error: ValidationError) -> str:
    """One line: the flag at fault, the value and why it is wrong (plus how many other problems)."""
    problems = error.errors()
    first = problems[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    location = first.get("loc") or ()
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    if location:
        flag = "--" + str(location[0]).replace("_", "-")
        return f'invalid value "{_short(first.get("input"))}" for {flag}: {message}{more}'
    return f"invalid settings: {message}{more}"


def _short(value: Any) -> str:
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def help_text(settings_cls: type[Settings] = Settings) -> str:
    """The --help page for these settings (the manager's own flags by default; `aiokcm --help` adds those of
    the installed controllers)."""
    rows: list[tuple[str, str]] = []
    for spec in flags(settings_cls).values():
        metavar = {"bool": "", "list": " strings"}.get(spec.kind, f" {spec.kind}")
        rows.append((f"--{spec.name}{metavar}", spec.description + _default_note(spec)))
    rows.append(("--config string", "YAML file of settings (keys are flag names); also AIOKCM_CONFIG."))
    rows.extend((f"--{name}" if name != "help" else "-h, --help", text) for name, text in _ACTIONS.items())
    width = max(len(left) for left, _ in rows) + 3
    columns = max(80, min(shutil.get_terminal_size((110, 24)).columns, 140))
    lines = [
        "Usage: aiokcm [flags]",
        *(f"       {usage.split(': ', 1)[0]}" for usage in _COMMANDS.values()),
        "",
        "aiokcm runs Kubernetes controllers on one asyncio loop, in the style of kube-controller-manager.",
        "Every flag can also be set as environment variable AIOKCM_<FLAG> (AIOKCM_KUBE_API_QPS=50,",
        "AIOKCM_CONTROLLERS=*,-job) or as a key of the --config YAML file.",
        "Precedence: flags > environment > --config file > defaults.",
        "",
        "Flags:",
    ]
    for left, text in rows:
        wrapped = textwrap.wrap(text, max(30, columns - width - 2)) or [""]
        lines.append(f"  {left.ljust(width)}{wrapped[0]}")
        lines.extend(" " * (width + 2) + more for more in wrapped[1:])
    return "\n".join(lines)


def _default_note(spec: Flag) -> str:
    default = spec.default
    if default is None or default == [] or default is False:
        return ""
    if spec.kind == "duration":
        return f" (default {format_duration(default)})"
    if spec.kind == "list":
        return f" (default {','.join(default)})"
    if spec.kind == "bool":
        return " (default true)"
    return f' (default "{default}")' if spec.kind == "string" else f" (default {default})"


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


def settings_class(controllers: Sequence[ControllerInfo]) -> type[Settings]:
    """The settings model with the flags the installed controllers declare (their `flags` class attribute)."""
    declared = [flags for info in controllers if (flags := getattr(info.cls, "flags", None)) is not None]
    try:
        return Settings.with_flags(declared)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _main(argv: Sequence[str]) -> int:
    if argv and argv[0] in _COMMANDS:
        return _command(argv[0], argv[1:])
    if "--version" in argv:
        print(f"aiokcm {package_version()}")
        return 0
    # The installed controllers declare flags of their own: they are loaded before the flags are read.
    installed = _discover()
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
    try:
        settings = settings_cls.load(parsed.values, parsed.config or os.environ.get("AIOKCM_CONFIG"))
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc)) from None
    except ConfigFileError as exc:
        raise UsageError(str(exc)) from None
    _check_kubeconfig(settings)
    try:
        enabled = select(settings.controllers, installed)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    from manager.cli.logging import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    return asyncio.run(serve(settings, enabled))


def _command(command: str, args: Sequence[str]) -> int:
    if "-h" in args or "--help" in args:
        print(f"Usage: {_COMMANDS[command]}")
        return 0
    if command == "crd":
        return _crd_command(args)
    if command == "new":
        return _new_command(args)
    return _rbac_command(args)


def _new_command(args: Sequence[str]) -> int:
    from manager.cli import scaffold

    try:
        spec = scaffold.parse(args)
    except scaffold.ScaffoldError as exc:
        raise UsageError(str(exc)) from None
    written = scaffold.write(spec, package_version())
    print(f"wrote {len(written)} files into {spec.target}:")
    print("\n".join(f"  {path}" for path in written))
    print(f"next: cd {spec.target} && make test  (PYTHON=an interpreter with aiokcm)")
    return 0


def _rbac_command(args: Sequence[str]) -> int:
    from manager.cli import rbac

    try:
        own, args = rbac.split_own_options(args)
    except rbac.OptionError as exc:
        raise UsageError(str(exc)) from None
    installed = _discover()
    settings_cls = settings_class(installed)
    parsed = parse_args(args, settings_cls)
    if parsed.actions:
        raise UsageError(f"--{sorted(parsed.actions)[0]} is not an option of aiokcm rbac")
    if "output-dir" in own and "chart" in own:
        raise UsageError("--output-dir and --chart exclude each other")
    try:
        settings = settings_cls.load(parsed.values, parsed.config or os.environ.get("AIOKCM_CONFIG"))
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc)) from None
    except ConfigFileError as exc:
        raise UsageError(str(exc)) from None
    try:
        enabled = select(settings.controllers, installed)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    controllers = [
        rbac.ControllerRbac(
            info.name, tuple(getattr(info.cls, "rbac", ())), info.aliases, info.enabled_by_default
        )
        for info in enabled
    ]
    lease_namespace = settings.leader_elect_resource_namespace
    prefix = own.get("name-prefix", "aiokcm")
    identity = rbac.Identity(
        prefix=prefix,
        service_account=own.get("service-account", prefix),
        namespace=own.get("namespace", lease_namespace),
        lease_name=settings.leader_elect_resource_name,
        lease_namespace=lease_namespace,
    )
    own_args = [f"--{k}" if k == "chart" else f"--{k}={v}" for k, v in own.items()]
    command = shlex.join(["aiokcm", "rbac", *own_args, *args])
    if "chart" in own:
        print(rbac.chart_rules(controllers, command), end="")
    elif "output-dir" in own:
        for name, text in rbac.kustomize_files(controllers, identity, command).items():
            target = os.path.join(own["output-dir"], name)
            try:
                with open(target, "w", encoding="utf-8") as file:
                    file.write(text)
            except OSError as exc:
                raise UsageError(f"cannot write {target}: {exc.strerror}") from None
            print(f"wrote {target}")
    else:
        print(rbac.dump(rbac.rbac_documents(controllers, identity)), end="")
    return 0


def _crd_command(args: Sequence[str]) -> int:
    import importlib

    import yaml

    from manager.apimachinery.customresource import CustomResource, SchemaError, crd

    if len(args) != 1 or args[0].startswith("-"):
        raise UsageError("aiokcm crd takes one argument, module:Class (e.g. mypkg.greeting:Greeting)")
    module_name, _, class_name = args[0].partition(":")
    if not module_name or not class_name:
        raise UsageError(f'"{args[0]}" is not module:Class')
    if "" not in sys.path and os.getcwd() not in sys.path:  # as `python -m`: the project's own modules
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error or whatever the module raises: bad input
        raise UsageError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    model = getattr(module, class_name, None)
    if not (isinstance(model, type) and issubclass(model, CustomResource)):
        raise UsageError(f"{args[0]} is not a CustomResource subclass")
    try:
        definition = crd(model)
    except (SchemaError, AttributeError) as exc:
        raise UsageError(f"{args[0]}: {exc}") from None
    print(yaml.safe_dump(definition, sort_keys=False), end="")
    return 0


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


def _discover() -> list[ControllerInfo]:
    try:
        return discover()
    except RegistryError as exc:
        raise UsageError(str(exc)) from None


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
