"""Structural rules for calls and control flow: inlined calls, cond (a switch), while and scan
(native loops over double-buffered carries) and row_map (compiler.rows' row kernels).
codegen's Emitter dispatches to them through `rules.STRUCTURAL`."""
from __future__ import annotations

import collections
import math
from typing import Sequence

import llvmlite.ir as ir
import numpy as np

from ...compiler.fusion import fused_p, is_elementwise
from ...compiler.rows import row_map_p
from ...core import dtypes, errors
from ...core.avals import ShapedArray
from ...core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Var, copy_eqns, renamed
from ...lax.call import pjit_p
from ...lax.control_flow import cond_p, linear_solve_p, root_p, scan_p, while_p
from ...lax.shape import broadcast_in_dim_p
from ...transforms.custom import (checkpoint_p, custom_jvp_call_p, custom_lin_p, custom_vjp_call_p,
                                 linear_call_p)
from ...transforms.custom_batching import custom_vmap_call_p
from .codegen import Buf, Emitter, Scalar, _as_value
from .interrupt import emit_poll
from .math import inline_slow_paths, repeated
from .rules import FORWARDING, IN_PLACE, STRUCTURAL
from .scalar_ops import convert
from .types import I64, mem_type, reg_type


def _custom_lin(em: Emitter, eqn, ins, dests):
    """The tangent side of a custom_vjp function only exists to be transposed: evaluating it is
    forward-mode autodiff of a custom_vjp function, which JAX (and the interpreter) reject."""
    raise errors.custom_vjp_jvp_error()


def _inline_call(em: Emitter, eqn, ins, dests):
    """Calls (jit, checkpoint, custom_jvp/vjp outside differentiation) run their body inline."""
    closed: ClosedJaxpr = eqn.params.get("jaxpr") or eqn.params["call_jaxpr"]
    consts = [em.const_value(c) for c in closed.consts]
    return em.emit_jaxpr(closed.jaxpr, consts, ins, dests)


def _inline_solve(em: Emitter, eqn, ins, dests):
    """custom_linear_solve and custom_root compute their `solve` body; the other bodies are
    for their derivatives only. The solve's consts follow those of the bodies before it."""
    lengths = eqn.params["const_lengths"]
    before = lengths[0] + lengths[1] if eqn.primitive is linear_solve_p else lengths[0]
    start, stop = before, before + lengths[2 if eqn.primitive is linear_solve_p else 1]
    closed: ClosedJaxpr = eqn.params["solve"]
    consts = [em.const_value(c) for c in closed.consts]
    operands = list(ins[start:stop]) + list(ins[sum(lengths):])
    return em.emit_jaxpr(closed.jaxpr, consts, operands, dests)


def _copy(em: Emitter, src, dst: Buf) -> None:
    em.materialize(src, dst)


def _cond(em: Emitter, eqn, ins, dests):
    branches: tuple[ClosedJaxpr, ...] = eqn.params["branches"]
    index, *ops = ins
    b = em.b
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    i = em.scalar_of(index)
    if index.aval.dtype == dtypes.bool_:
        i = b.zext(i, ir.IntType(32))
    else:
        i = convert(b, i, index.aval.dtype, np.dtype(np.int32))
    n = len(branches)
    lo, hi = ir.Constant(i.type, 0), ir.Constant(i.type, n - 1)
    i = b.select(b.icmp_signed("<", i, lo), lo, b.select(b.icmp_signed(">", i, hi), hi, i))
    merge = b.append_basic_block("cond.merge")
    blocks = [b.append_basic_block(f"cond.branch{k}") for k in range(n)]
    sw = b.switch(i, blocks[-1])
    for k in range(n - 1):
        sw.add_case(ir.Constant(i.type, k), blocks[k])
    for blk, br in zip(blocks, branches):
        b.position_at_end(blk)
        em.emit_jaxpr(br.jaxpr, [em.const_value(c) for c in br.consts], ops, outs)
        b.branch(merge)
    b.position_at_end(merge)
    return [_as_value(em, o) if d is None else o for o, d in zip(outs, dests)]


