"""The write pipeline: defaulting, Go zero-value encoding, validation and managedFields before the store."""
