"""The bundled OpenAPI definitions of the built-in types (and registered CRD schemas), indexed by GVK."""
