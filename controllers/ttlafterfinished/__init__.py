"""The TTL-after-finished controller (`ttl-after-finished-controller`, alias `ttl-after-finished`), registered
through the `aiokcm.controllers` entry point
`ttl-after-finished-controller = "controllers.ttlafterfinished:TTLAfterFinishedController"`."""

from controllers.ttlafterfinished.controller import TTLAfterFinishedController

__all__ = ["TTLAfterFinishedController"]
