"""Every permission of the generated roles is needed: drop each in turn (one verb on one resource, from one
role) and the scenario of scenario.py fails, by a request refused to the manager or a state not reached.

Each controller is held to its own role (attribution.py: by the User-Agent of its client), so a permission
is needed by the controller that declares it, not merely by the manager as a whole. The shared informers'
list/watch requests serve several controllers and are judged by the union of the roles, so a list/watch
that another role also grants cannot fail anything when dropped: those are reported as masked. A permission
the scenario passes without is listed in NOT_EXERCISED with the reason, and the test fails when that list
is wrong either way (a listed permission turned out needed, or an unlisted one is not).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.rbac.rules import Permission, granted_elsewhere, permissions, without
from tests.integration.rbac.scenario import generated_objects, run_scenario

# Permissions the scenario passes without, each a finding with the path that would use it or why kubesim
# cannot show it. None: every permission is shown needed (the `<kind>/finalizers` rules by kubesim's
# OwnerReferencesPermissionEnforcement admission, on in the scenario as in the sandbox).
NOT_EXERCISED: dict[str, str] = {}


async def test_the_generated_roles_are_enough(tmp_path: Path) -> None:
    assert await run_scenario(generated_objects(), tmp_path) is None


# One scenario per permission, each 1-2 s and bounded by its own timeout: on two cores shared with other work
# the loop has taken over the suite's 120 s default, which is meant for hangs.
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_each_permission_is_needed(tmp_path: Path) -> None:
    objects = generated_objects()
    every = permissions(objects)
    unneeded: dict[str, str] = {}
    masked: list[str] = []
    started = time.monotonic()
    for permission in every:
        if await run_scenario(without(objects, permission), tmp_path, timeout=8.0) is None:
            if permission.verb in ("list", "watch") and granted_elsewhere(every, permission):
                masked.append(str(permission))  # the shared informers' reads, judged by the union
            else:
                unneeded[str(permission)] = _why(every, permission)
    elapsed = time.monotonic() - started
    report = "\n".join(
        [f"{len(every)} permissions dropped one at a time in {elapsed:.0f} s; the scenario passed without:"]
        + [f"  {name}  ({why})" for name, why in sorted(unneeded.items())]
        + [f"  {len(masked)} list/watch that another role also grants (shared informers): {masked}"]
    )
    (tmp_path / "report.txt").write_text(report)
    assert sorted(unneeded) == sorted(NOT_EXERCISED), report


def _why(every: list[Permission], permission: Permission) -> str:
    other = granted_elsewhere(every, permission)
    return f"not exercised; also granted by {other}" if other is not None else "not exercised"
