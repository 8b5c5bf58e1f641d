"""The object store: resourceVersions, watch history, change events, open watch streams and Event expiry."""
