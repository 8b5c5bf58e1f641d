"""What every request handler shares: the ApiContext, request parsing, selectors and Table output."""
