"""jax.ffi: call C/C++ handlers written against XLA's typed FFI (api_version=1) from Python, eager
or under jit/vmap, on CPU. Over the ffi_call primitive of lax/ffi.py (which runs the handler
through our own XLA_FFI_Api, lax/ffi_api.py).

    lib = ctypes.cdll.LoadLibrary("./librms_norm.so")
    jax.ffi.register_ffi_target("rms_norm", jax.ffi.pycapsule(lib.RmsNorm), platform="cpu")
    y = jax.ffi.ffi_call("rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype),
                         vmap_method="broadcast_all")(x, eps=np.float32(1e-5))

JAX's lowering helpers (ffi_lowering, build_ffi_lowering_function) build MLIR, which tracejit
does not have: they raise NotImplementedError naming ffi_call, which does the same work.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .core.avals import ShapedArray
from .core.trace import get_aval
from .lax import ffi_api
from .lax.callback import VMAP_METHODS
from .lax.ffi import ffi_call_p, wrap_attributes

__all__ = ["abstract_token", "build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir",
           "pycapsule", "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
    """Register a handler as the target `name`: `fn` a PyCapsule holding an XLA_FFI_Handler*
    (see `pycapsule`), or a dict from stage ("instantiate", "prepare", "initialize",
    "execute") to such capsules. The handler is asked for its FFI API version and traits
    here, as XLA does. Only the typed FFI (api_version=1) is supported."""
    if api_version != 1:
        raise NotImplementedError(
            f"register_ffi_target({name!r}, api_version={api_version}): tracejit runs only "
            "typed XLA FFI handlers (api_version=1); the legacy custom-call ABI "
            "(api_version=0, `void fn(void* out, const void** in, ...)`) is XLA-internal and "
            "not implemented. Port the target to the typed FFI (xla/ffi/api/ffi.h).")
    stages = fn if isinstance(fn, dict) else {"execute": fn}
    pointers = {k: ffi_api.capsule_pointer(v) for k, v in stages.items()
                if k in ffi_api.STAGES}
    if any(p is None for p in pointers.values()):
        raise ffi_api.runtime_error(ffi_api.INVALID_ARGUMENT, "Unsupported custom call target "
                                    f"type for api_version={api_version}")
    ffi_api.register(name, ffi_api.Bundle(*(pointers.get(s) for s in ffi_api.STAGES)),
                     platform, int(kwargs.get("traits", 0)))


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Removed from JAX (as its jaxlib): use register_ffi_type."""
    raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration: dict, platform: str = "cpu") -> None:
    """Register a handler's state/user-data type: `type_registration["type_id"]` a PyCapsule of
    its XLA_FFI_TypeId (filled in with the id given to `name`), `"type_info"` (optional) one of
    its XLA_FFI_TypeInfo, whose deleter frees the states of that type."""
    type_id = ffi_api.capsule_pointer(type_registration.get("type_id"))
    info = type_registration.get("type_info")
    type_info = ffi_api.capsule_pointer(info) if info is not None else 0
    if type_id is None or type_info is None:
        raise TypeError("register_ffi_type: type_id and type_info must be PyCapsules")
    ffi_api.register_type(name, type_id, type_info or 0)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Nothing to do: the devices of one process are one program here (see shard_map), so
    there is no partitioner for a target to opt into."""


def pycapsule(funcptr: Any) -> Any:
    """Wrap a ctypes function pointer (`lib.Handler`) in a PyCapsule, as register_ffi_target
    takes it."""
    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    builder = ctypes.pythonapi.PyCapsule_New
    builder.restype = ctypes.py_object
    builder.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
    return builder(funcptr, None, destructor(0))


def include_dir() -> str:
    """The folder holding XLA's FFI headers (xla/ffi/api/ffi.h, api.h, c_api.h): jaxlib's, as in
    JAX (tracejit implements the C ABI of those headers; it does not ship them)."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("jax.ffi.include_dir() needs XLA's FFI headers, which jaxlib ships: "
                           "pip install jaxlib (only its include/ folder is used)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "include")


def _refuse_mlir(what: str) -> Callable:
    def refused(*args: Any, **kwargs: Any):
        raise NotImplementedError(
            f"jax.ffi.{what} builds an MLIR custom-call lowering rule for a user primitive; "
            "tracejit has no MLIR lowering. Call the target with jax.ffi.ffi_call (it works "
            "under jit and vmap), or give the primitive an impl that calls ffi_call.")
    refused.__name__ = what
    return refused


