"""Jaxpr -> LLVM IR: one module per executable with one entry function for the whole program
(a large program calls each kernel as a function of its own, one per distinct kernel, each in a
module of its own that programs share: runtime/kernel_cache.py).

Values live in one of three forms while emitting: `Scalar` (rank 0, in a register), `Buf` (an
array in memory: an input, an output, or a slot of the workspace) and `Lazy` (a value inside a
`fused` equation, computed elementwise inside the loop nest of its root). What is fused was
decided by the compiler (`compiler.fusion.fuse`, which writes each kernel as one `fused`
equation); this module lowers: elementwise ops and `fused` kernels to loop nests, every other
equation by its rule: shape ops fused as index arithmetic (index_maps) and primitives with loops
of their own (reductions, control_flow, linalg, indexing, sorting, bits) fill the tables in
`rules`; which donated inputs hold outputs is planned in aliasing.

Entry signature: `void entry(i8** inputs, i8** outputs, i8* workspace)`; a program with host
callbacks reads their ids from one more input pointer (host_callback.py).
"""
from __future__ import annotations

import collections
import contextlib
import gc
import hashlib
import itertools
import math
import threading

from typing import Any, Callable, Sequence

import llvmlite.ir as ir
from llvmlite.ir._utils import DuplicatedNameError, NameScope
import numpy as np

from ...compiler.fusion import MAX_LOOP_PIECES, fused_p, fusible
from ...core import dtypes
from ...core.avals import ShapedArray
from ...core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ...core.primitive import ELEMENTWISE, Primitive
from ...lax.shape import broadcast_in_dim_p, concatenate_p, reshape_p
from . import printer
from .aliasing import in_place_temporaries, plan_aliases
from .contraction import contract_products
from .interrupt import SCAN_POLL_MIN_WORK, bounded_work
from .math import inline_slow_paths, inlined_size, interleaved_math, repetitions
from .rules import ELEMENT_TUPLES, INDEX_MAPS, LOOP_DIMS, STRUCTURAL, structural_rule
from .scalar_ops import bf16_bits, bf16_widen, emit_scalar
from .types import I1, I8, I32, I64, const, mem_type

I8P = I8.as_pointer()
_ALIGN = 64
_LINE = 64  # bytes a cache line (prefetch_lines)
_COPY_BYTES = 64  # a vector of a buffer-to-buffer copy (Emitter._bytes_copy)


class Scalar:
    __slots__ = ("value", "aval")

    def __init__(self, value: ir.Value, aval: ShapedArray):
        self.value, self.aval = value, aval


class Buf:
    __slots__ = ("ptr", "aval")

    def __init__(self, ptr: ir.Value, aval: ShapedArray):
        self.ptr, self.aval = ptr, aval


class Lazy:
    """A result of `eqn` inside a kernel, computed at the element its reader asks for. `out`:
    which result, for an equation with several (None for one); `key`: what its elements are
    memoised under, one object shared by an equation's results (all computed together)."""
    __slots__ = ("eqn", "aval", "env", "out", "key")

    def __init__(self, eqn, aval: ShapedArray, env: dict, out: int | None = None,
                 key: object = None):
        self.eqn, self.aval, self.env = eqn, aval, env
        self.out, self.key = out, self if key is None else key

    def pick(self, element):
        return element if self.out is None else element[self.out]


def lazy_env(body: Jaxpr, ins: list) -> dict:
    """A kernel body's environment: its operands, and each equation's results as `Lazy`
    values (computed in the root's loop nest where it reads them)."""
    env: dict[Var, Any] = dict(zip(body.invars, ins))
    for e in body.eqns[:-1]:
        if len(e.outvars) == 1:
            env[e.outvars[0]] = Lazy(e, e.outvars[0].aval, env)
            continue
        key = object()
        env.update((v, Lazy(e, v.aval, env, j, key)) for j, v in enumerate(e.outvars))
    return env


# A reshape of a computed value whose last dimension is at least this long is stored by a loop
# nest over the value's own shape (Emitter._unreshaped): a vector's lanes or more per row
UNRESHAPED_MIN_ROW = 16


def loop_pieces(vals: list, shape: Sequence[int]) -> dict[tuple, list[tuple[int, int]]]:
    """Where a loop nest over `shape` computing `vals` is cut (loop_nest's `pieces`) so that each
    concatenate they read reads one operand in every piece, with no clamped reads of the others
    and no selects among them: LLVM can then vectorise the loop (a stack along the last axis,
    its pieces single indices, writes its few columns a row; jnp.sin of a concatenate 7x
    sooner). Per loop dimension k, under (k,), the [lo, hi) ranges between the offsets at
    which some concatenate changes operand, found through elementwise equations and the index
    maps that keep a dimension whole (LOOP_DIMS); under (k, c), those of the inner dimension of
    a reshape that splits k into (n, c) (a stack along the last axis flattened, jnp.repeat,
    jnp.tile: the nest then loops over k as (n, c), c's pieces side by side where c is at most
    MAX_LOOP_PIECES, else one loop). Empty where the cut nest would have more than
    MAX_LOOP_PIECES pieces -- or, where a value the nest stores is a concatenate (fusion
    stores one of more operands in a kernel of its own), more than it has operands: each piece
    then copies one operand, no more code than the operands need apart."""
    limit = max([MAX_LOOP_PIECES] + [len(v.eqn.invars) for v in vals if isinstance(v, Lazy)
                                     and v.eqn.primitive is concatenate_p])
    offsets: dict[tuple, set[int]] = {}
    stack = [(v, tuple((k,) for k in range(len(shape)))) for v in vals if isinstance(v, Lazy)]
    seen = set()
    while stack:
        lazy, dims = stack.pop()
        if (lazy.key, dims) in seen or all(d is None for d in dims):
            continue
        seen.add((lazy.key, dims))
        eqn = lazy.eqn
        if eqn.primitive.fusion == ELEMENTWISE and eqn.primitive not in ELEMENT_TUPLES:
            operand_dims = [dims] * len(eqn.invars)
        elif eqn.primitive in LOOP_DIMS:
            operand_dims, cut = LOOP_DIMS[eqn.primitive](eqn, dims)
            if cut is not None:
                offsets.setdefault(cut[0], set()).update(cut[1])
        else:
            continue
        for v, d in zip(eqn.invars, operand_dims):
            x = v if isinstance(v, Literal) else lazy.env[v]
            if d is not None and isinstance(x, Lazy) and x.aval.ndim == len(d):
                stack.append((x, d))
    pieces = {}
    for key, cuts in offsets.items():
        size = shape[key[0]] if len(key) == 1 else key[1]
        if len(key) == 2 and ((key[0],) in offsets or
                              sum(other[0] == key[0] for other in offsets) > 1):
            continue  # (one way of looping over a dimension)
        if len(key) == 2 and size <= MAX_LOOP_PIECES:
            cuts = range(1, size)  # (a few columns: side by side, each index a constant)
        ends = sorted({0, size, *(c for c in cuts if 0 < c < size)})
        pieces[key] = list(itertools.pairwise(ends))
    if not pieces or math.prod(len(p) for p in pieces.values()) > limit:
        return {}
    return pieces


# A loop of at most UNROLLED_TRIPS trips (a constant), run over UNROLLED_HOT_ELEMENTS a call or
# more, is marked for full unrolling (a cold program's -- a test's few elements -- O3 compile is
# left as it was): O3 left such loops as loops, and inside a loop body -- an RK4 step on a 3-vector,
# whose nine small kernels each stored their 3 elements for the next to load -- the stored values
# then went through memory, where unrolled they are forwarded in registers (Lorenz 10k steps 0.34 ->
# 0.18 ms). So is a loop nest's loop of at most UNROLLED_TRIPS_MAX trips whose unrolled body holds
# at most UNROLLED_BODY_MAX instructions (math inlined): the short inner loop of a kernel over rows
# of 5-15 (softmax's exp over rows of 8), which LLVM's vectoriser leaves alone (under its 16 trips)
# and which unrolled its SLP vectoriser makes vector code of (softmax of (64, 1024, 8) 1.85 -> 0.45
# ms, JAX 0.12 1.04; of (250000, 8) 6.3 -> 1.9, JAX 3.9; (200000, 10) 6.0 -> 2.3, JAX 4.0). Loops of
# 16 are the vectoriser's (rows of 16 unrolled: standardize 0.55 -> 1.6 ms); other loops of more
# than 4 (lanes', prefetches) keep their own shape. Only where the loop runs over
# UNROLLED_MIN_ELEMENTS a call or more: O3's SLP vectoriser is slow on such bodies, and a cold
# loop's run does not repay it (the CNN row's log_softmax over 10 classes for a batch of 32: its
# first call 0.59 -> 1.2 s, its run no faster).
UNROLLED_TRIPS = 4
UNROLLED_TRIPS_MAX = 15
UNROLLED_BODY_MAX = 512
UNROLLED_MIN_ELEMENTS = 1 << 16
UNROLLED_HOT_ELEMENTS = 1 << 10


def _reads_own_element(em: Emitter, vals: list, shape: Sequence[int]) -> bool:
    """Whether computing `vals` at an element of `shape` reads nothing but that element's own
    offset in buffers of `shape` (and values of one element): elementwise operations of
    `shape` down to such buffers, scalars and broadcasts of scalars, no index maps."""
    shape = tuple(shape)
    stack, seen = list(vals), set()
    while stack:
        val = stack.pop()
        if isinstance(val, Scalar) or val.aval.ndim == 0:
            continue
        if val.aval.shape != shape:
            return False
        if isinstance(val, Buf):
            continue
        if not isinstance(val, Lazy):
            return False
        if id(val.key) in seen:
            continue
        seen.add(id(val.key))
        eqn = val.eqn
        if eqn.primitive is broadcast_in_dim_p:
            if eqn.invars[0].aval.ndim:
                return False
            continue
        if eqn.primitive.fusion != ELEMENTWISE or eqn.primitive in INDEX_MAPS \
                or eqn.primitive in ELEMENT_TUPLES:
            return False
        stack.extend(em.read(val.env, v) for v in eqn.invars)
    return True


