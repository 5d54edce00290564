"""Core: values (avals, Array, dtypes), primitives, tracing, the jaxpr IR, pytrees, errors."""
