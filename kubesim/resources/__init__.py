"""The resource types kubesim serves (built-in and CRD-defined), their catalog, printer columns and views."""