def _magic(c: int, bits: int) -> tuple[int, int]:
    """(m, s) with (i * m) >> s == i // c for every 0 <= i < 2**bits (Granlund and Montgomery,
    "Division by invariant integers using multiplication", 1994, theorem 4.2: with l =
    ceil(log2 c), m = ceil(2**(bits + l) / c) < 2**(bits + 1) + 1, so i * m < 2**(2 bits + 1))."""
    shift = bits + (c - 1).bit_length()
    return -(-(1 << shift) // c), shift


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


class _Names(NameScope):
    """llvmlite's NameScope, the same names in the same order, registered in one method call
    (llvmlite's takes three and a str.format a value: an unnamed instruction is `.N`, found
    after `''` is seen taken): 0.8 -> 0.5 us a value (timeit)."""

    def register(self, name: str, deduplicate: bool = False) -> str:
        used = self._useset
        if name in used:
            if not deduplicate:
                raise DuplicatedNameError(name)
            base, counts = name, self._basenamemap
            while name in used:
                ident = counts[base] + 1
                counts[base] = ident
                name = f"{base}.{ident}"
        used.add(name)
        return name


def define(module: ir.Module, fnty: ir.FunctionType, name: str) -> ir.Function:
    """`ir.Function(module, fnty, name)`, for a function whose body is emitted here: its names
    (its arguments' already registered) in a `_Names`."""
    fn = ir.Function(module, fnty, name=name)
    names = _Names()
    names._useset, names._basenamemap = fn.scope._useset, fn.scope._basenamemap
    fn.scope = names
    return fn


class NativeCompileError(NotImplementedError):
    pass


# A parallel chunk body whose outer dimension has fewer rows than this takes its two outer
# dimensions together as its rows (Emitter.loop_nest)
SPLIT_MIN_ROWS = 64


def _view(eqn, env: dict, eqn_dests: list, dests: list, placed: dict | None) -> list | None:
    """A reshape that keeps the row-major order (no `dimensions`; squeeze) of a stored value
    with no destination of its own is that buffer under its new shape, no copy (shard_map's
    split over devices reshapes whole operands so). It is one more name of the buffer
    (`holders` in emit_jaxpr). Not of a buffer an output of this jaxpr is written into (a
    donated input, a placed temporary): that write could come while the new name is read."""
    name = eqn.primitive.name
    if not (name == "squeeze" or (name == "reshape" and eqn.params["dimensions"] is None)) \
            or eqn_dests[0] is not None or not isinstance(eqn.invars[0], Var):
        return None
    x = env.get(eqn.invars[0])
    if not isinstance(x, Buf) or (placed and eqn.invars[0] in placed) or \
            any(d is not None and d.ptr is x.ptr for d in dests):
        return None
    return [Buf(x.ptr, eqn.outvars[0].aval)]


class Emitter:
    """Emits a whole program into one LLVM function."""

    def __init__(self, name: str):
        self.module = ir.Module(name=name)
        self.workspace_bytes = 0
        self._free: list[tuple[int, int]] = []  # released workspace slots (offset, size)
        self._slot_of: dict[ir.Value, tuple[int, int]] = {}  # Buf.ptr -> its slot
        self.b: ir.IRBuilder | None = None
        self.workspace: ir.Value | None = None
        self._memo: dict | None = None
        self._dying: set[Var] = set()
        # host callbacks (host_callback.py), by slot: the entry finds slot k's id at ids[k],
        # the int64 array passed after its inputs (`inputs` arg, `num_inputs` pointers)
        self.callbacks: list = []
        self.inputs: ir.Value | None = None
        self.num_inputs = 0
        self._callback_ids: ir.Value | None = None
        self._trips: list[int] = []  # trip counts of the loops being emitted, outermost first
        # (start, stop) of each loop being emitted, outermost first: a parallel chunk's rows
        self.loop_ranges: list[tuple[ir.Value, ir.Value]] = []
        # the loops being emitted, outermost first: (index, first block of the body)
        self._open_loops: list[tuple[ir.Value, ir.Block]] = []
        # within an elementwise loop nest (`hoisting`): the loops and blocks before it began,
        # and the ids of the pointers it stores through
        self._hoist: tuple[int, int, set[int]] | None = None
        self._no_vectorize_md: ir.Value | None = None
        # long integer dependency chains emitted so far (threefry's rounds: bits._rounds); a
        # vectorised loop whose body holds one is interleaved (CHAIN_INTERLEAVE)
        self.chains = 0
        self._allocs = 0  # workspace slots handed out so far
        self._kernels: dict[tuple, ir.Function] = {}  # _kernel_key -> its outlined function
        self.kernels: dict[str, str] = {}  # outlined kernels' symbols -> their modules' IR
        self.polls = False  # some loop polls the interrupt flag (interrupt.emit_poll)
        # scans poll at their back-edges; not in a program whose whole run is short
        # (generate: interrupt.bounded_work)
        self.scans_poll = True
        self.split = None  # while emitting a parallel chunk body: its outermost loop's cut
        # while emitting a row of a row_map (control_flow._row_map): (i8 pointer, bytes) of the
        # next row's operand, for the row's first blocked loop to prefetch (prefetch_lines)
        self.next_row: tuple[ir.Value, int] | None = None
        self.segments = 0  # functions the main one was cut into so far (next_segment)
        # loop indices known to lie in [lo, hi) (a loop over one piece of a cut dimension,
        # loop_nest): id -> (index, lo, hi); a constant index is known without an entry
        self._ranges: dict[int, tuple[ir.Value, int, int]] = {}
        # loop indices made of two (a dimension looped over as (n, c): loop_nest): id ->
        # (index, c, (i, k)), the index being i * c + k
        self._splits: dict[int, tuple[ir.Value, int, tuple[ir.Value, ir.Value]]] = {}
        # multi-indices a reshape's index map computed from a linear index (index_maps
        # ._delinearize): their ids -> (shape, the linear index), which `linear` gives back
        self._linears: dict[tuple[int, ...], tuple[tuple, ir.Value, list]] = {}

    # --- memory ------------------------------------------------------------------------------
    def alloc(self, aval: ShapedArray) -> Buf:
        """A workspace slot for a temporary (static offset; a loop body reuses its slots)."""
        if aval.ndim == 0:
            ptr = self._entry_alloca(mem_type(aval.dtype))
            return Buf(ptr, aval)
        self._allocs += 1
        size = -(-max(aval.size * aval.dtype.itemsize, 1) // _ALIGN) * _ALIGN
        fits = [s for s in self._free if s[1] >= size]
        if fits:  # liveness-based reuse: the smallest released slot that is large enough
            slot = min(fits, key=lambda s: s[1])
            self._free.remove(slot)
        else:
            slot = (self.workspace_bytes, size)
            self.workspace_bytes += size
        raw = self.b.gep(self.workspace, [ir.Constant(I64, slot[0])], inbounds=True)
        buf = Buf(self.b.bitcast(raw, mem_type(aval.dtype).as_pointer()), aval)
        self._slot_of[buf.ptr] = slot
        return buf

    def take_over(self, buf: Buf) -> Buf:
        """Reuse a dying temporary's memory for a result (an in-place update)."""
        slot = self._slot_of.pop(buf.ptr)
        # a new pointer object (llvmlite's same-type bitcast returns its operand): releasing the
        # dead operand's Buf must not free the slot the result now owns
        fresh = Buf(self.b.gep(buf.ptr, [ir.Constant(I64, 0)], inbounds=True), buf.aval)
        self._slot_of[fresh.ptr] = slot
        return fresh

    def can_update_in_place(self, eqn, operand) -> bool:
        """The operand is a workspace temporary that dies at this equation."""
        v = eqn.invars[0]
        return (isinstance(operand, Buf) and operand.ptr in self._slot_of and
                isinstance(v, Var) and v in self._dying and operand.aval.ndim > 0)

    def release(self, val) -> None:
        """The value is dead: its workspace slot may hold a later temporary."""
        if isinstance(val, Buf):
            slot = self._slot_of.pop(val.ptr, None)
            if slot is not None:
                self._free.append(slot)

    @contextlib.contextmanager
    def _at_entry(self):
        """Emit at the top of the function's entry block, then carry on where we were."""
        b = self.b
        here = b.block
        # (not goto_block: on a terminated block it finds the terminator's index, a walk over
        # the entry block, which gains allocas all along a program: quadratic in its size)
        b.position_at_start(b.function.entry_basic_block)
        yield
        b.position_at_end(here)

    def _entry_alloca(self, t: ir.Type) -> ir.Value:
        """Allocas go in the entry block so mem2reg turns loop-carried scalars into registers."""
        with self._at_entry():
            return self.b.alloca(t)

    def callback_ids(self) -> ir.Value:
        """The i64* to the executable's callback ids (loaded once, in the entry block)."""
        if self._callback_ids is None:
            b = self.b
            with self._at_entry():
                raw = b.load(b.gep(self.inputs, [ir.Constant(I64, self.num_inputs)],
                                   inbounds=True))
                self._callback_ids = b.bitcast(raw, I64.as_pointer())
        return self._callback_ids

    def load(self, buf: Buf, linear: ir.Value | None) -> ir.Value:
        ptr = buf.ptr if linear is None else self.b.gep(buf.ptr, [linear], inbounds=True)
        v = self.b.load(ptr)
        if buf.aval.dtype == dtypes.bfloat16:
            return bf16_widen(self.b, v)
        return self.b.trunc(v, I1) if buf.aval.dtype == dtypes.bool_ else v

    def store(self, buf: Buf, linear: ir.Value | None, value: ir.Value) -> None:
        if buf.aval.dtype == dtypes.bool_:
            value = self.b.zext(value, I8)
        elif buf.aval.dtype == dtypes.bfloat16:  # (the value is a bfloat16 already: no rounding)
            value = bf16_bits(self.b, value)
        ptr = buf.ptr if linear is None else self.b.gep(buf.ptr, [linear], inbounds=True)
        self.b.store(value, ptr)

    def delinearized(self, linear: ir.Value, shape: Sequence[int],
                     idx: list[ir.Value]) -> list[ir.Value]:
        """Remember that `idx` is `linear` taken apart over `shape`, for `linear` to give back
        (a reshape of an elementwise value of buffers then reads them at the linear index
        itself, which LLVM sees advance by one with the loop: vector loads, where the
        quotients and remainders were gathers)."""
        self._linears[tuple(map(id, idx))] = (tuple(shape), linear, idx)
        return idx

    def linear(self, shape: Sequence[int], idx: Sequence[ir.Value]) -> ir.Value | None:
        if not shape:
            return None
        known = self._linears.get(tuple(map(id, idx)))
        if known is not None and known[0] == tuple(shape):
            return known[1]
        return self._linear_sum(shape, idx)

    def _linear_sum(self, shape: Sequence[int], idx: Sequence[ir.Value]) -> ir.Value | None:
        """The row-major linear index, computed here (`linear` without its memory of indices
        taken apart: where it was taken apart may not dominate the builder's position)."""
        acc = None
        for i, s in zip(idx, _strides(shape)):
            term = i if s == 1 else self.b.mul(i, ir.Constant(I64, s))
            acc = term if acc is None else self.b.add(acc, term)
        return acc

    # --- loops -------------------------------------------------------------------------------
    def prefetch_lines(self, ptr: ir.Value, first: ir.Value, count: ir.Value) -> None:
        """Software prefetches (into L1, for reading) of `count` cache lines from line `first`
        of the i8 pointer `ptr`: addresses ptr + 64 * (first + k), which the caller keeps
        inside memory the program owns (a prefetch never faults, but reads nothing else)."""
        b = self.b
        fn = self.module.globals.get("llvm.prefetch.p0") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [ptr.type, I32, I32, I32]),
            "llvm.prefetch.p0")
        flags = [ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)]
        self.loop(count, lambda k: b.call(fn, [b.gep(ptr, [b.mul(
            b.add(first, k), ir.Constant(I64, _LINE))], inbounds=True), *flags]),
            name="prefetch", over_data=False)

    def loop(self, n: int | ir.Value, body: Callable[[ir.Value], None], name: str = "i",
             over_data: bool = True, vectorize: bool = True,
             vector_shape: tuple[int, int] | None = None,
             pieces: Sequence[tuple[int, int]] | None = None, unroll: bool = False,
             element_loop: bool = False) -> None:
        """`for i in range(n): body(i)`. over_data=False marks a loop over bookkeeping (a
        counter's levels), which a parallel chunk body neither cuts nor counts as its rows.
        vectorize=False keeps LLVM's vectorizer off a loop whose run-time trip count is known
        to be small (else the elements it runs over per call decide: _worth_vectorizing).
        vector_shape = (width, interleave): where LLVM vectorises the loop, these vectors
        (lanes.lane_reduce's loop of one turn of its four vectors). `pieces`: [lo, hi) ranges
        covering range(n), one loop each (of the chunk's rows within it, in a parallel chunk
        body), whose body is told its index lies in that range (index_range). `unroll`: O3
        unrolls the loop fully and does not vectorise it (a loop of constant trips, whose
        first tier's O0 code generation then makes the loop, not the straight-line code); a
        hot loop of at most UNROLLED_TRIPS constant trips is unrolled too, and so is a hot
        `element_loop` (a loop nest's) of at most UNROLLED_TRIPS_MAX whose body is small."""
        trips = n if isinstance(n, int) else _UNKNOWN_TRIPS
        start = ir.Constant(I64, 0)
        if self.split is not None and not self._trips and over_data:  # (parallel_loops)
            start, n = self.split.bounds(self, n)
        if unroll or (pieces is None and vector_shape is None and isinstance(n, int) and 1 < n
                      and n <= (UNROLLED_TRIPS_MAX if element_loop else UNROLLED_TRIPS)
                      and isinstance(start, ir.Constant)):
            assert isinstance(n, int) and pieces is None and start.constant == 0, (n, pieces)
            self._loop_from(start, n, trips, body, name, vectorize, None,
                            unroll=True if unroll else "small")
            return
        if pieces is None:
            self._loop_from(start, n, trips, body, name, vectorize, vector_shape)
            return
        b = self.b
        for lo, hi in pieces:
            first, stop = ir.Constant(I64, lo), ir.Constant(I64, hi)
            if not (isinstance(start, ir.Constant) and start.constant == 0):
                first = b.select(b.icmp_signed(">", start, first), start, first)
            if not (isinstance(n, int) and n == hi):
                n_ = ir.Constant(I64, n) if isinstance(n, int) else n
                stop = b.select(b.icmp_signed("<", n_, stop), n_, stop)
            self._loop_from(first, stop, hi - lo,
                            lambda i, lo=lo, hi=hi: body(self._ranged(i, lo, hi)), name,
                            vectorize, vector_shape)

    def _ranged(self, i: ir.Value, lo: int, hi: int) -> ir.Value:
        self._ranges[id(i)] = (i, lo, hi)
        return i

    def split_index(self, i: ir.Value, c: int, n: int) -> tuple[ir.Value, ir.Value]:
        """(i // c, i % c) of a loop index in range(n): the two indices it was made of where
        loop_nest looped over its dimension as (n / c, c), else computed (divmod_index)."""
        known = self._splits.get(id(i))
        if known is not None and known[0] is i and known[1] == c:
            return known[2]
        return self.divmod_index(i, c, n)

    def divmod_index(self, i: ir.Value, c: int, n: int) -> tuple[ir.Value, ir.Value]:
        """(i // c, i % c), i64, of an i64 index i in range(n). The quotient by a constant that
        is no power of two is a multiply and a shift (_magic): LLVM's own expansion of a 64-bit
        udiv, a multiply-high, has no vector form on x86, so a vectorised loop that divided
        took a scalar multiply per lane and spilled its vector registers around them (a sum
        over a transposed (128, 10) reshaped to 1,280: 2.2 ns an element). Where n <= 2**15
        the multiply is 32-bit (8 lanes a vector), else up to 2**31 a 64-bit one of i masked
        to the bits of n - 1, which x86 makes one vpmuludq (4 lanes)."""
        b = self.b
        if c & (c - 1) == 0 or n > 2 ** 31:
            c_ = ir.Constant(I64, c)
            return b.udiv(i, c_), b.urem(i, c_)
        bits = max(1, (n - 1).bit_length())
        mul, shift = _magic(c, bits)
        if bits <= 15:
            at = b.trunc(i, I32)
            q = b.lshr(b.mul(at, ir.Constant(I32, mul), flags=["nuw"]), ir.Constant(I32, shift))
            r = b.sub(at, b.mul(q, ir.Constant(I32, c), flags=["nuw"]), flags=["nuw"])
            return b.zext(q, I64), b.zext(r, I64)
        at = b.and_(i, ir.Constant(I64, 2 ** bits - 1))
        q = b.lshr(b.mul(at, ir.Constant(I64, mul), flags=["nuw"]), ir.Constant(I64, shift))
        return q, b.sub(i, b.mul(q, ir.Constant(I64, c), flags=["nuw"]), flags=["nuw"])

    def unravel(self, k: ir.Value, shape: Sequence[int]) -> list[ir.Value]:
        """The row-major multi-index of a flat index k in range(prod(shape)) (divmod_index,
        innermost dimension first; a dimension of one gets a constant 0)."""
        idx, n = [], math.prod(shape)
        for d in reversed(shape[1:]):
            if d == 1:
                idx.append(ir.Constant(I64, 0))
                continue
            k, r = self.divmod_index(k, d, n)
            idx.append(r)
            n = n // d if d else 0  # (an empty shape: code that never runs)
        return [k, *reversed(idx)] if shape else []

    def index_range(self, i: ir.Value) -> tuple[int, int] | None:
        """[lo, hi) that a loop index is known to lie in (a constant's own value), or None."""
        if isinstance(i, ir.Constant):
            return i.constant, i.constant + 1
        known = self._ranges.get(id(i))
        return None if known is None or known[0] is not i else known[1:]

    def _loop_from(self, start: ir.Value, n: int | ir.Value, trips: int,
                   body: Callable[[ir.Value], None], name: str, vectorize: bool,
                   vector_shape: tuple[int, int] | None, unroll: bool | str = False) -> None:
        """`loop`'s loop: `for i in range(start, n): body(i)`, of about `trips` trips;
        unrolled fully where `unroll` (or, where it is "small", if its body is small enough
        unrolled: UNROLLED_BODY_MAX)."""
        b = self.b
        self._trips.append(trips)
        n = ir.Constant(I64, n) if isinstance(n, int) else n
        self.loop_ranges.append((start, n))
        pre = b.block
        first = len(b.function.blocks)
        header = b.append_basic_block(f"{name}.head")
        body_bb = b.append_basic_block(f"{name}.body")
        exit_bb = b.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, name=name)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, n), body_bb, exit_bb)
        b.position_at_end(body_bb)
        chains = self.chains
        self._open_loops.append((i, body_bb))
        with inline_slow_paths(math.prod(self._trips) * repetitions() >=
                               INLINE_SLOW_PATH_MIN_ELEMENTS):
            body(i)
        self._open_loops.pop()
        i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
        back = b.branch(header)
        if unroll == "small":
            elements = math.prod(self._trips) * repetitions()
            unroll = elements >= UNROLLED_HOT_ELEMENTS if trips <= UNROLLED_TRIPS else (
                elements >= UNROLLED_MIN_ELEMENTS and
                inlined_size(b.function.blocks[first:]) * trips <= UNROLLED_BODY_MAX)
        if unroll:
            back.set_metadata("llvm.loop", self._unrolled())
        elif not (vectorize and self._worth_vectorizing(b.function.blocks[first:])):
            back.set_metadata("llvm.loop", self._no_vectorize())
        elif vector_shape is not None:
            back.set_metadata("llvm.loop", self._interleaved(vector_shape[1], vector_shape[0]))
        elif self.chains != chains or self._math_chains(b.function.blocks[first:]):
            back.set_metadata("llvm.loop", self._interleaved(CHAIN_INTERLEAVE))
        self._trips.pop()
        self.loop_ranges.pop()
        b.position_at_end(exit_bb)

    def _worth_vectorizing(self, blocks: list) -> bool:
        """Whether LLVM should vectorize a loop with these blocks. Vectorizing costs compile
        time in proportion to the body (about 0.4 ms per instruction: 5 s for a body of 100
        fused `sin`s) and saves run time in proportion to the elements it runs over; a large
        body over fewer than VECTORIZE_MIN_ELEMENTS elements stays scalar, and so does any
        loop over fewer than VECTORIZE_COLD_ELEMENTS per call (a fold of a parallel sum's
        partials, a reduction's tail: half of sum 10M's LLVM time went to vectorising them)."""
        elements = math.prod(self._trips) * repetitions()
        if elements < VECTORIZE_COLD_ELEMENTS:
            return False
        # (math calls count as the code LLVM inlines there: a walk of the body, only if needed)
        return elements >= VECTORIZE_MIN_ELEMENTS or inlined_size(blocks) <= VECTORIZE_MAX_BODY

    def _math_chains(self, blocks: list) -> bool:
        """Whether a vectorised loop with these blocks is worth CHAIN_INTERLEAVE vectors a
        turn for the math functions it calls (math.INTERLEAVED): it runs over enough elements
        a call to repay the larger body's compile time, which grows with the body (softplus
        1M, O3: 40-45 -> 47-52 ms of CPU), so large bodies keep one vector a turn."""
        return (math.prod(self._trips) * repetitions() >= MATH_INTERLEAVE_MIN_ELEMENTS
                and interleaved_math(blocks) and inlined_size(blocks) <= MATH_INTERLEAVE_MAX_BODY)

    def _no_vectorize(self) -> ir.Value:
        """The loop metadata that turns LLVM's loop vectorizer off for one loop (one node,
        shared by the module's such loops)."""
        if self._no_vectorize_md is None:
            self._no_vectorize_md = self._loop_id(("llvm.loop.vectorize.enable",
                                                   ir.Constant(I1, 0)))
        return self._no_vectorize_md

    def _unrolled(self) -> ir.Value:
        """The loop metadata asking LLVM to unroll one loop fully and not vectorise it."""
        return self._loop_id(("llvm.loop.unroll.full",),
                             ("llvm.loop.vectorize.enable", ir.Constant(I1, 0)))

    def _interleaved(self, count: int, width: int | None = None) -> ir.Value:
        """The loop metadata asking LLVM's vectorizer to interleave `count` vectors per turn
        (of `width` elements, if given) (a loop ID of its own)."""
        props = [("llvm.loop.interleave.count", ir.Constant(ir.IntType(32), count))]
        if width is not None:
            props.append(("llvm.loop.vectorize.width", ir.Constant(ir.IntType(32), width)))
        return self._loop_id(*props)

    def _loop_id(self, *props: tuple) -> ir.Value:
        """A loop ID holding these (name, values...) properties: a node whose first operand is
        itself, so that each loop given one is told apart from the others."""
        nodes = [self.module.add_metadata([ir.MetaDataString(self.module, name), *values])
                 for name, *values in props]
        md = self.module.add_metadata(nodes)
        md.operands = (md,) + md.operands
        return md

    def loop_nest(self, shape: Sequence[int], body: Callable[[list[ir.Value]], None],
                  pieces: dict[tuple, list[tuple[int, int]]] | None = None) -> None:
        """`body(idx)` for every multi-index of `shape`. A dimension of size 1 gets no loop (its
        index is 0): a parallel chunk body (parallel_loops) then cuts the first dimension that
        has rows to share -- shard_map's split over one device leads every value with one. (A
        shape of one element keeps its loops: a chunk body must not store outside its rows.)
        There, an outer dimension of few rows is one loop with the next (the device axis of
        two devices' [2, 2048, 256] halves: 4096 rows to cut into chunks, not 2).
        `pieces` (loop_pieces): under (k,), [lo, hi) ranges that cover dimension k, each a loop
        of its own (a piece of one index, none: its index is that constant), the nest inside
        emitted once in each; the chunk body's cut dimension is one loop per piece. Under
        (k, c): dimension k is looped over as (n, c), n = shape[k] / c, its index i * c + j,
        the j of each of these pieces of range(c) within a turn of i (split_index)."""
        skip = all(isinstance(n, int) for n in shape) and math.prod(shape) > 1
        pieces = pieces or {}

        def rec(k: int, idx: list[ir.Value]):
            if k == len(shape):
                saved, self._memo = self._memo, {}
                body(idx)
                self._memo = saved
                return
            if skip and shape[k] == 1:
                rec(k + 1, idx + [ir.Constant(I64, 0)])
                return
            inner = next((j for j in range(k + 1, len(shape)) if shape[j] != 1), None)
            if self._cuts_here() and skip and shape[k] < SPLIT_MIN_ROWS and inner is not None \
                    and inner < len(shape) - 1:
                # a chunk body's rows: the two outer dimensions as one loop (2 devices of
                # [2, 2048, 256] gave 2 chunks; the thread pool wants many)
                def both(i):
                    n = ir.Constant(I64, shape[inner])
                    rec(inner + 1, idx + [self.b.udiv(i, n)] + [ir.Constant(I64, 0)] *
                        (inner - k - 1) + [self.b.urem(i, n)])
                self.loop(shape[k] * shape[inner], both, name=f"d{k}")
                return
            split = next((key for key in pieces if key[0] == k and len(key) == 2), None)
            if split is not None:  # as (n, c): i * c + each piece's k
                c = split[1]

                def outer(i):
                    self.pieces_of(pieces[split], lambda kk: rec(k + 1, idx + [self._split(
                        self.b.add(self.b.mul(i, ir.Constant(I64, c)), kk), c, i, kk)]),
                        name=f"d{k}c")
                self.loop(shape[k] // c, outer, name=f"d{k}")
                return
            if (k,) in pieces and not self._cuts_here():
                self.pieces_of(pieces[(k,)], lambda i: rec(k + 1, idx + [i]), name=f"d{k}")
                return
            self.loop(shape[k], lambda i: rec(k + 1, idx + [i]), name=f"d{k}",
                      pieces=pieces.get((k,)), element_loop=True)
        rec(0, [])

    def element_nest(self, vals: list, shape: Sequence[int],
                     body: Callable[[list[ir.Value]], None]) -> None:
        """The loop nest of a kernel storing `vals` (values of `shape`) element by element:
        loop_nest, cut where they read concatenates (loop_pieces) -- or, where every element
        reads only its own offset in buffers of `shape` (`_reads_own_element`), one loop over
        all of them, each multi-index taken apart from the flat one for `linear` to give back:
        an image of (1080, 1920, 3) then runs as one vectorised loop, not 2M loops of 3
        (uint8 to float32 1.8 -> 0.4 ms)."""
        if len(shape) > 1 and _reads_own_element(self, vals, shape):
            def flat(idx: list[ir.Value]) -> None:
                (i,) = idx
                body(self.delinearized(i, shape, self.unravel(i, shape)))
            self.loop_nest((math.prod(shape),), flat)
            return
        self.loop_nest(shape, body, loop_pieces(vals, shape))

    def pieces_of(self, pieces: list[tuple[int, int]], body: Callable[[ir.Value], None],
                  name: str) -> None:
        """body(i) over each [lo, hi) of `pieces` in turn: a loop each (its index known to lie
        in [lo, hi)), none for a piece of one index (the constant)."""
        for lo, hi in pieces:
            if hi - lo == 1:
                body(ir.Constant(I64, lo))
                continue
            self.loop(hi - lo, lambda i, lo=lo, hi=hi: body(self._ranged(
                self.b.add(i, ir.Constant(I64, lo)) if lo else i, lo, hi)), name=name)

    def _split(self, index: ir.Value, c: int, i: ir.Value, k: ir.Value) -> ir.Value:
        self._splits[id(index)] = (index, c, (i, k))
        return index

    def _cuts_here(self) -> bool:
        """Whether the next loop is the one a parallel chunk body cuts into rows."""
        return self.split is not None and not self._trips

    # --- values ------------------------------------------------------------------------------
    def read(self, env: dict, v) -> Any:
        if isinstance(v, Literal):
            return Scalar(const(v.aval.dtype, v.val), v.aval)
        return env[v]

    def scalar_of(self, val) -> ir.Value:
        if isinstance(val, Scalar):
            return val.value
        if isinstance(val, Buf):
            return self.load(val, None)
        return self.value_at(val, [])

    def value_at(self, val, idx: list[ir.Value]) -> ir.Value:
        """The element of a value at a multi-index (rank-0 values ignore the index). A fused
        value's tree of operands is walked with an explicit stack of element generators, not by
        recursion: a chain of thousands of fused equations must not reach Python's stack limit.
        Elements are memoised per loop body, so a value read twice at one index is computed
        once."""
        if not isinstance(val, Lazy):
            return self._stored_at(val, idx)
        memo = self._memo if self._memo is not None else {}
        key = (val.key, tuple(idx))
        if key in memo:
            return val.pick(memo[key])
        stack = [(key, val, self._element(val, idx))]
        got = None  # the element the generator on top asked for
        while stack:
            key, lazy, gen = stack[-1]
            try:
                x, sub = gen.send(got)
            except StopIteration as done:
                stack.pop()
                memo[key] = done.value
                got = lazy.pick(done.value)
                continue
            if not isinstance(x, Lazy):
                got = self._stored_at(x, sub)
                continue
            sub_key = (x.key, tuple(sub))
            if sub_key in memo:
                got = x.pick(memo[sub_key])
                continue
            stack.append((sub_key, x, self._element(x, sub)))
            got = None
        return got

    def drive(self, gen):
        """Run an element generator (an index map's helper) outside a fused tree: each element
        it asks for is computed with `value_at`."""
        got = None
        while True:
            try:
                x, sub = gen.send(got)
            except StopIteration as done:
                return done.value
            got = self.value_at(x, sub)

    def _stored_at(self, val, idx: list[ir.Value]) -> ir.Value:
        """The element of a register or memory value."""
        if isinstance(val, Scalar):
            return val.value
        body = self._hoisted_to(val, idx)
        if body is None:
            return self.load(val, self.linear(val.aval.shape, idx) if val.aval.ndim else None)
        b, here = self.b, self.b.block
        b.position_at_start(body)
        v = self.load(val, self._linear_sum(val.aval.shape, idx))
        b.position_at_end(here)
        return v

    @contextlib.contextmanager
    def hoisting(self, dests: Sequence[Buf]):
        """Within an elementwise loop nest storing through `dests` alone: an element of a
        buffer read at indices of its outer loops only (a gather's index, a dynamic slice's
        start, a broadcast row) is loaded at the top of the innermost loop it depends on
        (`_hoisted_to`), not once per inner element. LLVM cannot hoist such a load past the
        stores itself, not knowing the two pointers apart, and an index loaded at each element
        left it no affine address to vectorise the inner loop by: a gather of 4096 rows of 128
        and a tanh of them ran scalar (0.95 against 0.43 ms in JAX 0.12)."""
        saved = self._hoist
        self._hoist = (len(self._open_loops), len(self.b.function.blocks),
                       {id(d.ptr) for d in dests})
        try:
            yield
        finally:
            self._hoist = saved

    def _hoisted_to(self, val, idx: list[ir.Value]) -> ir.Block | None:
        """The body block to load `val` at `idx` in, ahead of inner loops (`hoisting`): the
        innermost loop of the nest whose index `idx` reads, or its outermost where it reads none
        -- where that is not the innermost open loop, `idx` holds only loop indices and
        constants, and `val` is a non-empty buffer the nest does not store to, made before it
        (so its pointer dominates the nest)."""
        if self._hoist is None or not isinstance(val, Buf) or not val.aval.ndim \
                or not val.aval.size:
            return None
        floor, first_block, stored = self._hoist
        loops = self._open_loops
        if len(loops) - floor < 2 or id(val.ptr) in stored:
            return None
        ptr = val.ptr
        if isinstance(ptr, ir.Instruction) and any(
                ptr.parent is block for block in self.b.function.blocks[first_block:]):
            return None
        level = floor
        for i in idx:
            if isinstance(i, ir.Constant):
                continue
            k = next((k for k in range(len(loops) - 1, -1, -1) if loops[k][0] is i), None)
            if k is None:
                return None
            level = max(level, k)
        return loops[level][1] if level < len(loops) - 1 else None

    def _element(self, lazy: Lazy, idx: list[ir.Value]):
        """Generator computing a fused value's element at `idx`: it yields (operand, index) for
        each operand element it needs, is sent that element, and returns its own."""
        eqn, env = lazy.eqn, lazy.env
        ins = [self.read(env, v) for v in eqn.invars]
        index_map = INDEX_MAPS.get(eqn.primitive) or ELEMENT_TUPLES.get(eqn.primitive)
        if index_map is not None:
            out = index_map(self, ins, eqn, idx)
            if isinstance(out, (ir.Value, tuple)):  # (iota reads no operand: a plain function)
                return out
            return (yield from out)
        args = []
        for x in ins:
            args.append((yield x, idx if x.aval.ndim else []))
        return emit_scalar(self.b, eqn.primitive, [x.aval.dtype for x in ins], lazy.aval.dtype,
                           args, eqn.params)

    def materialize(self, val, dest: Buf | None = None) -> Buf:
        if isinstance(val, Buf) and dest is None:
            return val
        aval = val.aval
        dest = dest or self.alloc(aval)
        if isinstance(val, Buf) and val.ptr is dest.ptr:
            return dest
        if aval.ndim == 0:
            self.store(dest, None, self.scalar_of(val))
            return dest
        if isinstance(val, Buf) and self._bytes_copy(val, dest):
            return dest
        result = dest
        val, dest = self._unreshaped(val, dest)
        aval = val.aval

        def store(idx: list[ir.Value]) -> None:
            self.store(dest, self.linear(aval.shape, idx), self.value_at(val, idx))
        if _reads_transposed(val) and _tiled(aval.shape):
            self.tiled_nest(aval.shape, store)
        else:
            with self.hoisting([dest]):
                self.element_nest([val], aval.shape, store)
        return result

    def _unreshaped(self, val, dest: Buf) -> tuple:
        """(val, dest), or, where val is a reshape keeping the row-major order of a computed
        value whose rows are long (UNRESHAPED_MIN_ROW), that value and dest under its shape:
        the same elements at the same offsets, looped over in the operand's own shape, where
        each element's index was taken apart over it and its loads were gathers (jnp.kron's
        (64, 32, 64, 32) -> (2048, 2048) 1.4 -> 0.29 ms; JAX 0.12 0.85)."""
        while isinstance(val, Lazy) and val.eqn.primitive is reshape_p \
                and val.eqn.params.get("dimensions") is None:
            x = self.read(val.env, val.eqn.invars[0])
            if not isinstance(x, Lazy) or x.aval.ndim == 0 or \
                    x.aval.shape[-1] < UNRESHAPED_MIN_ROW:
                break
            val, dest = x, Buf(dest.ptr, x.aval)
        return val, dest

    def _bytes_copy(self, src: Buf, dest: Buf) -> bool:
        """Copy one buffer into another of the same dtype and size (not bool, whose load
        truncates, nor bfloat16's widening: the rest keep their bits through a load and store)
        as 64-byte vectors, the last one ending at the last byte, in a loop kept from LLVM's
        vectoriser. The element loop it replaces was vectorised with run-time overlap checks and
        an epilogue loop (Newton's carry in and out of each block: ~6 of its module's ~26 ms of
        CPU); libc's memmove instead cost Newton 10% of its run time (2,500 calls of 3,200
        bytes). The same buffer at run time (a carry that is its own output) is copied onto
        itself, as before. Not a parallel chunk body's own loop, which the chunks cut, nor a
        copy shorter than one vector, nor one of fewer than VECTORIZE_COLD_ELEMENTS elements a
        call, whose loop LLVM leaves scalar (cheaper to compile than this one). Whether it
        copied."""
        dtype = src.aval.dtype
        nbytes = src.aval.size * np.dtype(dtype).itemsize
        if (dtype != dest.aval.dtype or dtype in (dtypes.bool_, dtypes.bfloat16)
                or src.aval.size != dest.aval.size or nbytes < _COPY_BYTES
                or (self.split is not None and not self._trips)
                or math.prod(self._trips) * repetitions() * src.aval.size
                < VECTORIZE_COLD_ELEMENTS):  # (a cold copy's loop stays scalar, cheap)
            return False
        b = self.b
        vp = ir.VectorType(I8, _COPY_BYTES).as_pointer()
        src8, dest8 = b.bitcast(src.ptr, I8P), b.bitcast(dest.ptr, I8P)

        def move(at: ir.Value) -> None:
            x = b.load(b.bitcast(b.gep(src8, [at], inbounds=True), vp), align=1)
            b.store(x, b.bitcast(b.gep(dest8, [at], inbounds=True), vp), align=1)
        self.loop(nbytes // _COPY_BYTES, lambda i: move(b.mul(i, ir.Constant(I64, _COPY_BYTES))),
                  name="bytes", vectorize=False)
        if nbytes % _COPY_BYTES:
            move(ir.Constant(I64, nbytes - _COPY_BYTES))
        return True

    def tiled_nest(self, shape: Sequence[int], body: Callable[[list[ir.Value]], None]) -> None:
        """loop_nest with the last two axes walked in TILE x TILE blocks: a value read through a
        transpose then reads each operand cache line TILE times while it is in L1, instead of
        once per row of the result (a 512^2 float32 transpose: a new line for every element)."""
        if not _tiled(shape):
            self.loop_nest(shape, body)
            return
        b = self.b
        rows, cols = shape[-2:]

        def extent(start: ir.Value, n: int) -> int | ir.Value:
            if n % TILE == 0:
                return TILE
            left = b.sub(ir.Constant(I64, n), start)
            return b.select(b.icmp_signed("<", left, ir.Constant(I64, TILE)), left,
                            ir.Constant(I64, TILE))

        def tiles(idx: list[ir.Value]) -> None:
            def row_tile(ti: ir.Value) -> None:
                i0 = b.mul(ti, ir.Constant(I64, TILE))

                def col_tile(tj: ir.Value) -> None:
                    j0 = b.mul(tj, ir.Constant(I64, TILE))

                    def row(i: ir.Value) -> None:
                        def element(j: ir.Value) -> None:
                            saved, self._memo = self._memo, {}
                            body(idx + [b.add(i0, i), b.add(j0, j)])
                            self._memo = saved
                        self.loop(extent(j0, cols), element, name="tj")
                    self.loop(extent(i0, rows), row, name="ti")
                self.loop(-(-cols // TILE), col_tile, name="tcol")
            self.loop(-(-rows // TILE), row_tile, name="trow")
        self.loop_nest(shape[:-2], tiles)

    def const_value(self, c) -> Any:
        """A constant captured by a sub-jaxpr: scalars become immediates, arrays globals."""
        arr = np.asarray(c)
        aval = ShapedArray(arr.shape, arr.dtype)
        if arr.ndim == 0:
            return Scalar(const(arr.dtype, arr[()]), aval)
        data = bytearray(np.ascontiguousarray(arr).tobytes())
        gv = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(data)),
                               name=f"const{len(self.module.global_values)}")
        gv.global_constant = True
        gv.linkage = "internal"
        gv.align = _ALIGN
        gv.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        ptr = self.b.bitcast(gv, mem_type(arr.dtype).as_pointer())
        return Buf(ptr, aval)

    # --- programs ----------------------------------------------------------------------------
    def emit_jaxpr(self, jaxpr: Jaxpr, consts: list, args: list,
                   dests: list[Buf | None] | None = None, outline: bool = False,
                   placed: dict[Var, Buf] | None = None, segment: int = 0) -> list:
        """Emit `jaxpr` at the builder's position; outputs go to `dests` where given, and the
        temporaries in `placed` into the buffers given there. With `outline`, equations with
        array outputs go in functions of their own (`lower_outlined`); with `segment`, every
        `segment` equations carry on in a new function (`next_segment`)."""
        env: dict[Var, Any] = {}
        for v, x in zip(jaxpr.constvars, consts):
            env[v] = x
        for v, x in zip(jaxpr.invars, args):
            env[v] = x
        dests = dests or [None] * len(jaxpr.outvars)
        # an output computed here (and returned once) is written straight into its destination
        direct: dict[Var, Buf] = {}
        produced = {v for e in jaxpr.eqns for v in e.outvars}
        counts: dict[Var, int] = {}
        for v in jaxpr.outvars:
            counts[v] = counts.get(v, 0) + 1
        for v, d in zip(jaxpr.outvars, dests):
            if d is not None and isinstance(v, Var) and v in produced and counts[v] == 1:
                direct[v] = d
        last_use = _last_uses(jaxpr)
        keep = set(jaxpr.outvars)
        # a rule that forwards an operand (rules.FORWARDING: optimization_barrier, pvary)
        # gives two names one buffer: it is released, or updated in place, only once no
        # name of it is live (per buffer: the live names produced here holding it)
        holders: dict[int, int] = {}

        def held(v) -> int:
            x = env.get(v)
            return holders.get(id(x.ptr), 0) if isinstance(x, Buf) else 0
        last_read = _last_reads(jaxpr) if segment else {}
        cut = 0  # where the function being emitted began
        for k, eqn in enumerate(jaxpr.eqns):
            if segment and k - cut >= segment:
                live = {v: x for v, x in env.items() if v in keep or last_read.get(v, -1) >= k}
                moved = self.next_segment(list(live.values()), dests, placed or {})
                if moved is not None:
                    cut = k
                    env = {v: moved(x) for v, x in live.items()}
                    dests = [moved(d) for d in dests]
                    direct = {v: moved(d) for v, d in direct.items()}
                    placed = {v: moved(d) for v, d in (placed or {}).items()}
                    mine = {id(x.ptr) for v, x in env.items()
                            if v in produced and isinstance(x, Buf)}
                    holders = collections.Counter(  # (and an input a view here shares)
                        id(x.ptr) for x in env.values()
                        if isinstance(x, Buf) and id(x.ptr) in mine)
            self._dying = {v for v in last_use.get(k, ()) if v not in keep and held(v) <= 1}
            eqn_dests = [direct.get(v) or (placed or {}).get(v) for v in eqn.outvars]
            outs = _view(eqn, env, eqn_dests, dests, placed)
            if outs is not None and eqn.invars[0] not in produced:
                # a view of an input (an argument, a loop's carry): the input's own name holds
                # the buffer too, which `holders` counts only for values produced here — else
                # the input looks dying at its last read while the view is live, and its buffer
                # is updated in place under the view (optax's L-BFGS step diverged so)
                holders[id(outs[0].ptr)] = holders.get(id(outs[0].ptr), 0) + 1
            if outs is None:
                outs = self._lower_parallel(eqn, env, eqn_dests)
            if outs is None:
                lower = self.lower_outlined if outline and _outlinable(eqn) else self.lower
                outs = lower(eqn, env, eqn_dests)
            env.update(zip(eqn.outvars, outs))
            for x in outs:
                if isinstance(x, Buf):
                    holders[id(x.ptr)] = holders.get(id(x.ptr), 0) + 1
            for v in last_use.get(k, ()):
                if v not in keep and v not in direct:
                    x = env.get(v)
                    if isinstance(x, Buf):
                        holders[id(x.ptr)] -= 1
                        if holders[id(x.ptr)] > 0:
                            continue
                    self.release(x)
        outs = []
        for v, d in zip(jaxpr.outvars, dests):
            val = self.read(env, v)
            if d is not None and not (isinstance(val, Buf) and val.ptr is d.ptr):
                val = self.materialize(val, d)
            outs.append(val)
        return outs

    def next_segment(self, values: list, dests: list[Buf | None], placed: dict[Var, Buf]
                     ) -> Callable | None:
        """End the function being emitted with a call of a new one (then `ret void`), in which
        emission carries on: LLVM's code generation (loop strength reduction above all, then
        register allocation) costs more than linear time in a function's size, so a program of
        10^4 equations is a chain of functions of SEGMENT_EQNS equations each. The values the
        rest of the program reads (`values`: Bufs and Scalars), its destinations and placed
        buffers are passed as arguments. The callers' frames stay live below the new function,
        so their stack slots (rank-0 temporaries) remain valid, and an interrupted loop's `ret
        void` returns through every caller. Returns the map of a value here to its counterpart
        in the new function, or None (no cut here) when some live value is neither (a lazy
        element) or more than SEGMENT_MAX_ARGS would be passed."""
        # id -> a function-local value to pass (constants and globals are valid everywhere)
        refs: dict[int, ir.Value] = {}
        for x in [*values, *dests, *placed.values()]:
            if x is None:
                continue
            if not isinstance(x, (Buf, Scalar)):
                return None
            ref = x.ptr if isinstance(x, Buf) else x.value
            if not isinstance(ref, (ir.Constant, ir.GlobalValue)):
                refs.setdefault(id(ref), ref)
        if len(refs) > SEGMENT_MAX_ARGS:
            return None
        b = self.b
        fnty = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I8P] +
                               [ref.type for ref in refs.values()])
        fn = define(self.module, fnty, f"{SEGMENT_PREFIX}{self.segments}")
        fn.linkage = "internal"
        fn.attributes.add("noinline")  # (inlined back, the chain would be one function again)
        self.segments += 1
        b.call(fn, [self.inputs, self.workspace] + list(refs.values()))
        b.ret_void()
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.inputs, self.workspace, self._callback_ids = fn.args[0], fn.args[1], None
        arg = dict(zip(refs, fn.args[2:]))
        self._slot_of = {arg[id(p)]: slot for p, slot in self._slot_of.items() if id(p) in arg}
        new: dict[int, Any] = {}  # id of a Buf or Scalar -> its counterpart (one per object)

        def moved(x):
            if x is None:
                return None
            if id(x) not in new:
                if isinstance(x, Buf):
                    new[id(x)] = Buf(arg.get(id(x.ptr), x.ptr), x.aval)
                else:
                    new[id(x)] = Scalar(arg.get(id(x.value), x.value), x.aval)
            return new[id(x)]
        return moved

    def _lower_parallel(self, eqn, env: dict, dests: list[Buf | None]) -> list | None:
        """A large kernel over independent rows, run on the thread pool (parallel_loops); None
        when the equation is not one (or sits inside a chunk body already)."""
        from . import parallel_loops
        if self.split is not None or not parallel_loops.worth(eqn):
            return None
        return parallel_loops.lower_parallel(self, eqn, env, dests)

    def lower(self, eqn, env: dict, dests: list[Buf | None]) -> list:
        """Emit one equation reading its operands from `env`; its outputs go to `dests` where
        given. An elementwise op or index map is one loop nest (or one register value)."""
        name = eqn.primitive.name
        if fusible(eqn):
            (out,), (dest,) = eqn.outvars, dests
            value = Lazy(eqn, out.aval, env)
            if out.aval.ndim == 0 and dest is None:
                return [Scalar(self.value_at(value, []), out.aval)]
            return [self.materialize(value, dest)]
        rule = structural_rule(eqn.primitive)
        if rule is None:
            raise NativeCompileError(
                f"the native backend cannot compile primitive `{name}` yet (at "
                f"{eqn.source_info}); run it with jax.jit(..., backend='interpret') or "
                "config.update('tracejit_backend', 'interpret').")
        return rule(self, eqn, [self.read(env, v) for v in eqn.invars], dests)


    def lower_outlined(self, eqn, env: dict, dests: list[Buf | None]) -> list:
        """`lower` into a function of its own, called here: LLVM's loop passes and register
        allocation cost more than linear time in a function's size, so a program of hundreds of
        kernels compiles as hundreds of small functions (noinline, or the inliner would undo
        it). The function is a module of its own, named by a hash of its IR (`kernel_module`),
        which the program declares: the runtime compiles each such module once per process
        while a program calls it (runtime/kernel_cache.py), so programs sharing a kernel share
        its machine code. Outputs are written to `dests` (workspace slots allocated here when not
        given). An operand appearing twice (a donated input that is also the destination) is
        one argument, so the `ptr is` tests that find in-place updates still see it."""
        dests = [d if d is not None else self.alloc(v.aval) for v, d in zip(eqn.outvars, dests)]
        outer: dict[int, ir.Value] = {}  # id of a value here -> the value (one argument each)
        for v in eqn.invars:
            if isinstance(v, Var):
                x = env[v]
                outer.setdefault(id(x.ptr if isinstance(x, Buf) else x.value),
                                 x.ptr if isinstance(x, Buf) else x.value)
        for d in dests:
            outer.setdefault(id(d.ptr), d.ptr)
        values = list(outer.values())
        key = _kernel_key(eqn, env, dests, list(outer))
        fn = self._kernels.get(key) if key is not None else None
        if fn is not None:  # the same kernel on other buffers: call the one already emitted
            self.b.call(fn, [self.inputs, self.workspace] + values)
            return dests
        fnty = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I8P] + [x.type for x in values])
        settings = (key, repetitions(), VECTORIZE_MAX_BODY, VECTORIZE_MIN_ELEMENTS,
                    VECTORIZE_COLD_ELEMENTS, INLINE_SLOW_PATH_MIN_ELEMENTS, self.scans_poll)
        emitted = _emitted(settings) if key is not None else None
        if emitted is not None:  # emitted by an earlier program: its module as it was
            symbol, text, polls = emitted
            self.kernels.setdefault(symbol, text)
            self.polls = self.polls or polls
            fn = self.module.globals.get(symbol) or ir.Function(self.module, fnty, name=symbol)
            self.b.call(fn, [self.inputs, self.workspace] + values)
            self._kernels[key] = fn
            return dests
        # the kernel goes in a module of its own, named by a hash of its IR (`kernel_module`)
        kmodule = ir.Module(name="tracejit_kernel")
        fn = define(kmodule, fnty, KERNEL_PLACEHOLDER)
        fn.attributes.add("noinline")
        inner = dict(zip(outer, fn.args[2:]))
        allocs, callbacks = self._allocs, len(self.callbacks)
        saved = (self.b, self.inputs, self.workspace, self._callback_ids, self._memo,
                 self.module, self._no_vectorize_md, self.polls)
        self.polls = False
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.inputs, self.workspace, self._callback_ids, self._memo = fn.args[0], fn.args[1], \
            None, None
        self.module, self._no_vectorize_md = kmodule, None
        try:
            kenv = {}
            for v in eqn.invars:
                if isinstance(v, Var):
                    x = env[v]
                    kenv[v] = Buf(inner[id(x.ptr)], x.aval) if isinstance(x, Buf) else \
                        Scalar(inner[id(x.value)], x.aval)
            kdests = [Buf(inner[id(d.ptr)], d.aval) for d in dests]
            for out, kd in zip(self.lower(eqn, kenv, kdests), kdests):
                if not (isinstance(out, Buf) and out.ptr is kd.ptr):
                    self.materialize(out, kd)
                    self.release(out)
            self.b.ret_void()
        finally:
            polls = self.polls
            (self.b, self.inputs, self.workspace, self._callback_ids, self._memo,
             self.module, self._no_vectorize_md, self.polls) = saved
            self.polls = self.polls or polls
        contract_products(kmodule)
        symbol, text = kernel_module(printer.module_text(kmodule))
        self.kernels.setdefault(symbol, text)
        fn = self.module.globals.get(symbol) or ir.Function(self.module, fnty, name=symbol)
        self.b.call(fn, [self.inputs, self.workspace] + values)
        # a kernel with workspace temporaries of its own is not reused: their slots may hold
        # other live values by a later call; nor one with host callbacks (each has its slot)
        if key is not None and self._allocs == allocs and len(self.callbacks) == callbacks:
            self._kernels[key] = fn
            _remember(settings, (symbol, text, polls))
        return dests


