"""The transformations' user API (transforms.api: jvp, grad, vjp, vmap, jacobians, ...) and
custom derivative rules (transforms.custom: custom_jvp, custom_vjp, checkpoint).

The interpreters they run (JVP, linearize, transpose, batching) live in core, where lax's rules
use them too; above this package sit the compiler, backend and runtime.
"""
