"""Tensor contractions of tracejit.numpy: dot, vdot, matmul, matvec, vecmat, vecdot, inner,
outer, tensordot, einsum, kron, cross — all lowered to lax.dot_general or elementwise ops.

As in JAX, operands are not converted before the contraction: dot_general takes mixed dtypes and
`preferred_element_type` (the promoted dtype), so integers accumulate in the result type.
"""
from __future__ import annotations

import collections
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from ..lax import lenient as lax
from ..lax._base import canonicalize_axis
from ..runtime.sharded import jitted_in_jax
from ._creation import zeros_like
from ._shape import moveaxis, ravel
from ._ufuncs import multiply, subtract
from ._util import _asarray, asarray, check_arraylike, promote_dtypes

__all__ = ["dot", "vdot", "matmul", "matvec", "vecmat", "vecdot", "inner", "outer", "tensordot",
           "einsum", "kron", "cross"]


def _arrays(name: str, *args: Any) -> list:
    check_arraylike(name, *args)
    return [_asarray(a) for a in args]  # (JAX's: host data is not placed under set_mesh here)


def _result_dtype(preferred: Any, *args: Any) -> tuple[np.dtype, bool]:
    """The dtype a contraction produces: JAX's promotion (and weak type) of the operands, or the
    user's preferred_element_type (then strong)."""
    if preferred is None:
        return dtypes.result_type_and_weak(*args)
    return dtypes.check_user_dtype(preferred, "preferred_element_type"), False


def _conj(x: Any) -> Any:
    return lax.conj(x) if get_aval(x).dtype.kind == "c" else x


@jitted_in_jax(params=("a", "b"))
def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """jnp.dot: scalars multiply; otherwise contract a's last axis with b's second-to-last (or
    only) axis."""
    a, b = _arrays("dot", a, b)
    dtype, weak = _result_dtype(preferred_element_type, a, b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    if a_ndim == 0 or b_ndim == 0:
        contract = ((), ())
    else:
        contract = ((a_ndim - 1,), (max(b_ndim - 2, 0),))
    out = lax.dot_general(a, b, (contract, ((), ())), precision, preferred_element_type=dtype)
    return lax.convert_element_type(out, dtype, weak)


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """jnp.matmul (`@`): batched matrix product with NumPy's broadcasting of batch dims; a 1-D
    operand is a vector whose dimension is removed from the result."""
    a, b = _arrays("matmul", a, b)
    a_aval, b_aval = get_aval(a), get_aval(b)
    for i, aval in enumerate((a_aval, b_aval)):
        if aval.ndim < 1:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                             f"ndim {aval.ndim}")
    dtype, weak = _result_dtype(preferred_element_type, a, b)
    a_is_mat, b_is_mat = a_aval.ndim > 1, b_aval.ndim > 1
    a_batch = a_aval.shape[:-2] if a_is_mat else ()
    b_batch = b_aval.shape[:-2] if b_is_mat else ()
    nbatch = max(len(a_batch), len(b_batch))
    a_batch = (None,) * (nbatch - len(a_batch)) + a_batch
    b_batch = (None,) * (nbatch - len(b_batch)) + b_batch
    # Each broadcast batch dim is a dot_general batch dim (equal sizes), a free dim of the
    # operand that has it (the other lacks it or has size 1), or squeezed from both (both 1).
    a_squeeze, b_squeeze, both_squeeze = [], [], []
    a_bdims, b_bdims, idx_batch, idx_a_free, idx_b_free = [], [], [], [], []
    for i, (sa, sb) in enumerate(zip(a_batch, b_batch)):
        if sa is None:
            idx_b_free.append(i)
        elif sb is None:
            idx_a_free.append(i)
        elif sa == 1 and sb == 1:
            a_squeeze.append(len(idx_batch) + len(idx_a_free) + len(a_squeeze))
            b_squeeze.append(len(idx_batch) + len(idx_b_free) + len(b_squeeze))
            both_squeeze.append(i)
        elif sa == 1:
            idx_b_free.append(i)
            a_squeeze.append(len(idx_batch) + len(idx_a_free) + len(a_squeeze))
        elif sb == 1:
            idx_a_free.append(i)
            b_squeeze.append(len(idx_batch) + len(idx_b_free) + len(b_squeeze))
        elif sa == sb:
            a_bdims.append(len(idx_batch) + len(idx_a_free))
            b_bdims.append(len(idx_batch) + len(idx_b_free))
            idx_batch.append(i)
        else:
            raise ValueError(f"Incompatible types for matmul arguments: {a_aval.str_short()} and "
                             f"{b_aval.str_short()}")
    if a_is_mat:
        idx_a_free.append(nbatch)
    if b_is_mat:
        idx_b_free.append(nbatch + a_is_mat)
    perm = tuple(int(p) for p in np.argsort(idx_batch + idx_a_free + idx_b_free))
    a, b = lax.squeeze(a, a_squeeze), lax.squeeze(b, b_squeeze)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    out = lax.dot_general(a, b, (((a_ndim - 1,), (b_ndim - 1 - b_is_mat,)),
                                 (tuple(a_bdims), tuple(b_bdims))),
                          precision, preferred_element_type=dtype)
    out = lax.transpose(out, perm)
    if both_squeeze:
        out = lax.expand_dims(out, both_squeeze)
    return lax.convert_element_type(out, dtype, weak)