# Kernels emitted by earlier programs of the process, by their key and the settings emission
# reads: (symbol, IR, polls), so a later program's identical kernel skips emitting and printing
# its IR again. Only kernels without workspace temporaries or host callbacks (whose IR depends
# on the program around them); the EMITTED_KEPT last used are kept.
EMITTED_KEPT = 4096
_emitted_kernels: collections.OrderedDict[tuple, tuple[str, str, bool]] = \
    collections.OrderedDict()
_emitted_lock = threading.Lock()


def _emitted(settings: tuple) -> tuple[str, str, bool] | None:
    with _emitted_lock:
        hit = _emitted_kernels.get(settings)
        if hit is not None:
            _emitted_kernels.move_to_end(settings)
        return hit


def _remember(settings: tuple, emitted: tuple[str, str, bool]) -> None:
    with _emitted_lock:
        _emitted_kernels[settings] = emitted
        while len(_emitted_kernels) > EMITTED_KEPT:
            _emitted_kernels.popitem(last=False)


def forget_emitted_kernels() -> None:
    """Drop the kernels remembered for later programs (clear_caches)."""
    with _emitted_lock:
        _emitted_kernels.clear()


KERNEL_PLACEHOLDER = "tracejit_kernel"
KERNEL_PREFIX = "tjk_"


