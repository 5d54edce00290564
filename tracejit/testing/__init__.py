"""Testing tools for tracejit itself (user-facing layer): `tracejit.testing.fuzz`, the
differential fuzzer that runs random programs natively, on the reference interpreter and on JAX."""
