"""JAX's error classes (same names and hierarchy as `jax.errors`) and the messages that explain
them.

Each message names what was being traced, which argument made the value abstract, the user's
line, and the fix.
"""
from __future__ import annotations

_DOCS = "https://docs.jax.dev/en/latest/errors.html#jax.errors."


class JAXTypeError(TypeError):
    pass


class JAXIndexError(IndexError):
    pass


class ConcretizationTypeError(JAXTypeError):
    pass


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(JAXTypeError):
    pass


class TracerArrayConversionError(JAXTypeError):
    pass


class NonConcreteBooleanIndexError(JAXIndexError):
    pass


class UnexpectedTracerError(JAXTypeError):
    pass


class KeyReuseError(JAXTypeError):
    pass


class JaxRuntimeError(RuntimeError):
    """An error raised while a compiled program runs (JAX's name for XLA's runtime errors)."""


def _physical_memory() -> int:
    import os
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: the allocator decides
        return 1 << 62


PHYSICAL_MEMORY = _physical_memory()


def check_fits(sizes) -> None:
    """JAX's RESOURCE_EXHAUSTED error, raised before anything is allocated, for buffers (byte
    sizes) that together exceed the machine's memory: a lazily committed NumPy buffer would
    otherwise fail only when touched, with the process killed."""
    total = sum(sizes)
    if total > PHYSICAL_MEMORY:
        raise JaxRuntimeError(
            f"RESOURCE_EXHAUSTED: Out of memory allocating {total} bytes (this machine has "
            f"{PHYSICAL_MEMORY} bytes of memory). Use smaller shapes, or reduce (e.g. sum) "
            f"inside one jit so that the large intermediate is fused away.")


class InconclusiveDimensionOperation(Exception):
    """A comparison of symbolic dimensions that cannot be decided (shape polymorphism)."""


def _origin(tracer) -> str:
    origin = getattr(tracer, "_origin_msg", None)
    return origin() if origin is not None else ""


def _with_docs(cls: type, msg: str) -> str:
    return f"{msg}\nSee {_DOCS}{cls.__name__}"


def concretization_error(tracer, context: str = "") -> ConcretizationTypeError:
    msg = (f"Abstract tracer value encountered where concrete value is expected: "
           f"{tracer._short_repr()}\n{context}\n{_origin(tracer)}")
    return ConcretizationTypeError(_with_docs(ConcretizationTypeError, msg.rstrip()))


def bool_conversion_error(tracer) -> TracerBoolConversionError:
    msg = (f"Attempted boolean conversion of {tracer._short_repr()}.\n{_origin(tracer)}\n"
           "Python `if`/`while`/`and`/`or` need a concrete value. To branch on a traced value, "
           "use `jnp.where` (elementwise choice) or `lax.cond`/`lax.switch`/`lax.while_loop`; "
           "if the value is really a compile-time constant, pass it through `static_argnums`/"
           "`static_argnames` of `jit`.")
    return TracerBoolConversionError(_with_docs(TracerBoolConversionError, msg))


def integer_conversion_error(tracer) -> TracerIntegerConversionError:
    msg = (f"The __index__() method was called on {tracer._short_repr()}.\n{_origin(tracer)}\n"
           "A traced value cannot be used as a Python int (e.g. a list index, a range bound or "
           "a shape). Mark the argument static with `static_argnums`/`static_argnames`, or "
           "index with `lax.dynamic_slice`/`jnp.take` instead.")
    return TracerIntegerConversionError(_with_docs(TracerIntegerConversionError, msg))


def array_conversion_error(tracer) -> TracerArrayConversionError:
    msg = (f"The numpy.ndarray conversion method __array__() was called on "
           f"{tracer._short_repr()}.\n{_origin(tracer)}\n"
           "NumPy functions cannot run on traced values: use the `jax.numpy` equivalent "
           "(import tracejit.numpy as jnp) inside jitted functions.")
    return TracerArrayConversionError(_with_docs(TracerArrayConversionError, msg))


def boolean_index_error(tracer) -> NonConcreteBooleanIndexError:
    msg = (f"Array boolean indices must be concrete; got {tracer._short_repr()}\n"
           f"{_origin(tracer)}\n"
           "The result's shape would depend on the mask's values. Use "
           "`jnp.where(mask, x, fill)` to keep the shape, or `jnp.nonzero(mask, size=N)`.")
    return NonConcreteBooleanIndexError(_with_docs(NonConcreteBooleanIndexError, msg))


def leaked_tracer_error(tracer, how: str) -> UnexpectedTracerError:
    msg = (f"Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
           f"allowing for a reference to an intermediate value with type {tracer.aval.str_short()} "
           f"to escape the scope of the transformation.\n{how}\n{tracer._leak_msg()}\n"
           "JAX transformations require that functions explicitly return their outputs and "
           "disallow saving intermediate values to global state (e.g. a list or attribute "
           "outside the function). Return the value instead of storing it.")
    return UnexpectedTracerError(_with_docs(UnexpectedTracerError, msg))


def custom_vjp_jvp_error() -> TypeError:
    """Forward-mode autodiff of a custom_vjp function: JAX rejects it, and so do the interpreter
    and the native backend when they meet its tangent side (custom_lin)."""
    return TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def no_execution_error(name: str) -> RuntimeError:
    """jax_no_execution: a program (`jit(f)`, or an eager operation's `jit(sin)`) about to run."""
    return RuntimeError(f"JAX tried to execute function {name}, but the no_execution config "
                        "option is set")


def key_reuse_error(msg: str) -> KeyReuseError:
    """jax_debug_key_reuse: a typed PRNG key used again after it was consumed."""
    return KeyReuseError(_with_docs(KeyReuseError, msg))