class _Carries:
    """Loop-carried state. Scalars live in allocas (mem2reg turns them into registers); arrays
    alternate between two buffers whose roles swap every iteration (no copy per iteration)."""

    def __init__(self, em: Emitter, avals: Sequence[ShapedArray], init: Sequence,
                 dests: Sequence[Buf | None], final_in_first: bool | None = None):
        self.em = em
        self.avals = list(avals)
        self.dests = list(dests)
        b = em.b
        self.slots: list[tuple] = []
        for aval, x, d in zip(avals, init, dests):
            if aval.ndim == 0:
                cur = d or em.alloc(aval)
                _copy(em, x, cur)
                self.slots.append((cur, em.alloc(aval)))
                continue
            # with a known trip-count parity the last iteration writes the destination itself
            first, second = em.alloc(aval), em.alloc(aval)
            if d is not None and final_in_first is not None:
                if final_in_first:
                    first = d
                else:
                    second = d
            _copy(em, x, first)
            holder = em._entry_alloca(first.ptr.type)
            b.store(first.ptr, holder)
            self.slots.append((first, second, holder))

    def current(self) -> list:
        out = []
        for aval, slot in zip(self.avals, self.slots):
            if aval.ndim == 0:
                out.append(_as_value(self.em, slot[0]))
            else:
                out.append(Buf(self.em.b.load(slot[2]), aval))
        return out

    def next_slots(self) -> list[Buf]:
        """Where this iteration writes the new state (the buffer not being read)."""
        b = self.em.b
        out = []
        for aval, slot in zip(self.avals, self.slots):
            if aval.ndim == 0:
                out.append(slot[1])
            else:
                first, second, holder = slot
                cur = b.load(holder)
                out.append(Buf(b.select(b.icmp_unsigned("==", cur, first.ptr), second.ptr,
                                        first.ptr), aval))
        return out

    def advance(self, written: list[Buf]) -> None:
        b = self.em.b
        for aval, slot, new in zip(self.avals, self.slots, written):
            if aval.ndim == 0:
                _copy(self.em, _as_value(self.em, new), slot[0])
            else:
                b.store(new.ptr, slot[2])

    def results(self) -> list:
        em, b = self.em, self.em.b
        out = []
        for aval, slot, d, val in zip(self.avals, self.slots, self.dests, self.current()):
            if aval.ndim == 0:
                out.append(val if d is None else slot[0])
            elif d is None:
                out.append(val)
            elif val.ptr is not d.ptr:
                with b.if_then(b.icmp_unsigned("!=", val.ptr, d.ptr)):
                    _copy(em, val, d)
                out.append(d)
        return out


def _while(em: Emitter, eqn, ins, dests):
    p = eqn.params
    cond_j, body_j = p["cond_jaxpr"], p["body_jaxpr"]
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
    b = em.b
    carries = _Carries(em, [v.aval for v in eqn.outvars], init, dests)
    header = b.append_basic_block("while.head")
    body_bb = b.append_basic_block("while.body")
    exit_bb = b.append_basic_block("while.exit")
    b.branch(header)
    b.position_at_end(header)
    # as in JAX, a body's leading invars are its const operands, then the carry
    (pred,) = em.emit_jaxpr(cond_j.jaxpr, [em.const_value(c) for c in cond_j.consts],
                            list(cond_consts) + carries.current())
    b.cbranch(em.scalar_of(pred), body_bb, exit_bb)
    b.position_at_end(body_bb)
    new = carries.next_slots()
    current = carries.current()
    for k in _updated_in_place(body_j.jaxpr, bn, len(new)):
        new[k] = current[k]
    # the body runs an unknown number of times: loops in it vectorise their math's slow paths
    # as a long loop would; its scalar code takes the branchy scalar paths
    with repeated(_WHILE_REPEATS), inline_slow_paths(False):
        em.emit_jaxpr(body_j.jaxpr, [em.const_value(c) for c in body_j.consts],
                      list(body_consts) + current, new)
    carries.advance(new)
    emit_poll(em)  # Ctrl-C stops a long loop at its next iteration
    b.branch(header)
    b.position_at_end(exit_bb)
    return carries.results()


_WHILE_REPEATS = 1 << 20


def _row(em: Emitter, buf, i: ir.Value) -> Buf:
    """Row i of a buffer (a contiguous view), or step i of a column block."""
    row = ShapedArray(buf.aval.shape[1:], buf.aval.dtype, buf.aval.weak_type)
    stride = buf.stride if isinstance(buf, _Columns) else row.size
    ptr = em.b.gep(buf.ptr, [em.b.mul(i, ir.Constant(I64, stride))], inbounds=True)
    return Buf(ptr, row)