def kernel_module(ir_text: str) -> tuple[str, str]:
    """(symbol, IR) of an outlined kernel's module emitted with the name KERNEL_PLACEHOLDER: the
    symbol is a hash of the module's whole text (whatever the code depends on is in it:
    constants, workspace offsets, callback slots, helpers), so one name is one machine code in
    every program and process, and two programs' kernels share a name only when identical."""
    placeholder = f'@"{KERNEL_PLACEHOLDER}"'
    digest = hashlib.sha256(ir_text.encode()).hexdigest()[:32]
    symbol = f"{KERNEL_PREFIX}{digest}"
    return symbol, ir_text.replace(placeholder, f'@"{symbol}"')


def _kernel_key(eqn, env: dict, dests: list[Buf], args: list[int]) -> tuple | None:
    """What an outlined kernel's code depends on: the equation without its variables (jaxpr
    params by their printed text), each operand's kind, type and argument position (the same
    buffer twice is one argument), literals' values. None when a param is not hashable."""
    position = {a: k for k, a in enumerate(args)}
    operands = []
    for v in eqn.invars:
        if isinstance(v, Literal):
            operands.append(("literal", v.aval, v.val.tobytes()))
            continue
        x = env[v]
        ref = x.ptr if isinstance(x, Buf) else x.value
        operands.append((type(x).__name__, x.aval, position[id(ref)]))
    params = tuple(sorted((k, _param_key(p)) for k, p in eqn.params.items()))
    key = (eqn.primitive, params, tuple(operands),
           tuple((d.aval, position[id(d.ptr)]) for d in dests))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _jaxpr_key(jaxpr: Jaxpr) -> tuple:
    """A jaxpr as a key, its variables by number (not its printed text, which shortens some
    params): equal keys, the same computation."""
    number: dict[Var, int] = {}

    def ref(v):
        if isinstance(v, Literal):
            return ("literal", v.aval, v.val.tobytes())
        return number.setdefault(v, len(number)), v.aval
    head = tuple(ref(v) for v in (*jaxpr.constvars, *jaxpr.invars))
    eqns = tuple((e.primitive, tuple(sorted((k, _param_key(p)) for k, p in e.params.items())),
                  tuple(ref(v) for v in e.invars), tuple(ref(v) for v in e.outvars))
                 for e in jaxpr.eqns)
    return head, eqns, tuple(ref(v) for v in jaxpr.outvars)


