"""`KubeSim`: run the kubesim API server (plus the simulated kubelet and fault injection) in-process.

    async with KubeSim(port=0, nodes=3) as sim:
        sim.url          # "http://127.0.0.1:PORT"
        sim.kubeconfig   # path of a kubeconfig pointing at it (kubeconfig_path or a temp file)
        sim.store        # kubesim.storage.store.Store (see its docstring for the Python API)
        sim.watches      # kubesim.storage.watch.WatchHub: close_all_watches() ends every open HTTP watch now
        sim.faults       # kubesim.faults.injector.Faults, or None when that module is absent
        sim.registry     # kubesim.resources.catalog.Registry (resource types, CRD-defined ones included)
        sim.clock        # callable returning the time in seconds (injectable)
        sim.auth         # kubesim.auth.service.Auth: authentication (tokens) and authorization (RBAC)

Arguments: host, port (0 = any free port), nodes, kubelet, history_size (events kept per resource for watch
resumption and exact lists), seed, kubeconfig_path, clock, max_body_bytes (larger bodies get 413),
bookmark_interval (seconds between watch bookmarks; 60, about kube-apiserver's), event_ttl (seconds after
its last write an Event is deleted; 0 = never), data_dir (keep the cluster in DIR/kubesim.db and continue
from it on the next start: same objects, UIDs and resourceVersions, and the watch history; see
kubesim.storage.durable),
authorization_mode ("AlwaysAllow" or "RBAC"), token_auth_file, anonymous_auth (see kubesim.auth),
enable_admission_plugins (["OwnerReferencesPermissionEnforcement"]: kubesim.auth.ownerrefs; off by default),
tls (serve HTTPS with a CA and certificate kubesim makes itself, kubesim.server.tls; `sim.ca` is that CA).

Optional collaborators, looked up by module name so that each can land independently:
- `kubesim.kubelet.kubelet.Kubelet(store, nodes, seed, clock)` with `async start()` / `async stop()`
  (kubelet=True);
- `kubesim.faults.injector.Faults(seed=seed)`, bound with `.bind(compact=store.compact,
  close_watches=watches.close_all_watches)`; the server's middleware calls its `.screen`, and its `.routes`
  (/kubesim/...) are installed.
"""

from __future__ import annotations

import importlib
import random
import ssl
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesim.api.context import ApiContext
from kubesim.auth import ownerrefs
from kubesim.auth.authn import Authenticator, read_token_file
from kubesim.auth.service import ALWAYS_ALLOW, MODES, Auth
from kubesim.kubeconfig import write_kubeconfig
from kubesim.resources.catalog import Registry
from kubesim.server.app import build_app, seed_cluster
from kubesim.storage.durable import SqliteJournal
from kubesim.storage.eventttl import EventExpiry
from kubesim.storage.store import Store
from kubesim.storage.watch import WatchHub

if TYPE_CHECKING:
    from kubesim.server.tls import CertificateAuthority


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return None


