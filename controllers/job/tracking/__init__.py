"""Tracking finished pods: counting, the tracking-finalizer protocol, status writes and their staleness."""
