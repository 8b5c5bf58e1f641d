"""aiokcm: a kube-controller-manager-style daemon on one asyncio loop."""
