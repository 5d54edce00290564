"""jax.scipy: SciPy's API over tracejit arrays (user-facing layer, beside numpy and nn)."""
from . import (  # noqa: F401
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    signal,
    sparse,
    spatial,
    special,
    stats,
)
