"""The public API in manager/__init__.py is loaded lazily; every exported name must still resolve."""

from __future__ import annotations

import subprocess
import sys

import manager

# The public API, one line per concept. Adding or removing a name is an API change: update this list with it.
PUBLIC_API = {
    # manager.config.settings
    "ControllerFlags",
    "Duration",
    # manager.apimachinery.resources
    "CONFIGMAPS",
    "CRONJOBS",
    "CUSTOMRESOURCEDEFINITIONS",
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "REPLICASETS",
    "GroupVersionResource",
    # manager.metrics: scrape-time metric families for hot paths
    "CounterSeries",
    "FastHistogram",
    "ScrapeTimeCollector",
    "ScrapeTimeCounter",
    "ScrapeTimeHistogram",
    # manager.informers
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "EventHandlerFuncs",
    "HandlerRegistration",
    "Indexer",
    "InformerFactory",
    "Lister",
    "SharedInformer",
    "controller_uid_index",
    "final_object",
    "orphan_index_key",
    # manager.client.errors
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Expired",
    "Forbidden",
    "Invalid",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    # manager.client.rest
    "ApiClient",
    # manager.client.discovery
    "ApiResource",
    "Discovery",
    "discover_resources",
    # manager.workqueue
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    # manager.controller.base
    "Controller",
    "ControllerContext",
    "PolicyRule",
    "SecondaryQueue",
    # manager.controller.expectations
    "ControllerExpectations",
    # manager.events
    "EventRecorder",
    # manager.controller.watches
    "For",
    "Owns",
    "Watch",
    "Watches",
    "WatchesWith",
    # manager.controller.reconcile
    "Request",
    "Result",
    "TerminalError",
    # manager.apimachinery.objects
    "controller_owner",
    "object_key",
    # manager.apimachinery.metatime
    "format_time",
    # manager.apimachinery.conditions
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "remove_status_condition",
    "set_status_condition",
    # manager.apimachinery.finalizers
    "add_finalizer",
    "contains_finalizer",
    "remove_finalizer",
    # manager.apimachinery.ownership
    "AlreadyOwnedError",
    "OwnerReferenceError",
    "set_controller_reference",
    "set_owner_reference",
    # manager.client.toolkit
    "patch_finalizers",
    "patch_status",
    # manager.client.discovery (resolve, exported as resolve_resource)
    "ResourceNotFound",
    "resolve_resource",
    # manager.apimachinery.customresource
    "CustomResource",
    "ObjectMeta",
    "PrinterColumn",
    "SchemaError",
    # manager.controller.typed
    "InvalidObject",
    "TypedLister",
    # manager.apimachinery.customresource (crd, exported as custom_resource_definition)
    "custom_resource_definition",
}


def test_the_public_api_is_exactly_the_listed_names() -> None:
    assert set(manager.__all__) == PUBLIC_API
    assert len(manager.__all__) == len(PUBLIC_API)


def test_every_exported_name_resolves() -> None:
    assert set(manager.__all__) == set(manager._EXPORTS)
    for name in manager.__all__:
        assert getattr(manager, name) is not None, name
    assert set(manager.__all__) <= set(dir(manager))


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        manager.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("manager.NoSuchThing resolved")


def test_the_command_line_starts_without_the_heavy_libraries() -> None:
    """`aiokcm --help`, `--version` and bad flags answer fast: no aiohttp, prometheus, kubernetes-asyncio."""
    heavy = (
        "aiohttp",
        "kubernetes_asyncio",
        "prometheus_client",
        "manager.lifecycle.manager",
        "manager.client",
    )
    code = (
        "import sys, manager.cli.main as cli\n"
        "cli.help_text()\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
