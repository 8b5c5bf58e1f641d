"""kubesim: an embedded Kubernetes API server emulator with simulated nodes and kubelet."""
