"""The garbage collector's own metric, with kube-controller-manager's name (upstream:
pkg/controller/garbagecollector/metrics/metrics.go); its queues report the usual `workqueue_*` series under
`garbage_collector_graph_changes`, `garbage_collector_attempt_to_delete` and
`garbage_collector_attempt_to_orphan`."""

from __future__ import annotations

from prometheus_client import Counter

# prometheus_client adds the `_total` suffix: garbagecollector_controller_resources_sync_error_total.
RESOURCES_SYNC_ERRORS = Counter(
    "garbagecollector_controller_resources_sync_error",
    "Number of garbage collector resources sync errors",
)