def matvec(x1: Any, x2: Any, /) -> Any:
    """jnp.matvec: matrix (..., n, m) times vector (..., m), batch dims broadcast."""
    x1, x2 = _arrays("matvec", x1, x2)
    if get_aval(x1).ndim < 2 or get_aval(x2).ndim < 1:
        raise ValueError(f"matvec requires x1 of rank >= 2 and x2 of rank >= 1, got shapes "
                         f"{get_aval(x1).shape} and {get_aval(x2).shape}")
    out = matmul(x1, lax.expand_dims(x2, (-1,)))
    return lax.squeeze(out, (-1,))


def vecmat(x1: Any, x2: Any, /) -> Any:
    """jnp.vecmat: conj(vector (..., n)) times matrix (..., n, m), batch dims broadcast."""
    x1, x2 = _arrays("vecmat", x1, x2)
    if get_aval(x1).ndim < 1 or get_aval(x2).ndim < 2:
        raise ValueError(f"vecmat requires x1 of rank >= 1 and x2 of rank >= 2, got shapes "
                         f"{get_aval(x1).shape} and {get_aval(x2).shape}")
    out = matmul(lax.expand_dims(_conj(x1), (-2,)), x2)
    return lax.squeeze(out, (-2,))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """jnp.vecdot: conj(x1) . x2 along `axis`, other dims broadcast."""
    x1, x2 = _arrays("vecdot", x1, x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    ax1 = canonicalize_axis(axis, len(s1))
    ax2 = canonicalize_axis(axis, len(s2))
    if s1[ax1] != s2[ax2]:
        raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
    x1 = lax.expand_dims(moveaxis(_conj(x1), ax1, -1), (-2,))
    x2 = lax.expand_dims(moveaxis(x2, ax2, -1), (-1,))
    out = matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)
    return lax.squeeze(out, (-2, -1))


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """jnp.vdot: dot of the flattened operands, conjugating the first."""
    a, b = _arrays("vdot", a, b)
    return dot(ravel(_conj(a)), ravel(b), precision=precision,
               preferred_element_type=preferred_element_type)


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """jnp.tensordot: `axes` is an int (last n of a with first n of b) or a pair of axis
    sequences (or of single axes)."""
    a, b = _arrays("tensordot", a, b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    dtype, weak = _result_dtype(preferred_element_type, a, b)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        if axes > min(a_ndim, b_ndim):
            raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                            f"({get_aval(a).shape} and {get_aval(b).shape})")
        contract = tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax1, ax2 = axes
        if isinstance(ax1, (int, np.integer)) and isinstance(ax2, (int, np.integer)):
            contract = (canonicalize_axis(ax1, a_ndim),), (canonicalize_axis(ax2, b_ndim),)
        elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
            if len(ax1) != len(ax2):
                raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} "
                                f"and {ax2}.")
            contract = (tuple(canonicalize_axis(i, a_ndim) for i in ax1),
                        tuple(canonicalize_axis(i, b_ndim) for i in ax2))
        else:
            raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                            f"lists, got {ax1} and {ax2}")
    else:
        raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                        "lists/tuples of ints.")
    out = lax.dot_general(a, b, (contract, ((), ())), precision, preferred_element_type=dtype)
    return lax.convert_element_type(out, dtype, weak)


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """jnp.inner: contract the last axes (scalars multiply)."""
    a, b = _arrays("inner", a, b)
    if get_aval(a).ndim == 0 or get_aval(b).ndim == 0:
        if preferred_element_type is not None:
            a, b = asarray(a, preferred_element_type), asarray(b, preferred_element_type)
        return multiply(a, b)
    return tensordot(a, b, (-1, -1), precision=precision,
                     preferred_element_type=preferred_element_type)


