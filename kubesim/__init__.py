"""kubesim: an embedded Kubernetes API server emulator with simulated nodes and kubelet."""

from kubesim.sim import KubeSim

__all__ = ["KubeSim"]
