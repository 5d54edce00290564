"""Windowed reductions: reduce_window (sum, max, min fast paths and the generic one with a jaxpr
computation) and the pooling gradients select_and_gather_add / select_and_scatter_add, with
their rules. Native lowerings: backend/llvm/windowed.py."""
from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.rules import (Zero, aval_of, axis_size, bdim_at_front, def_linear, defjvp,
                          instantiate)
from ..core.jaxpr import Jaxpr
from ..core.trace import get_aval, trace_to_jaxpr
from ._base import NUM, ORDERED, check_dtype, check_operand
from .convolution import _dilate_shape, _stride_dim, _vjp_lhs_padding, padtype_to_pads
from .elementwise import ge_p, le_p
from .reductions import _highest, _lowest, monoid
from . import shape as sh

# --- shapes ----------------------------------------------------------------------------------


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int],
                              padding: Sequence[tuple[int, int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None
                              ) -> tuple[int, ...]:
    """The output shape of a windowed reduction."""
    if base_dilation is not None:
        operand_shape = _dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate_shape(window_dimensions, window_dilation)
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(operand_shape, padding)]
    return tuple(_stride_dim(p, int(w), int(s))
                 for p, w, s in zip(padded, window_dimensions, window_strides))


def _check_window(name: str, x: ShapedArray, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> tuple[int, ...]:
    for what, seq, positive in (("window_dimensions", window_dimensions, True),
                                ("window_strides", window_strides, True),
                                ("base_dilation", base_dilation, True),
                                ("window_dilation", window_dilation, True)):
        if any(s < 0 or (positive and s == 0) for s in seq):
            raise TypeError(f"{name} {what} must have every element be positive, got "
                            f"{tuple(seq)}.")
    if x.ndim != len(window_dimensions):
        raise TypeError(f"reduce_window got the wrong number of window_dimensions for operand: "
                        f"got operand shape {x.shape} with window_dimensions "
                        f"{tuple(window_dimensions)}.")
    for what, seq in (("window_strides", window_strides), ("base_dilation", base_dilation),
                      ("window_dilation", window_dilation)):
        if len(seq) != len(window_dimensions):
            raise TypeError(f"reduce_window got inconsistent {what} and window_dimensions: got "
                            f"{what} {tuple(seq)} and window_dimensions "
                            f"{tuple(window_dimensions)}.")
    if len(padding) != len(window_dimensions):
        raise TypeError(f"reduce_window got inconsistent padding and window_dimensions: got "
                        f"padding {tuple(padding)} and window_dimensions "
                        f"{tuple(window_dimensions)}.")
    return reduce_window_shape_tuple(x.shape, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)


# --- NumPy reference helpers -----------------------------------------------------------------

def _padded(x: np.ndarray, fill: Any, padding, base_dilation) -> np.ndarray:
    """x dilated by base_dilation and padded (negative pads crop), holes and pads = fill."""
    shape = _dilate_shape(x.shape, base_dilation)
    big = np.full(shape, fill, x.dtype)
    big[tuple(slice(None, None, d) for d in base_dilation)] = x
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    big = np.pad(big, pads, constant_values=np.asarray(fill, x.dtype)) if big.size else \
        np.full([s + lo + hi for s, (lo, hi) in zip(shape, pads)], fill, x.dtype)
    crop = tuple(slice(max(-lo, 0), None if hi >= 0 else hi) for lo, hi in padding)
    return big[crop]


def _window_view(xp: np.ndarray, window_dimensions, window_strides, window_dilation,
                 out_shape) -> np.ndarray:
    """[*out_shape, *window] view of the windows of the padded operand."""
    nd = xp.ndim
    if math.prod(out_shape) == 0:
        return np.zeros(tuple(out_shape) + tuple(window_dimensions), xp.dtype)
    span = _dilate_shape(window_dimensions, window_dilation)
    v = np.lib.stride_tricks.sliding_window_view(xp, span)
    v = v[tuple(slice(0, o * s, s) for o, s in zip(out_shape, window_strides))
          + tuple(slice(None, None, d) for d in window_dilation)]
    return v.reshape(tuple(out_shape) + tuple(window_dimensions)) if nd else v


def _flat_windows(v: np.ndarray, nd: int) -> np.ndarray:
    return v.reshape(v.shape[:nd] + (-1,))


# --- reduce_window_{sum,max,min} -------------------------------------------------------------

def _identity(kind: str, dtype: np.dtype) -> Any:
    return {"sum": 0, "max": _lowest(dtype), "min": _highest(dtype)}[kind]


def _monoid_abstract(kind: str):
    kinds = NUM if kind == "sum" else ORDERED

    def abstract(x: ShapedArray, *, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation) -> ShapedArray:
        check_dtype(f"reduce_window_{kind}", x, kinds)
        shape = _check_window("reduce_window", x, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return abstract


def _monoid_impl(kind: str):
    combine = {"sum": np.add, "max": np.maximum, "min": np.minimum}[kind]

    def impl(x: np.ndarray, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation) -> np.ndarray:
        out_shape = reduce_window_shape_tuple(x.shape, window_dimensions, window_strides,
                                              padding, base_dilation, window_dilation)
        out = np.full(out_shape, _identity(kind, x.dtype), x.dtype)
        if math.prod(out_shape) == 0:
            return out
        xp = _padded(x, _identity(kind, x.dtype), padding, base_dilation)
        v = _flat_windows(_window_view(xp, window_dimensions, window_strides, window_dilation,
                                       out_shape), x.ndim)
        # tap by tap in the operand's dtype, as XLA folds a window (half floats round at
        # every step); NaN propagates through maximum/minimum
        with np.errstate(all="ignore"):
            for j in range(v.shape[-1]):
                out = combine(out, v[..., j]).astype(x.dtype)
        return out
    return impl


def _monoid(kind: str) -> Primitive:
    p = Primitive(f"reduce_window_{kind}")
    p.def_abstract_eval(_monoid_abstract(kind))
    p.def_impl(_monoid_impl(kind))
    return p


reduce_window_sum_p = _monoid("sum")
reduce_window_max_p = _monoid("max")
reduce_window_min_p = _monoid("min")


# --- select_and_gather_add / select_and_scatter_add (pooling derivatives) ---------------------

def _select_name(select_prim: Primitive) -> str:
    if select_prim not in (ge_p, le_p):
        raise TypeError(f"select_prim must be lax.ge_p or lax.le_p, got {select_prim}")
    return select_prim.name


def _select_pad(select_prim: Primitive, dtype: np.dtype) -> Any:
    """Padding for the operand: a value every real element beats."""
    return _lowest(dtype) if select_prim is ge_p else _highest(dtype)


def _select_loop(select_prim: Primitive, ops: np.ndarray, valid: np.ndarray | None
                 ) -> np.ndarray:
    """Index of the selected tap in each window (last axis), taps in order: the running choice
    is kept while select(choice, tap) holds, as XLA's select-and-scatter (the first maximum
    wins). Invalid taps are never chosen."""
    cmp = np.greater_equal if select_prim is ge_p else np.less_equal
    best = np.zeros(ops.shape[:-1], np.int64)
    have = np.ones(ops.shape[:-1], bool) if valid is None else valid[..., 0].copy()
    cur = ops[..., 0]
    with np.errstate(invalid="ignore"):
        for j in range(1, ops.shape[-1]):
            e = ops[..., j]
            take = ~have | ~cmp(cur, e)
            if valid is not None:
                take &= valid[..., j]
            best = np.where(take, j, best)
            cur = np.where(take, e, cur)
            have |= take
    return best


def _gather_abstract(t: ShapedArray, x: ShapedArray, *, select_prim, window_dimensions,
                     window_strides, padding, base_dilation, window_dilation) -> ShapedArray:
    _select_name(select_prim)
    if t.shape != x.shape:
        raise TypeError(f"select_and_gather_add tangents and operand shapes must match, got "
                        f"{t.shape} and {x.shape}.")
    shape = _check_window("select_and_gather_add", x, window_dimensions, window_strides,
                          padding, base_dilation, window_dilation)
    return ShapedArray(shape, t.dtype, t.weak_type)


def _gather_impl(t: np.ndarray, x: np.ndarray, *, select_prim, window_dimensions,
                 window_strides, padding, base_dilation, window_dilation) -> np.ndarray:
    out_shape = reduce_window_shape_tuple(x.shape, window_dimensions, window_strides, padding,
                                          base_dilation, window_dilation)
    if math.prod(out_shape) == 0 or math.prod(window_dimensions) == 0:
        return np.zeros(out_shape, t.dtype)
    xp = _padded(x, _select_pad(select_prim, x.dtype), padding, base_dilation)
    tp = _padded(t, 0, padding, base_dilation)
    view = (window_dimensions, window_strides, window_dilation, out_shape)
    ops = _flat_windows(_window_view(xp, *view), x.ndim)
    ts = _flat_windows(_window_view(tp, *view), x.ndim)
    best = _select_loop(select_prim, ops, None)
    return np.take_along_axis(ts, best[..., None], -1)[..., 0]


select_and_gather_add_p = Primitive("select_and_gather_add")
select_and_gather_add_p.def_abstract_eval(_gather_abstract)
select_and_gather_add_p.def_impl(_gather_impl)


def _scatter_abstract(source: ShapedArray, x: ShapedArray, *, select_prim, window_dimensions,
                      window_strides, padding) -> ShapedArray:
    _select_name(select_prim)
    ones = (1,) * len(window_dimensions)
    shape = _check_window("select_and_scatter_add", x, window_dimensions, window_strides,
                          padding, ones, ones)
    if source.shape != shape:
        raise TypeError(f"select_and_scatter_add source shape must be the windows' shape "
                        f"{shape}, got {source.shape}.")
    return ShapedArray(x.shape, source.dtype, source.weak_type)


def _scatter_impl(source: np.ndarray, x: np.ndarray, *, select_prim, window_dimensions,
                  window_strides, padding) -> np.ndarray:
    out = np.zeros(x.shape, source.dtype)
    if source.size == 0 or math.prod(window_dimensions) == 0:
        return out
    ones = (1,) * x.ndim
    xp = _padded(x, _select_pad(select_prim, x.dtype), padding, ones)
    inside = _padded(np.ones(x.shape, bool), False, padding, ones)
    view = (window_dimensions, window_strides, ones, source.shape)
    ops = _flat_windows(_window_view(xp, *view), x.ndim)
    valid = _flat_windows(_window_view(inside, *view), x.ndim)
    best = _select_loop(select_prim, ops, valid)
    chosen = np.take_along_axis(valid, best[..., None], -1)[..., 0]
    taps = np.unravel_index(best, tuple(window_dimensions))
    grid = np.indices(source.shape)
    index = tuple(grid[d] * window_strides[d] + taps[d] - padding[d][0] for d in range(x.ndim))
    with np.errstate(all="ignore"):
        np.add.at(out, tuple(i[chosen] for i in index), source[chosen])
    return out


select_and_scatter_add_p = Primitive("select_and_scatter_add")
select_and_scatter_add_p.def_abstract_eval(_scatter_abstract)
select_and_scatter_add_p.def_impl(_scatter_impl)


# --- the generic reduce_window (a jaxpr computation) -----------------------------------------

def _generic_abstract(*args, jaxpr, num_consts, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation):
    args = args[num_consts:]
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    for x, i in zip(xs, inits):
        if i.ndim != 0 or i.dtype != x.dtype:
            raise TypeError(f"reduce_window init values must be scalars of the operands' "
                            f"dtypes, got {i.str_short()} for operand {x.str_short()}")
    if any(x.shape != xs[0].shape for x in xs):
        raise TypeError("reduce_window operands must have one shape, got "
                        f"{[x.shape for x in xs]}")
    shape = _check_window("reduce_window", xs[0], window_dimensions, window_strides, padding,
                          base_dilation, window_dilation)
    return [ShapedArray(shape, x.dtype) for x in xs]


def _generic_impl(*args, jaxpr, num_consts, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation):
    """Fold each window's taps in order through the computation (scalar by scalar: the
    reference interpreter checks the jaxpr's scalar shapes)."""
    from ..core.interpret import eval_jaxpr
    consts, args = args[:num_consts], args[num_consts:]
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    out_shape = reduce_window_shape_tuple(xs[0].shape, window_dimensions, window_strides,
                                          padding, base_dilation, window_dilation)
    outs = [np.full(out_shape, i, x.dtype) for x, i in zip(xs, inits)]
    if math.prod(out_shape) == 0:
        return outs
    views = [_flat_windows(_window_view(_padded(x, i, padding, base_dilation),
                                        window_dimensions, window_strides, window_dilation,
                                        out_shape), x.ndim) for x, i in zip(xs, inits)]
    for idx in np.ndindex(*out_shape):
        accs = [np.asarray(i, x.dtype) for x, i in zip(xs, inits)]
        for j in range(views[0].shape[-1]):
            res = eval_jaxpr(jaxpr, [], *consts, *accs, *[v[idx + (j,)] for v in views])
            accs = [np.asarray(r, x.dtype) for r, x in zip(res, xs)]
        for o, a in zip(outs, accs):
            o[idx] = a
    return outs


reduce_window_p = Primitive("reduce_window", multiple_results=True)
reduce_window_p.def_abstract_eval(_generic_abstract)
reduce_window_p.def_impl(_generic_impl)


# --- user functions --------------------------------------------------------------------------

def _ints(seq: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(s) for s in seq)
    except TypeError:
        raise TypeError(f"reduce_window {what} must be a sequence of integers, got "
                        f"{seq!r}") from None


def _window_params(shape, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation) -> dict:
    window_dimensions = _ints(window_dimensions, "window_dimensions")
    nd = len(window_dimensions)
    window_strides = (1,) * nd if window_strides is None else _ints(window_strides,
                                                                    "window_strides")
    base_dilation = (1,) * nd if base_dilation is None else _ints(base_dilation,
                                                                  "base_dilation")
    window_dilation = (1,) * nd if window_dilation is None else _ints(window_dilation,
                                                                      "window_dilation")
    if isinstance(padding, str):
        span = _dilate_shape(window_dimensions, window_dilation)
        padding = padtype_to_pads(shape, span, window_strides, padding)
    padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    return dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


def reduce_window(operand: Any, init_value: Any, computation: Callable,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None):
    """Reduce each (strided, padded, dilated) window of `operand` (an array or a pytree of
    arrays) with `computation`, starting from `init_value`; lax.add / lax.max / lax.min with
    their identity take fast paths."""
    flat, tree = tree_flatten(operand)
    flat_init, init_tree = tree_flatten(init_value)
    if tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} "
                         f"vs. {init_tree}")
    if not flat:
        raise ValueError("reduce_window must have at least one operand.")
    for x in flat:
        check_operand(x, "lax.reduce_window")
    params = _window_params(get_aval(flat[0]).shape, window_dimensions, window_strides,
                            padding, base_dilation, window_dilation)
    if len(flat) == 1:
        fast = {"sum": reduce_window_sum_p, "max": reduce_window_max_p,
                "min": reduce_window_min_p}.get(monoid(computation, flat_init[0]))
        if fast is not None:
            return tree_unflatten(tree, [fast.bind(flat[0], **params)])
    # concrete Python/NumPy scalars take the operand's dtype (they are weakly typed in JAX)
    inits = [np.asarray(i, get_aval(x).dtype)
             if isinstance(i, (bool, int, float, complex, np.generic, np.ndarray)) else i
             for i, x in zip(flat_init, flat)]
    avals = [ShapedArray((), get_aval(x).dtype) for x in flat]

    def comp(*args):
        a, b = tree_unflatten(tree, list(args[:len(flat)])), \
            tree_unflatten(tree, list(args[len(flat):]))
        out, out_tree = tree_flatten(computation(a, b))
        if out_tree != tree:
            raise ValueError(f"reduce_window output must have the same tree structure as the "
                             f"operands {tree} vs. {out_tree}")
        return out
    closed = trace_to_jaxpr(comp, avals + avals)
    j = closed.jaxpr  # its consts become leading operands (params stay hashable)
    jaxpr = Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info)
    outs = reduce_window_p.bind(*closed.consts, *flat, *inits, jaxpr=jaxpr,
                                num_consts=len(closed.consts), **params)
    return tree_unflatten(tree, outs)


