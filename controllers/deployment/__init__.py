"""deployment-controller: rolling updates, Recreate, proportional scaling and rollout history, driving
ReplicaSets (upstream: pkg/controller/deployment)."""

from controllers.deployment.controller import DeploymentController, DeploymentFlags

__all__ = ["DeploymentController", "DeploymentFlags"]
