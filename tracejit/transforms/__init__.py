"""Transformations of traced programs: forward mode (jvp), reverse mode (linearize + transpose),
batching (vmap) and custom derivative rules. The user API lives in `transforms.api`.

This package's `__init__` imports nothing: lax modules import `transforms.rules` while they
register their primitives, before the interpreters (which use lax) can be loaded.
"""