def outer(a: Any, b: Any, out: None = None) -> Any:
    """jnp.outer: products of every element of flattened a with every element of flattened b."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    a, b = promote_dtypes(*_arrays("outer", a, b))
    a, b = ravel(a), ravel(b)
    return multiply(lax.expand_dims(a, (1,)), lax.expand_dims(b, (0,)))


def kron(a: Any, b: Any) -> Any:
    """jnp.kron: the Kronecker product (operands padded with leading 1-dims to one rank)."""
    a, b = promote_dtypes(*_arrays("kron", a, b))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    ndim = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (ndim - len(a_shape)) + a_shape
    b_shape = (1,) * (ndim - len(b_shape)) + b_shape
    # interleave: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...); the product's pairs merge
    a = lax.reshape(a, [d for s in a_shape for d in (s, 1)])
    b = lax.reshape(b, [d for s in b_shape for d in (1, s)])
    return lax.reshape(multiply(a, b), tuple(x * y for x, y in zip(a_shape, b_shape)))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """jnp.cross: cross product of 2- or 3-vectors along axisa/axisb, result vectors along
    axisc (`axis` sets all three); two 2-vectors give the scalar z component."""
    a, b = _arrays("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")

    def component(x, i):
        return lax.index_in_dim(x, i, -1, keepdims=False)

    a0, a1, b0, b1 = component(a, 0), component(a, 1), component(b, 0), component(b, 1)
    if na == 2 and nb == 2:
        return subtract(multiply(a0, b1), multiply(a1, b0))
    a2 = component(a, 2) if na == 3 else zeros_like(a0)
    b2 = component(b, 2) if nb == 3 else zeros_like(b0)
    c = [subtract(multiply(a1, b2), multiply(a2, b1)), subtract(multiply(a2, b0), multiply(a0, b2)),
         subtract(multiply(a0, b1), multiply(a1, b0))]
    c = [lax.expand_dims(x, (0,)) for x in c]
    return moveaxis(lax.concatenate(c, 0), 0, axisc)


# --- einsum --------------------------------------------------------------------------------


def einsum(subscripts: Any, /, *operands: Any, out: None = None, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None) -> Any:
    """jnp.einsum: Einstein summation, as a sequence of pairwise dot_generals. Supports `...`,
    implicit output, repeated labels (traces and diagonals) and the interleaved
    (operand, sublist, ...) form. `optimize` picks the pairing order: False contracts left to
    right, anything else greedily (smallest intermediate first); an explicit path (a list of
    index pairs, optionally headed by 'einsum_path') is followed as given."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_subscripts(subscripts, operands)
    arrays = _arrays("einsum", *operands)
    inputs, output = _parse_subscripts(subscripts, [get_aval(x).shape for x in arrays])
    dtype, weak = _result_dtype(preferred_element_type, *arrays)
    sizes = _label_sizes(inputs, arrays)
    ops = list(zip(arrays, inputs))
    for step in _contraction_path(optimize, inputs, output, sizes):
        picked = [ops[k] for k in step]
        ops = [op for k, op in enumerate(ops) if k not in step]
        keep = set(output).union(*(names for _, names in ops))
        if len(picked) == 1:
            ops.append(_sum_labels(*picked[0], keep, dtype))
        else:
            (lhs, lhs_names), (rhs, rhs_names) = picked
            ops.append(_contract_pair(lhs, lhs_names, rhs, rhs_names, keep, output, dtype,
                                      precision))
    (x, names), = ops
    x, names = _sum_labels(x, names, set(output), dtype)
    x = lax.transpose(x, [names.index(c) for c in output])
    return lax.convert_element_type(x, dtype, weak)