def _param_key(p):
    """A param as a key: jaxprs structurally, numbers by type and text (0.0 == -0.0 in Python,
    and NaN is unequal to itself), tuples element by element; anything else as it is (an
    unhashable one makes the whole key unusable)."""
    if isinstance(p, ClosedJaxpr):
        if p.consts:
            return p  # by identity: consts are arrays
        return _jaxpr_key(p.jaxpr)
    if isinstance(p, Jaxpr):
        return _jaxpr_key(p)
    if isinstance(p, (tuple, list)):
        return (type(p).__name__,) + tuple(_param_key(q) for q in p)
    if isinstance(p, (float, complex, np.generic)):
        return (type(p).__name__, repr(p))
    return p


TILE = 16  # tiled_nest's block side: 16 float32 rows of 64 bytes, 16 lines of L1


def _tiled(shape: Sequence[int]) -> bool:
    """Whether tiled_nest walks `shape` in tiles (its last two axes hold two tiles each)."""
    return len(shape) >= 2 and min(shape[-2:]) >= 2 * TILE


def _reads_transposed(val) -> bool:
    """A fused value whose tree reads some operand through a transpose that moves the last
    axis (its inner loop would stride through memory)."""
    if not isinstance(val, Lazy) or val.aval.ndim < 2:
        return False
    stack, seen = [val], set()
    while stack:
        lazy = stack.pop()
        if id(lazy) in seen:
            continue
        seen.add(id(lazy))
        eqn = lazy.eqn
        if eqn.primitive.name == "transpose":
            perm = eqn.params["permutation"]
            if perm and perm[-1] != len(perm) - 1:
                return True
        stack.extend(x for v in eqn.invars if isinstance(v, Var)
                     for x in [lazy.env.get(v)] if isinstance(x, Lazy))
    return False


