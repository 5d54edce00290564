"""Transformations of traced programs: forward mode (jvp), reverse mode (linearize + transpose),
batching (vmap) and custom derivative rules. The user API lives in `transforms.api`.

Below this package sit core (the rule vocabulary, `core.rules`) and lax (the primitives and
their rules); above it the compiler, backend and runtime.
"""
