"""The namespace controller (`namespace-controller`, alias `namespace`), registered through the
`aiokcm.controllers` entry point `namespace-controller = "controllers.namespace:NamespaceController"`."""

from controllers.namespace.controller import NamespaceController

__all__ = ["NamespaceController"]
