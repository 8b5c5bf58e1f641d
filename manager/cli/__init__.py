"""The aiokcm command line: flags, settings loading, --controllers, plugin discovery, logging, the sandbox."""