def _select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                           padding, base_dilation, window_dilation):
    return select_and_gather_add_p.bind(
        tangents, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides), padding=tuple(padding),
        base_dilation=tuple(base_dilation), window_dilation=tuple(window_dilation))


def _select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                            padding):
    return select_and_scatter_add_p.bind(
        source, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides), padding=tuple(padding))


# --- transformation rules --------------------------------------------------------------------

def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    """Spread each window's cotangent back: the cotangent dilated by the strides and padded,
    summed over windows with base_dilation as the stride."""
    in_shape = aval_of(x).shape
    pads = _vjp_lhs_padding(in_shape, window_dimensions, window_strides, get_aval(ct).shape,
                            padding, base_dilation, window_dilation)
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides))
    padded = sh.pad(ct, np.zeros((), get_aval(ct).dtype), config)
    ones = (1,) * len(in_shape)
    out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                   window_strides=base_dilation,
                                   padding=((0, 0),) * len(in_shape), base_dilation=ones,
                                   window_dilation=window_dilation)
    return [out]


def _chooser_jvp(select_prim: Primitive):
    def rule(g, x, **params):
        return _select_and_gather_add(g, x, select_prim, **params)
    return rule


def _gather_transpose(ct, t, x, *, select_prim, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation):
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(f"VJP not implemented for select_and_gather (MaxPool) with "
                                  f"window dilation, got window_dilation={window_dilation}.")
    dilated = any(d != 1 for d in base_dilation)
    if dilated:
        fill = np.asarray(_select_pad(select_prim, get_aval(x).dtype), get_aval(x).dtype)
        x = sh.pad(x, fill, tuple((0, 0, d - 1) for d in base_dilation))
    out = _select_and_scatter_add(ct, x, select_prim, window_dimensions, window_strides,
                                  padding)
    if dilated:
        shape = get_aval(out).shape
        out = sh.slice(out, (0,) * len(shape), shape, base_dilation)
    return [out, None]


