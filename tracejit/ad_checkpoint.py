"""jax.ad_checkpoint: checkpoint's policies, checkpoint_name and print_saved_residuals (a
user-facing face over transforms.checkpoint_policies; checkpoint itself is tracejit.checkpoint),
and JAX 0.12's checkpoint_name_fwd and name_p."""
from .lax.elementwise import name_p  # noqa: F401  (checkpoint_name's primitive)
from .transforms.checkpoint_policies import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    saved_residuals,
)

# JAX 0.12: checkpoint_name_fwd names the forward value only; outside its experimental remat3
# mode it is checkpoint_name, whose tangent is never named (name_p's JVP) here as there.
checkpoint_name_fwd = checkpoint_name
