"""The loop primitives `while` and `scan` with all of their rules (abstract eval, reference
impl, jvp, linearize, transpose, batching, DCE), and the user functions on top of them:
while_loop, fori_loop, scan, map, associative_scan. Native lowerings are in
backend/llvm/control_flow.py."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...core.batching import batch_jaxpr, move_to_front
from ...core.config import config
from ...core.dce import compress, dce_closed, keep_invars, keep_outvars
from ...core.errors import ConcretizationTypeError
from ...core.interpret import eval_jaxpr
from ...core.jaxpr import Eqn, JaxprTypeError
from ...core.jaxpr_util import (
    add_unused_invars,
    eval_closed,
    permute_invars,
    permute_outvars,
    trace_closed,
)
from ...core.jvp_trace import jvp_jaxpr
from ...core.linearize import linearize_jaxpr
from ...core.primitive import Primitive
from ...core.refs import current_values, ref_scope, refs_in_use, thread_refs
from ...core.pytree import PyTreeDef, tree_flatten, tree_map, tree_unflatten
from ...core.rules import (
    UndefinedPrimal,
    add_tangents,
    axis_size,
    batch_dims,
    bdim_at_front,
    instantiate,
    is_undefined,
    moveaxis,
    nonzero_mask,
    nonzero_tangents,
    not_mapped,
    with_zeros,
    zeros_like_aval,
)
from ...core.trace import Tracer, concrete_value, get_aval, is_concrete
from ...core.transpose import backward_pass
from .._base import canonicalize_axis
from ..elementwise import add, bitwise_or, convert_element_type, lt, select_n
from ..reductions import reduce_or
from ..shape import broadcast_in_dim, concatenate, expand_dims, index_in_dim, pad, rev, slice_in_dim
from .common import (
    _asarray,
    _avals_short,
    _check_carry,
    _check_types,
    _flat_avals,
    _forwarding,
    _keep_outputs,
    _live,
    _move_to_front,
    _or,
    _promote_weak_init,
    _rebuild,
    _split,
    _trace,
    _unalias,
)

# --- while ---------------------------------------------------------------------------------

def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = avals[:cond_nconsts]
    body_consts = avals[cond_nconsts:cond_nconsts + body_nconsts]
    carry = avals[cond_nconsts + body_nconsts:]
    _check_types("while cond_jaxpr", cond_jaxpr.in_avals, cond_consts + carry)
    _check_types("while body_jaxpr", body_jaxpr.in_avals, body_consts + carry)
    _check_types("while carry", body_jaxpr.out_avals, carry)
    _check_types("while cond_jaxpr output", [ShapedArray((), dtypes.bool_)],
                 cond_jaxpr.out_avals)
    return body_jaxpr.out_avals


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts:]
    while eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cond_consts, *carry)[0]:
        carry = eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *body_consts, *carry)
    return _unalias(carry, args)


while_p = Primitive("while", multiple_results=True)
while_p.def_abstract_eval(_while_abstract)
while_p.def_impl(_while_impl)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """`val = init_val; while cond_fun(val): val = body_fun(val)`, as one primitive."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if not refs_in_use() or config.jax_disable_jit:
        return _while_loop(cond_fun, body_fun, init_val)
    owner = object()

    def run(plan):  # the Refs the loop touches are carried
        if not plan:  # (until the loop touches a Ref, it is staged as it is)
            def plain(fun):
                @functools.wraps(fun)  # (errors name the user's parameters)
                def g(c):
                    with ref_scope(owner, (), ()):
                        return fun(c)
                return g
            return _while_loop(plain(cond_fun), plain(body_fun), init_val), []

        def cond(c):
            with ref_scope(owner, plan, c[1]):
                return cond_fun(c[0])

        def body(c):
            with ref_scope(owner, plan, c[1]) as scope:
                out = body_fun(c[0])
                return out, [scope.values[r] for r in plan]
        return _while_loop(cond, body, (init_val, current_values(plan)))
    return thread_refs(owner, run)