def _outlinable(eqn) -> bool:
    """Top-level equations worth a function: array outputs (scalars stay in registers), no
    sub-programs of their own (control flow is emitted inline, its bodies too)."""
    return all(v.aval.ndim > 0 for v in eqn.outvars) and (
        eqn.primitive is fused_p or not any(
            isinstance(p, (ClosedJaxpr, Jaxpr)) for p in eqn.params.values()))


# vectors per turn of a vectorised loop computing a long dependency chain per element (the
# threefry hash's 20 rounds of add -> rotate -> xor): in a loop that also converts the bits
# (random.normal: erf_inv), out-of-order execution overlaps too few turns to hide the chain;
# four independent chains per turn do (normal 10M on one core: 22.4 -> 12.3 ms of CPU)
CHAIN_INTERLEAVE = 4
# a loop calling math functions of math.INTERLEAVED is interleaved as those are (their chains
# of a few dozen dependent operations are the same problem: softmax 1000^2, one thread, 729 ->
# 582 us) when it runs over at least MATH_INTERLEAVE_MIN_ELEMENTS elements a call and its body
# is at most MATH_INTERLEAVE_MAX_BODY instructions once its math is inlined
MATH_INTERLEAVE_MIN_ELEMENTS = 1 << 16
MATH_INTERLEAVE_MAX_BODY = 300
# a loop body above VECTORIZE_MAX_BODY instructions is vectorized only when it runs over at
# least VECTORIZE_MIN_ELEMENTS elements (loops of unknown trip count always are)
VECTORIZE_MAX_BODY = 1500
VECTORIZE_MIN_ELEMENTS = 1 << 20
# a loop over fewer elements per call than this (its enclosing loops' trips, scans' lengths and
# while bodies counted) is not vectorized at any size: cold code, where vectorising's compile
# time is never repaid (1,024 float32 scalar take ~0.3 us more than in vectors; LLVM vectorises
# innermost loops only, so an outer loop over few rows loses nothing)
VECTORIZE_COLD_ELEMENTS = 1 << 10
# math is emitted for a vectorised loop (its slow paths, sin/cos/tan of huge arguments, as
# calls of masked vector variants) in loops over at least this many elements per call (scans'
# lengths and while bodies count); below, as scalar code (shortcuts for small arguments), which
# LLVM compiles faster. When the slow paths were inline (~40 ms of LLVM time each) this was
# 2^14; as calls, a vectorised sin costs ~3-6 ms more to compile than the scalar loop and saves
# ~4 us per 1000 elements per call (sin*cos+tan over 4096 float32: 50-72 us scalar, 19.5 us
# vectorised): from 2^12 elements a few hundred calls repay it.
INLINE_SLOW_PATH_MIN_ELEMENTS = 1 << 12
_UNKNOWN_TRIPS = 1 << 40

