"""The REST API: HTTP translation only (routers, schemas, one error-to-HTTP mapping)."""
