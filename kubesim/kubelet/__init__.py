"""The simulated nodes: scheduler, kubelet pod lifecycle, node heartbeats and the kubelet's clock."""