def _scatter_transpose(ct, source, x, *, select_prim, window_dimensions, window_strides,
                       padding):
    if type(ct) is Zero:
        return [Zero(aval_of(source)), None]
    ones = (1,) * len(window_dimensions)
    return [_select_and_gather_add(ct, x, select_prim, window_dimensions, window_strides,
                                   padding, ones, ones), None]


def _prepend_window(params: dict) -> dict:
    """The params with a size-1 window over a new leading (batch) dimension."""
    out = dict(params)
    for key, one in (("window_dimensions", 1), ("window_strides", 1), ("base_dilation", 1),
                     ("window_dilation", 1)):
        if key in out:
            out[key] = (one,) + tuple(out[key])
    out["padding"] = ((0, 0),) + tuple(out["padding"])
    return out


def _window_batch(prim: Primitive, n_windowed: int):
    """vmap: the batch dimension goes first in every windowed operand, with a window of 1."""
    def batch(vals, dims, **params):
        size = axis_size(vals, dims)
        vals = [bdim_at_front(v, d, size) if i < n_windowed else v
                for i, (v, d) in enumerate(zip(vals, dims))]
        if any(d is not None for d in dims[n_windowed:]):
            raise NotImplementedError(f"vmap of {prim.name} over its init values")
        out = prim.bind(*vals, **_prepend_window(params))
        return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
    prim.def_batch(batch)


