"""The Job controller (batch/v1 Jobs) with kube-controller-manager's semantics."""

from controllers.job.controller import JobController

__all__ = ["JobController"]