# programs of at least this many equations (counting those inside kernels) put each kernel in a
# function of its own
OUTLINE_MIN_EQNS = 64
# a program's main function carries on in a new function every SEGMENT_EQNS top-level
# equations (Emitter.next_segment), unless more than SEGMENT_MAX_ARGS values would be passed.
# (~20 lines of IR an equation where reductions are inline: segments of ~10^4 lines, which
# LLVM's loop strength reduction and register allocation handle in linear time; 100, 250, 500
# and 1,000 compile a 10^4-equation chain in the same time, within noise)
SEGMENT_EQNS = 500
SEGMENT_MAX_ARGS = 512
SEGMENT_PREFIX = "tracejit_segment."


def _fused(em: Emitter, eqn, ins, dests):
    """A kernel (compiler.fusion): the body's root lowered as one loop nest, its other
    equations computed element by element inside it. A body whose results come from several
    elementwise equations of one shape (control_flow's pipelined rows) computes each of them
    at every element of one loop."""
    body = eqn.params["body"].jaxpr
    root = body.eqns[-1]
    if all(v in root.outvars for v in body.outvars):
        return em.lower(root, lazy_env(body, ins), dests)
    env = lazy_env(body, ins)
    env[root.outvars[0]] = Lazy(root, root.outvars[0].aval, env)
    shape = body.outvars[0].aval.shape
    outs = [d or em.alloc(v.aval) for v, d in zip(body.outvars, dests)]
    with em.hoisting(outs):
        em.element_nest([env[v] for v in body.outvars], shape, lambda idx: [
            em.store(o, em.linear(shape, idx), em.value_at(env[v], idx))
            for o, v in zip(outs, body.outvars)])
    return outs


