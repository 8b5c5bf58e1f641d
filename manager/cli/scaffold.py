"""`aiokcm new controller`: a ready, installable operator package, as Kubebuilder writes one for Go authors.

    aiokcm new controller --group demo.example.com --version v1 --kind Greeting [--dir PATH] [--package NAME]

writes, into PATH (default ./<kind>-operator, which must not exist or be empty): pyproject.toml (the entry
point in group aiokcm.controllers, pytest in asyncio mode), the typed resource, a controller whose reconcile
keeps an owned ConfigMap and a Ready condition, its tests (manager.testing against kubesim), the CRD generated
from the model and the RBAC from the controller's `rbac` (the code behind `aiokcm crd` and `aiokcm rbac`), a
README and a Makefile. The templates: the files of manager/cli/templates/controller, `{{name}}` placeholders.
"""

from __future__ import annotations

import importlib
import keyword
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from manager.apimachinery.customresource import _pluralize, crd
from manager.cli.rbac import rbac_manifests

USAGE = (
    "aiokcm new controller --group GROUP --version VERSION --kind KIND [--dir PATH] [--package NAME]: "
    "write a ready, installable operator package (typed resource, controller, tests, CRD, RBAC)."
)
_OPTIONS = ("group", "version", "kind", "dir", "package")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_PACKAGE = re.compile(r"^[a-z_][a-z0-9_]*$")
# template file -> path in the package (after substitution)
_FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "Makefile.tmpl": "Makefile",
    "gitignore.tmpl": ".gitignore",
    "__init__.py.tmpl": "{{package}}/__init__.py",
    "resource.py.tmpl": "{{package}}/resource.py",
    "controller.py.tmpl": "{{package}}/controller.py",
    "test_controller.py.tmpl": "tests/test_{{kind_snake}}.py",
}


class ScaffoldError(ValueError):
    """Bad input: the message is one line naming the culprit."""


@dataclass(frozen=True)
class Spec:
    group: str
    version: str
    kind: str
    target: Path
    package: str


def parse(args: Sequence[str]) -> Spec:
    """`controller --group ... --version ... --kind ... [--dir ...] [--package ...]`, validated."""
    if not args or args[0] != "controller":
        what = f'"{args[0]}"' if args else "nothing"
        raise ScaffoldError(f"aiokcm new makes a controller (aiokcm new controller ...), not {what}")
    values: dict[str, str] = {}
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        name, has_value, value = arg.removeprefix("--").partition("=")
        if not arg.startswith("--") or name not in _OPTIONS:
            raise ScaffoldError(f'unknown argument "{arg}" of aiokcm new controller')
        if not has_value:
            if not rest:
                raise ScaffoldError(f"flag needs an argument: --{name}")
            value = rest.pop(0)
        values[name] = value
    for required in ("group", "version", "kind"):
        if not values.get(required):
            raise ScaffoldError(f"aiokcm new controller needs --{required}")
    group, version, kind = values["group"], values["version"], values["kind"]
    check_names(group, version, kind)
    snake = snake_case(kind)
    package = values.get("package") or f"{snake}_operator"
    if not _PACKAGE.match(package) or keyword.iskeyword(package):
        raise ScaffoldError(f'invalid --package "{package}": a lower-case Python identifier (my_operator)')
    target = Path(values.get("dir") or f"{snake.replace('_', '-')}-operator")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(f"--dir {target} exists and is not an empty directory")
    return Spec(group, version, kind, target, package)


def check_names(group: str, version: str, kind: str) -> None:
    """The API server's rules for a CRD's group (a DNS subdomain with a dot), version (a DNS-1035 label)
    and kind (here CamelCase, lower-cased a DNS-1035 label), and its name <plural>.<group>."""
    labels = group.split(".")
    if len(group) > 253 or "." not in group or not all(_DNS1123_LABEL.match(x) for x in labels):
        raise ScaffoldError(
            f'invalid --group "{group}": a lower-case DNS subdomain with at least one dot (demo.example.com)'
        )
    if len(version) > 63 or not _DNS1035_LABEL.match(version):
        raise ScaffoldError(f'invalid --version "{version}": a lower-case DNS-1035 label (v1, v1alpha1)')
    if len(kind) > 63 or not _KIND.match(kind) or len(_pluralize(kind.lower())) > 63:
        raise ScaffoldError(f'invalid --kind "{kind}": CamelCase letters and digits, at most 63 (Greeting)')


def snake_case(kind: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", kind).lower()


def variables(spec: Spec, aiokcm_version: str) -> dict[str, str]:
    snake = snake_case(spec.kind)
    plural = _pluralize(spec.kind.lower())
    alias = snake.replace("_", "-")
    command = f"aiokcm new controller --group {spec.group} --version {spec.version} --kind {spec.kind}"
    return {
        "group": spec.group,
        "version": spec.version,
        "kind": spec.kind,
        "kind_snake": snake,
        "kind_var": f"{snake}_" if keyword.iskeyword(snake) or snake in ("time", "request") else snake,
        "plural": plural,
        "alias": alias,
        "controller_name": f"{alias}-controller",
        "resource_const": _pluralize(snake).upper(),
        "crd_file": f"{plural}.{spec.group}.yaml",
        "package": spec.package,
        "dist": spec.package.replace("_", "-"),
        "aiokcm_requirement": f">={aiokcm_version}" if aiokcm_version[:1].isdigit() else "",
        "command": command,
    }


def render(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], text)


def write(spec: Spec, aiokcm_version: str) -> list[Path]:
    """Write the package into `spec.target`; returns the files written, relative to it."""
    values = variables(spec, aiokcm_version)
    templates = resources.files("manager.cli").joinpath("templates", "controller")
    written = []
    for template, destination in _FILES.items():
        path = spec.target / render(destination, values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(templates.joinpath(template).read_text(), values))
        written.append(path)
    crd_text, rbac_text = manifests(spec.target, spec.package, spec.kind)
    generated = {f"config/crd/{values['crd_file']}": crd_text, "config/rbac/role.yaml": rbac_text}
    for relative, text in generated.items():
        path = spec.target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return [p.relative_to(spec.target) for p in written]


def manifests(target: Path, package: str, kind: str) -> tuple[str, str]:
    """The CRD (as `aiokcm crd` prints it) and the RBAC (as `aiokcm rbac` does) of the package at `target`,
    imported from there for the occasion."""
    with _imported_from(target, package):
        model = importlib.import_module(f"{package}.resource").__dict__[kind]
        controller = importlib.import_module(f"{package}.controller").__dict__[f"{kind}Controller"]
        return yaml.safe_dump(crd(model), sort_keys=False), rbac_manifests(
            controller.rbac, controller=controller.name
        )


@contextmanager
def _imported_from(target: Path, package: str) -> Iterator[None]:
    """Import `package` from `target`, leaving sys.path and sys.modules as they were afterwards (an installed
    package of the same name, for instance, stays the one imported elsewhere)."""

    def ours(name: str) -> bool:
        return name == package or name.startswith(package + ".")

    saved: dict[str, Any] = {name: sys.modules.pop(name) for name in [n for n in sys.modules if ours(n)]}
    sys.path.insert(0, str(target.resolve()))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(target.resolve()))
        for name in [n for n in sys.modules if ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)
