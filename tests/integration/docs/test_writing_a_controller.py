"""docs/writing-a-controller.md's example controller and its test, run as written against kubesim."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[3] / "docs" / "writing-a-controller.md"


def _block(first_line: str) -> str:
    """The ```python block of the doc whose first line is `first_line`."""
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
        if block.startswith(first_line):
            return str(block)
    raise AssertionError(f"docs/writing-a-controller.md has no python block starting {first_line!r}")


async def test_the_documented_controller_passes_the_documented_test(monkeypatch: Any) -> None:
    package = types.ModuleType("mypkg")
    package.__path__ = []
    module = types.ModuleType("mypkg.configmap_stamp")
    exec(compile(_block("# mypkg/configmap_stamp.py"), "mypkg/configmap_stamp.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "mypkg", package)
    monkeypatch.setitem(sys.modules, "mypkg.configmap_stamp", module)
    test_module: dict[str, Any] = {"__name__": "doc_test_stamp"}
    exec(compile(_block("# tests/test_stamp.py"), "tests/test_stamp.py", "exec"), test_module)
    await test_module["test_stamps_keys"]()


async def test_the_documented_typed_controller_passes_the_documented_test(monkeypatch: Any) -> None:
    package = types.ModuleType("mypkg")
    package.__path__ = []
    module = types.ModuleType("mypkg.greeting")
    monkeypatch.setitem(sys.modules, "mypkg", package)
    monkeypatch.setitem(sys.modules, "mypkg.greeting", module)  # pydantic resolves annotations through it
    exec(compile(_block("# mypkg/greeting.py"), "mypkg/greeting.py", "exec"), module.__dict__)
    test_module: dict[str, Any] = {"__name__": "doc_test_greeting"}
    exec(compile(_block("# tests/test_greeting.py"), "tests/test_greeting.py", "exec"), test_module)
    await test_module["test_greeting_gets_a_configmap_and_ready"]()
