"""Schema-aware object merging: server-side apply and managedFields, JSON/merge/strategic-merge patch."""
