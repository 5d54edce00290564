"""Fusion, the last pass of the pipeline (after compiler.rows): decides which values are computed
inside their consumers' loops instead of being written to memory, and writes each such group as
one `fused` equation, so that code generation only lowers what it is given.

Elementwise ops, broadcasts, iota and index-remapping shape ops fuse into consumers that are
themselves fusible or reductions; a value used more than once is materialised once, unless it
is a cheap broadcast/iota of something in memory or a cheap elementwise op of about one stored
array (copied into each consumer), or all its readers are in one kernel at the same element
(computed once there, in a register). Ops of two results computed together (the PRNG's
counters and threefry hash) fuse as a unit: the counters into every reader, the hash (over
HASH_FUSE_MIN_ELEMENTS) into the one kernel reading both of its words at the element it
computes (random bits -> floats), else it is a kernel of its own writing both. A `fused`
equation's body ends with its root (an elementwise op, index map or reduction, run as one loop
nest); the equations before it are computed element by element inside those loops. Row regions
(softmax and the like) arrive here as `row_map` equations (compiler.rows): one kernel each,
whose body is fused like any other jaxpr."""
from __future__ import annotations

from collections.abc import Sequence

from ..core.avals import ShapedArray
from ..core.interpret import eval_jaxpr
from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Var, renamed
from ..core.primitive import ELEMENTWISE, INDEX_MAP, REDUCTION, Primitive
from ..lax.elementwise import (add_p, bitcast_convert_type_p, convert_element_type_p, max_p,
                               min_p, mul_p, neg_p, select_n_p, sub_p)
from ..lax.polynomials import polynomial_p
from ..lax.shape import broadcast_in_dim_p, concatenate_p, reshape_p, rev_p, slice_p, squeeze_p


def element_op(eqn) -> bool:
    """Computable element by element (the primitive's declared fusion class is elementwise or
    an index map), all of its results at one element together: threefry2x32's two words."""
    if eqn.primitive.fusion not in (ELEMENTWISE, INDEX_MAP):
        return False
    if eqn.primitive is bitcast_convert_type_p:  # between widths the element counts differ
        return eqn.invars[0].aval.dtype.itemsize == eqn.outvars[0].aval.dtype.itemsize
    return True


def fusible(eqn) -> bool:
    """An element op of one result, computable inside a consumer's loop nest on its own."""
    return len(eqn.outvars) == 1 and element_op(eqn)


def multi_element(eqn) -> bool:
    """An element op of several results (threefry2x32, iota_2x32_shape): stored by a kernel of
    its own, or computed inside the one kernel reading all of its results (see `fuse`)."""
    return len(eqn.outvars) > 1 and element_op(eqn)


def is_elementwise(eqn) -> bool:
    """An elementwise op of one result (element i of each operand makes element i)."""
    return eqn.primitive.fusion == ELEMENTWISE and len(eqn.outvars) == 1


def is_reduction(eqn) -> bool:
    """A kernel root that reads fused operands."""
    return eqn.primitive.fusion == REDUCTION


def def_use(eqns) -> tuple[dict[Var, int], dict[Var, list[int]]]:
    """Index maps of a list of equations: var -> the equation defining it, and var -> the
    equations reading it (in order, once per operand position)."""
    producer = {v: k for k, e in enumerate(eqns) for v in e.outvars}
    users: dict[Var, list[int]] = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var):
                users.setdefault(v, []).append(k)
    return producer, users


# --- the fused primitive ---------------------------------------------------------------------

def _fused_abstract(*avals: ShapedArray, body: ClosedJaxpr) -> list[ShapedArray]:
    jaxpr = body.jaxpr
    if [(a.shape, a.dtype) for a in avals] != [(v.aval.shape, v.aval.dtype)
                                               for v in jaxpr.invars]:
        raise TypeError(f"fused: operands {[a.str_short() for a in avals]} do not match the "
                        f"body's inputs {[v.aval.str_short() for v in jaxpr.invars]}")
    return [v.aval for v in jaxpr.outvars]


