"""Just enough of the Dockerfile and .dockerignore formats to lint them and replay a build stage on the host.

The Dockerfile is parsed into stages (FROM ... AS name) of instructions: continuation lines joined, comments
and parser directives dropped, the global ARG defaults substituted into FROM. `replay` runs a stage's WORKDIR,
ENV, COPY (from the repository) and RUN (bash) under a scratch root directory standing for `/`: the image's
file system, built without a container engine.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: RUN, COPY, ...
    args: str


@dataclass
class Stage:
    base: str  # the image reference, ARG defaults substituted
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [i.args for i in self.instructions if i.keyword == keyword]


@dataclass
class Dockerfile:
    args: dict[str, str]  # global ARG defaults (before the first FROM)
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue  # comments (and directives) may sit inside a continued instruction, too
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def substitute(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m[1] or m[2], m[0]), text)


def parse(text: str) -> Dockerfile:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in _logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            words = substitute(rest, args).split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif not stages:
            if keyword == "ARG":
                key, _, default = rest.partition("=")
                args[key] = default
        else:
            stages[-1].instructions.append(Instruction(keyword, rest))
    return Dockerfile(args, stages)


def load() -> Dockerfile:
    return parse((REPO / "Dockerfile").read_text())


def exec_form(args: str) -> list[str] | None:
    """The JSON-array (exec) form of ENTRYPOINT/CMD, or None for the shell form."""
    try:
        value = json.loads(args)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def key_values(args: str) -> dict[str, str]:
    """LABEL and ENV arguments: key=value pairs, values optionally double-quoted."""
    return {
        m[1]: m[2] if m[2] is not None else m[3] for m in re.finditer(r'([\w.\-]+)=(?:"([^"]*)"|(\S+))', args)
    }


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore `patterns` leave `path` (relative to the context) out: the last match wins."""
    left_out = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.removeprefix("!").strip("/")
        candidates = {glob, glob.removeprefix("**/")}
        if any(fnmatch.fnmatch(path, c) or path.startswith(c + "/") for c in candidates):
            left_out = not negated
    return left_out


def dockerignore() -> list[str]:
    text = (REPO / ".dockerignore").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def host_path(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def replay(stage: Stage, root: Path, timeout: float = 600) -> None:
    """Build `stage` under `root` (its `/`): the RUN commands are those of the Dockerfile, their absolute
    paths moved under root, run by bash with this interpreter's `python` and `pip` first on PATH."""
    workdir = "/"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for instruction in stage.instructions:
        args = instruction.args
        if instruction.keyword == "WORKDIR":
            workdir = args
            host_path(root, workdir).mkdir(parents=True, exist_ok=True)
        elif instruction.keyword == "ENV":
            env.update(key_values(args))
        elif instruction.keyword == "COPY":
            *sources, target = args.split()
            destination = host_path(root, target if target.startswith("/") else f"{workdir}/{target}")
            for source in sources:
                copy_into(REPO / source, destination, several=len(sources) > 1 or target.endswith("/"))
        elif instruction.keyword == "RUN":
            command = re.sub(r"(?<=[\s=])/(?=[A-Za-z])", f"{root}/", args)
            subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=host_path(root, workdir),
                env=env,
                check=True,
                timeout=timeout,
                stdout=subprocess.DEVNULL,
            )


def copy_into(source: Path, destination: Path, several: bool) -> None:
    if source.is_dir():
        shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return
    target = destination / source.name if several else destination
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
