"""``--sandbox``: run an embedded kubesim in this process and point the manager at it.

This is the only manager module allowed to import kubesim (an import-linter contract). It starts
``kubesim.KubeSim`` on ``--sandbox-port``, has it write ``.sandbox/kubeconfig`` (printed for kubectl), keeps
the cluster in ``--sandbox-data-dir`` when given (so a restart continues where it stopped), and applies the
YAML files of ``--sandbox-apply`` over HTTP, exactly as a client of a real cluster would: like ``kubectl
apply`` (server-side apply: created when missing, brought back to the manifest when it exists, unchanged when
it already matches), so a second start over the same data directory applies cleanly. kubesim comes with the
`sandbox` extra; without it, --sandbox exits 2 with one line saying how to install it.

With ``--sandbox-authorization-mode RBAC`` (the default) kubesim enforces RBAC over HTTPS with a CA of its
own: ``.sandbox/kubeconfig`` is kubesim's admin (``system:masters``), and the manager runs as its own
ServiceAccount bound to exactly the roles ``aiokcm rbac`` generates for the enabled controllers
(manager/cli/sandbox_identity.py), with ``.sandbox/manager-kubeconfig``. kubesim's
OwnerReferencesPermissionEnforcement admission is on too, so the roles' ``<kind>/finalizers`` rules are
proven as on a real cluster. ``AlwaysAllow`` serves plain HTTP and lets every request through, the manager
using the admin kubeconfig.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import structlog
import yaml

from manager.cli.sandbox_identity import (
    DescribedController,
    IdentityError,
    apply_identity,
    controller_rbac,
    manager_identity,
    service_account_user,
)
from manager.config.settings import Settings

log = structlog.get_logger(__name__)

DEFAULT_KUBECONFIG = Path(".sandbox/kubeconfig")
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
FIELD_MANAGER = "aiokcm-sandbox"
OWNER_REFERENCES_ADMISSION = "OwnerReferencesPermissionEnforcement"  # kube-apiserver's plugin name


class SandboxUnavailable(RuntimeError):
    """kubesim is not installed or not built yet; the message says which (and how to install it)."""


class SandboxApplyError(RuntimeError):
    """A --sandbox-apply path or object could not be applied; the message names it."""


def load_kubesim_class() -> Any:
    """kubesim.KubeSim, imported only when --sandbox is used."""
    try:
        import kubesim
    except ImportError as exc:  # the production install and the image leave the extra out
        raise SandboxUnavailable(
            f"--sandbox needs kubesim, which is not installed ({exc}): pip install 'aiokcm[sandbox]'"
        ) from None
    cls = getattr(kubesim, "KubeSim", None)
    if cls is None:
        raise SandboxUnavailable("kubesim.KubeSim does not exist yet (the API server emulator is not built)")
    return cls


class Sandbox:
    """A running embedded kubesim."""

    def __init__(self, sim: Any, kubeconfig: Path) -> None:
        self._sim = sim
        self.url: str = sim.url
        self.kubeconfig = kubeconfig  # kubesim's admin: for kubectl and --sandbox-apply
        self.manager_kubeconfig = kubeconfig  # the manager's own identity in RBAC mode
        self.ca_pem: str | None = getattr(sim, "ca_pem", None)

    def admin_session(self, **options: Any) -> aiohttp.ClientSession:
        """An HTTP session as kubesim's admin, trusting kubesim's CA when it serves HTTPS."""
        return admin_session(self.url, self.ca_pem, **options)

    async def apply(self, paths: Iterable[str]) -> int:
        """apply_manifests as kubesim's admin."""
        return await apply_manifests(self.url, paths, ca_pem=self.ca_pem)

    @classmethod
    async def start(
        cls,
        settings: Settings,
        controllers: Iterable[DescribedController] = (),
        kubeconfig: Path = DEFAULT_KUBECONFIG,
    ) -> Sandbox:
        """Start kubesim; in RBAC mode also give the manager its identity for `controllers`."""
        kubesim_class = load_kubesim_class()
        kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        rbac = settings.sandbox_authorization_mode == "RBAC"
        options: dict[str, Any] = {
            "port": settings.sandbox_port,
            "kubeconfig_path": str(kubeconfig),
            "authorization_mode": settings.sandbox_authorization_mode,
            "tls": rbac,  # kubectl sends the admin token only over HTTPS
        }
        if rbac:  # as a real cluster: setting blockOwnerDeletion needs update on the owner's finalizers
            options["enable_admission_plugins"] = [OWNER_REFERENCES_ADMISSION]
        if settings.sandbox_data_dir:
            options["data_dir"] = settings.sandbox_data_dir
        sim = kubesim_class(**options)
        try:
            await sim.__aenter__()
        except ValueError as exc:
            if type(exc).__name__ != "DataDirError":  # the directory holds something else than kubesim's
                raise
            raise SandboxUnavailable(f"--sandbox-data-dir: {exc}") from None
        sandbox = cls(sim, Path(getattr(sim, "kubeconfig", None) or kubeconfig))
        if rbac:
            try:
                await sandbox._grant_manager_identity(settings, controllers)
            except (IdentityError, aiohttp.ClientError) as exc:
                await sandbox.stop()
                raise SandboxUnavailable(f"sandbox: cannot set up the manager's identity: {exc}") from None
        print(f"sandbox: kubesim serving at {sandbox.url}", flush=True)
        print(f"sandbox: kubeconfig written to {sandbox.kubeconfig}", flush=True)
        if settings.sandbox_data_dir:
            print(
                f"sandbox: cluster kept in {settings.sandbox_data_dir} (delete it to start fresh)", flush=True
            )
        print(f"sandbox: try  kubectl --kubeconfig {sandbox.kubeconfig} get jobs,pods -A", flush=True)
        print(f"sandbox: metrics  {metrics_hint(settings, sandbox.kubeconfig)}", flush=True)
        log.info("sandbox started", url=sandbox.url, kubeconfig=str(sandbox.kubeconfig))
        return sandbox

    async def _grant_manager_identity(
        self, settings: Settings, controllers: Iterable[DescribedController]
    ) -> None:
        from kubesim.kubeconfig import write_kubeconfig

        identity = manager_identity(settings)
        async with self.admin_session() as session:
            token = await apply_identity(session, controller_rbac(controllers), identity)
        self.manager_kubeconfig = self.kubeconfig.with_name("manager-kubeconfig")
        write_kubeconfig(self.manager_kubeconfig, self.url, ca_pem=self.ca_pem, token=token)
        user = service_account_user(identity)
        print(f"sandbox: RBAC enforced; the manager runs as {user} (roles of `aiokcm rbac`)", flush=True)

    async def stop(self) -> None:
        await self._sim.__aexit__(None, None, None)