def _fused_impl(*args, body: ClosedJaxpr) -> list:
    return eval_jaxpr(body.jaxpr, body.consts, *args)


fused_p = Primitive("fused", multiple_results=True)
fused_p.def_abstract_eval(_fused_abstract)
fused_p.def_impl(_fused_impl)


# --- the pass --------------------------------------------------------------------------------

def fuse(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with every group of two or more equations that run as one loop nest replaced by a
    `fused` equation, in the bodies of control flow (and row kernels) too. A lone elementwise
    op or reduction stays as it is: it is a loop nest of its own already."""
    return _fuse(jaxpr, {}, True)


def _kernel_of(k: int, eqns: list, producer: dict, lazy) -> set[int]:
    """The equations the kernel rooted at eqns[k] computes: k and, transitively, the producers
    of the lazy values (computed inside their readers' kernels) it reads."""
    group, stack = {k}, [k]
    while stack:
        for v in eqns[stack.pop()].invars:
            if isinstance(v, Var) and v in lazy and producer[v] not in group:
                group.add(producer[v])
                stack.append(producer[v])
    return group


def _fuse(jaxpr: Jaxpr, memo: dict, duplicate: bool) -> Jaxpr:
    eqns = [_in_bodies(eqn, memo) for eqn in jaxpr.eqns]
    lazy = _lazy_values(eqns, jaxpr.outvars, duplicate)
    if not lazy:
        return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)
    producer, _ = def_use(eqns)
    out: list[Eqn] = []
    for k, eqn in enumerate(eqns):
        if eqn.outvars and eqn.outvars[0] in lazy:
            continue  # computed inside the kernel(s) of its consumer
        if not (element_op(eqn) or is_reduction(eqn)):
            out.append(eqn)
            continue
        group = _kernel_of(k, eqns, producer, lazy)
        out.append(eqn if len(group) == 1 else _fused_eqn([eqns[i] for i in sorted(group)]))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, out, jaxpr.debug_info)


def _in_bodies(eqn: Eqn, memo: dict) -> Eqn:
    """Fusion inside the sub-jaxprs of control flow, calls and row kernels (signatures kept);
    eqns that shared a body still share its rewrite. A row kernel's body copies no cheap
    elementwise op into several loops: compiler.rows planned its passes over a row."""
    from .rows import row_map_p
    duplicate = eqn.primitive is not row_map_p

    def apply(value):
        if isinstance(value, ClosedJaxpr):
            if (value, duplicate) not in memo:
                memo[value, duplicate] = ClosedJaxpr(_fuse(value.jaxpr, memo, duplicate),
                                                     value.consts)
            return memo[value, duplicate]
        if isinstance(value, tuple) and value and all(isinstance(x, ClosedJaxpr) for x in value):
            return tuple(apply(x) for x in value)
        return value
    if eqn.primitive is fused_p or not any(
            isinstance(x, ClosedJaxpr) for value in eqn.params.values()
            for x in (value if isinstance(value, tuple) else (value,))):
        return eqn
    return eqn.replace(params={k: apply(v) for k, v in eqn.params.items()})


# Kernels stop growing at this cost (`eqn_cost`, ~instructions per element) or this depth (the
# longest chain of dependent equations in them): past either, fusion saves little memory
# traffic while LLVM's time grows faster than the kernel (and a loop body past
# codegen.VECTORIZE_MAX_BODY instructions is vectorised only over many elements), and equal
# pieces of a long chain are one kernel compiled once (codegen's outlined kernels). A long
# chain also runs faster cut: out-of-order execution overlaps a short chain's turns, not a long
# one's (100 steps of x * 1.0001 + 0.5 over 2^20 float32: 0.96 ms as 7 kernels, 1.77 ms as
# one). So chains of `sin` or of adds are cut every 32 equations, while a wide kernel of cheap
# ops and polynomials (ndtri's three rational functions, ~50 equations) stays whole.
MAX_KERNEL_COST = 256
MAX_KERNEL_DEPTH = 32
TRANSCENDENTAL_COST = 8


