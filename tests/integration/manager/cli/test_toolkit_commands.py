"""The installed `aiokcm crd` and `aiokcm rbac`, run as a user runs them: in a project folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

AIOKCM = str(Path(sys.executable).parent / "aiokcm")

MODEL = """
from pydantic import BaseModel, Field

from manager import CustomResource


class BackupSpec(BaseModel):
    schedule: str = Field(min_length=1)
    keep: int = Field(7, ge=1)


class Backup(CustomResource):
    group = "ops.example.com"
    version = "v1beta1"
    kind = "Backup"
    scope = "Cluster"
    short_names = ("bk",)
    spec: BackupSpec
"""


def test_crd_imports_the_model_from_the_project_folder(tmp_path: Path) -> None:
    (tmp_path / "backupop.py").write_text(MODEL)
    result = subprocess.run(
        [AIOKCM, "crd", "backupop:Backup"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    crd = yaml.safe_load(result.stdout)
    assert crd["metadata"]["name"] == "backups.ops.example.com"
    assert crd["spec"]["scope"] == "Cluster"
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["schedule"]
    assert spec["properties"]["keep"] == {"default": 7, "minimum": 1, "type": "integer"}


def test_crd_of_a_missing_module_exits_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [AIOKCM, "crd", "absent:Thing"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.startswith("aiokcm: error: cannot import absent")


def test_rbac_of_the_installed_controllers_covers_what_they_declare(tmp_path: Path) -> None:
    result = subprocess.run(
        [AIOKCM, "rbac", "--controllers", "job,ttl-after-finished"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    printed = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(result.stdout)}
    assert [name for kind, name in printed if kind == "ClusterRole"] == [
        "aiokcm:manager",
        "aiokcm:controller:job-controller",
        "aiokcm:controller:ttl-after-finished-controller",
    ]
    ttl = printed["ClusterRole", "aiokcm:controller:ttl-after-finished-controller"]["rules"]
    assert ttl == [
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["delete", "get", "list", "watch"]}
    ]
    assert printed["Role", "aiokcm-leader-election"]["metadata"]["namespace"] == "kube-system"
