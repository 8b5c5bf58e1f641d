"""Per-resource behaviour beyond plain storage: create/update strategies, CRDs and (cascading) deletion."""
