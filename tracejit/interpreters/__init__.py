"""`jax.interpreters`: the rule tables of the transformations (ad, batching), lowering (mlir)
and tracing entry points (partial_eval), as code that defines its own primitives uses them.
User-facing layer: the tables are core's (tracejit.core.primitive), consulted for every
primitive without a rule of its own."""
from . import ad, batching, mlir, partial_eval  # noqa: F401