STRUCTURAL[fused_p] = _fused


def _last_uses(jaxpr: Jaxpr) -> dict[int, list]:
    """eqn index -> vars produced in this jaxpr that are dead after it."""
    last: dict[Var, int] = {}
    index = {v: k for k, e in enumerate(jaxpr.eqns) for v in e.outvars}
    for k in range(len(jaxpr.eqns) - 1, -1, -1):
        for v in jaxpr.eqns[k].invars:
            if isinstance(v, Var) and v in index and v not in last:
                last[v] = k
    out: dict[int, list] = {}
    for v, k in last.items():
        out.setdefault(k, []).append(v)
    return out


def _last_reads(jaxpr: Jaxpr) -> dict[Var, int]:
    """var -> the index of the last equation reading it (inputs included)."""
    return {v: k for k, e in enumerate(jaxpr.eqns) for v in e.invars if isinstance(v, Var)}


def _as_value(em: Emitter, buf: Buf):
    """Reading a carry back: rank-0 slots become register values."""
    if buf.aval.ndim == 0:
        return Scalar(em.load(buf, None), buf.aval)
    return buf


def has_lowering(prim: Primitive) -> bool:
    """Whether the native backend compiles `prim`: fused element by element (a scalar emitter
    or an index map) or by a structural rule."""
    from . import complex_ops, scalar_ops
    scalar = prim in scalar_ops.EMITTERS or prim in complex_ops.EMITTERS
    return prim in STRUCTURAL or prim in INDEX_MAPS or (prim.fusion == ELEMENTWISE and scalar)


# --- the whole program -----------------------------------------------------------------------

class Program:
    """The result of code generation: LLVM IR text plus what the runtime needs to call it.
    `aliases`: output index -> invar index of the donated input whose buffer it is written into
    (the entry reads that output's pointer from the input's slot). `callbacks`: the host calls
    and ffi_calls by slot (host_callback.py, ffi_call.py); when there are any, the inputs array
    holds one more pointer, to their int64 words (ids, records' addresses). `kernels`: the
    outlined kernels the program declares and calls, by symbol: their modules' IR
    (`kernel_module`), compiled apart and linked by name."""

    def __init__(self, name: str, ir_text: str, workspace_bytes: int, aliases: dict[int, int],
                 callbacks: list, polls: bool = False, kernels: dict[str, str] | None = None):
        self.kernels = kernels or {}
        self.polls = polls  # the program may return early: Ctrl-C (backend/llvm/interrupt.py)
        self.name = name
        self.ir_text = ir_text
        self.workspace_bytes = workspace_bytes
        self.aliases = aliases
        self.callbacks = callbacks


def generate(closed: ClosedJaxpr, name: str,
             donated: Sequence[tuple[int, int]] = ()) -> Program:
    """LLVM IR for a closed jaxpr; consts are passed at run time before the inputs. `donated`:
    (output index, invar index) pairs that may share a buffer (see plan_aliases)."""
    jaxpr = closed.jaxpr
    aliases = plan_aliases(jaxpr, donated)
    em = Emitter(name)
    work = bounded_work(jaxpr)
    em.scans_poll = work is None or work >= SCAN_POLL_MIN_WORK
    fnty = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I8P.as_pointer(), I8P])
    fn = define(em.module, fnty, name)
    fn.args[0].add_attribute("noalias")
    fn.args[1].add_attribute("noalias")
    fn.args[2].add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    em.b = ir.IRBuilder(entry)
    em.workspace = fn.args[2]
    em.inputs = fn.args[0]
    em.num_inputs = len(jaxpr.constvars) + len(jaxpr.invars)

    def arg_buf(array: ir.Value, i: int, aval: ShapedArray) -> Buf:
        raw = em.b.load(em.b.gep(array, [ir.Constant(I64, i)], inbounds=True))
        return Buf(em.b.bitcast(raw, mem_type(aval.dtype).as_pointer()), aval)

    nconsts = len(jaxpr.constvars)
    inputs = list(jaxpr.constvars) + list(jaxpr.invars)
    in_bufs = [arg_buf(fn.args[0], i, v.aval) for i, v in enumerate(inputs)]
    # an aliased output is the input's own pointer value: the emitter's `ptr is` checks then
    # skip copying a carry or updated operand onto itself, and LLVM sees the exact aliasing
    out_bufs = [Buf(in_bufs[nconsts + aliases[j]].ptr, v.aval) if j in aliases else
                arg_buf(fn.args[1], j, v.aval) for j, v in enumerate(jaxpr.outvars)]
    ins = [_as_value(em, bf) for bf in in_bufs]
    placed = {v: Buf(out_bufs[j].ptr, v.aval)
              for v, j in in_place_temporaries(jaxpr, aliases).items()}
    size = sum(len(e.params["body"].jaxpr.eqns) if e.primitive is fused_p else 1
               for e in jaxpr.eqns)
    with _collector_paused(len(jaxpr.eqns) > SEGMENT_EQNS):
        em.emit_jaxpr(jaxpr, ins[:nconsts], ins[nconsts:], out_bufs, placed=placed,
                      outline=size >= OUTLINE_MIN_EQNS, segment=SEGMENT_EQNS)
        em.b.ret_void()
        _mark_nonnull(em, fn)
        contract_products(em.module)
        text = printer.module_text(em.module)
    return Program(name, text, em.workspace_bytes, aliases, em.callbacks, em.polls, em.kernels)


def _mark_nonnull(em: Emitter, entry: ir.Function) -> None:
    """`nonnull` on the entry's pointers that are never null and on the segments' copies of
    them: the input and output arrays (runtime/native.py passes packed bytes, even empty), and
    the workspace where the program has one (a pool allocation; None only when it is empty).
    It changes no machine code; it spares InstCombine, which asks of every pointer a call is
    passed whether it is known non-null, a walk over that pointer's uses -- the same two
    pointers passed to every kernel call: a 2,000-equation chain's O3 64 -> 14 ms."""
    workspace = em.workspace_bytes > 0
    entry.args[0].add_attribute("nonnull")
    entry.args[1].add_attribute("nonnull")
    if workspace:
        entry.args[2].add_attribute("nonnull")
    for fn in em.module.functions:  # (next_segment: the inputs, then the workspace)
        if fn.name.startswith(SEGMENT_PREFIX):
            fn.args[0].add_attribute("nonnull")
            if workspace:
                fn.args[1].add_attribute("nonnull")


@contextlib.contextmanager
def _collector_paused(paused: bool):
    """Python's cyclic garbage collector off (when `paused`, and on before): emitting a huge
    program allocates millions of llvmlite objects, all kept, and each full collection walks
    them all, so emission grew faster than linearly (20,000 equations: 7.4 s, 5.6 s without)."""
    paused = paused and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()

