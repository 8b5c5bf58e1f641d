"""Helpers shared by the built-in controllers (pure logic on raw JSON dicts, no I/O of their own).

- `podutil`: pod predicates (active, terminating, ready, ready-since, available, restarts), controller
  ownerReferences and the pod-by-controller-UID index (orphans under `_ORPHAN_POD/<namespace>`), pods from
  templates (`generateName` rule), compiled label selectors, RFC3339 times, `ensure_indexer`.
- `ranking`: deletion orders — `sort_active_pods` (Job) and `sort_active_pods_with_ranks` (ReplicaSet:
  deletion cost, co-located rank, log2 age buckets with UID tie-break), `rank_by_related_pods_on_same_node`.
- `slowstart`: `slow_start_batch(count, fn)` — batches 1, 2, 4, … stopping after the first failing batch.
- `claims`: `ControllerRefManager` (adopt / release / ignore, owner recheck before the first adoption) and the
  strategic-merge-patch bodies `adopt_patch` / `release_patch` (optional finalizers for Job tracking).
"""