def eqn_cost(eqn: Eqn) -> int:
    """An equation's weight against MAX_KERNEL_COST: a transcendental op's native code is tens
    of instructions, a polynomial's two per coefficient, any other element op's a few."""
    if eqn.primitive.transcendental:
        return TRANSCENDENTAL_COST
    if eqn.primitive is polynomial_p:
        return len(eqn.invars)
    return 1


def eqn_depth(eqn: Eqn) -> int:
    """An equation's length as a chain against MAX_KERNEL_DEPTH: Horner's rule is a chain of
    one multiply-add per coefficient after the first."""
    return max(len(eqn.invars) - 1, 1) if eqn.primitive is polynomial_p else 1


def _fits(group: set[int], eqns: Sequence[Eqn]) -> bool:
    """Whether a kernel of these equations stays within both limits."""
    if sum(eqn_cost(eqns[i]) for i in group) > MAX_KERNEL_COST:
        return False
    depth: dict[Var, int] = {}
    for i in sorted(group):
        eqn = eqns[i]
        d = eqn_depth(eqn) + max((depth.get(v, 0) for v in eqn.invars if isinstance(v, Var)),
                                 default=0)
        if d > MAX_KERNEL_DEPTH:
            return False
        depth.update((v, d) for v in eqn.outvars)
    return True


# A kernel's loop nest is cut into at most this many pieces (backend/llvm/codegen.loop_pieces),
# its body emitted in each, so that a concatenate reads one operand in each piece. A concatenate
# of more operands is therefore stored by a kernel of its own, whose nest is cut into a piece
# per operand (each a copy of one operand), never computed inside its readers' loops: there
# each element would select among clamped reads of every operand (jnp.sin of 100 arrays
# concatenated: 35.7 ms, against 0.80 as a copy then a sin).
MAX_LOOP_PIECES = 8


def _wide_concatenate(eqn: Eqn) -> bool:
    return eqn.primitive is concatenate_p and len(eqn.invars) > MAX_LOOP_PIECES


def _lazy_values(eqns: Sequence[Eqn], outvars: Sequence, duplicate: bool) -> set[Var]:
    """The values computed inside their consumers' loops rather than stored."""
    consumers: dict[Var, list] = {}
    for eqn in eqns:
        for v in eqn.invars:
            if isinstance(v, Var):
                consumers.setdefault(v, []).append(eqn)
    outs = set(outvars)
    producer, _ = def_use(eqns)
    lazy: set[Var] = set()
    # the cost a lazy value pulls into its consumer's kernel, and the longest chain it ends
    size: dict[Var, int] = {}
    depth: dict[Var, int] = {}
    for eqn in eqns:
        if multi_element(eqn):
            # the counters (cheap: an index) go into every reader; the hash only where one
            # kernel reads all of its words at one element (_share_within_kernels)
            if eqn.primitive.cheap and not eqn.invars and all(
                    v.aval.ndim and v not in outs and consumers.get(v) and
                    all(element_op(u) or is_reduction(u) for u in consumers[v])
                    for v in eqn.outvars):
                lazy.update(eqn.outvars)
            continue
        if not fusible(eqn) or _wide_concatenate(eqn):
            continue
        v = eqn.outvars[0]
        if v.aval.ndim == 0 or v in outs:
            continue
        size[v] = eqn_cost(eqn) + sum(size.get(x, 0) for x in eqn.invars if x in lazy)
        depth[v] = eqn_depth(eqn) + max((depth.get(x, 0) for x in eqn.invars if x in lazy),
                                        default=0)
        if size[v] >= MAX_KERNEL_COST or depth[v] >= MAX_KERNEL_DEPTH:
            continue  # stored: a long chain is cut into kernels of equal length
        users = consumers.get(v, [])
        if not users or not all(element_op(u) or is_reduction(u) for u in users):
            continue
        if size[v] >= TRANSCENDENTAL_COST and any(
                u.primitive is broadcast_in_dim_p and u.outvars[0].aval.size >= 2 * v.aval.size
                for u in users):
            continue  # stored: its consumer would compute each element again and again
        if len(users) == 1 and sum(1 for x in users[0].invars if x is v) == 1:
            lazy.add(v)
        elif eqn.primitive.cheap and not any(x in lazy for x in eqn.invars):
            lazy.add(v)
        elif duplicate and eqn.primitive in _DUPLICABLE and \
                _reads_one_array(eqn, lazy, eqns, producer):
            lazy.add(v)
        elif _picks_from_stored(eqn, lazy, eqns, producer):
            lazy.add(v)
    _share_within_kernels(eqns, outs, consumers, lazy, producer)
    return lazy


