"""Indexed Jobs: completion-index intervals and the per-index state derived from pods."""
