"""jax.ad_checkpoint: checkpoint's policies, checkpoint_name and print_saved_residuals (a
user-facing face over transforms.checkpoint_policies; checkpoint itself is tracejit.checkpoint)."""
from .transforms.checkpoint_policies import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    saved_residuals,
)
