"""jax.ad_checkpoint: rematerialisation (checkpoint and its policies, checkpoint_name) and
print_saved_residuals; a user-facing face over transforms.custom and
transforms.checkpoint_policies."""
from .transforms.checkpoint_policies import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    saved_residuals,
)
from .transforms.custom import checkpoint, remat  # noqa: F401