# Cheap elementwise ops that XLA's fusion also duplicates into each consumer: recomputing one
# in every kernel that reads it costs a few instructions per element and saves storing it and
# reading it back (relu's max and the gradient's mask both read the bias add `x @ w + b`).
_DUPLICABLE = {add_p, sub_p, mul_p, neg_p, max_p, min_p, select_n_p, convert_element_type_p}


# Index maps that pick elements of their operand where they lie, in its order: read where a
# stored value is, one such map (or a chain of them) is a load at another index in each of its
# readers, as in XLA (jnp.cross's six column slices, each read twice: stored first, each in a
# kernel of its own, 4.2 ms for 1M cross products, JAX 0.12 0.75).
_PICKS = {slice_p, squeeze_p, reshape_p, rev_p}


def _picks_from_stored(eqn: Eqn, lazy: set[Var], eqns: Sequence[Eqn], producer: dict) -> bool:
    """Whether `eqn` is one of _PICKS (a reshape keeping the order), or a chain of them, read
    from a stored value: copied into each reader, it is a load there."""
    while eqn.primitive in _PICKS and not (
            eqn.primitive is reshape_p and eqn.params.get("dimensions") is not None):
        x = eqn.invars[0]
        if not isinstance(x, Var) or x not in lazy:
            return True
        eqn = eqns[producer[x]]
    return False


def _reads_one_array(eqn: Eqn, lazy: set[Var], eqns: Sequence[Eqn], producer: dict) -> bool:
    """Whether copying `eqn` into each of its consumers reads about one array of its size from
    memory (its other operands scalars or small broadcasts of stored values) and nothing that
    is itself computed lazily beyond a cheap index map of a stored value."""
    v = eqn.outvars[0]
    read = 0
    for x in eqn.invars:
        if not isinstance(x, Var):
            continue
        if x not in lazy:
            read += x.aval.size
            continue
        made = eqns[producer[x]]
        if not made.primitive.cheap or any(y in lazy for y in made.invars):
            return False
        read += sum(y.aval.size for y in made.invars if isinstance(y, Var))
    return read <= v.aval.size + v.aval.size // 8


def _share_within_kernels(eqns: Sequence[Eqn], outs: set, consumers: dict, lazy: set[Var],
                          producer: dict) -> None:
    """Adds to `lazy` the values read more than once whose readers all lie in one kernel, at the
    element that kernel's loop is at (elementwise readers of the same shape, up to an
    elementwise or reduction root): codegen computes such a value once per element and keeps it
    in a register (its elements are memoised per loop body), where storing it would cost the
    kernel that writes it, the memory and a second pass reading it back (the tanh derivative
    `d * (1 - t) + d * (1 - t) * t` of an MLP's backward pass). Consumers are decided before
    their producers (a reverse walk), so a producer whose readers just joined one kernel may
    join it too. `producer`: value -> the index of the eqn making it."""
    root: dict[int, int | None] = {}  # eqn -> the root of the kernel reading it at its element

    def kernel(k: int) -> set[int]:
        return _kernel_of(k, eqns, producer, lazy)

    for k in range(len(eqns) - 1, -1, -1):
        eqn = eqns[k]
        if is_reduction(eqn):
            root[k] = k
        if multi_element(eqn):
            _share_results(k, eqns, outs, consumers, lazy, root, producer)
            continue
        if not fusible(eqn) or _wide_concatenate(eqn):
            continue
        v = eqn.outvars[0]
        users = consumers.get(v, [])
        if v not in lazy:
            root[k] = k if is_elementwise(eqn) else None
            if v.aval.ndim == 0 or v in outs or len(users) < 2:
                continue
        roots = {root.get(producer[u.outvars[0]]) if _same_element(u, v) else None
                 for u in users}
        only = roots.pop() if len(roots) == 1 else None
        if v in lazy:
            root[k] = only  # None: copied into several kernels, or read at another element
        elif only is not None and _fits(kernel(only) | kernel(k), eqns):
            lazy.add(v)
            root[k] = only


