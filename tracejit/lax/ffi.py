"""ffi_call: a primitive whose work is a foreign (C/C++) handler registered through XLA's typed
FFI (lax/ffi_api.py runs it). Its impl calls the handler on NumPy buffers; native code calls
the handler itself, on the program's buffers (backend/llvm/ffi_call.py).

Rules as JAX's: no JVP/transpose (custom_jvp/custom_vjp are the way), vmap by `vmap_method`,
effectful only with `has_side_effect=True` (otherwise dropped when its results are unused).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.avals import ShapedArray
from ..core.batching import current_axis
from ..core.primitive import Primitive
from ..core.rules import axis_size, moveaxis
from ..core.trace import get_aval
from .callback import _sequential

if TYPE_CHECKING:  # (ffi_api's ctypes structures, ~5 ms, load at the first use, not with
    from . import ffi_api  # the backend: its lowering registers this module's primitive)
from .shape import broadcast


class HashableArray:
    """A NumPy array attribute as a hashable param (compared by dtype, shape and bytes)."""
    __slots__ = ("val",)

    def __init__(self, val: np.ndarray):
        self.val = np.array(val)  # (a copy: the caller may change theirs)
        self.val.setflags(write=False)

    def _key(self):
        return (self.val.dtype.str, self.val.shape, self.val.tobytes())

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, HashableArray) and self._key() == other._key()

    def __repr__(self):
        return f"HashableArray({self.val!r})"


class FrozenDict:
    """A dictionary attribute as a hashable param (its values must be hashable, as in JAX)."""
    __slots__ = ("_d",)

    def __init__(self, d: dict):
        self._d = dict(d)

    def __hash__(self):
        return hash(tuple(sorted(self._d.items(), key=lambda kv: kv[0])))

    def __eq__(self, other):
        return isinstance(other, FrozenDict) and self._d == other._d

    def __repr__(self):
        return f"FrozenDict({self._d!r})"


def wrap_attributes(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The keyword arguments of a call as a sorted, hashable param (JAX's rule and errors)."""
    from . import ffi_api
    out = []
    for k, v in sorted(kwargs.items()):
        ffi_api.check_attribute(k, v)
        if isinstance(v, np.ndarray):
            out.append((k, HashableArray(v)))
        elif isinstance(v, dict):
            out.append((k, FrozenDict(v)))
        else:
            try:
                hash(v)
            except TypeError as e:
                raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v}") from e
            out.append((k, v))
    out = tuple(out)
    try:
        hash(out)
    except TypeError:  # (a dict holding a dict or an array)
        raise TypeError("As of JAX v0.7, parameters to jaxpr equations must have __hash__ and "
                        "__eq__ methods. In a call to primitive ffi_call, the value of "
                        f"parameter attributes was not hashable: {out}") from None
    return out


def _unwrap(v: Any) -> Any:
    if isinstance(v, HashableArray):
        return v.val
    if isinstance(v, FrozenDict):
        return {k: _unwrap(x) for k, x in v._d.items()}
    return v  # (a tuple stays one: XLA has no attribute for it and refuses it at the call)


def encode_attributes(attributes: Sequence[tuple[str, Any]]) -> ffi_api.EncodedAttrs:
    from . import ffi_api
    try:
        return ffi_api.EncodedAttrs([(k, _unwrap(v)) for k, v in attributes])
    except ffi_api._Fail as e:
        raise ffi_api.runtime_error(e.code, str(e)) from None


# --- running the handler ----------------------------------------------------------------------

def run(params: dict, instance: ffi_api.Instance, args: Sequence[np.ndarray]
        ) -> list[np.ndarray]:
    """Call the target of an ffi_call equation on concrete inputs; returns its results (new
    arrays). An aliased result starts as a copy of its input and is handed to the handler as
    that input too (one buffer, as in XLA), so the handler updates it in place."""
    from . import ffi_api
    args = [np.asarray(x, order="C") for x in args]  # (ascontiguousarray makes 0-d 1-d)
    rets = [np.empty(a.shape, a.dtype) for a in params["result_avals"]]
    for i, o in params["input_output_aliases"]:
        np.copyto(rets[o], args[i], casting="no")
        args[i] = rets[o]
    ffi_api.call(params["target_name"], instance, args, rets,
                 lambda: encode_attributes(params["attributes"]))
    return rets


