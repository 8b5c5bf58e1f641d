"""The pure logic of a pipeline's step graph: validation (duplicate names, unknown dependencies, cycles) and
which steps may start now. No I/O, no Kubernetes objects: names and phases only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
PHASES = (PENDING, RUNNING, SUCCEEDED, FAILED)


def duplicate_names(names: Iterable[str]) -> list[str]:
    """Names that occur more than once, in order of their second occurrence."""
    seen: set[str] = set()
    dupes: list[str] = []
    for name in names:
        if name in seen and name not in dupes:
            dupes.append(name)
        seen.add(name)
    return dupes


def unknown_dependencies(graph: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """(step, dependency) pairs whose dependency names no step, in declaration order."""
    return [(step, dep) for step, deps in graph.items() for dep in deps if dep not in graph]


def find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A dependency cycle as a path whose first and last names are the same (`["a", "b", "a"]`: a depends on
    b which depends on a), or None when the graph is acyclic. Unknown dependencies are ignored. Iterative
    depth-first search, so a long chain cannot exhaust the recursion limit."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    for root in graph:
        if colour[root] != white:
            continue
        path: list[str] = [root]
        stack: list[Iterable[str]] = [iter(graph[root])]
        colour[root] = grey
        while stack:
            dep = next(stack[-1], None)  # type: ignore[call-overload]
            if dep is None:
                colour[path.pop()] = black
                stack.pop()
                continue
            if dep not in colour:
                continue
            if colour[dep] == grey:
                return [*path[path.index(dep) :], dep]
            if colour[dep] == white:
                colour[dep] = grey
                path.append(dep)
                stack.append(iter(graph[dep]))
    return None


def validate(graph: Mapping[str, Sequence[str]], names: Sequence[str] | None = None) -> str | None:
    """What is wrong with the step graph, as one message, or None. `names` (the steps in declaration order,
    with repeats) catches duplicates, which a mapping cannot hold."""
    dupes = duplicate_names(names if names is not None else list(graph))
    if dupes:
        return f"duplicate step name {', '.join(repr(d) for d in dupes)}"
    unknown = unknown_dependencies(graph)
    if unknown:
        step, dep = unknown[0]
        return f"step {step!r} depends on unknown step {dep!r}"
    for step, deps in graph.items():
        if len(set(deps)) != len(deps):
            return f"step {step!r} lists a dependency twice"
    cycle = find_cycle(graph)
    if cycle:
        return "dependency cycle: " + " -> ".join(cycle)
    return None


def ready_steps(graph: Mapping[str, Sequence[str]], phases: Mapping[str, str]) -> list[str]:
    """Steps not started yet (no phase, or Pending) whose dependencies all succeeded, in declaration order.
    None at all once any step failed: a failed pipeline starts nothing new."""
    if any(phase == FAILED for phase in phases.values()):
        return []
    return [
        step
        for step, deps in graph.items()
        if phases.get(step, PENDING) == PENDING and all(phases.get(d) == SUCCEEDED for d in deps)
    ]
