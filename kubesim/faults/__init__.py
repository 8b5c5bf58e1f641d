"""Fault injection: failing and slow requests, dropped watches and compacted history, on demand."""
