"""The object store: resourceVersions, watch history, change events, open watch streams, Event expiry, and
its durable form (SQLite, `--data-dir`)."""