def _generic_jvp(primals, tangents, *, jaxpr, num_consts, **params):
    """As JAX: reduce (primal, tangent) pairs with the computation's JVP as the computation;
    init values and captured constants must have zero tangents."""
    from ..core.jaxpr_util import eval_jaxpr_bind
    from ..core.jvp_trace import jvp_flat
    consts, rest = list(primals[:num_consts]), list(primals[num_consts:])
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError("reduce_window jvp does not support a computation that closes over "
                        "differentiated values.")
    n = len(rest) // 2
    xs, inits = rest[:n], rest[n:]
    if any(type(t) is not Zero for t in tangents[num_consts + n:]):
        raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
    ts = [instantiate(t) for t in tangents[num_consts:num_consts + n]]
    zeros = [np.zeros((), get_aval(x).dtype) for x in xs]

    def computation(left, right):
        def comp(*args):
            return eval_jaxpr_bind(jaxpr, [], *consts, *args)
        outs, out_ts = jvp_flat(comp, left[:n] + right[:n], left[n:] + right[n:])
        return list(outs) + [instantiate(t) for t in out_ts]
    both = reduce_window(list(xs) + ts, list(inits) + zeros, computation, **params)
    return both[:n], both[n:]


def_linear(reduce_window_sum_p, _reduce_window_sum_transpose)
defjvp(reduce_window_max_p, _chooser_jvp(ge_p))
defjvp(reduce_window_min_p, _chooser_jvp(le_p))
defjvp(select_and_gather_add_p, lambda g, t, x, **params: select_and_gather_add_p.bind(
    g, x, **params), None)
