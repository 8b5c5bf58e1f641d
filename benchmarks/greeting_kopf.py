"""The Greeting operator for kopf (benchmarks/operator_vs_kopf.py), run by `kopf run --standalone` with kopf's
default settings. kopf has no API client for the operator's own writes: the ConfigMap is created with
kubernetes_asyncio (already a dependency of aiokcm), asynchronously, from the kubeconfig kopf logs in with.

The same work as greeting_aiokcm.py: on creation of a Greeting, create the ConfigMap `<name>-greeting`
owned by it (kopf.adopt: a controller owner reference), set status `ready: true` (kopf patches the status
subresource, as the CRD has one) and post a Normal event `Greeted` (kopf.info).
"""

from __future__ import annotations

from typing import Any, cast

import kopf
from kubernetes_asyncio import client as k8s_client

_api: k8s_client.CoreV1Api | None = None


async def core_api() -> k8s_client.CoreV1Api:
    """One client for the operator's own writes, configured from the same kubeconfig kopf logs in with."""
    global _api
    if _api is None:
        from kubernetes_asyncio import config

        await config.load_kube_config()
        _api = k8s_client.CoreV1Api()
    return _api


@kopf.on.create("demo.example.com", "v1", "greetings")  # type: ignore[untyped-decorator, unused-ignore]  # (kopf missing)
async def create_fn(
    body: kopf.Body, spec: kopf.Spec, name: str, namespace: str | None, patch: kopf.Patch, **_: Any
) -> None:
    configmap: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-greeting"},
        "data": {"message": str(spec.get("message", ""))},
    }
    kopf.adopt(configmap, owner=body)
    assert namespace is not None  # Greetings are namespaced
    api = await core_api()
    await api.create_namespaced_config_map(namespace, cast(Any, configmap))  # a dict is accepted
    patch.status["ready"] = True
    kopf.info(body, reason="Greeted", message=f"ConfigMap {name}-greeting")