class _Columns:
    """A block of columns of a (steps, ...) array, as a row_map row sees its scan's xs or ys
    (compiler.element_loops): step t (`_row`) is `aval.shape[1:]` contiguous elements at
    ptr + t * stride (the array's row length)."""
    __slots__ = ("aval", "ptr", "stride")

    def __init__(self, ptr: ir.Value, aval: ShapedArray, stride: int):
        self.ptr, self.aval, self.stride = ptr, aval, stride


def _row_map(em: Emitter, eqn, ins, dests):
    """A row kernel (compiler.rows, compiler.element_loops): one loop over rows, the body
    emitted inside it on row views of the operands and results (rows.py's row_map_p says which
    axis each one's rows run along); its temporaries are row-sized slots every row reuses. A
    shorter last row runs the `tail` body, behind a branch inside the same loop (so that the
    pool still sees one loop over rows)."""
    p = eqn.params
    full = p["body"].jaxpr
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    n = math.prod(p["rows"])
    b = em.b

    def view(x, axis, i, v, row_aval):  # row i of x; v: the full row's body value
        if axis is None:
            return x
        size = math.prod(v.aval.shape[axis:])  # (the offset of a shorter last row too)
        ptr = b.gep(x.ptr, [b.mul(i, ir.Constant(I64, size))], inbounds=True)
        if axis == 0:
            return Buf(ptr, row_aval)
        return _Columns(ptr, row_aval, math.prod(x.aval.shape[1:]))

    def emit_row(i, closed: ClosedJaxpr):
        body = closed.jaxpr
        args = [view(x, a, i, f, v.aval) for x, a, f, v in
                zip(ins, p["in_axes"], full.invars, body.invars)]
        out_rows = [view(o, a, i, f, v.aval) for o, a, f, v in
                    zip(outs, p["out_axes"], full.outvars, body.outvars)]
        if 1 in p["in_axes"] + p["out_axes"]:
            _scan_of_columns(em, body, args, out_rows)
            return
        args = [_as_value(em, x) if isinstance(x, Buf) and a is not None else x
                for x, a in zip(args, p["in_axes"])]
        placed = _temporaries_in_outputs(body)
        saved, em.next_row = em.next_row, _next_row(i)
        em.emit_jaxpr(body, [em.const_value(c) for c in closed.consts], args, out_rows,
                      placed={v: out_rows[k] for v, k in placed.items()},
                      outline=_outline_row_kernels(body))
        em.next_row = saved

    def _next_row(i):
        """(i8 pointer, bytes) of the next row of the operand with the longest rows (this row
        again for the last one), which the row's work can fetch while this row is in cache."""
        rows = [(math.prod(v.aval.shape) * v.aval.dtype.itemsize, x) for x, a, v in
                zip(ins, p["in_axes"], full.invars) if a == 0 and isinstance(x, Buf)]
        if not rows or p["tail"] is not None:
            return None
        nbytes, x = max(rows, key=lambda r: r[0])
        nxt = b.add(i, ir.Constant(I64, 1))
        nxt = b.select(b.icmp_signed("<", nxt, ir.Constant(I64, n)), nxt, i)
        base = b.bitcast(x.ptr, ir.IntType(8).as_pointer())
        return b.gep(base, [b.mul(nxt, ir.Constant(I64, nbytes))], inbounds=True), nbytes

    pipe = _pipelined(full) if p["tail"] is None and 1 not in p["in_axes"] + p["out_axes"] \
        else None
    if pipe is not None:
        # the per-row scalars the rescaling reads, kept for the next row; a chunk's first row
        # rescales a zeroed scratch row instead (one kernel for every row, the body emitted
        # once: a branch to a kernel without the rescaling cost ~30% more compile time)
        carried = [em._entry_alloca(reg_type(v.aval.dtype)) for v in pipe.scalars]
        for cell, v in zip(carried, pipe.scalars):
            b.store(ir.Constant(reg_type(v.aval.dtype), 0), cell)
        row_aval = full.outvars[pipe.out].aval  # (at most PIPELINE_MAX_ROW_BYTES: a stack row)
        cell = em._entry_alloca(ir.ArrayType(mem_type(row_aval.dtype), row_aval.size))
        scratch = Buf(b.bitcast(cell, mem_type(row_aval.dtype).as_pointer()), row_aval)
        _zero_fill(em, scratch)

    def carried_values():
        return [Scalar(b.load(cell), v.aval) for cell, v in zip(carried, pipe.scalars)]

    def emit_pipelined(i, start, stop):
        """Row i of a pipelined body (`_Pipelined`), rescaling row i - 1 (the scratch row at
        a chunk's first row); a chunk's last row then rescales itself."""
        args = [view(x, a, i, f, f.aval) for x, a, f in zip(ins, p["in_axes"], full.invars)]
        args = [_as_value(em, x) if isinstance(x, Buf) and a is not None else x
                for x, a in zip(args, p["in_axes"])]
        out_rows = [view(o, a, i, f, f.aval) for o, a, f in
                    zip(outs, p["out_axes"], full.outvars)]
        row = out_rows[pipe.out]
        before = b.gep(outs[pipe.out].ptr, [b.mul(b.sub(i, ir.Constant(I64, 1)),
                                                  ir.Constant(I64, row_aval.size))])
        prev = Buf(b.select(b.icmp_signed("==", i, start), scratch.ptr, before), row_aval)
        to = [out_rows[k] for k in pipe.kept] + [row] + [None] * len(pipe.scalars) + [prev]
        saved, em.next_row = em.next_row, _next_row(i)
        got = em.emit_jaxpr(pipe.merged, [], args + [prev] + carried_values(), to,
                            outline=True, placed={v: to[k] for v, k in
                                                  _temporaries_in_outputs(pipe.merged).items()})
        em.next_row = saved
        at = len(pipe.kept) + 1  # this row's scalars, for its rescaling
        for cell, x in zip(carried, got[at:at + len(pipe.scalars)]):
            b.store(em.scalar_of(x), cell)
        with b.if_then(b.icmp_signed("==", b.add(i, ir.Constant(I64, 1)), stop)):
            em.emit_jaxpr(pipe.last, [], [row] + carried_values(), [row], outline=True)

    def body_at(i):
        if pipe is not None:
            emit_pipelined(i, *em.loop_ranges[-1])
            return
        if p["tail"] is None:
            emit_row(i, p["body"])
            return
        with b.if_else(b.icmp_signed("==", i, ir.Constant(I64, n - 1))) as (last, other):
            with last:
                emit_row(i, p["tail"])
            with other:
                emit_row(i, p["body"])
    em.loop(n, body_at, name="row")
    return outs