def _interleaved_to_subscripts(first: Any, rest: Sequence[Any]) -> tuple[str, list]:
    """einsum(op0, sublist0, op1, sublist1, ..., [out_sublist]) -> a subscripts string."""
    args = [first, *rest]
    out_sublist = args.pop() if len(args) % 2 else None
    operands, sublists = args[0::2], args[1::2]

    def letters(sublist):
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
                out.append(string.ascii_letters[s])
            else:
                raise ValueError(f"einsum: sublist entries must be ints in [0, 52) or Ellipsis, "
                                 f"got {s!r}")
        return "".join(out)

    spec = ",".join(letters(s) for s in sublists)
    if out_sublist is not None:
        spec += "->" + letters(out_sublist)
    return spec, operands


def _parse_subscripts(spec: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """Input label strings (with `...` expanded into fresh labels) and the output labels."""
    spec = spec.replace(" ", "")
    if any(c in spec.replace("->", "", 1) for c in "->"):
        raise ValueError("Subscripts can only contain one '->'.")
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"Number of einsum subscripts, {len(terms)}, must be equal to the "
                         f"number of operands, {len(shapes)}.")
    for t in terms + ([out] if arrow else []):
        if t.replace("...", "").count(".") or t.count("...") > 1:
            raise ValueError("Invalid Ellipses.")
    used = set(spec)
    ell_ndim = 0
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        n = len(t) - 3 if "..." in t else len(t)
        if n > len(shape) or ("..." not in t and n != len(shape)):
            raise ValueError(f"Einstein sum subscript '{t}' does not contain the correct number "
                             f"of indices for operand {i}.")
        if "..." in t:
            ell_ndim = max(ell_ndim, len(shape) - n)
    fresh = [c for c in string.ascii_letters if c not in used][:ell_ndim]
    if len(fresh) < ell_ndim:
        raise ValueError("einsum: too many dimensions under '...' for the unused labels")
    ell = "".join(fresh)
    inputs = []
    for t, shape in zip(terms, shapes):
        if "..." in t:
            t = t.replace("...", ell[ell_ndim - (len(shape) - (len(t) - 3)):])
        inputs.append(t)
    if arrow:
        output = out.replace("...", ell)
        for c in output:
            if output.count(c) > 1:
                raise ValueError(f"Output character '{c}' appeared more than once in the output.")
            if not any(c in t for t in inputs):
                raise ValueError(f"Output character '{c}' did not appear in the input")
    else:
        counts = collections.Counter(c for t in inputs for c in t if c not in ell)
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return inputs, output