def admin_session(url: str, ca_pem: str | None = None, **options: Any) -> aiohttp.ClientSession:
    """A session sending kubesim's admin token (any kubesim accepts it), trusting `ca_pem` for HTTPS."""
    from kubesim.kubeconfig import ADMIN_TOKEN

    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
    return aiohttp.ClientSession(
        base_url=url,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        connector=aiohttp.TCPConnector(ssl=context if context is not None else True),
        **options,
    )


def metrics_hint(settings: Settings, kubeconfig: Path) -> str:
    """How to read /metrics: plain HTTP with the deprecated --port, else HTTPS (self-signed unless
    --tls-cert-file) with a token the sandbox's API server accepts: the kubeconfig's."""
    if settings.port is not None:
        return f"curl http://127.0.0.1:{settings.port}/metrics"
    token = "$TOKEN"
    with contextlib.suppress(OSError, yaml.YAMLError, AttributeError, IndexError, KeyError, TypeError):
        token = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))["users"][0]["user"]["token"]
    port = settings.secure_port or "<the port logged at start>"
    return f'curl -k -H "Authorization: Bearer {token}" https://127.0.0.1:{port}/metrics'


def manifest_files(paths: Iterable[str]) -> list[Path]:
    """The files to apply: each file given, and the manifests directly inside each directory (sorted)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                p
                for p in sorted(path.iterdir())
                if p.suffix in _MANIFEST_SUFFIXES and p.name != "kustomization.yaml"
            )
        elif path.is_file():
            files.append(path)
        else:
            raise SandboxApplyError(f"--sandbox-apply {raw}: no such file or directory")
    return files


def manifest_objects(path: Path) -> Iterator[dict[str, Any]]:
    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as exc:
        raise SandboxApplyError(f"--sandbox-apply {path}: cannot read manifests ({exc})") from None
    for document in documents:
        if not document:
            continue
        if not isinstance(document, dict) or "kind" not in document or "apiVersion" not in document:
            raise SandboxApplyError(f"--sandbox-apply {path}: a document is not a Kubernetes object")
        if document["kind"] == "List":
            yield from document.get("items") or []
        else:
            yield document


async def apply_manifests(
    url: str, paths: Iterable[str], establish_timeout: float = 10.0, *, ca_pem: str | None = None
) -> int:
    """Apply every object found under `paths` (server-side apply, as `kubectl apply --server-side`; an object
    with only a generateName is created). Returns how many objects were created.

    CustomResourceDefinitions go first, whichever file holds them, and the rest waits until they are
    Established, so a directory may hold a CRD and its custom resources (as `kubectl apply` would need two
    passes for). Sent as kubesim's admin; `ca_pem` is the CA of a kubesim serving HTTPS."""
    created = 0
    documents = [(path, obj) for path in manifest_files(paths) for obj in manifest_objects(path)]
    crds = [(path, obj) for path, obj in documents if _is_crd(obj)]
    others = [(path, obj) for path, obj in documents if not _is_crd(obj)]
    async with admin_session(url, ca_pem, timeout=aiohttp.ClientTimeout(total=30)) as session:
        resources: dict[str, dict[str, tuple[str, bool]]] = {}
        for batch in (crds, others):
            for path, obj in batch:
                api_version = obj["apiVersion"]
                if api_version not in resources:
                    resources[api_version] = await _discover(session, api_version)
                created += await _create(session, resources[api_version], path, obj)
            for path, obj in crds if batch is crds else ():
                await _wait_established(session, path, obj, establish_timeout)
    return created


