"""A scripted kubectl session against `kubesim --port 0 --kubeconfig k`, run as a real subprocess.

Every kubectl call uses a per-test `--cache-dir`, so discovery cached for another server never leaks in.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_for_sync

KUBECTL = shutil.which("kubectl")
KUBESIM = str(Path(sys.executable).with_name("kubesim"))

pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed on this machine (not on PATH)"
)


def read_line(stream: Any, timeout: float) -> str:
    """One line from a subprocess pipe, failing after `timeout` seconds instead of blocking forever."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError(f"no output within {timeout}s")
    return str(stream.readline())


@dataclass
class Server:
    url: str
    kubeconfig: Path
    process: subprocess.Popen[str]
    log: Path


def start_kubesim(workdir: Path, *extra: str) -> Server:
    kubeconfig = workdir / "k"
    log = workdir / "kubesim.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [KUBESIM, "--port", "0", "--kubeconfig", str(kubeconfig), *extra],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=workdir,
        )
    try:
        line = read_line(process.stdout, 20)
    except AssertionError:
        process.kill()
        raise AssertionError(f"kubesim did not start: {log.read_text()}") from None
    assert line.startswith("kubesim ready at http://127.0.0.1:"), (line, log.read_text())
    assert kubeconfig.exists()
    return Server(line.split()[-1], kubeconfig, process, log)


def stop_kubesim(server: Server, signum: int = signal.SIGTERM) -> int:
    server.process.send_signal(signum)
    try:
        return server.process.wait(timeout=15)
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=15)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_kubesim(tmp_path_factory.mktemp("kubesim"))
    yield running
    assert stop_kubesim(running) == 0, running.log.read_text()
    assert running.process.stdout is not None
    with running.process.stdout:
        assert running.process.stdout.read() == ""  # one line, no more


class Kubectl:
    def __init__(self, server: Server, cache_dir: Path) -> None:
        self.server = server
        self.cache_dir = cache_dir
        self.env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}

    def argv(self, args: tuple[str, ...]) -> list[str]:
        assert KUBECTL is not None
        return [KUBECTL, f"--cache-dir={self.cache_dir}", *args]

    def run(self, *args: str, stdin: str | None = None, ok: bool = True, timeout: float = 30) -> Any:
        proc = subprocess.run(
            self.argv(args), input=stdin, capture_output=True, text=True, env=self.env, timeout=timeout
        )
        if ok:
            assert proc.returncode == 0, (
                f"kubectl {' '.join(args)} exited {proc.returncode}\n"
                f"stdout: {proc.stdout}\nstderr: {proc.stderr}\n"
                f"kubesim log tail: {self.server.log.read_text()[-2000:]}"
            )
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )


@pytest.fixture
def kubectl(server: Server, tmp_path: Path) -> Kubectl:
    return Kubectl(server, tmp_path / "kube-cache")


def manifest(tmp_path: Path, name: str, obj: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(obj))
    return str(path)


