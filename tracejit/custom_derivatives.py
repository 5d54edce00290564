"""jax.custom_derivatives: user-defined differentiation rules (a user-facing face over
transforms.custom, where the rules and their call primitives live)."""
from .transforms.custom import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    closure_convert_fun as closure_convert,
    custom_gradient,
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
    custom_vjp_primal_tree_values,
    linear_call,
    zero_from_primal,
)