def _is_crd(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "CustomResourceDefinition" and str(obj.get("apiVersion", "")).startswith(
        "apiextensions.k8s.io/"
    )


async def _wait_established(
    session: aiohttp.ClientSession, path: Path, obj: dict[str, Any], timeout: float
) -> None:
    name = (obj.get("metadata") or {}).get("name")
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        async with session.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") as response:
            current = await response.json() if response.status == 200 else {}
        conditions = (current.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise SandboxApplyError(f"--sandbox-apply {path}: CRD {name} is not Established")
        await asyncio.sleep(0.05)


async def _create(
    session: aiohttp.ClientSession, kinds: dict[str, tuple[str, bool]], path: Path, obj: dict[str, Any]
) -> int:
    api_version, kind = obj["apiVersion"], obj["kind"]
    metadata = obj.get("metadata") or {}
    name = metadata.get("name") or "(generated)"
    if kind not in kinds:
        raise SandboxApplyError(f"--sandbox-apply {path}: the server has no {kind} in {api_version}")
    plural, namespaced = kinds[kind]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = metadata.get("namespace") or "default"
    collection = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    if metadata.get("name"):
        request = session.patch(
            f"{collection}/{metadata['name']}",
            params={"fieldManager": FIELD_MANAGER, "force": "true"},
            data=json.dumps(obj),  # JSON is YAML
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
    else:
        request = session.post(collection, json=obj)
    async with request as response:
        if response.status >= 300:
            detail = (await response.text())[:200]
            raise SandboxApplyError(f"--sandbox-apply {path}: {kind} {name}: {response.status} {detail}")
        created = response.status == 201
    where = namespace if namespaced else None
    log.info("sandbox object " + ("created" if created else "applied"), kind=kind, name=name, namespace=where)
    return int(created)


async def _discover(session: aiohttp.ClientSession, api_version: str) -> dict[str, tuple[str, bool]]:
    """kind → (resource, namespaced) from the API server's discovery document for one group version."""
    path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    async with session.get(path) as response:
        if response.status != 200:
            raise SandboxApplyError(f"the sandbox does not serve {api_version} (HTTP {response.status})")
        document = await response.json()
    return {
        entry["kind"]: (entry["name"], bool(entry.get("namespaced")))
        for entry in document.get("resources", [])
        if "/" not in entry["name"]
    }