# eager calls: one instance (its instantiate-stage state) per distinct call, as JAX compiles
# and caches one executable per call signature
_instances: OrderedDict = OrderedDict()
_instances_lock = threading.Lock()
_MAX_INSTANCES = 4096


def _instance_for(key) -> ffi_api.Instance:
    from . import ffi_api
    with _instances_lock:
        inst = _instances.get(key)
        if inst is None:
            inst = _instances[key] = ffi_api.Instance()
            if len(_instances) > _MAX_INSTANCES:
                _instances.popitem(last=False)
        else:
            _instances.move_to_end(key)
        return inst


def _typed(v: Any) -> Any:
    """`v` as a key in which values of different types differ (True == 1 == 1.0 in Python; an
    attribute's type is what the handler sees — JAX's cache mixes them up: not ours)."""
    if isinstance(v, tuple):
        return tuple(_typed(x) for x in v)
    if isinstance(v, FrozenDict):
        return ("dict", tuple((k, _typed(x)) for k, x in sorted(v._d.items(),
                                                                key=lambda kv: kv[0])))
    if isinstance(v, HashableArray):
        return ("array", v._key())
    return (type(v), v)


def _ffi_call_impl(*args, **params):
    if not params["result_avals"] and not params["has_side_effect"]:
        return []  # (JAX's program for it is empty: XLA drops a pure call with no results)
    # (a Python scalar is a buffer of its abstract value's dtype: 2.0 is float32, as in JAX)
    args = [np.asarray(x, dtype=get_aval(x).dtype) for x in args]
    key = (tuple((x.shape, x.dtype.str) for x in args),
           tuple((k, _typed(v)) for k, v in sorted(params.items(), key=lambda kv: kv[0])))
    return run(params, _instance_for(key), args)


def _ffi_call_abstract_eval(*avals, result_avals, **_):
    return list(result_avals)


def _ffi_call_jvp(primals, tangents, *, target_name, **_):
    raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                     "`jax.custom_jvp` or `jax.custom_jvp` to add support.")


def _ffi_call_transpose(ct, *args, target_name, **_):
    raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                     "`jax.custom_jvp` or `jax.custom_jvp` to add support.")


def _batched(size: int, avals: Sequence[ShapedArray]) -> tuple[ShapedArray, ...]:
    return tuple(ShapedArray((size,) + a.shape, a.dtype) for a in avals)


def _ffi_call_batch(vals, dims, *, vmap_method, result_avals, **params):
    """JAX's rule: "sequential" a loop over the batch; "expand_dims" unbatched operands get a
    leading axis of size 1, "broadcast_all" of the batch size; "legacy_vectorized" the
    operands as they are, batch axis first; None raises. Over the devices of shard_map/pmap
    (a batch axis here, no vmap in JAX) each device calls the handler on its own block."""
    size = axis_size(vals, dims)
    axis = current_axis()
    if vmap_method in ("sequential", "sequential_unrolled") or (
            axis is not None and axis.devices):
        outs = _sequential(ffi_call_p, vals, dims, vmap_method == "sequential_unrolled",
                           vmap_method=vmap_method, result_avals=result_avals, **params)
        return outs, [0] * len(outs)
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            "vmap is only supported for the ffi_call primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    moved = [x if d is None else moveaxis(x, d, 0) for x, d in zip(vals, dims)]
    if vmap_method != "legacy_vectorized":
        n = size if vmap_method == "broadcast_all" else 1
        moved = [broadcast(x, (n,)) if d is None else x for x, d in zip(moved, dims)]
    outs = ffi_call_p.bind(*moved, vmap_method=vmap_method,
                           result_avals=_batched(size, result_avals), **params)
    return outs, [0] * len(outs)


ffi_call_p = Primitive("ffi_call", multiple_results=True)
ffi_call_p.effectful_if = lambda params: params["has_side_effect"]
ffi_call_p.foreign = True
ffi_call_p.def_abstract_eval(_ffi_call_abstract_eval)
ffi_call_p.def_impl(_ffi_call_impl)
ffi_call_p.def_jvp(_ffi_call_jvp)
ffi_call_p.def_transpose(_ffi_call_transpose)
ffi_call_p.def_batch(_ffi_call_batch)