ffi_lowering = _refuse_mlir("ffi_lowering")
build_ffi_lowering_function = _refuse_mlir("build_ffi_lowering_function")


class AbstractToken:
    """The type of JAX's effect-ordering token (jax.ffi.abstract_token names its one value)."""

    def __repr__(self) -> str:
        return "AbstractToken()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractToken)

    def __hash__(self) -> int:
        return hash(AbstractToken)


# JAX: a result type for ffi_call whose output is a token, for handlers that take and return
# one to order their side effects. tracejit orders effects without token values, so ffi_call
# refuses it by name (has_side_effect=True orders such calls instead)
abstract_token = AbstractToken()


def _result_avals(results: Sequence[Any]) -> tuple[ShapedArray, ...]:
    avals = []
    for idx, result in enumerate(results):
        if isinstance(result, AbstractToken):
            raise NotImplementedError(
                f"ffi_call: result {idx} is jax.ffi.abstract_token; tracejit has no token "
                "values (it orders effects without them): drop the token from the handler "
                "and pass has_side_effect=True to keep its calls in order")
        if not hasattr(result, "shape") or not hasattr(result, "dtype"):
            raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                             f"attributes. Got {result} at position {idx}.")
        avals.append(ShapedArray(tuple(result.shape), np.dtype(result.dtype)))
    return tuple(avals)


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts: Any = None,
             output_layouts: Any = None, input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None) -> Callable:
    """A function calling the FFI target `target_name`: positional arguments are its buffers,
    keyword arguments its attributes (NumPy scalars keep their dtype; Python int/float/bool are
    int64/float64/bool; str/bytes; NumPy arrays, passed flat; dicts of these). Results have
    `result_shape_dtypes`' shapes and dtypes (one object, or a sequence: then a list/tuple).
    `has_side_effect=True` keeps an unused call; `input_output_aliases` {input: output} gives
    the output the input's values to update in place; `vmap_method` as for pure_callback.
    Row-major layouts only; no JVP (wrap it in custom_jvp/custom_vjp)."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")
    if custom_call_api_version < 4:
        raise NotImplementedError(
            f"ffi_call(custom_call_api_version={custom_call_api_version}): tracejit runs only "
            "typed XLA FFI handlers (custom_call_api_version=4); legacy custom calls are not "
            "implemented.")
    multiple = isinstance(result_shape_dtypes, Sequence)
    result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
    in_layouts = list(input_layouts or [])
    out_layouts = [] if output_layouts is None else (
        list(output_layouts) if multiple else [output_layouts])
    if any(_is_custom_layout(layout) for layout in in_layouts + out_layouts):
        raise NotImplementedError("ffi_call: tracejit passes row-major buffers only; "
                                  "input_layouts/output_layouts other than row-major are not "
                                  "implemented")

    def wrapped(*args: Any, **kwargs: Any):
        in_avals = [get_aval(x) for x in args]
        aliases = []
        for i_idx, o_idx in sorted((input_output_aliases or {}).items()):
            i_idx, o_idx = int(i_idx), int(o_idx)
            if i_idx >= len(args):
                raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' "
                                 f"with input index {i_idx} outside the range [0, "
                                 f"{len(args)}).")
            if o_idx >= len(result_avals):
                raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' "
                                 f"with output index {o_idx} outside the range [0, "
                                 f"{len(result_avals)}).")
            a, b = in_avals[i_idx], result_avals[o_idx]
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' "
                                 f"referring to an input with abstract value {a} "
                                 f"and an output with a different abstract value "
                                 f"{b}.")
            aliases.append((i_idx, o_idx))
        results = ffi_call_p.bind(
            *args, result_avals=result_avals, vmap_method=vmap_method, target_name=target_name,
            has_side_effect=bool(has_side_effect), input_output_aliases=tuple(aliases),
            attributes=wrap_attributes(kwargs))
        if multiple:
            return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)
        return results[0]

    return wrapped


def _is_custom_layout(layout: Any) -> bool:
    if layout is None:
        return False
    major_to_minor = getattr(layout, "major_to_minor", layout)
    return tuple(major_to_minor) != tuple(range(len(tuple(major_to_minor))))