def _zero_fill(em: Emitter, buf: Buf) -> None:
    """Zero a buffer with llvm.memset (no loop: a parallel chunk body has one, over rows)."""
    b = em.b
    i8p = ir.IntType(8).as_pointer()
    fn = em.module.globals.get("llvm.memset.p0.i64") or ir.Function(
        em.module, ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(8), I64, ir.IntType(1)]),
        "llvm.memset.p0.i64")
    b.call(fn, [b.bitcast(buf.ptr, i8p), ir.Constant(ir.IntType(8), 0),
                ir.Constant(I64, buf.aval.size * buf.aval.dtype.itemsize),
                ir.Constant(ir.IntType(1), 0)])


# A row body's elementwise kernels over rows of at least this many elements are functions of
# their own, called once a row: inline in the loop over rows, LLVM kept the constants of a
# kernel like softmax's exp as addresses in general registers for the whole row loop (the large
# code model's movabsq), ran out of them and reloaded each broadcast every iteration (softmax
# 1000² on one thread 434 -> 359 µs); the call costs a few ns a row.
OUTLINE_ROW_MIN_ELEMENTS = 256


def _outline_row_kernels(body) -> bool:
    sizes = [v.aval.size for e in body.eqns for v in e.outvars if v.aval.ndim]
    return bool(sizes) and min(sizes) >= OUTLINE_ROW_MIN_ELEMENTS


# Rows of at most this many bytes are pipelined (_Pipelined). One thread, CPU time, against the
# row-by-row emission: softmax 1000x1000 float32 (4,000-byte rows) 10% faster, 1000x1024 2-3%;
# 8 KiB rows (1000x2048 float32, 1000x1000 float64) within noise; 3072-wide float32 ~2% slower
# and 4096² 17% slower: the merged kernel streams three rows (its input, its output, the
# previous output row), and three 16 KiB rows fill the 48 KiB L1.
PIPELINE_MAX_ROW_BYTES = 4 << 10


