"""The aiohttp application: routing of API paths to handlers, discovery and the OpenAPI documents."""
