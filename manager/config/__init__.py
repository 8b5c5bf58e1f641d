"""Configuration: the settings model (flags, environment, --config file) and Go-style durations."""
