"""Validation of objects as kube-apiserver words it: per-type rules, metadata, CRD schemas, unknown fields."""