class _Pipelined:
    """A row body whose last kernel rescales, in place, an output row that an earlier
    elementwise kernel wrote (softmax's e * (1 / sum) after the exp), emitted
    software-pipelined: row i's earlier kernel also rescales row i - 1 in the same loop, so
    that pass's loads, multiplies and stores run among the exp's arithmetic instead of as a
    short loop of their own at the end of each row (README, "softmax 1000²"). Each element is
    computed by the same operations as before: the results are bit-identical.

    `merged`: the body without that kernel, returning the output rows but the rescaled one
    (`kept`), the row it rescales, and the per-row scalars it reads (`scalars`, carried to the
    next row), its earlier kernel also computing the previous row's rescaling (extra operands:
    that row and its scalars; extra result: the row again); `last`: the rescaling alone (the
    row, its scalars)."""

    def __init__(self, merged, last, kept, out, scalars):
        self.merged, self.last = merged, last
        self.kept, self.out, self.scalars = kept, out, scalars


def _pipelined(body: Jaxpr) -> _Pipelined | None:
    """The pipelined form of a row body, where it has one (`_Pipelined`); else None."""
    if not body.eqns or not _outline_row_kernels(body):
        return None
    scale = body.eqns[-1]
    outvars = list(body.outvars)
    if len(scale.outvars) != 1 or not _pointwise(scale) or outvars.count(scale.outvars[0]) != 1:
        return None
    (o,) = scale.outvars
    out = outvars.index(o)
    rows = {v for v in scale.invars if isinstance(v, Var) and v.aval.ndim}
    scalars = list(dict.fromkeys(v for v in scale.invars if isinstance(v, Var)
                                 and v.aval.ndim == 0))
    if len(rows) != 1 or o.aval.ndim == 0 or \
            o.aval.size * o.aval.dtype.itemsize > PIPELINE_MAX_ROW_BYTES:
        return None
    (v,) = rows
    if _temporaries_in_outputs(body).get(v) != out:
        return None
    k = next(k for k, e in enumerate(body.eqns) if v in e.outvars)
    early = body.eqns[k]
    if len(early.outvars) != 1 or not _pointwise(early) or k == len(body.eqns) - 1 or \
            any(e.primitive is fused_p and e.params["body"].consts for e in (early, scale)):
        return None
    kept = [j for j in range(len(outvars)) if j != out]
    head_outs = [outvars[j] for j in kept] + [v] + scalars
    # the merged kernel: one fused body computing the early kernel's row and the rescaling
    shifted, prev, prev_scalars = _on_fresh_operands(scale, v, scalars)
    first, second = _kernel_body(early), _kernel_body(shifted)
    merged_body = Jaxpr([], first.invars + second.invars, first.outvars + second.outvars,
                        first.eqns + second.eqns)
    both = Eqn(fused_p, list(early.invars) + list(shifted.invars), [v, shifted.outvars[0]],
               {"body": ClosedJaxpr(merged_body, [])}, early.source_info)
    merged = Jaxpr([], list(body.invars) + [prev] + prev_scalars,
                   head_outs + shifted.outvars, body.eqns[:k] + [both] + body.eqns[k + 1:-1])
    alone, row, row_scalars = _on_fresh_operands(scale, v, scalars)
    last = Jaxpr([], [row] + row_scalars, alone.outvars, [alone])
    return _Pipelined(merged, last, kept, out, scalars)


def _on_fresh_operands(eqn: Eqn, row: Var, scalars: list) -> tuple[Eqn, Var, list]:
    """`eqn` reading new variables in place of `row` and `scalars` (returned with it), and
    writing a new one."""
    fresh = {x: Var(x.aval) for x in [row] + scalars}
    out: list[Eqn] = []
    copy_eqns([eqn], fresh, out)
    return out[0], fresh[row], [fresh[x] for x in scalars]


def _kernel_body(eqn: Eqn) -> Jaxpr:
    """An elementwise kernel's body on fresh variables, one invar per operand of `eqn`."""
    if eqn.primitive is fused_p:
        return renamed(eqn.params["body"].jaxpr)
    ins = [Var(x.aval) for x in eqn.invars]
    out = [Var(x.aval) for x in eqn.outvars]
    return Jaxpr([], ins, out, [eqn.replace(invars=ins, outvars=out)])


def _scan_of_columns(em: Emitter, body, args: list, out_rows: list) -> None:
    """A row of an element loop over a scan with xs or ys (compiler.element_loops): the body
    is that scan alone, which reads its xs' and writes its ys' column blocks step by step."""
    (scan,) = body.eqns
    env = dict(zip(body.invars, args))
    dest_of = dict(zip(body.outvars, out_rows))
    _scan_steps(em, scan, [em.read(env, v) for v in scan.invars],
                [dest_of.get(v) for v in scan.outvars])