# The hash joins its reader's kernel from this many elements (the thread pool's threshold,
# backend/llvm/parallel_loops.py). Measured on one core, CPU per element, the hash's loop
# interleaved 4 vectors a turn either way: random.normal 2^18 / 10M, fused 1.26 / 1.28 ns, as a
# kernel of its own 1.80 / 1.76 ns; but normals of 10^4 / 2^16 elements per step of a scan,
# fused 1.58 / 1.68 ns, apart 1.29 / 1.36 ns: below, the two words stay in L2 between two
# short loops, each of which LLVM schedules better than their union.
HASH_FUSE_MIN_ELEMENTS = 1 << 17


def _share_results(k: int, eqns: Sequence[Eqn], outs: set, consumers: dict, lazy: set[Var],
                   root: dict, producer: dict) -> None:
    """_share_within_kernels for an element op of several results: all of them join the one
    kernel that reads every one at the element it computes (random bits: the hash's two words
    read by the xor of the bits -> float conversion), or none does and the op is a kernel of
    its own writing them all (a split's keys, read through a concatenate)."""
    eqn = eqns[k]
    if eqn.outvars[0] in lazy:  # the counters, computed in each reader
        root[k] = None
        return
    root[k] = k if eqn.primitive.fusion == ELEMENTWISE else None
    reads = [(u, v) for v in eqn.outvars for u in consumers.get(v, [])]
    if not reads or any(v.aval.ndim == 0 or v in outs for v in eqn.outvars):
        return
    if eqn.primitive.fusion == ELEMENTWISE and eqn.outvars[0].aval.size < HASH_FUSE_MIN_ELEMENTS:
        return
    roots = {root.get(producer[u.outvars[0]]) if _same_element(u, v) else None
             for u, v in reads}
    only = roots.pop() if len(roots) == 1 else None
    if only is not None and _fits(_kernel_of(only, eqns, producer, lazy) |
                                  _kernel_of(k, eqns, producer, lazy), eqns):
        lazy.update(eqn.outvars)
        root[k] = only


def _same_element(user: Eqn, v: Var) -> bool:
    """`user` reads `v` at the element it computes: an elementwise op of v's shape, or a
    reduction over v."""
    if len(user.outvars) != 1:
        return False
    if is_reduction(user):
        return all(x.aval.shape == v.aval.shape for x in user.invars if isinstance(x, Var))
    return is_elementwise(user) and user.outvars[0].aval.shape == v.aval.shape


def _fused_eqn(group: list[Eqn]) -> Eqn:
    """One `fused` equation computing the last eqn of `group` (the root, with all of its
    results; the others are its lazy producers, in order) from the values the group reads
    from outside."""
    root = group[-1]
    produced = {v for eqn in group for v in eqn.outvars}
    # operands: the root's, then backwards through its producers (the order in which codegen
    # frees the slots of those that die here)
    outer_in = list(dict.fromkeys(v for eqn in reversed(group) for v in eqn.invars
                                  if isinstance(v, Var) and v not in produced))
    body = renamed(Jaxpr([], outer_in, root.outvars, group))
    return Eqn(fused_p, outer_in, list(root.outvars), {"body": ClosedJaxpr(body, [])},
               root.source_info)
