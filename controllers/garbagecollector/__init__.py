"""The garbage collector (`garbage-collector-controller`, alias `garbagecollector`), registered through the
`aiokcm.controllers` entry point `garbage-collector-controller =
"controllers.garbagecollector:GarbageCollectorController"`.

Modules: `graph` (nodes, references, the absent-owner cache), `identities` (pure reference helpers),
`events` (what monitors hand the graph builder), `builder` (the graph builder applying them), `monitors`
(one informer per deletable resource), `resources` (discovery: what to monitor, kind → resource),
`operations` (API calls with preconditions), `collector` (the workers' decisions), `controller` (the
controller: discovery loop, queues, workers).
"""

from controllers.garbagecollector.controller import GarbageCollectorController, GarbageCollectorFlags

__all__ = ["GarbageCollectorController", "GarbageCollectorFlags"]
