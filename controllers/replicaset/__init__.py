"""The ReplicaSet controller (`replicaset-controller`, alias `replicaset`), registered through the
`aiokcm.controllers` entry point `replicaset-controller = "controllers.replicaset:ReplicaSetController"`."""

from controllers.replicaset.controller import ReplicaSetController

__all__ = ["ReplicaSetController"]
