"""metav1.Status bodies and the ApiError that carries them: the bottom layer, every other one may raise."""
