"""The subcommands of ``aiokcm`` (``rbac``, ``crd``, ``new``): each prints or writes files and exits.

They import what they need on call, so that ``aiokcm --help`` and the daemon's start stay light.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence

from manager.cli.flags import (
    COMMANDS,
    UsageError,
    enabled_controllers,
    load_settings,
    parse_args,
    settings_class,
)
from manager.cli.plugins import RegistryError, discover
from manager.lifecycle.descriptor import ControllerInfo


def discover_controllers() -> list[ControllerInfo]:
    """The installed controllers (entry-point group aiokcm.controllers); a broken registry is bad input."""
    try:
        return discover()
    except RegistryError as exc:
        raise UsageError(str(exc)) from None


def run_command(command: str, args: Sequence[str], version: str) -> int:
    """Run `aiokcm <command> <args>`; returns the exit code."""
    if "-h" in args or "--help" in args:
        print(f"Usage: {COMMANDS[command]}")
        return 0
    if command == "crd":
        return _crd_command(args)
    if command == "new":
        return _new_command(args, version)
    return _rbac_command(args)


def _new_command(args: Sequence[str], version: str) -> int:
    from manager.cli import scaffold

    try:
        spec = scaffold.parse(args)
    except scaffold.ScaffoldError as exc:
        raise UsageError(str(exc)) from None
    written = scaffold.write(spec, version)
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
    installed = discover_controllers()
    settings_cls = settings_class(installed)
    parsed = parse_args(args, settings_cls)
    if parsed.actions:
        raise UsageError(f"--{sorted(parsed.actions)[0]} is not an option of aiokcm rbac")
    if "output-dir" in own and "chart" in own:
        raise UsageError("--output-dir and --chart exclude each other")
    settings = load_settings(parsed, settings_cls)
    controllers = [
        rbac.ControllerRbac(
            info.name, tuple(getattr(info.cls, "rbac", ())), info.aliases, info.enabled_by_default
        )
        for info in enabled_controllers(settings, installed)
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