class KubeSim:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        nodes: int = 3,
        kubelet: bool = True,
        history_size: int = 10000,
        seed: int | None = None,
        kubeconfig_path: str | None = None,
        clock: Callable[[], float] = time.time,
        max_body_bytes: int = 3 * 1024 * 1024,
        bookmark_interval: float = 60.0,
        event_ttl: float = 3600.0,
        ssl_context: ssl.SSLContext | None = None,
        ca_pem: str | None = None,
        data_dir: str | Path | None = None,
        authorization_mode: str = ALWAYS_ALLOW,
        token_auth_file: str | Path | None = None,
        anonymous_auth: bool = True,
        tls: bool = False,
        enable_admission_plugins: Sequence[str] = (),
    ) -> None:
        """`ssl_context` serves HTTPS (a server context holding kubesim's certificate); `ca_pem`, the CA
        that signed it, goes into the kubeconfig so clients verify the server as they would a real one.
        `authorization_mode` "RBAC" enforces the stored RBAC objects (kubesim.auth), "AlwaysAllow" allows
        all; `token_auth_file` adds bearer tokens (upstream's CSV); `anonymous_auth=False` answers 401 to
        requests without credentials in RBAC mode. `tls=True` without an `ssl_context` makes a CA and a
        serving certificate for `host` and the loopback names (kubesim.server.tls), kept in `self.ca`.
        `enable_admission_plugins` names admission plugins to run besides kubesim's built-in ones, as
        kube-apiserver's flag: "OwnerReferencesPermissionEnforcement" (kubesim.auth.ownerrefs)."""
        if authorization_mode not in MODES:
            raise ValueError(
                f"unknown authorization mode {authorization_mode!r}: want one of {', '.join(MODES)}"
            )
        self.authorization_mode = authorization_mode
        self.admission_plugins = ownerrefs.check_plugins(enable_admission_plugins)
        self.static_tokens = read_token_file(token_auth_file) if token_auth_file is not None else {}
        self.anonymous_auth = anonymous_auth
        self.auth: Auth | None = None
        self.host = host
        self.port = port
        self.nodes = nodes
        self.kubelet_enabled = kubelet
        self.seed = seed
        self.clock = clock
        self.max_body_bytes = max_body_bytes
        self.bookmark_interval = bookmark_interval
        self.ca: CertificateAuthority | None = None
        if tls and ssl_context is None:
            from kubesim.server.tls import CertificateAuthority  # cryptography, imported only when used

            self.ca = CertificateAuthority.create()
            ssl_context = self.ca.server_context((host,))
            ca_pem = self.ca.cert_pem
        self.ssl_context = ssl_context
        self.ca_pem = ca_pem
        self.event_ttl = event_ttl  # seconds after its last write an Event is deleted; 0 keeps them forever
        self.event_expiry: EventExpiry | None = None
        self.store = Store(history_size=history_size, clock=clock)
        self.data_dir = data_dir
        self.journal: SqliteJournal | None = None
        self.registry = Registry()
        self.watches = WatchHub()
        self.faults: Any = None
        self.kubelet: Any = None
        self._kubeconfig_path = kubeconfig_path
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.kubeconfig = ""
        self.app: web.Application | None = None
        self.api: Any = None

    async def start(self) -> KubeSim:
        try:
            return await self._start()
        except BaseException:
            await self.stop()  # close what did start (the data directory first of all)
            raise

    async def _start(self) -> KubeSim:
        if self.data_dir is not None:
            self.journal = SqliteJournal.open(self.data_dir)  # ValueError: not a kubesim data directory
            self.journal.load(self.store)
            self.journal.attach(self.store)
        seed_cluster(self.store)
        faults_mod = _optional("kubesim.faults.injector")
        if faults_mod is not None:
            self.faults = faults_mod.Faults(seed=self.seed)
            self.faults.bind(compact=self.store.compact, close_watches=self.watches.close_all_watches)
        self.api = ApiContext(
            store=self.store,
            registry=self.registry,
            watches=self.watches,
            clock=self.clock,
            max_body_bytes=self.max_body_bytes,
            bookmark_interval=self.bookmark_interval,
            seed=self.seed,
            rng=random.Random(self.seed),
        )
        authenticator = Authenticator(self.store, self.static_tokens)
        self.auth = Auth(self.store, self.authorization_mode, authenticator, self.anonymous_auth)
        self.api.admission.extend(ownerrefs.enable(self.admission_plugins, self.auth, self.registry))
        self.app = build_app(self.api, self.faults, self.auth)
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024, ssl_context=self.ssl_context)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.port
        self.url = f"{'https' if self.ssl_context else 'http'}://{self.host}:{self.port}"
        if self._kubeconfig_path is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="kubesim-")
            path = Path(self._tmpdir.name) / "kubeconfig"
        else:
            path = Path(self._kubeconfig_path)
        self.kubeconfig = str(write_kubeconfig(path, self.url, ca_pem=self.ca_pem))
        if self.event_ttl > 0:
            self.event_expiry = EventExpiry(self.store, self.event_ttl, self.clock)
            self.event_expiry.start()
        kubelet_mod = _optional("kubesim.kubelet.kubelet") if self.kubelet_enabled else None
        if kubelet_mod is not None:
            self.kubelet = kubelet_mod.Kubelet(self.store, self.nodes, self.seed, self.clock)
            await self.kubelet.start()
        return self

    async def stop(self) -> None:
        if self.kubelet is not None:
            await self.kubelet.stop()
            self.kubelet = None
        if self.event_expiry is not None:
            await self.event_expiry.stop()
            self.event_expiry = None
        self.watches.close_all_watches()
        if self.api is not None:
            for task in list(self.api.background):
                task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.auth is not None:
            self.auth.close()
            self.auth = None
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    async def __aenter__(self) -> KubeSim:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
