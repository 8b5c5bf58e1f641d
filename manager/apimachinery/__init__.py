"""API machinery shared by every layer: resource addressing and metav1 time."""