def _temporaries_in_outputs(body) -> dict:
    """Row temporaries that can live in an output row (var -> output index): softmax's exp,
    written straight to the output and scaled there, instead of a temporary row that the last
    loop copies out. The temporary must die at the elementwise kernel computing that output
    (which reads it at the position it writes), have the output's type, and be no output."""
    outs = list(body.outvars)
    last_reader = {v: k for k, e in enumerate(body.eqns) for v in e.invars if isinstance(v, Var)}
    produced = {v for e in body.eqns for v in e.outvars}
    placed: dict = {}
    for k, eqn in enumerate(body.eqns):
        if len(eqn.outvars) != 1 or outs.count(eqn.outvars[0]) != 1 or not _pointwise(eqn):
            continue
        (o,) = eqn.outvars
        for v in eqn.invars:
            if (isinstance(v, Var) and v in produced and v not in outs and v not in placed
                    and last_reader[v] == k and v.aval.shape == o.aval.shape
                    and v.aval.dtype == o.aval.dtype):
                placed[v] = outs.index(o)
                break
    return placed


def _pointwise(eqn) -> bool:
    """An elementwise kernel: element i of its result reads element i of each full operand."""
    if eqn.primitive is not fused_p:
        return is_elementwise(eqn)
    return all(is_elementwise(e) or (e.primitive is broadcast_in_dim_p and
                                     e.invars[0].aval.ndim == 0)
               for e in eqn.params["body"].jaxpr.eqns)


def _scan(em: Emitter, eqn, ins, dests):
    start = eqn.params["num_consts"] + eqn.params["num_carry"]
    return _scan_steps(em, eqn, list(ins[:start]) + [em.materialize(x) for x in ins[start:]],
                       dests)


def _scan_steps(em: Emitter, eqn, ins, dests):
    """The scan's loop; its xs (and the ys' destinations, where given) are buffers or column
    blocks (_Columns)."""
    p = eqn.params
    closed: ClosedJaxpr = p["jaxpr"]
    nc, nk, length, reverse = p["num_consts"], p["num_carry"], p["length"], p["reverse"]
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    b = em.b
    ys_avals = [v.aval for v in eqn.outvars[nk:]]
    carries = _Carries(em, [v.aval for v in eqn.outvars[:nk]], init, dests[:nk],
                       final_in_first=(length % 2 == 0))
    ys = [d or em.alloc(a) for d, a in zip(dests[nk:], ys_avals)]
    inner_consts = [em.const_value(c) for c in closed.consts]
    jaxpr, firsts, copies = _outputs_once(closed.jaxpr)
    # an array carry whose new value is also the step's y (an integrator saving its path) is
    # written into the y row only, and the next step reads it from there
    in_y = {c: j for j, c in copies if c < nk <= j and eqn.outvars[c].aval.ndim}
    in_place = _updated_in_place(closed.jaxpr, nc, nk)

    def body(i):
        t = b.sub(ir.Constant(I64, length - 1), i) if reverse else i
        x_rows = [_as_value(em, _row(em, x, t)) for x in xs]
        y_rows = [_row(em, y, t) for y in ys]
        out = carries.next_slots() + y_rows
        current = carries.current()
        for c, j in in_y.items():
            out[c] = out[j]
        for c in in_place:
            out[c] = current[c]
        # the scan's own loop carries a dependency and never vectorises: its scalar code takes
        # math's branchy scalar paths; loops inside it decide for themselves (em.loop)
        with inline_slow_paths(False):
            em.emit_jaxpr(jaxpr, inner_consts,  # invars: const operands, carry, x rows
                          list(consts) + current + x_rows, [out[k] for k in firsts])
        for k, first in copies:
            if out[k] is not out[first]:
                _copy(em, out[first], out[k])
        carries.advance(out[:nk])
        if em.scans_poll:  # (not in a short program: codegen.generate)
            emit_poll(em)
    em.loop(length, body, name="scan")
    return carries.results() + ys


