"""The process lifecycle: the Manager, its runnable groups, supervision, cluster wiring, health, metrics."""
