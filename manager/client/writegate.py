"""The write gate: a synchronous check a client runs right before the bytes of a mutating request go out.

The client knows nothing about why a write may be refused; the manager's wiring (manager/lifecycle/
cluster.py) gives the controllers' clients a gate that refuses once this replica may no longer hold its
leader lease. The gate runs after every wait a request can go through (the token bucket, a free
connection slot, a retry's backoff), so a request that waited across a process pause is checked again.
"""

from __future__ import annotations

from collections.abc import Callable

# Raises WriteRefused (or a subclass) to refuse the write; returns None to let it go out.
WriteGate = Callable[[], None]

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class WriteRefused(Exception):
    """A write refused by the client's write gate before anything was sent to the server.

    Not an ApiError: a reconcile that handles API errors does not mistake it for an answer of the server,
    and it reaches the worker, which stops acting instead of retrying."""