def _updated_in_place(body: Jaxpr, first: int, count: int) -> list[int]:
    """The array carries k < count (the body's invar first + k, outvar k) whose new value an
    in-place rule (rules.IN_PLACE: a dynamic_update_slice, a scatter, a nested loop's carry)
    writes over the old one, which nothing else in the body reads: a step then updates the
    carry's own buffer, where writing the other of its two buffers copied the whole array
    every step (`fori_loop` filling 10 of 100,000 elements a step took 105 ms, JAX 0.06)."""
    uses = collections.Counter(v for e in body.eqns for v in e.invars if isinstance(v, Var))
    uses.update(v for v in body.outvars if isinstance(v, Var))
    return [k for k in range(count)
            if body.invars[first + k].aval.ndim and uses[body.invars[first + k]] == 1
            and uses[body.outvars[k]] == 1
            and _overwritten(body, body.outvars[k]) is body.invars[first + k]]


def _overwritten(body: Jaxpr, out) -> Var | None:
    """The operand whose buffer the equation of `body` that makes `out` may write it over
    (rules.IN_PLACE), or None."""
    made = next((e for e in body.eqns if out in e.outvars), None)
    rule = None if made is None else IN_PLACE.get(made.primitive)
    at = None if rule is None else rule(made, made.outvars.index(out))
    return None if at is None else made.invars[at]


def _outputs_once(jaxpr):
    """The body with each var among its outputs once (a value that is both the new carry and
    the step's y: computed straight into one destination and copied to the other, instead of
    into a temporary copied to both); the output positions it computes, and the (position,
    position computed) pairs to copy after it."""
    first: dict = {}
    firsts, copies = [], []
    for k, v in enumerate(jaxpr.outvars):
        if isinstance(v, Var) and v in first:
            copies.append((k, first[v]))
            continue
        if isinstance(v, Var):
            first[v] = k
        firsts.append(k)
    if not copies:
        return jaxpr, firsts, copies
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [jaxpr.outvars[k] for k in firsts], jaxpr.eqns,
                 jaxpr.debug_info), firsts, copies


_CALLS = (pjit_p, checkpoint_p, custom_jvp_call_p, custom_vjp_call_p, custom_vmap_call_p,
          linear_call_p)
STRUCTURAL.update({p: _inline_call for p in _CALLS})
STRUCTURAL.update({linear_solve_p: _inline_solve, root_p: _inline_solve})
STRUCTURAL.update({custom_lin_p: _custom_lin, cond_p: _cond, while_p: _while, scan_p: _scan,
                   row_map_p: _row_map})
# an inlined body may return one of its operands as it is
FORWARDING.update(_CALLS + (custom_lin_p, linear_solve_p, root_p))
# carries are updated in place: result j overwrites the initial value of carry j
IN_PLACE[while_p] = lambda eqn, j: eqn.params["cond_nconsts"] + eqn.params["body_nconsts"] + j
IN_PLACE[scan_p] = lambda eqn, j: (eqn.params["num_consts"] + j
                                   if j < eqn.params["num_carry"] else None)


def _cond_in_place(eqn, j: int) -> int | None:
    """A cond whose every branch returns, as result j, its operand k unchanged or updated by
    an in-place rule, that branch reading operand k nowhere else: result j may overwrite
    operand k (each branch writes its destination with that operand's buffer as a no-op copy
    or in place). `x.at[i].set(v)` under a cond in a loop body then updates the carry in
    place (_updated_in_place) instead of copying it every step."""
    k = None
    for branch in eqn.params["branches"]:
        body = branch.jaxpr
        out = body.outvars[j]
        old = out if out in body.invars else _overwritten(body, out)
        if old not in body.invars or k not in (None, body.invars.index(old)):
            return None
        k = body.invars.index(old)
        uses = sum(v is old for e in body.eqns for v in e.invars) + \
            sum(v is old for v in body.outvars)
        if uses != 1 or sum(v is out for v in body.outvars) != 1:
            return None
    return None if k is None else k + 1  # (the cond's operand 0 is the branch index)


IN_PLACE[cond_p] = _cond_in_place


def _row_map_in_place(eqn, j: int) -> int | None:
    """A row_map whose body is one loop (compiler.element_loops) updates its carries in place
    row by row, as the loop does on whole arrays: result j overwrites the operand holding the
    initial value of its carry (each row is read and written only while that row runs)."""
    body = eqn.params["body"].jaxpr
    if len(body.eqns) != 1:
        return None
    v = _overwritten(body, body.outvars[j])
    if not isinstance(v, Var) or body.invars.count(v) != 1:
        return None
    return body.invars.index(v)


IN_PLACE[row_map_p] = _row_map_in_place