def deployment(name: str, image: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def test_bad_flags_exit_2_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([KUBESIM, "--nodes", "many"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and "--nodes" in proc.stderr


def test_sigint_exits_cleanly(tmp_path: Path) -> None:
    running = start_kubesim(tmp_path, "--nodes", "1", "--no-kubelet", "--seed", "3", "--log-level", "debug")
    assert running.process.stdout is not None
    with running.process.stdout:
        assert stop_kubesim(running, signal.SIGINT) == 0, running.log.read_text()


def test_get(kubectl: Kubectl) -> None:
    version = kubectl.json("version")
    assert version["serverVersion"]["minor"] == "32"
    empty = kubectl.run("get", "pods")
    assert "No resources found in default namespace." in empty.stderr
    nodes = kubectl.run("get", "nodes").stdout
    assert nodes.count(" Ready ") == 3 and "kubesim-node-1" in nodes
    namespaces = kubectl.run("get", "namespaces").stdout
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert name in namespaces
    missing = kubectl.run("get", "pod", "nonexistent", ok=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): pods "nonexistent" not found' in missing.stderr


def test_create(kubectl: Kubectl, tmp_path: Path) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "created"}, "data": {"k": "v"}}
    path = manifest(tmp_path, "cm", cm)
    assert kubectl.run("create", "-f", path).stdout.strip() == "configmap/created created"
    assert kubectl.json("get", "configmap", "created")["data"] == {"k": "v"}
    again = kubectl.run("create", "-f", path, ok=False)
    assert again.returncode == 1 and "AlreadyExists" in again.stderr


def test_apply_twice_then_server_side_then_scale(kubectl: Kubectl, tmp_path: Path) -> None:
    first = manifest(tmp_path, "d1", deployment("d1", "nginx:1"))
    assert kubectl.run("apply", "-f", first).stdout.strip() == "deployment.apps/d1 created"
    assert kubectl.run("apply", "-f", first).stdout.strip() == "deployment.apps/d1 unchanged"
    second = manifest(tmp_path, "d1b", deployment("d1", "nginx:2"))
    assert kubectl.run("apply", "-f", second).stdout.strip() == "deployment.apps/d1 configured"
    live = kubectl.json("get", "deployment", "d1")
    assert live["spec"]["template"]["spec"]["containers"] == [
        {**live["spec"]["template"]["spec"]["containers"][0], "name": "c", "image": "nginx:2"}
    ]
    assert "kubectl.kubernetes.io/last-applied-configuration" in live["metadata"]["annotations"]

    ssa = manifest(tmp_path, "d2", deployment("d2", "nginx:1"))
    assert (
        kubectl.run("apply", "--server-side", "-f", ssa).stdout.strip()
        == "deployment.apps/d2 serverside-applied"
    )
    ssa2 = manifest(tmp_path, "d2b", deployment("d2", "nginx:3", replicas=2))
    assert (
        kubectl.run("apply", "--server-side", "-f", ssa2).stdout.strip()
        == "deployment.apps/d2 serverside-applied"
    )
    applied = kubectl.json("get", "deployment", "d2", "--show-managed-fields")
    assert applied["spec"]["replicas"] == 2
    assert any(
        m["manager"] == "kubectl" and m["operation"] == "Apply" for m in applied["metadata"]["managedFields"]
    )

    assert (
        kubectl.run("scale", "deployment", "d1", "--replicas=3").stdout.strip() == "deployment.apps/d1 scaled"
    )
    scaled = kubectl.json("get", "deployment", "d1")
    assert scaled["spec"]["replicas"] == 3
    assert scaled["metadata"]["generation"] > live["metadata"]["generation"]


def test_delete_waits_for_finalizer_release(kubectl: Kubectl, tmp_path: Path) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "data": {"k": "v"},
    }
    kubectl.run("create", "-f", manifest(tmp_path, "held", cm))
    deleting = kubectl.popen("delete", "configmap", "held", "--timeout=30s")
    try:

        def terminating() -> bool:
            obj = kubectl.json("get", "configmap", "held")
            return bool(obj["metadata"].get("deletionTimestamp"))

        wait_for_sync(terminating, timeout=15, message="deletionTimestamp set")
        assert deleting.poll() is None  # kubectl is still waiting for the object to go away
        kubectl.run("patch", "configmap", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
        out, err = deleting.communicate(timeout=30)
    finally:
        if deleting.poll() is None:
            deleting.kill()
    assert deleting.returncode == 0, err
    assert out.strip() == 'configmap "held" deleted'
    assert kubectl.run("get", "configmap", "held", ok=False).returncode == 1


def test_get_watch_prints_new_objects(kubectl: Kubectl, tmp_path: Path) -> None:
    def labelled(name: str) -> str:
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"test": "watch"}},
        }
        return manifest(tmp_path, name, cm)

    kubectl.run("create", "-f", labelled("listed"))
    watching = kubectl.popen("get", "configmaps", "-l", "test=watch", "-w", "--no-headers")
    try:
        assert watching.stdout is not None
        assert read_line(watching.stdout, 20).split()[0] == "listed"  # from the initial list
        kubectl.run("create", "-f", labelled("watched"))
        assert read_line(watching.stdout, 20).split()[0] == "watched"  # from the watch
    finally:
        watching.kill()
        watching.communicate(timeout=10)


def test_wait_for_pod_ready_then_delete(kubectl: Kubectl) -> None:
    assert kubectl.run("run", "web", "--image=nginx:1").stdout.strip() == "pod/web created"
    waited = kubectl.run("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    assert waited.stdout.strip() == "pod/web condition met"
    pod = kubectl.json("get", "pod", "web")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"].startswith("kubesim-node-")
    deleted = kubectl.run("delete", "pod", "web", "--timeout=30s")
    assert deleted.stdout.strip() == 'pod "web" deleted'
    assert kubectl.run("get", "pod", "web", ok=False).returncode == 1


def test_wait_for_job_condition_set_through_status(kubectl: Kubectl, tmp_path: Path) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j1"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }
    kubectl.run("create", "-f", manifest(tmp_path, "j1", job))
    waiting = kubectl.popen("wait", "--for=condition=complete", "job/j1", "--timeout=30s")
    try:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [
            {"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
            for kind in ("SuccessCriteriaMet", "Complete")
        ]
        status = {
            "status": {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": conditions}
        }
        kubectl.run("patch", "job", "j1", "--subresource=status", "--type=merge", "-p", json.dumps(status))
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert out.strip() == "job.batch/j1 condition met"


def test_explain_pod(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "pod.spec.restartPolicy").stdout
    assert "KIND:" in out and "Pod" in out and "restartPolicy" in out


def test_drain_evicts_pods_and_cordons_the_node(kubectl: Kubectl) -> None:
    for i in range(3):
        kubectl.run("run", f"drain-{i}", "--image=nginx:1", "--labels=test=drain")
    kubectl.run("wait", "--for=condition=Ready", "pod", "-l", "test=drain", "--timeout=30s")
    node = kubectl.json("get", "pod", "drain-0")["spec"]["nodeName"]
    try:
        drained = kubectl.run("drain", node, "--force", "--ignore-daemonsets", "--timeout=30s")
        assert f"node/{node} drained" in drained.stdout
        pods = kubectl.json("get", "pods", "-l", "test=drain")["items"]
        assert "drain-0" not in [p["metadata"]["name"] for p in pods]
        assert all(p["spec"]["nodeName"] != node for p in pods)
        assert kubectl.json("get", "node", node)["spec"]["unschedulable"] is True
    finally:
        kubectl.run("uncordon", node)
        kubectl.run("delete", "pods", "-l", "test=drain", "--timeout=30s")