select_and_gather_add_p.def_transpose(_gather_transpose)
defjvp(select_and_scatter_add_p, lambda g, s, x, **params: select_and_scatter_add_p.bind(
    g, x, **params), None)
select_and_scatter_add_p.def_transpose(_scatter_transpose)
reduce_window_p.def_jvp(_generic_jvp)
for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _window_batch(_p, 1)
_window_batch(select_and_gather_add_p, 2)
_window_batch(select_and_scatter_add_p, 2)


def _generic_batch(vals, dims, *, num_consts, **params):
    consts, vals, cdims, dims = vals[:num_consts], vals[num_consts:], dims[:num_consts], \
        dims[num_consts:]
    n = len(vals) // 2
    size = axis_size(vals, dims) if any(d is not None for d in dims) else None
    if size is None or any(d is not None for d in cdims) or \
            any(d is not None for d in dims[n:]):
        raise NotImplementedError("vmap of lax.reduce_window over its init values or a "
                                  "computation's captured arrays")
    xs = [bdim_at_front(v, d, size) for v, d in zip(vals[:n], dims[:n])]
    outs = reduce_window_p.bind(*consts, *xs, *vals[n:], num_consts=num_consts,
                                **_prepend_window(params))
    return outs, [0] * len(outs)


reduce_window_p.def_batch(_generic_batch)


__all__ = ["reduce_window", "reduce_window_shape_tuple"]