def _label_sizes(inputs: list[str], arrays: list) -> dict[str, int]:
    """Each label's size; a size-1 dimension broadcasts against the others (as NumPy)."""
    sizes: dict[str, int] = {}
    for i, (names, x) in enumerate(zip(inputs, arrays)):
        for c, d in zip(names, get_aval(x).shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = d
            elif d != prev and d != 1:
                raise ValueError(f"Size of label '{c}' for operand {i} ({prev}) does not match "
                                 f"previous terms ({d}).")
    return sizes


def _contraction_path(optimize: Any, inputs: list[str], output: str,
                      sizes: dict[str, int]) -> list[tuple[int, int]]:
    """Steps of one or two positions in the operand list; each step's result goes to the end of
    the list (opt_einsum's convention, so explicit paths from einsum_path work)."""
    n = len(inputs)
    if isinstance(optimize, (list, tuple)):
        path = [tuple(p) for p in optimize if not isinstance(p, str)]
        if any(len(p) > 2 for p in path):
            raise NotImplementedError("jax.numpy.einsum does not support simultaneous "
                                      "contraction of 3 or more operands.")
        return path
    if optimize is False or n < 3:
        return [(0, 1)] * (n - 1)
    names = list(inputs)
    path = []
    while len(names) > 1:
        best = None
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                rest = set(output).union(*(t for k, t in enumerate(names) if k not in (i, j)))
                kept = (set(names[i]) | set(names[j])) & rest
                cost = int(np.prod([sizes[c] for c in kept]))
                if best is None or cost < best[0]:
                    best = (cost, i, j, "".join(sorted(kept)))
        _, i, j, kept = best
        path.append((i, j))
        names = [t for k, t in enumerate(names) if k not in (i, j)] + [kept]
    return path


def _reduce_labels(x: Any, axes: Sequence[int], dtype: np.dtype) -> Any:
    x_dtype = get_aval(x).dtype
    if dtypes.result_type(x_dtype, dtype) != x_dtype:  # as JAX: sum in the wider result type
        x = lax.convert_element_type(x, dtype)
    reduce = lax.reduce_or if get_aval(x).dtype == dtypes.bool_ else lax.reduce_sum
    return reduce(x, tuple(axes))


def _sum_labels(x: Any, names: str, keep: set[str], dtype: np.dtype) -> tuple[Any, str]:
    """Sum out labels not in `keep`; take the diagonal of repeated labels."""
    for c, count in collections.Counter(names).items():
        if count > 1:
            axes = [i for i, n in enumerate(names) if n == c]
            shape = get_aval(x).shape
            iotas = [lax.broadcasted_iota(dtypes.int32, shape, a) for a in axes]
            mask = lax.eq(iotas[0], iotas[1])
            for other in iotas[2:]:
                mask = lax.bitwise_and(mask, lax.eq(iotas[0], other))
            # select (not multiply) so off-diagonal infs and NaNs do not leak in
            x = lax.select(mask, x, zeros_like(x))
            drop = axes if c not in keep else axes[1:]
            x = _reduce_labels(x, drop, dtype)
            names = "".join(n for i, n in enumerate(names) if i not in drop)
    unique = [i for i, c in enumerate(names) if c not in keep]
    if unique:
        x = _reduce_labels(x, unique, dtype)
        names = "".join(c for c in names if c in keep)
    return x, names


def _contract_pair(lhs: Any, lhs_names: str, rhs: Any, rhs_names: str, keep: set[str],
                   output: str, dtype: np.dtype, precision: Any) -> tuple[Any, str]:
    lhs, lhs_names = _squeeze_broadcast(lhs, lhs_names, rhs, rhs_names)
    rhs, rhs_names = _squeeze_broadcast(rhs, rhs_names, lhs, lhs_names)
    lhs, lhs_names = _sum_labels(lhs, lhs_names, keep | set(rhs_names), dtype)
    rhs, rhs_names = _sum_labels(rhs, rhs_names, keep | set(lhs_names), dtype)
    shared = [c for c in lhs_names if c in rhs_names]
    batch = [c for c in shared if c in keep]
    contracted = [c for c in shared if c not in keep]
    lhs_free = "".join(c for c in lhs_names if c not in shared)
    rhs_free = "".join(c for c in rhs_names if c not in shared)
    lb, rb = tuple(lhs_names.index(c) for c in batch), tuple(rhs_names.index(c) for c in batch)
    lc = tuple(lhs_names.index(c) for c in contracted)
    rc = tuple(rhs_names.index(c) for c in contracted)
    batch = "".join(batch)
    if batch + rhs_free + lhs_free == output:  # operand order that needs no final transpose
        out = lax.dot_general(rhs, lhs, ((rc, lc), (rb, lb)), precision,
                              preferred_element_type=dtype)
        return out, batch + rhs_free + lhs_free
    out = lax.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), precision, preferred_element_type=dtype)
    return out, batch + lhs_free + rhs_free


def _squeeze_broadcast(x: Any, names: str, other: Any, other_names: str) -> tuple[Any, str]:
    """Drop x's size-1 dims whose label has a larger size in `other` (they broadcast)."""
    shape, other_shape = get_aval(x).shape, get_aval(other).shape
    drop = [i for i, c in enumerate(names)
            if shape[i] == 1 and c in other_names and other_shape[other_names.index(c)] != 1]
    if not drop:
        return x, names
    return lax.squeeze(x, drop), "".join(c for i, c in enumerate(names) if i not in drop)

