"""Helpers shared by the built-in controllers: pod ranking, owner references, pod templates."""
