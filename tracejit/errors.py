"""tracejit.errors: JAX's error classes (`jax.errors`)."""
from .core.errors import (ConcretizationTypeError, InconclusiveDimensionOperation,  # noqa: F401
                          JAXIndexError, JaxRuntimeError, JAXTypeError, KeyReuseError,
                          NonConcreteBooleanIndexError, TracerArrayConversionError,
                          TracerBoolConversionError, TracerIntegerConversionError,
                          UnexpectedTracerError)
from .core.jaxpr import JaxprTypeError  # noqa: F401
