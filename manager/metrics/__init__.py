"""Metric primitives shared by the client and the work queues."""