def _while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    if config.jax_disable_jit:
        try:
            val = tree_map(_asarray, init_val)
            while cond_fun(val):
                val = tree_map(_asarray, body_fun(val))
            return val
        except ConcretizationTypeError:
            pass  # a traced value decides the loop: stage the primitive after all
    init_flat, args_tree = tree_flatten((init_val,))
    init_tree = args_tree.children[0]

    def trace_both(avals):
        cond_t = _trace(cond_fun, args_tree, avals, "while_cond")
        body_t = _trace(body_fun, args_tree, avals, "while_body")
        if cond_t.out_tree.node_type is not None or len(cond_t.out_avals) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree "
                            f"{cond_t.out_tree}.")
        pred = cond_t.out_avals[0]
        if pred.shape != () or pred.dtype != dtypes.bool_:
            raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                            f"{cond_t.out_avals}.")
        return cond_t, body_t

    init_avals = _flat_avals(init_flat)
    cond_t, body_t = trace_both(init_avals)
    if len(body_t.out_avals) == len(init_avals):
        init_flat, changed = _promote_weak_init(init_flat, init_avals, body_t.out_avals)
        if changed:
            init_avals = _flat_avals(init_flat)
            cond_t, body_t = trace_both(init_avals)
    _check_carry("while_loop body", body_fun, init_tree, init_avals, body_t.out_tree,
                 body_t.out_avals)
    # a carry the body leaves unchanged and cond_fun does not read becomes a body constant
    cond_jaxpr, body_jaxpr = cond_t.jaxpr, body_t.jaxpr
    cond_consts, body_consts = cond_t.consts, body_t.consts
    nc, nb = len(cond_consts), len(body_consts)
    live_eqns, cond_reads = _live(cond_jaxpr.jaxpr)
    move = [f == nb + i and not cond_reads[nc + i]
            for i, f in enumerate(_forwarding(body_jaxpr.jaxpr))]
    init_vals = [x for x, m in zip(init_flat, move) if not m]
    moved = [x for x, m in zip(init_flat, move) if m]
    if moved:
        cond_jaxpr = _rebuild(cond_jaxpr, eqns=live_eqns, invars=[
            v for v, m in zip(cond_jaxpr.jaxpr.invars, [False] * nc + move) if not m])
        body_jaxpr = _keep_outputs(body_jaxpr, [not m for m in move])
        body_jaxpr = _rebuild(body_jaxpr, invars=_move_to_front(body_jaxpr.jaxpr.invars,
                                                                [False] * nb + move))
        body_consts = moved + body_consts
    outs = iter(while_p.bind(*cond_consts, *body_consts, *init_vals,
                             cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                             cond_nconsts=nc, body_nconsts=len(body_consts)))
    kept = iter(moved)
    outs = [next(kept) if m else next(outs) for m in move]
    return tree_unflatten(body_t.out_tree, outs)


# --- scan ----------------------------------------------------------------------------------

def _scan_abstract(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry = avals[:num_consts], avals[num_consts:num_consts + num_carry]
    xs = avals[num_consts + num_carry:]
    if any(not x.shape or x.shape[0] != length for x in xs):
        raise JaxprTypeError(f"scan of length {length} got xs {_avals_short(xs)}")
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    _check_types("scan jaxpr", jaxpr.in_avals, consts + carry + tuple(x_avals))
    carry_out, ys = jaxpr.out_avals[:num_carry], jaxpr.out_avals[num_carry:]
    _check_types("scan carry", carry_out, carry)
    return carry_out + [y.update(shape=(length,) + y.shape) for y in ys]  # (vma kept)


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry = args[:num_consts], args[num_consts:num_consts + num_carry]
    xs = args[num_consts + num_carry:]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in jaxpr.out_avals[num_carry:]]
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *[x[i, ...] for x in xs])
        carry = outs[:num_carry]
        for y, out in zip(ys, outs[num_carry:]):
            y[i] = out
    return _unalias(carry, args) + ys


scan_p = Primitive("scan", multiple_results=True)
scan_p.def_abstract_eval(_scan_abstract)
scan_p.def_impl(_scan_impl)


