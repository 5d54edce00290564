"""tracejit.errors: JAX's error classes (`jax.errors`)."""
from .core.errors import (ConcretizationTypeError, JAXIndexError, JAXTypeError,  # noqa: F401
                          KeyReuseError, NonConcreteBooleanIndexError, TracerArrayConversionError,
                          TracerBoolConversionError, TracerIntegerConversionError,
                          UnexpectedTracerError)
