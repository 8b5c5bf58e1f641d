"""Built-in controllers, registered through the aiokcm.controllers entry-point group."""