def _scan_length(xs_flat: list, length: Any) -> int:
    for x in xs_flat:
        if not hasattr(x, "shape"):
            raise ValueError("scan got value with no leading axis to scan over: "
                             f"{', '.join(str(x) for x in xs_flat if not hasattr(x, 'shape'))}.")
        if not np.shape(x):
            raise IndexError(f"scan got a scalar (shape ()) in xs, which has no leading axis to "
                             f"scan over: {x}.")
    lengths = [np.shape(x)[0] for x in xs_flat]
    if length is not None:
        if isinstance(length, Tracer):
            length = concrete_value(
                length, "The `length` argument to `scan` expects a concrete `int` value. For "
                        "scan-like iteration with a dynamic length, use `while_loop` or "
                        "`fori_loop`.")
        length = int(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def _stack(ys: Sequence[Any]) -> Any:
    return concatenate([expand_dims(y, (0,)) for y in ys], 0)


def _scan_python(f: Callable, init: Any, xs_flat: list, xs_tree: PyTreeDef, length: int,
                 reverse: bool) -> tuple[Any, Any]:
    """scan under `disable_jit`: a plain Python loop over slices, as JAX does."""
    if length == 0:
        raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                         "output type is unknown.")
    carry, ys = init, []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        x = tree_unflatten(xs_tree, [index_in_dim(x, i, keepdims=False) for x in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, tree_map(lambda *leaves: _stack(leaves), *ys)


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1, _split_transpose: bool = False
         ) -> tuple[Any, Any]:
    """Loop `carry, y = f(carry, x)` over the leading axis of xs; returns (carry, stacked ys).
    `_split_transpose` (JAX's: transpose in two scans, to save memory) changes no value;
    tracejit's transpose is always one scan."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    if not refs_in_use() or config.jax_disable_jit:
        return _scan(f, init, xs, length, reverse, unroll)
    owner = object()

    def run(plan):  # the Refs the body touches are carried
        if not plan:  # (until the body touches a Ref, the loop is staged as it is)
            @functools.wraps(f)  # (errors name the user's parameters)
            def plain(c, x):
                with ref_scope(owner, (), ()):
                    return f(c, x)
            return _scan(plain, init, xs, length, reverse, unroll), []

        def body(c, x):
            with ref_scope(owner, plan, c[1]) as scope:
                out = f(c[0], x)
                if not isinstance(out, (tuple, list)) or len(out) != 2:
                    return out  # (_scan says what is wrong with it)
                # the Refs' values ride along in the carry; the pair keeps its type
                return type(out)([(out[0], [scope.values[r] for r in plan]), out[1]])
        out = _scan(body, (init, current_values(plan)), xs, length, reverse, unroll)
        return type(out)([out[0][0], out[1]]), out[0][1]
    return thread_refs(owner, run)


def _scan(f: Callable, init: Any, xs: Any, length: int | None, reverse: bool,
          unroll: int | bool) -> tuple[Any, Any]:
    init_flat, init_tree = tree_flatten(init)
    xs_flat, xs_tree = tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    if config.jax_disable_jit:
        return _scan_python(f, init, xs_flat, xs_tree, length, reverse)
    _, args_tree = tree_flatten((init, xs))
    x_avals = [a.update(shape=a.shape[1:]) for a in _flat_avals(xs_flat)]

    def trace_body(carry_avals):
        t = _trace(f, args_tree, carry_avals + x_avals, "scan")
        if t.out_tree.node_type not in (tuple, list) or len(t.out_tree.children) != 2:
            raise TypeError(f"scan body output must be a pair, got "
                            f"{tree_unflatten(t.out_tree, t.out_avals)}.")
        return t, t.out_tree.children[0]

    init_avals = _flat_avals(init_flat)
    body, carry_tree = trace_body(init_avals)
    num_carry = len(init_flat)
    if carry_tree.num_leaves == num_carry:
        init_flat, changed = _promote_weak_init(init_flat, init_avals, body.out_avals[:num_carry])
        if changed:
            init_avals = _flat_avals(init_flat)
            body, carry_tree = trace_body(init_avals)
    _check_carry("scan body", f, init_tree, init_avals, carry_tree,
                 body.out_avals[:carry_tree.num_leaves])
    if isinstance(unroll, Tracer):
        unroll = concrete_value(unroll, "The `unroll` argument to `scan` expects a concrete "
                                        "`int` or `bool` value.")
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(length, 1) if unroll else 1
    if int(unroll) < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    jaxpr, consts, nc = body.jaxpr, body.consts, len(body.consts)
    fwd = _forwarding(jaxpr.jaxpr)
    # a carry the body leaves unchanged becomes a constant; it comes back as init gave it
    move = [f == nc + i for i, f in enumerate(fwd[:num_carry])]
    moved = [x for x, m in zip(init_flat, move) if m]
    args = [x for x, m in zip(init_flat, move) if not m] + xs_flat
    # a y that is just the x slice is xs itself
    y_fwd = [f - nc - len(moved) if f is not None and f >= nc + num_carry else None
             for f in fwd[num_carry:]]
    jaxpr = _keep_outputs(jaxpr, [not m for m in move] + [f is None for f in y_fwd])
    jaxpr = _rebuild(jaxpr, invars=_move_to_front(jaxpr.jaxpr.invars,
                                                  [False] * nc + move + [False] * len(xs_flat)))
    outs = iter(scan_p.bind(*moved, *consts, *args, jaxpr=jaxpr, num_consts=len(moved) + nc,
                            num_carry=num_carry - len(moved), length=length,
                            reverse=bool(reverse), unroll=int(unroll)))
    kept = iter(moved)
    carry = [next(kept) if m else next(outs) for m in move]
    ys = [next(outs) if f is None else _asarray(args[f]) for f in y_fwd]
    return tree_unflatten(body.out_tree, carry + ys)


def map(f: Callable, xs: Any) -> Any:  # noqa: A001 - lax's name
    """`stack([f(x) for x in xs])` over the leading axis of (pytree) xs, via scan."""
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """Prefix combination `[a, fn(a, b), fn(fn(a, b), c), ...]` of an associative `fn` along
    `axis`, in O(log n) rounds of elementwise work (Blelloch's algorithm, as JAX builds it)."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    elems_flat, tree = tree_flatten(elems)
    axis = canonicalize_axis(axis, np.ndim(elems_flat[0]))
    if reverse:
        elems_flat = [rev(e, [axis]) for e in elems_flat]
    num_elems = np.shape(elems_flat[0])[axis]
    if any(np.shape(e)[axis] != num_elems for e in elems_flat[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[np.shape(e) for e in elems_flat]})")

    def combine(a_flat, b_flat):
        return tree_flatten(fn(tree_unflatten(tree, a_flat), tree_unflatten(tree, b_flat)))[0]

    def slices(elems, start, stop, stride=1):
        return [slice_in_dim(e, start, stop, stride, axis) for e in elems]

    def interleave(a, b):
        a_n, b_n = np.shape(a)[axis], np.shape(b)[axis]
        a_pad, b_pad = [(0, 0, 0)] * np.ndim(a), [(0, 0, 0)] * np.ndim(b)
        a_pad[axis] = (0, 1 if a_n == b_n else 0, 1)
        b_pad[axis] = (1, 0 if a_n == b_n else 1, 1)
        zero = np.array(0, get_aval(a).dtype)
        op = bitwise_or if get_aval(a).dtype == dtypes.bool_ else add
        return op(pad(a, zero, a_pad), pad(b, zero, b_pad))

    def scan_rec(elems):
        # odd outputs: the scan of adjacent pairs combined (recursively); even outputs: an odd
        # output combined with the next element; then interleave the two
        n = np.shape(elems[0])[axis]
        if n < 2:
            return elems
        odd = scan_rec(combine(slices(elems, 0, -1, 2), slices(elems, 1, None, 2)))
        even = combine(slices(odd, 0, -1) if n % 2 == 0 else odd, slices(elems, 2, None, 2))
        even = [concatenate([slice_in_dim(e, 0, 1, 1, axis), r], axis)
                for e, r in zip(elems, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    scans = scan_rec(elems_flat)
    if reverse:
        scans = [rev(s, [axis]) for s in scans]
    return tree_unflatten(tree, scans)


# --- fori_loop -----------------------------------------------------------------------------

def _fori_scan_body(body_fun: Callable) -> Callable:
    def scanned_fun(loop_carry, _):
        i, x = loop_carry
        # `+`, not lax.add: under disable_jit the index stays a Python int, as in JAX
        return (i + 1, body_fun(i, x)), None
    return scanned_fun


def _fori_while_body(body_fun: Callable) -> Callable:
    def while_body_fun(loop_carry):
        i, upper, x = loop_carry
        return add(i, 1), upper, body_fun(i, x)
    return while_body_fun


def _fori_cond(loop_carry):
    i, upper, _ = loop_carry
    return lt(i, upper)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)`. Concrete bounds lower to scan
    (the index is a weak Python int), traced bounds to while_loop."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lower_dtype, lower_weak = dtypes.dtype_and_weak(lower)
    upper_dtype, upper_weak = dtypes.dtype_and_weak(upper)
    dtype = lower_dtype if lower_dtype == upper_dtype else None
    if dtype is None and lower_dtype.kind == "i" and upper_dtype.kind == "i":
        # one weakly typed bound (a Python int) takes the other's type
        if lower_weak and not upper_weak:
            dtype = upper_dtype
        elif upper_weak and not lower_weak:
            dtype = lower_dtype
    if dtype is None:
        raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                        f"{lower_dtype.name} and {upper_dtype.name}")
    use_scan = is_concrete(lower) and is_concrete(upper)
    if use_scan:
        try:
            lower_, upper_ = int(lower), int(upper)
        except TypeError:
            use_scan = False
    if use_scan:
        length = max(upper_ - lower_, 0)
        if config.jax_disable_jit and length == 0:
            return init_val
        (_, result), _ = scan(_fori_scan_body(body_fun), (lower_, init_val), None,
                              length=length, unroll=False if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if lower_dtype != dtype:
        lower = convert_element_type(lower, dtype)
    if upper_dtype != dtype:
        upper = convert_element_type(upper, dtype)
    _, _, result = while_loop(_fori_cond, _fori_while_body(body_fun), (lower, upper, init_val))
    return result


# --- transformation and DCE rules of while -----------------------------------------------

_WHILE_REVERSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = _split(primals, nc, nb)
    _, bconst_t, carry_t = _split(tangents, nc, nb)
    bconst_nz, carry_nz = nonzero_mask(bconst_t), nonzero_mask(carry_t)
    while True:  # a carry's tangent is nonzero if it starts so or the body makes it so
        body, out_nz = jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, carry_nz)
        if out_nz == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz)
    n, nbt, nct = len(carry), sum(bconst_nz), sum(carry_nz)
    # jvp body binders: (bconsts, carry, bconst tangents, carry tangents); while wants the
    # body consts first: (bconsts, bconst tangents, carry, carry tangents)
    body = permute_invars(body, [*range(nb), *range(nb + n, nb + n + nbt), *range(nb, nb + n),
                                 *range(nb + n + nbt, nb + n + nbt + nct)])
    carry_avals = [get_aval(c) for c in carry]
    cond = add_unused_invars(cond_jaxpr, [a for a, z in zip(carry_avals, carry_nz) if z])
    carry_t = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    outs = while_p.bind(*cconsts, *bconsts, *nonzero_tangents(bconst_t), *carry, *carry_t,
                        cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=nc,
                        body_nconsts=nb + nbt)
    return outs[:n], with_zeros(outs[n:], carry_nz, carry_avals)


def _while_linearize(primals, tangents, **params):
    """The primal loop runs now; the tangents come from the whole JVP loop (which recomputes
    the primal) staged into the linear jaxpr: forward mode works, transposing it cannot."""
    outs = while_p.bind(*primals, **params)
    _, t_out = _while_jvp(primals, tangents, **params)
    return outs, t_out


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_REVERSE_ERROR)


def _while_batch(vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = axis_size(vals, dims)
    nc, nb = cond_nconsts, body_nconsts
    batched = [d is not not_mapped for d in dims]
    cc_b, bc_b, carry_b = _split(batched, nc, nb)
    while True:
        _, out_b = batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b)
        if out_b == carry_b:
            break
        carry_b = _or(carry_b, out_b)
    _, (pred_b,) = batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False)
    if pred_b:  # lanes finish at different steps: every carry is selected per lane
        carry_b = [True] * len(carry_b)
    body, _ = batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b)
    cond, _ = batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False)
    cconsts, bconsts, carry = _split(move_to_front(vals, dims), nc, nb)
    carry = [bdim_at_front(c, d, size) if b and d is not_mapped else c
             for c, d, b in zip(carry, dims[nc + nb:], carry_b)]
    if not pred_b:
        outs = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond, body_jaxpr=body,
                            cond_nconsts=nc, body_nconsts=nb)
        return outs, batch_dims(carry_b)
    carry_avals = [get_aval(c) for c in carry]

    def any_lane(*args):
        (pred,) = eval_closed(cond, *args)
        return [reduce_or(pred, (0,))]

    def step_live_lanes(*args):
        cc, bc, old = _split(args, nc, nb)
        (pred,) = eval_closed(cond, *cc, *old)
        new = eval_closed(body, *bc, *old)
        return [select_n(broadcast_in_dim(pred, get_aval(o).shape, (0,)), o, x)
                for o, x in zip(old, new)]

    cc_avals = [get_aval(c) for c in cconsts]
    any_cond = trace_closed(any_lane, cc_avals + carry_avals)
    step = trace_closed(step_live_lanes, cc_avals + [get_aval(c) for c in bconsts] + carry_avals)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, cond_jaxpr=any_cond,
                        body_jaxpr=step, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, [0] * len(outs)


while_p.def_jvp(_while_jvp)
while_p.def_linearize(_while_linearize)
while_p.def_transpose(_while_transpose)
while_p.def_batch(_while_batch)


def _dce_loop_body(body, carry: list[bool], ys: list[bool], carry_start: int):
    """A loop body pruned to the needed carries and outputs `ys`: a carry is needed when its
    result is used or the body reads it for a needed output (to a fixed point). Returns the
    body, which of its inputs it reads (carries from `carry_start`), and the needed carries."""
    while True:
        pruned, reads = dce_closed(body, carry + ys)
        grown = [c or r for c, r in zip(carry, reads[carry_start:carry_start + len(carry)])]
        if grown == carry:
            return pruned, reads, carry
        carry = grown


def _dce_while(eqn: Eqn, used: list[bool]) -> Eqn:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond, cond_reads = dce_closed(p["cond_jaxpr"], [True])
    carry = [u or r for u, r in zip(used, cond_reads[cn:])]
    body, reads, carry = _dce_loop_body(p["body_jaxpr"], carry, [], bn)
    cond_consts, body_consts = eqn.invars[:cn], eqn.invars[cn:cn + bn]
    invars = (compress(cond_consts, cond_reads[:cn]) + compress(body_consts, reads[:bn])
              + compress(eqn.invars[cn + bn:], carry))
    return eqn.replace(invars=invars, outvars=compress(eqn.outvars, carry), params={
        **p, "cond_jaxpr": keep_invars(cond, cond_reads[:cn] + carry),
        "body_jaxpr": keep_invars(body, reads[:bn] + carry),
        "cond_nconsts": sum(cond_reads[:cn]), "body_nconsts": sum(reads[:bn])})


while_p.def_dce(_dce_while)


# --- transformation and DCE rules of scan ------------------------------------------------

def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = _split(primals, nc, ncar)
    const_t, carry_t, xs_t = _split(tangents, nc, ncar)
    const_nz, carry_nz, xs_nz = nonzero_mask(const_t), nonzero_mask(carry_t), nonzero_mask(xs_t)
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        body, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [False] * n_ys)
        if out_nz[:ncar] == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz[:ncar])
    ys_nz = out_nz[ncar:]
    nx, nct, ncart, nxt, nyt = len(xs), sum(const_nz), sum(carry_nz), sum(xs_nz), sum(ys_nz)
    p = nc + ncar + nx
    # jvp binders (consts, carry, xs, their tangents) -> (consts, tangents, carry, ...) for scan
    body = permute_invars(body, [*range(nc), *range(p, p + nct), *range(nc, nc + ncar),
                                 *range(p + nct, p + nct + ncart), *range(nc + ncar, p),
                                 *range(p + nct + ncart, p + nct + ncart + nxt)])
    q = ncar + n_ys
    body = permute_outvars(body, [*range(ncar), *range(q, q + ncart), *range(ncar, q),
                                  *range(q + ncart, q + ncart + nyt)])
    carry_t = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    outs = scan_p.bind(*consts, *nonzero_tangents(const_t), *carry, *carry_t, *xs,
                       *nonzero_tangents(xs_t), jaxpr=body, num_consts=nc + nct,
                       num_carry=ncar + ncart, length=length, reverse=reverse, unroll=unroll)
    carry_out, carry_t_out, ys, ys_t = _split(outs, ncar, ncart, n_ys)
    out_avals = [get_aval(o) for o in carry_out + ys]
    return carry_out + ys, (with_zeros(carry_t_out, carry_nz, out_avals[:ncar])
                            + with_zeros(ys_t, ys_nz, out_avals[ncar:]))


def _scan_linearize(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse,
                    unroll):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = _split(primals, nc, ncar)
    const_t, carry_t, xs_t = _split(tangents, nc, ncar)
    const_nz, carry_nz, xs_nz = nonzero_mask(const_t), nonzero_mask(carry_t), nonzero_mask(xs_t)
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        known, lin, num_res, out_nz = linearize_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                                      carry_nz + [False] * n_ys)
        if out_nz[:ncar] == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz[:ncar])
    n_out = ncar + n_ys
    # residuals that are consts or xs of the loop are passed as they are; the others are
    # stacked per iteration as extra ys of the known loop
    kj = known.jaxpr
    const_of = {v: i for i, v in enumerate(kj.invars[:nc])}
    xs_of = {v: i for i, v in enumerate(kj.invars[nc + ncar:])}
    res_vars = kj.outvars[n_out:]
    invariant = [i for i, v in enumerate(res_vars) if v in const_of]
    sliced = [i for i, v in enumerate(res_vars) if v in xs_of and v not in const_of]
    stacked = [i for i in range(num_res) if i not in invariant and i not in sliced]
    known = keep_outvars(known, [True] * n_out + [i in stacked for i in range(num_res)])
    outs = scan_p.bind(*consts, *carry, *xs, jaxpr=known, num_consts=nc, num_carry=ncar,
                       length=length, reverse=reverse, unroll=unroll)
    primal_out, res_stacked = outs[:n_out], outs[n_out:]
    ys_nz = out_nz[ncar:]
    out_avals = [get_aval(o) for o in primal_out]
    if not any(out_nz):
        return primal_out, with_zeros([], out_nz, out_avals)
    nct, ncart, nxt = sum(const_nz), sum(carry_nz), sum(xs_nz)
    r = num_res
    lin = permute_invars(lin, [*invariant, *range(r, r + nct), *range(r + nct, r + nct + ncart),
                               *stacked, *sliced, *range(r + nct + ncart, r + nct + ncart + nxt)])
    res_consts = [consts[const_of[res_vars[i]]] for i in invariant]
    res_xs = [xs[xs_of[res_vars[i]]] for i in sliced]
    carry_t = [instantiate(t) for t, z in zip(carry_t, carry_nz) if z]
    t_out = scan_p.bind(*res_consts, *nonzero_tangents(const_t), *carry_t, *res_stacked, *res_xs,
                        *nonzero_tangents(xs_t), jaxpr=lin, num_consts=len(res_consts) + nct,
                        num_carry=ncart, length=length, reverse=reverse, unroll=unroll)
    carry_t_out, ys_t = t_out[:ncart], t_out[ncart:]
    return primal_out, (with_zeros(carry_t_out, carry_nz, out_avals[:ncar])
                        + with_zeros(ys_t, ys_nz, out_avals[ncar:]))


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    """The reverse loop: cotangents of the carries flow backwards as its carry, those of the
    linear consts accumulate in extra carries, and those of the linear xs come out as ys.
    Every carry of a linear loop is linear (a constant zero init is treated so too)."""
    nc, ncar = num_consts, num_carry
    consts, carry, xs = _split(args, nc, ncar)
    ct_carry, ct_ys = cts[:ncar], cts[ncar:]
    const_lin = [is_undefined(c) for c in consts]
    xs_lin = [is_undefined(x) for x in xs]
    ires = [c for c, lin in zip(consts, const_lin) if not lin]
    eres = [x for x, lin in zip(xs, xs_lin) if not lin]
    in_avals = jaxpr.in_avals
    const_avals, carry_avals, x_avals = _split(in_avals, nc, ncar)
    lin_const_avals = [a for a, lin in zip(const_avals, const_lin) if lin]
    ys_nz = nonzero_mask(ct_ys)
    y_avals = jaxpr.out_avals[ncar:]

    def body_t(*args):
        ires_, acc, ct_c, rest = _split(args, len(ires), len(lin_const_avals), ncar)
        ct_y, eres_ = rest[:sum(ys_nz)], iter(rest[sum(ys_nz):])
        ires_ = iter(ires_)
        ins = ([UndefinedPrimal(a) if lin else next(ires_)
                for a, lin in zip(const_avals, const_lin)]
               + [UndefinedPrimal(a) for a in carry_avals]
               + [UndefinedPrimal(a) if lin else next(eres_) for a, lin in zip(x_avals, xs_lin)])
        cts_out = list(ct_c) + with_zeros(ct_y, ys_nz, y_avals)
        cts_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, ins, cts_out)
        ct_consts, ct_carry_in, ct_xs = _split(cts_in, nc, ncar)
        acc = [instantiate(add_tangents(a, c))
               for a, c in zip(acc, [c for c, lin in zip(ct_consts, const_lin) if lin])]
        return (acc + [instantiate(c) for c in ct_carry_in]
                + [instantiate(c) for c, lin in zip(ct_xs, xs_lin) if lin])

    t_avals = ([get_aval(c) for c in ires] + lin_const_avals + carry_avals
               + [a for a, nz in zip(y_avals, ys_nz) if nz]
               + [a for a, lin in zip(x_avals, xs_lin) if not lin])
    body = trace_closed(body_t, t_avals)
    n_acc = len(lin_const_avals)
    outs = scan_p.bind(*ires, *[zeros_like_aval(a) for a in lin_const_avals],
                       *[instantiate(c) for c in ct_carry], *nonzero_tangents(ct_ys), *eres,
                       jaxpr=body, num_consts=len(ires), num_carry=n_acc + ncar, length=length,
                       reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = _split(outs, n_acc, ncar)
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return ([next(ct_consts) if lin else None for lin in const_lin]
            + [ct if is_undefined(c) else None for c, ct in zip(carry, ct_init)]
            + [next(ct_xs) if lin else None for lin in xs_lin])


def _scan_batch(vals, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    size = axis_size(vals, dims)
    nc, ncar = num_consts, num_carry
    const_b, carry_b, xs_b = _split([d is not not_mapped for d in dims], nc, ncar)
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        body, out_b = batch_jaxpr(jaxpr, size, const_b + carry_b + xs_b,
                                  carry_b + [False] * n_ys)
        if out_b[:ncar] == carry_b:
            break
        carry_b = _or(carry_b, out_b[:ncar])
    (consts, carry, xs), (_, carry_d, xs_d) = _split(vals, nc, ncar), _split(dims, nc, ncar)
    consts = move_to_front(consts, dims[:nc])
    carry = [bdim_at_front(c, d, size) if b else c for c, d, b in zip(carry, carry_d, carry_b)]
    xs = [x if d is not_mapped else moveaxis(x, d, 1) for x, d in zip(xs, xs_d)]
    outs = scan_p.bind(*consts, *carry, *xs, jaxpr=body, num_consts=nc, num_carry=ncar,
                       length=length, reverse=reverse, unroll=unroll)
    return outs, batch_dims(carry_b) + batch_dims(out_b[ncar:], 1)


scan_p.def_jvp(_scan_jvp)
scan_p.def_linearize(_scan_linearize)
scan_p.def_transpose(_scan_transpose)
scan_p.def_batch(_scan_batch)


def _dce_scan(eqn: Eqn, used: list[bool]) -> Eqn:
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    carry, ys = used[:nk], used[nk:]
    body, reads, carry = _dce_loop_body(p["jaxpr"], carry, ys, nc)
    keep = reads[:nc] + carry + reads[nc + nk:]
    return eqn.replace(invars=compress(eqn.invars, keep), outvars=compress(eqn.outvars, carry + ys),
                       params={**p, "jaxpr": keep_invars(body, keep),
                               "num_consts": sum(reads[:nc]), "num_carry": sum(carry)})


scan_p.def_dce(_dce_scan)
