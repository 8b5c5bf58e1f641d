"""Command-line flags of ``aiokcm``, derived from the settings model: parsing, validation errors, --help.

Flags are ``--flag value`` or ``--flag=value``; booleans are ``--flag`` or ``--flag=false`` (as pflag, a
boolean never takes the next argument); list flags take commas and may repeat. Bad input raises UsageError,
whose message is the one line printed before exiting 2.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, get_args, get_origin

from pydantic import ValidationError

from manager.cli.controllers_flag import SelectionError, select
from manager.config.durations import format_duration
from manager.config.settings import ConfigFileError, Settings, is_duration
from manager.lifecycle.descriptor import ControllerInfo

ACTIONS = {
    "help": "Show this help and exit.",
    "version": "Print the version and exit.",
    "list-controllers": "List the installed controllers (name, aliases, on by default) and exit.",
}
# Subcommands: `aiokcm <command> ...`; without one, the flags run the manager.
COMMANDS = {
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
        if name in ACTIONS:
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
    rows.extend((f"--{name}" if name != "help" else "-h, --help", text) for name, text in ACTIONS.items())
    width = max(len(left) for left, _ in rows) + 3
    columns = max(80, min(shutil.get_terminal_size((110, 24)).columns, 140))
    lines = [
        "Usage: aiokcm [flags]",
        *(f"       {usage.split(': ', 1)[0]}" for usage in COMMANDS.values()),
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


def settings_class(controllers: Sequence[ControllerInfo]) -> type[Settings]:
    """The settings model with the flags the installed controllers declare (their `flags` class attribute)."""
    declared = [flags for info in controllers if (flags := getattr(info.cls, "flags", None)) is not None]
    try:
        return Settings.with_flags(declared)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def load_settings(parsed: Parsed, settings_cls: type[Settings]) -> Settings:
    """The settings from flags, environment and the --config file; bad values are a UsageError."""
    try:
        return settings_cls.load(parsed.values, parsed.config or os.environ.get("AIOKCM_CONFIG"))
    except ValidationError as exc:
        raise UsageError(describe_validation_error(exc)) from None
    except ConfigFileError as exc:
        raise UsageError(str(exc)) from None


def enabled_controllers(settings: Settings, installed: Sequence[ControllerInfo]) -> list[ControllerInfo]:
    """The installed controllers --controllers selects; an unknown name is a UsageError."""
    try:
        return select(settings.controllers, installed)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
