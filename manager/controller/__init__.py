"""The controller API: the reconcile contract, the Controller base class, watches, handlers, workers."""
