"""Jaxpr -> LLVM IR: one module per executable with one entry function for the whole program.

Values live in one of three forms while emitting: `Scalar` (rank 0, in a register), `Buf` (an
array in memory: an input, an output, or a slot of the workspace) and `Lazy` (a fused value,
computed elementwise inside the loop nest of whoever consumes it). Fusion decisions come from
`compiler.fusion`; this module turns them into loop nests, reductions, branches and native loops.

Entry signature: `void entry(i8** inputs, i8** outputs, i8* workspace)`.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import llvmlite.ir as ir
import numpy as np

from ...compiler.fusion import ELEMENTWISE, FusionPlan, fusible, plan_fusion
from ...core import dtypes
from ...core.avals import ShapedArray
from ...core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from .complex_ops import accumulating_mul, pack, parts
from .scalar_ops import convert, emit_scalar
from .types import I1, I8, I64, const, mem_type, reg_type

I8P = I8.as_pointer()
_ALIGN = 64


class Scalar:
    __slots__ = ("value", "aval")

    def __init__(self, value: ir.Value, aval: ShapedArray):
        self.value, self.aval = value, aval


class Buf:
    __slots__ = ("ptr", "aval")

    def __init__(self, ptr: ir.Value, aval: ShapedArray):
        self.ptr, self.aval = ptr, aval


class Lazy:
    __slots__ = ("eqn", "aval", "env")

    def __init__(self, eqn, aval: ShapedArray, env: dict):
        self.eqn, self.aval, self.env = eqn, aval, env


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


class NativeCompileError(NotImplementedError):
    pass


class Emitter:
    """Emits a whole program into one LLVM function."""

    def __init__(self, name: str):
        self.module = ir.Module(name=name)
        self.workspace_bytes = 0
        self._free: list[tuple[int, int]] = []  # released workspace slots (offset, size)
        self._slot_of: dict[int, tuple[int, int]] = {}  # id(Buf.ptr) -> its slot
        self.fusion_plans: list[tuple[Jaxpr, FusionPlan]] = []
        self.b: ir.IRBuilder | None = None
        self.workspace: ir.Value | None = None
        self._memo: dict | None = None
        self._dying: set[int] = set()

    # --- memory ------------------------------------------------------------------------------
    def alloc(self, aval: ShapedArray) -> Buf:
        """A workspace slot for a temporary (static offset; a loop body reuses its slots)."""
        if aval.ndim == 0:
            ptr = self._entry_alloca(mem_type(aval.dtype))
            return Buf(ptr, aval)
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
        self._slot_of[id(buf.ptr)] = slot
        return buf

    def take_over(self, buf: Buf) -> Buf:
        """Reuse a dying temporary's memory for a result (an in-place update)."""
        slot = self._slot_of.pop(id(buf.ptr))
        # a new pointer object (llvmlite's same-type bitcast returns its operand): releasing the
        # dead operand's Buf must not free the slot the result now owns
        fresh = Buf(self.b.gep(buf.ptr, [ir.Constant(I64, 0)], inbounds=True), buf.aval)
        self._slot_of[id(fresh.ptr)] = slot
        return fresh

    def can_update_in_place(self, eqn, operand) -> bool:
        """The operand is a workspace temporary that dies at this equation."""
        v = eqn.invars[0]
        return (isinstance(operand, Buf) and id(operand.ptr) in self._slot_of and
                isinstance(v, Var) and id(v) in self._dying and operand.aval.ndim > 0)

    def release(self, val) -> None:
        """The value is dead: its workspace slot may hold a later temporary."""
        if isinstance(val, Buf):
            slot = self._slot_of.pop(id(val.ptr), None)
            if slot is not None:
                self._free.append(slot)

    def _entry_alloca(self, t: ir.Type) -> ir.Value:
        """Allocas go in the entry block so mem2reg turns loop-carried scalars into registers."""
        b = self.b
        here = b.block
        entry = b.function.entry_basic_block
        with b.goto_block(entry):
            if entry.instructions:
                b.position_before(entry.instructions[0])
            ptr = b.alloca(t)
        b.position_at_end(here)
        return ptr

    def load(self, buf: Buf, linear: ir.Value | None) -> ir.Value:
        ptr = buf.ptr if linear is None else self.b.gep(buf.ptr, [linear], inbounds=True)
        v = self.b.load(ptr)
        return self.b.trunc(v, I1) if buf.aval.dtype == dtypes.bool_ else v

    def store(self, buf: Buf, linear: ir.Value | None, value: ir.Value) -> None:
        if buf.aval.dtype == dtypes.bool_:
            value = self.b.zext(value, I8)
        ptr = buf.ptr if linear is None else self.b.gep(buf.ptr, [linear], inbounds=True)
        self.b.store(value, ptr)

    def linear(self, shape: Sequence[int], idx: Sequence[ir.Value]) -> ir.Value | None:
        if not shape:
            return None
        acc = None
        for i, s in zip(idx, _strides(shape)):
            term = i if s == 1 else self.b.mul(i, ir.Constant(I64, s))
            acc = term if acc is None else self.b.add(acc, term)
        return acc

    # --- loops -------------------------------------------------------------------------------
    def loop(self, n: int | ir.Value, body: Callable[[ir.Value], None], name: str = "i") -> None:
        b = self.b
        n = ir.Constant(I64, n) if isinstance(n, int) else n
        pre = b.block
        header = b.append_basic_block(f"{name}.head")
        body_bb = b.append_basic_block(f"{name}.body")
        exit_bb = b.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, name=name)
        i.add_incoming(ir.Constant(I64, 0), pre)
        b.cbranch(b.icmp_signed("<", i, n), body_bb, exit_bb)
        b.position_at_end(body_bb)
        body(i)
        i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
        b.branch(header)
        b.position_at_end(exit_bb)

    def loop_nest(self, shape: Sequence[int], body: Callable[[list[ir.Value]], None]) -> None:
        def rec(k: int, idx: list[ir.Value]):
            if k == len(shape):
                saved, self._memo = self._memo, {}
                body(idx)
                self._memo = saved
                return
            self.loop(shape[k], lambda i: rec(k + 1, idx + [i]), name=f"d{k}")
        rec(0, [])

    # --- values ------------------------------------------------------------------------------
    def read(self, env: dict, v) -> Any:
        if isinstance(v, Literal):
            return Scalar(const(v.aval.dtype, v.val), v.aval)
        return env[id(v)]

    def scalar_of(self, val) -> ir.Value:
        if isinstance(val, Scalar):
            return val.value
        if isinstance(val, Buf):
            return self.load(val, None)
        return self.value_at(val, [])

    def value_at(self, val, idx: list[ir.Value]) -> ir.Value:
        """The element of a value at a multi-index (rank-0 values ignore the index)."""
        if isinstance(val, Scalar):
            return val.value
        if isinstance(val, Buf):
            return self.load(val, self.linear(val.aval.shape, idx) if val.aval.ndim else None)
        key = (id(val), tuple(id(i) for i in idx))
        hit = self._memo.get(key) if self._memo is not None else None
        if hit is not None and hit[0] is val:  # ids of dead values get reused: check identity
            return hit[1]
        out = self._lazy_at(val, idx)
        if self._memo is not None:
            self._memo[key] = (val, out)
        return out

    def _lazy_at(self, lazy: Lazy, idx: list[ir.Value]) -> ir.Value:
        eqn, env, b = lazy.eqn, lazy.env, self.b
        name = eqn.primitive.name
        p = eqn.params
        ins = [self.read(env, v) for v in eqn.invars]
        if name in _INDEX_MAPS:
            return _INDEX_MAPS[name](self, ins, eqn, idx)
        args = [self.value_at(x, idx if x.aval.ndim else []) for x in ins]
        return emit_scalar(b, name, [x.aval.dtype for x in ins], lazy.aval.dtype, args, p)

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
        self.loop_nest(aval.shape, lambda idx: self.store(
            dest, self.linear(aval.shape, idx), self.value_at(val, idx)))
        return dest

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
                   dests: list[Buf | None] | None = None) -> list:
        """Emit `jaxpr` at the builder's position; outputs go to `dests` where given."""
        plan = plan_fusion(jaxpr)
        self.fusion_plans.append((jaxpr, plan))
        env: dict[int, Any] = {}
        for v, x in zip(jaxpr.constvars, consts):
            env[id(v)] = x
        for v, x in zip(jaxpr.invars, args):
            env[id(v)] = x
        dests = dests or [None] * len(jaxpr.outvars)
        # an output computed here (and returned once) is written straight into its destination
        direct: dict[int, Buf] = {}
        produced = {id(v) for e in jaxpr.eqns for v in e.outvars}
        counts: dict[int, int] = {}
        for v in jaxpr.outvars:
            counts[id(v)] = counts.get(id(v), 0) + 1
        for v, d in zip(jaxpr.outvars, dests):
            if d is not None and isinstance(v, Var) and id(v) in produced and counts[id(v)] == 1:
                direct[id(v)] = d
        last_use = _last_uses(jaxpr, plan)
        keep = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
        for k, eqn in enumerate(jaxpr.eqns):
            self._dying = {id(v) for v in last_use.get(k, ()) if id(v) not in keep}
            self.emit_eqn(eqn, env, plan, direct)
            for v in last_use.get(k, ()):
                if id(v) not in keep and id(v) not in direct:
                    self.release(env.get(id(v)))
        outs = []
        for v, d in zip(jaxpr.outvars, dests):
            val = self.read(env, v)
            if d is not None and not (isinstance(val, Buf) and val.ptr is d.ptr):
                val = self.materialize(val, d)
            outs.append(val)
        return outs

    def emit_eqn(self, eqn, env: dict, plan: FusionPlan, direct: dict[int, Buf]) -> None:
        name = eqn.primitive.name
        out = eqn.outvars[0] if eqn.outvars else None
        if fusible(eqn):
            if id(out) in plan.lazy:
                env[id(out)] = Lazy(eqn, out.aval, env)
                return
            if out.aval.ndim == 0 and id(out) not in direct:
                env[id(out)] = Scalar(self.value_at(Lazy(eqn, out.aval, env), []), out.aval)
                return
            env[id(out)] = self.materialize(Lazy(eqn, out.aval, env), direct.get(id(out)))
            return
        rule = _STRUCTURAL.get(name)
        if rule is None:
            raise NativeCompileError(
                f"the native backend cannot compile primitive `{name}` yet (at "
                f"{eqn.source_info}); run it with jax.jit(..., backend='interpret') or "
                "config.update('tracejit_backend', 'interpret').")
        ins = [self.read(env, v) for v in eqn.invars]
        outs = rule(self, eqn, ins, [direct.get(id(v)) for v in eqn.outvars])
        for v, o in zip(eqn.outvars, outs):
            env[id(v)] = o


def _last_uses(jaxpr: Jaxpr, plan: FusionPlan) -> dict[int, list]:
    """eqn index -> vars produced in this jaxpr that are dead after it. A fused (lazy) value
    reads its operands wherever it is finally computed, which extends their lifetime."""
    last: dict[int, int] = {}
    index = {id(v): k for k, e in enumerate(jaxpr.eqns) for v in e.outvars}
    for k in range(len(jaxpr.eqns) - 1, -1, -1):
        eqn = jaxpr.eqns[k]
        lazy_out = eqn.outvars and id(eqn.outvars[0]) in plan.lazy
        end = last.get(id(eqn.outvars[0]), k) if lazy_out else k
        for v in eqn.invars:
            if isinstance(v, Var) and id(v) in index:
                last[id(v)] = max(last.get(id(v), -1), end)
    out: dict[int, list] = {}
    by_id = {id(v): v for e in jaxpr.eqns for v in e.outvars}
    for vid, k in last.items():
        out.setdefault(k, []).append(by_id[vid])
    return out


# --- index maps: shape ops fused as index arithmetic (never reading out of bounds) -----------

def _zero() -> ir.Constant:
    return ir.Constant(I64, 0)


def _broadcast_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    bdims = eqn.params["broadcast_dimensions"]
    sub = [idx[bd] if x.aval.shape[k] != 1 else _zero() for k, bd in enumerate(bdims)]
    return em.value_at(x, sub)


def _iota_at(em: Emitter, ins, eqn, idx):
    dt = eqn.params["dtype"]
    return convert(em.b, idx[eqn.params["dimension"]], np.dtype(np.int64), dt)


def _transpose_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    perm = eqn.params["permutation"]
    sub: list = [None] * len(perm)
    for k, p in enumerate(perm):
        sub[p] = idx[k]
    return em.value_at(x, sub)


def _delinearize(em: Emitter, linear: ir.Value, shape: Sequence[int]) -> list[ir.Value]:
    out = []
    for d, s in zip(shape, _strides(shape)):
        if d == 1:
            out.append(_zero())
            continue
        q = linear if s == 1 else em.b.udiv(linear, ir.Constant(I64, s))
        out.append(em.b.urem(q, ir.Constant(I64, d)))
    return out


def _reshape_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    out_shape = eqn.outvars[0].aval.shape
    dims = eqn.params.get("dimensions")
    if dims is not None:  # reshape of transpose(x, dims): go through the transposed index
        t_idx = _delinearize(em, em.linear(out_shape, idx), [x.aval.shape[d] for d in dims])
        sub: list = [None] * x.aval.ndim
        for k, d in enumerate(dims):
            sub[d] = t_idx[k]
        return em.value_at(x, sub)
    in_shape = x.aval.shape
    if x.aval.ndim == 0:
        return em.value_at(x, [])
    # dropping/adding unit dims keeps the index; anything else goes through the linear index
    squeezed_out = [i for i, d in zip(idx, out_shape) if d != 1]
    if [d for d in in_shape if d != 1] == [d for d in out_shape if d != 1]:
        it = iter(squeezed_out)
        return em.value_at(x, [next(it) if d != 1 else _zero() for d in in_shape])
    if isinstance(x, Buf):
        return em.load(x, em.linear(out_shape, idx))
    return em.value_at(x, _delinearize(em, em.linear(out_shape, idx), in_shape))


def _squeeze_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    dims = set(eqn.params["dimensions"])
    it = iter(idx)
    return em.value_at(x, [_zero() if k in dims else next(it) for k in range(x.aval.ndim)])


def _rev_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    dims = set(eqn.params["dimensions"])
    sub = [em.b.sub(ir.Constant(I64, x.aval.shape[k] - 1), i) if k in dims else i
           for k, i in enumerate(idx)]
    return em.value_at(x, sub)


def _slice_at(em: Emitter, ins, eqn, idx):
    (x,) = ins
    p = eqn.params
    strides = p["strides"] or (1,) * len(idx)
    sub = []
    for i, lo, st in zip(idx, p["start_indices"], strides):
        j = i if st == 1 else em.b.mul(i, ir.Constant(I64, st))
        sub.append(j if lo == 0 else em.b.add(j, ir.Constant(I64, lo)))
    return em.value_at(x, sub)


def _clamp_index(em: Emitter, i: ir.Value, hi: int) -> ir.Value:
    b = em.b
    lo_c, hi_c = _zero(), ir.Constant(I64, hi)
    i = b.select(b.icmp_signed("<", i, lo_c), lo_c, i)
    return b.select(b.icmp_signed(">", i, hi_c), hi_c, i)


def _concatenate_at(em: Emitter, ins, eqn, idx):
    dim = eqn.params["dimension"]
    b = em.b
    offset = 0
    out = None
    for x in ins:
        n = x.aval.shape[dim]
        if n == 0:
            continue
        local = b.sub(idx[dim], ir.Constant(I64, offset)) if offset else idx[dim]
        sub = list(idx)
        sub[dim] = _clamp_index(em, local, n - 1)
        v = em.value_at(x, sub)
        if out is None:
            out = v
        else:
            out = b.select(b.icmp_signed("<", idx[dim], ir.Constant(I64, offset)), out, v)
        offset += n
    return out


def _pad_at(em: Emitter, ins, eqn, idx):
    x, pad_value = ins
    b = em.b
    inside = ir.Constant(I1, 1)
    sub = []
    for i, n, (lo, _, interior) in zip(idx, x.aval.shape, eqn.params["padding_config"]):
        t = b.sub(i, ir.Constant(I64, lo)) if lo else i
        step = interior + 1
        q = t if step == 1 else b.sdiv(t, ir.Constant(I64, step))
        ok = b.and_(b.icmp_signed(">=", t, _zero()), b.icmp_signed("<", q, ir.Constant(I64, n)))
        if step != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(t, ir.Constant(I64, step)), _zero()))
        inside = b.and_(inside, ok)
        sub.append(_clamp_index(em, q, max(n - 1, 0)))
    pv = em.scalar_of(pad_value)
    if x.aval.size == 0:
        return pv
    return b.select(inside, em.value_at(x, sub), pv)


def _dynamic_slice_at(em: Emitter, ins, eqn, idx):
    x, *starts = ins
    sizes = eqn.params["slice_sizes"]
    sub = []
    for i, start, n, size in zip(idx, starts, x.aval.shape, sizes):
        st = convert(em.b, em.scalar_of(start), start.aval.dtype, np.dtype(np.int64))
        sub.append(em.b.add(i, _clamp_index(em, st, n - size)))  # XLA clamps the window
    return em.value_at(x, sub)


def _window_starts(em: Emitter, shape, indices, bidx: list, index_map, operand_bdims,
                   indices_bdims, sizes) -> tuple[dict[int, ir.Value], ir.Value]:
    """Clamped window starts per operand dim for one index vector, and whether the unclamped
    window lay wholly in bounds (the same rule as the reference `_window_indices`)."""
    b = em.b
    starts: dict[int, ir.Value] = {}
    in_bounds = ir.Constant(I1, 1)
    for k, d in enumerate(index_map):
        raw = em.value_at(indices, bidx + [ir.Constant(I64, k)])
        st = convert(b, raw, indices.aval.dtype, np.dtype(np.int64))
        upper = shape[d] - sizes[d]
        ok = b.and_(b.icmp_signed(">=", st, _zero()),
                    b.icmp_signed("<=", st, ir.Constant(I64, upper)))
        in_bounds = b.and_(in_bounds, ok)
        starts[d] = _clamp_index(em, st, max(upper, 0))
    for od, bd in zip(operand_bdims, indices_bdims):
        starts[od] = bidx[bd]
    return starts, in_bounds


def _gather_at(em: Emitter, ins, eqn, idx):
    from ...lax.indexing import GatherScatterMode
    x, indices = ins
    p = eqn.params
    dn = p["dimension_numbers"]
    sizes = p["slice_sizes"]
    window_dims = [d for d in range(x.aval.ndim)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    bidx = [i for k, i in enumerate(idx) if k not in dn.offset_dims]
    widx = [i for k, i in enumerate(idx) if k in dn.offset_dims]
    starts, in_bounds = _window_starts(em, x.aval.shape, indices, bidx, dn.start_index_map,
                                       dn.operand_batching_dims,
                                       dn.start_indices_batching_dims, sizes)
    coord = []
    for d in range(x.aval.ndim):
        c = starts.get(d, _zero())
        if d in window_dims:
            c = em.b.add(c, widx[window_dims.index(d)])
        coord.append(c)
    v = em.value_at(x, coord)
    if p["mode"] == GatherScatterMode.FILL_OR_DROP:
        fill = np.asarray(p["fill_value"]) if p["fill_value"] is not None else None
        with np.errstate(all="ignore"):
            fill_c = const(x.aval.dtype, fill.astype(x.aval.dtype))
        v = em.b.select(in_bounds, v, fill_c)
    return v


_INDEX_MAPS: dict[str, Callable] = {
    "gather": _gather_at,
    "dynamic_slice": _dynamic_slice_at,
    "broadcast_in_dim": _broadcast_at, "iota": _iota_at, "transpose": _transpose_at,
    "reshape": _reshape_at, "squeeze": _squeeze_at, "rev": _rev_at, "slice": _slice_at,
    "concatenate": _concatenate_at, "pad": _pad_at,
}


# --- structural rules: reductions, calls, control flow --------------------------------------

def _reduce_identity(name: str, dtype: np.dtype):
    if name == "reduce_sum" or name == "reduce_or" or name == "reduce_xor":
        return 0
    if name == "reduce_prod":
        return 1
    if name == "reduce_and":
        return True if dtype == dtypes.bool_ else -1
    info = np.finfo(dtype) if dtypes.is_inexact(dtype) else None
    if name == "reduce_max":
        if dtype == dtypes.bool_:
            return False
        return -np.inf if info is not None else np.iinfo(dtype).min
    if name == "reduce_min":
        if dtype == dtypes.bool_:
            return True
        return np.inf if info is not None else np.iinfo(dtype).max
    raise KeyError(name)


_REDUCE_COMBINE = {"reduce_sum": "add", "reduce_prod": "mul", "reduce_max": "max",
                   "reduce_min": "min", "reduce_and": "and", "reduce_or": "or", "reduce_xor": "xor"}


def _combine(em: Emitter, name: str, dtype: np.dtype, acc: ir.Value, x: ir.Value) -> ir.Value:
    op = _REDUCE_COMBINE[name]
    if dtype.kind == "c" and op == "add":  # part by part, so complex sums vectorise too
        b = em.b
        re, im = (b.fadd(b.extract_value(acc, k), b.extract_value(x, k), flags=("reassoc",))
                  for k in (0, 1))
        return pack(b, re, im)
    if dtype.kind == "c" and op == "mul":
        return accumulating_mul(em.b, acc, x)
    if dtypes.is_float(dtype) and op in ("add", "mul"):
        # reassoc lets the sum vectorise (partial sums); NaN/Inf semantics are unchanged
        return (em.b.fadd if op == "add" else em.b.fmul)(acc, x, flags=("reassoc",))
    return emit_scalar(em.b, op, [dtype, dtype], dtype, [acc, x], {})


def _reduce(em: Emitter, eqn, ins, dests):
    (x,) = ins
    name = eqn.primitive.name
    axes = eqn.params["axes"]
    aval_out = eqn.outvars[0].aval
    dtype = x.aval.dtype
    in_shape = x.aval.shape
    kept = [d for d in range(len(in_shape)) if d not in axes]
    init = const(dtype, _reduce_identity(name, dtype))
    if dtype.kind == "c" and name in ("reduce_max", "reduce_min") and \
            all(in_shape[d] for d in axes):
        # ±inf + 0j is the empty result, but it would beat -inf - 1j in the lexicographic order
        init = const(dtype, complex(-np.inf, -np.inf) if name == "reduce_max" else
                     complex(np.inf, np.inf))
    out = dests[0] or (None if aval_out.ndim == 0 else em.alloc(aval_out))
    b = em.b
    if aval_out.ndim and in_shape and (len(in_shape) - 1) not in axes:
        # the contiguous axis is kept: accumulate rows into the output (inner loop vectorises)
        em.loop_nest(aval_out.shape, lambda idx: em.store(out, em.linear(aval_out.shape, idx),
                                                         init))
        order = list(axes) + kept

        def body(idx_in_order):
            full: list = [None] * len(in_shape)
            for d, i in zip(order, idx_in_order):
                full[d] = i
            oidx = [full[d] for d in kept]
            lin = em.linear(aval_out.shape, oidx)
            em.store(out, lin, _combine(em, name, dtype, em.load(out, lin), em.value_at(x, full)))
        em.loop_nest([in_shape[d] for d in order], body)
        return [out]
    acc_ptr = em._entry_alloca(reg_type(dtype))

    def outer(oidx):
        b.store(init, acc_ptr)

        def inner(ridx):
            full: list = [None] * len(in_shape)
            for d, i in zip(kept, oidx):
                full[d] = i
            for d, i in zip(axes, ridx):
                full[d] = i
            b.store(_combine(em, name, dtype, b.load(acc_ptr), em.value_at(x, full)), acc_ptr)
        em.loop_nest([in_shape[d] for d in axes], inner)
        if out is not None:
            em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None,
                     b.load(acc_ptr))
    em.loop_nest(aval_out.shape, outer)
    if out is None:
        return [Scalar(b.load(acc_ptr), aval_out)]
    return [out]


def _is_nan(em: Emitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """NaN test of a float, or of either part of a complex number (NumPy's isnan)."""
    b = em.b
    if dtype.kind == "c":
        re, im = parts(b, v)
        return b.or_(b.fcmp_unordered("uno", re, re), b.fcmp_unordered("uno", im, im))
    return b.fcmp_unordered("uno", v, v)


def _argminmax(em: Emitter, eqn, ins, dests):
    (x,) = ins
    is_max = eqn.primitive.name == "argmax"
    (axis,) = eqn.params["axes"]
    aval_out = eqn.outvars[0].aval
    dtype = x.aval.dtype
    in_shape = x.aval.shape
    kept = [d for d in range(len(in_shape)) if d != axis]
    b = em.b
    best_ptr = em._entry_alloca(reg_type(dtype))
    idx_ptr = em._entry_alloca(I64)
    out = dests[0] or (None if aval_out.ndim == 0 else em.alloc(aval_out))

    def outer(oidx):
        def at(i):
            full: list = [None] * len(in_shape)
            for d, j in zip(kept, oidx):
                full[d] = j
            full[axis] = i
            return em.value_at(x, full)
        b.store(at(_zero()), best_ptr)
        b.store(_zero(), idx_ptr)

        def step(i):
            v = at(i)
            best = b.load(best_ptr)
            if dtypes.is_inexact(dtype):  # the first NaN wins; then strict improvement
                best_nan, v_nan = _is_nan(em, dtype, best), _is_nan(em, dtype, v)
                better = emit_scalar(b, "gt" if is_max else "lt", [dtype] * 2,
                                     dtypes.bool_, [v, best], {})
                take = b.and_(b.not_(best_nan), b.or_(v_nan, better))
            elif dtype == dtypes.bool_ or dtype.kind == "u":
                take = b.icmp_unsigned(">" if is_max else "<", v, best)
            else:
                take = b.icmp_signed(">" if is_max else "<", v, best)
            b.store(b.select(take, v, best), best_ptr)
            b.store(b.select(take, i, b.load(idx_ptr)), idx_ptr)
        em.loop(in_shape[axis], step, name="r")
        result = convert(b, b.load(idx_ptr), np.dtype(np.int64), aval_out.dtype)
        if out is not None:
            em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None, result)
        else:
            b.store(result, res_ptr)

    res_ptr = None if out is not None else em._entry_alloca(reg_type(aval_out.dtype))
    em.loop_nest(aval_out.shape, outer)
    return [out] if out is not None else [Scalar(b.load(res_ptr), aval_out)]


def _custom_lin(em: Emitter, eqn, ins, dests):
    """The tangent side of a custom_vjp function only exists to be transposed: evaluating it is
    forward-mode autodiff of a custom_vjp function, which JAX (and the interpreter) reject."""
    from ...transforms.custom import _VJP_JVP_ERROR
    raise TypeError(_VJP_JVP_ERROR)


def _inline_call(em: Emitter, eqn, ins, dests):
    """Calls (jit, checkpoint, custom_jvp/vjp outside differentiation) run their body inline."""
    closed: ClosedJaxpr = eqn.params.get("jaxpr") or eqn.params["call_jaxpr"]
    consts = [em.const_value(c) for c in closed.consts]
    return em.emit_jaxpr(closed.jaxpr, consts, ins, dests)


def _as_value(em: Emitter, buf: Buf):
    """Reading a carry back: rank-0 slots become register values."""
    if buf.aval.ndim == 0:
        return Scalar(em.load(buf, None), buf.aval)
    return buf


def _copy(em: Emitter, src, dst: Buf) -> None:
    em.materialize(src, dst)


def _cond(em: Emitter, eqn, ins, dests):
    branches: tuple[ClosedJaxpr, ...] = eqn.params["branches"]
    index, *ops = ins
    b = em.b
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    ops = [em.materialize(o) if isinstance(o, Lazy) else o for o in ops]
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
    em.emit_jaxpr(body_j.jaxpr, [em.const_value(c) for c in body_j.consts],
                  list(body_consts) + carries.current(), new)
    carries.advance(new)
    b.branch(header)
    b.position_at_end(exit_bb)
    return carries.results()


def _row(em: Emitter, buf: Buf, i: ir.Value) -> Buf:
    """Row i of a buffer (a contiguous view)."""
    row = ShapedArray(buf.aval.shape[1:], buf.aval.dtype, buf.aval.weak_type)
    ptr = em.b.gep(buf.ptr, [em.b.mul(i, ir.Constant(I64, max(row.size, 0)))], inbounds=True)
    return Buf(ptr, row)


def _row_map(em: Emitter, eqn, ins, dests):
    """A row kernel (compiler.rows): one loop over rows, the body emitted inside it on row views
    of the operands and results; its temporaries are row-sized slots every row reuses."""
    closed: ClosedJaxpr = eqn.params["body"]
    body = closed.jaxpr
    ins = [em.materialize(x) if isinstance(x, Lazy) else x for x in ins]
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    consts = [em.const_value(c) for c in closed.consts]

    def view(buf: Buf, i: ir.Value, row: ShapedArray) -> Buf:  # row i of consecutive rows
        return Buf(em.b.gep(buf.ptr, [em.b.mul(i, ir.Constant(I64, row.size))], inbounds=True),
                   row)

    def body_at(i):  # rank-0 operands are the same for every row
        args = [x if x.aval.ndim == 0 else _as_value(em, view(x, i, v.aval))
                for x, v in zip(ins, body.invars)]
        em.emit_jaxpr(body, consts, args, [view(o, i, v.aval) for o, v in zip(outs, body.outvars)])
    em.loop(math.prod(eqn.params["rows"]), body_at, name="row")
    return outs


def _scan(em: Emitter, eqn, ins, dests):
    p = eqn.params
    closed: ClosedJaxpr = p["jaxpr"]
    nc, nk, length, reverse = p["num_consts"], p["num_carry"], p["length"], p["reverse"]
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    b = em.b
    ys_avals = [v.aval for v in eqn.outvars[nk:]]
    carries = _Carries(em, [v.aval for v in eqn.outvars[:nk]], init, dests[:nk],
                       final_in_first=(length % 2 == 0))
    ys = [d or em.alloc(a) for d, a in zip(dests[nk:], ys_avals)]
    xs = [em.materialize(x) for x in xs]
    inner_consts = [em.const_value(c) for c in closed.consts]

    def body(i):
        t = b.sub(ir.Constant(I64, length - 1), i) if reverse else i
        x_rows = [_as_value(em, _row(em, x, t)) for x in xs]
        y_rows = [_row(em, y, t) for y in ys]
        new = carries.next_slots()
        em.emit_jaxpr(closed.jaxpr, inner_consts,  # invars: const operands, carry, x rows
                      list(consts) + carries.current() + x_rows, new + y_rows)
        carries.advance(new)
    em.loop(length, body, name="scan")
    return carries.results() + ys


def _acc_dtype(dtype: np.dtype) -> np.dtype:
    """Where products are summed: half floats in float32 (as XLA on CPU and the reference)."""
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def _gemm_layout(aval: ShapedArray, batch: tuple, contract: tuple, free: list[int]):
    """(transposed?, rows, cols) if the operand is a row-major [batch.., A, B] matrix whose two
    groups are the free and contracting dims in either order; None otherwise."""
    nb = len(batch)
    if tuple(batch) != tuple(range(nb)):
        return None
    rest = list(range(nb, aval.ndim))
    if rest == list(free) + list(contract):
        return False
    if rest == list(contract) + list(free):
        return True
    return None


_BLAS_MIN_FLOPS = 32 * 32 * 32
_GEMM_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _dot_general(em: Emitter, eqn, ins, dests):
    lhs, rhs = [em.materialize(x) if not isinstance(x, Scalar) else x for x in ins]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    aval_out = eqn.outvars[0].aval
    out = dests[0] or em.alloc(aval_out)
    lf = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    dtype = aval_out.dtype
    m = math.prod(lhs.aval.shape[d] for d in lf)
    n = math.prod(rhs.aval.shape[d] for d in rf)
    k = math.prod(lhs.aval.shape[d] for d in lc)
    if (dtype in _GEMM_DTYPES and lhs.aval.dtype == rhs.aval.dtype == dtype
            and isinstance(lhs, Buf) and isinstance(rhs, Buf) and m * n * k >= _BLAS_MIN_FLOPS):
        lt = _gemm_layout(lhs.aval, lb, lc, lf)
        rt = _gemm_layout(rhs.aval, rb, rf, rc)
        if lt is not None and rt is not None:
            batch = math.prod(lhs.aval.shape[d] for d in lb)
            _emit_gemm(em, dtype, lhs, rhs, out, batch, m, n, k, lt, rt)
            return [out]
    return _dot_loops(em, eqn, lhs, rhs, out, dests, lc, rc, lb, rb, lf, rf)


def _emit_gemm(em: Emitter, dtype, lhs: Buf, rhs: Buf, out: Buf, batch: int, m: int, n: int,
               k: int, lhs_t: bool, rhs_t: bool) -> None:
    """Row-major C[m,n] = A·B through Fortran BLAS: C^T = B^T·A^T (column-major), per batch."""
    from .blas import gemm_address
    b = em.b
    ft = reg_type(dtype)
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [I8P, I8P] + [i32.as_pointer()] * 3 +
                           [ft.as_pointer()] * 2 + [i32.as_pointer()] + [ft.as_pointer()] +
                           [i32.as_pointer()] + [ft.as_pointer()] * 2 + [i32.as_pointer()])
    fn = b.inttoptr(ir.Constant(I64, gemm_address(dtype)), fnty.as_pointer())

    def slot(t, value):
        ptr = em._entry_alloca(t)
        b.store(value, ptr)
        return ptr

    def char(c):
        return slot(I8, ir.Constant(I8, ord(c)))

    # B (rhs) is op(X1): row-major [k,n] is column-major [n,k] = B^T ('N', ld n);
    # stored [n,k] it is column-major [k,n] = B, so 'T' with ld k. Likewise for A.
    ta, lda = (char("T"), k) if rhs_t else (char("N"), n)
    tb, ldb = (char("T"), m) if lhs_t else (char("N"), k)
    args_const = [slot(i32, ir.Constant(i32, v)) for v in (n, m, k)]
    alpha, beta = slot(ft, const(dtype, 1)), slot(ft, const(dtype, 0))
    lda_p, ldb_p, ldc_p = (slot(i32, ir.Constant(i32, v)) for v in (lda, ldb, n))

    def one(i):
        a_ptr = b.gep(rhs.ptr, [b.mul(i, ir.Constant(I64, k * n))], inbounds=True)
        b_ptr = b.gep(lhs.ptr, [b.mul(i, ir.Constant(I64, m * k))], inbounds=True)
        c_ptr = b.gep(out.ptr, [b.mul(i, ir.Constant(I64, m * n))], inbounds=True)
        b.call(fn, [ta, tb, *args_const, alpha, a_ptr, lda_p, b_ptr, ldb_p, beta, c_ptr, ldc_p])
    em.loop(batch, one, name="batch")


def _dot_loops(em: Emitter, eqn, lhs, rhs, out: Buf, dests, lc, rc, lb, rb, lf, rf):
    """Inline loop nest: small dots, integer and half-precision dots, unusual layouts."""
    aval_out = eqn.outvars[0].aval
    dtype = aval_out.dtype
    acc_dtype = _acc_dtype(dtype)
    b = em.b
    acc_ptr = em._entry_alloca(reg_type(acc_dtype))
    csizes = [lhs.aval.shape[d] for d in lc]

    def outer(oidx):
        nb = len(lb)
        bidx, lidx, ridx = oidx[:nb], oidx[nb:nb + len(lf)], oidx[nb + len(lf):]
        b.store(const(acc_dtype, 0), acc_ptr)

        def inner(cidx):
            li: list = [None] * lhs.aval.ndim
            ri: list = [None] * rhs.aval.ndim
            for dims, idx, target in ((lb, bidx, li), (rb, bidx, ri), (lf, lidx, li),
                                      (rf, ridx, ri), (lc, cidx, li), (rc, cidx, ri)):
                for d, i in zip(dims, idx):
                    target[d] = i
            x = convert(b, em.value_at(lhs, li), lhs.aval.dtype, acc_dtype)
            y = convert(b, em.value_at(rhs, ri), rhs.aval.dtype, acc_dtype)
            if acc_dtype == dtypes.bool_:
                b.store(b.or_(b.load(acc_ptr), b.and_(x, y)), acc_ptr)
                return
            prod = emit_scalar(b, "mul", [acc_dtype] * 2, acc_dtype, [x, y], {})
            b.store(_combine(em, "reduce_sum", acc_dtype, b.load(acc_ptr), prod), acc_ptr)
        em.loop_nest(csizes, inner)
        em.store(out, em.linear(aval_out.shape, oidx) if aval_out.ndim else None,
                 convert(b, b.load(acc_ptr), acc_dtype, dtype))
    em.loop_nest(aval_out.shape, outer)
    return [out if aval_out.ndim or dests[0] is not None else _as_value(em, out)]


def _dynamic_update_slice(em: Emitter, eqn, ins, dests):
    operand, update, *starts = ins
    aval = eqn.outvars[0].aval
    b = em.b
    if dests[0] is None and em.can_update_in_place(eqn, operand):
        out = em.take_over(operand)
    else:
        out = em.materialize(operand, dests[0] or em.alloc(aval))
    offs = [_clamp_index(em, convert(b, em.scalar_of(st), st.aval.dtype, np.dtype(np.int64)),
                         n - u)
            for st, n, u in zip(starts, aval.shape, update.aval.shape)]

    def body(idx):
        dst = [b.add(i, o) for i, o in zip(idx, offs)]
        em.store(out, em.linear(aval.shape, dst) if aval.ndim else None,
                 em.value_at(update, idx))
    em.loop_nest(update.aval.shape, body)
    return [out if aval.ndim or dests[0] is not None else _as_value(em, out)]


def _cumulative(em: Emitter, eqn, ins, dests):
    (x,) = ins
    name = eqn.primitive.name
    axis, reverse = eqn.params["axis"], eqn.params["reverse"]
    aval = eqn.outvars[0].aval
    dtype = aval.dtype
    if dtype.kind == "c" and name == "cumlogsumexp":  # (NumPy's logaddexp has no complex form)
        raise NativeCompileError("native cumlogsumexp of complex numbers is not supported")
    work = _acc_dtype(dtype)
    b = em.b
    out = dests[0] or em.alloc(aval)
    acc_ptr = em._entry_alloca(reg_type(work))
    n = aval.shape[axis]
    outer_dims = [d for d in range(aval.ndim) if d != axis]

    def combine(acc, v):
        if name == "cumsum":
            return emit_scalar(b, "add", [work] * 2, work, [acc, v], {})
        if name == "cumprod":
            if work.kind == "c":
                return accumulating_mul(b, acc, v)
            return emit_scalar(b, "mul", [work] * 2, work, [acc, v], {})
        if name == "cummax":
            return emit_scalar(b, "max", [work] * 2, work, [acc, v], {})
        if name == "cummin":
            return emit_scalar(b, "min", [work] * 2, work, [acc, v], {})
        return _logaddexp(em, work, acc, v)

    def outer(oidx):
        def step(j):
            t = b.sub(ir.Constant(I64, n - 1), j) if reverse else j
            full: list = [None] * aval.ndim
            for d, i in zip(outer_dims, oidx):
                full[d] = i
            full[axis] = t
            v = convert(b, em.value_at(x, full), dtype, work)
            first = b.icmp_signed("==", j, _zero())
            acc = b.select(first, v, combine(b.load(acc_ptr), v))
            b.store(acc, acc_ptr)
            em.store(out, em.linear(aval.shape, full), convert(b, acc, work, dtype))
        em.loop(n, step, name="cum")
    em.loop_nest([aval.shape[d] for d in outer_dims], outer)
    return [out]


def _logaddexp(em: Emitter, dtype, a: ir.Value, c: ir.Value) -> ir.Value:
    """log(exp(a) + exp(c)) = max + log1p(exp(-|a - c|)), with -inf/-inf and NaN handled."""
    b = em.b
    from .scalar_ops import math_fn
    hi = emit_scalar(b, "max", [dtype] * 2, dtype, [a, c], {})
    lo = emit_scalar(b, "min", [dtype] * 2, dtype, [a, c], {})
    diff = b.fsub(lo, hi)
    same_inf = b.fcmp_ordered("==", a, c)  # -inf/-inf or +inf/+inf: the sum is that value
    t = math_fn(b, "log1p", [math_fn(b, "exp", [diff])])
    return b.select(same_inf, hi, b.fadd(hi, t))


def _threefry2x32(em: Emitter, eqn, ins, dests):
    k0, k1, x0, x1 = ins
    b = em.b
    aval = eqn.outvars[0].aval

    def rounds(key0, key1, c0, c1):
        u32 = c0.type
        ks = [key0, key1, b.xor(b.xor(key0, key1), ir.Constant(u32, 0x1BD11BDA))]
        v0, v1 = b.add(c0, ks[0]), b.add(c1, ks[1])
        rot = ((13, 15, 26, 6), (17, 29, 16, 24))
        for group in range(5):
            for r in rot[group % 2]:
                v0 = b.add(v0, v1)
                v1 = b.or_(b.shl(v1, ir.Constant(u32, r)), b.lshr(v1, ir.Constant(u32, 32 - r)))
                v1 = b.xor(v0, v1)
            v0 = b.add(v0, ks[(group + 1) % 3])
            v1 = b.add(b.add(v1, ks[(group + 2) % 3]), ir.Constant(u32, group + 1))
        return v0, v1

    if aval.ndim == 0 and dests[0] is None and dests[1] is None:
        y0, y1 = rounds(em.scalar_of(k0), em.scalar_of(k1), em.scalar_of(x0), em.scalar_of(x1))
        return [Scalar(y0, aval), Scalar(y1, aval)]
    outs = [d or em.alloc(aval) for d in dests]

    def body(idx):  # key words are rank-0 or shaped like the counters (batched keys)
        y0, y1 = rounds(em.value_at(k0, idx), em.value_at(k1, idx), em.value_at(x0, idx),
                        em.value_at(x1, idx))
        lin = em.linear(aval.shape, idx) if aval.ndim else None
        em.store(outs[0], lin, y0)
        em.store(outs[1], lin, y1)
    em.loop_nest(aval.shape, body)
    return outs


def _iota_2x32_shape(em: Emitter, eqn, ins, dests):
    aval = eqn.outvars[0].aval
    b = em.b
    outs = [d or em.alloc(aval) for d in dests]
    u32 = ir.IntType(32)

    def body(idx):
        lin = em.linear(aval.shape, idx)
        em.store(outs[0], lin, b.trunc(b.lshr(lin, ir.Constant(I64, 32)), u32))
        em.store(outs[1], lin, b.trunc(lin, u32))
    em.loop_nest(aval.shape, body)
    return outs


def _sort_rows(em: Emitter, shape: Sequence[int], axis: int,
               less: Callable[[list, ir.Value, ir.Value], ir.Value],
               emit_row: Callable[[list, Buf], None]) -> None:
    """Stable bottom-up merge sort of every row along `axis`: `less(oidx, i, j)` compares row
    positions i and j; `emit_row(oidx, perm)` consumes the sorted permutation of the row."""
    b = em.b
    n = shape[axis]
    perm_aval = ShapedArray((max(n, 1),), np.dtype(np.int64))
    bufs = [em.alloc(perm_aval), em.alloc(perm_aval)]
    outer_dims = [d for d in range(len(shape)) if d != axis]

    def row(oidx):
        em.loop(n, lambda i: em.store(bufs[0], i, i), name="perm")
        src, dst = 0, 1
        width = 1
        while width < n:
            nblocks = -(-n // (2 * width))

            def merge(blk, width=width, src=src, dst=dst):
                lo = b.mul(blk, ir.Constant(I64, 2 * width))
                mid = b.add(lo, ir.Constant(I64, width))
                n_c = ir.Constant(I64, n)
                mid = b.select(b.icmp_signed(">", mid, n_c), n_c, mid)
                hi = b.add(lo, ir.Constant(I64, 2 * width))
                hi = b.select(b.icmp_signed(">", hi, n_c), n_c, hi)
                i_ptr, j_ptr = em._entry_alloca(I64), em._entry_alloca(I64)
                b.store(lo, i_ptr)
                b.store(mid, j_ptr)

                def step(t):
                    k = b.add(lo, t)
                    i, j = b.load(i_ptr), b.load(j_ptr)
                    left_ok = b.icmp_signed("<", i, mid)
                    right_ok = b.icmp_signed("<", j, hi)
                    # read both candidates at clamped positions (never out of bounds)
                    pi = em.load(bufs[src], b.select(left_ok, i, lo))
                    pj = em.load(bufs[src], b.select(right_ok, j, lo))
                    take_right = b.and_(right_ok, b.or_(b.not_(left_ok), less(oidx, pj, pi)))
                    em.store(bufs[dst], k, b.select(take_right, pj, pi))
                    b.store(b.select(take_right, i, b.add(i, ir.Constant(I64, 1))), i_ptr)
                    b.store(b.select(take_right, b.add(j, ir.Constant(I64, 1)), j), j_ptr)
                em.loop(b.sub(hi, lo), step, name="merge")
            em.loop(nblocks, merge, name="blk")
            src, dst = dst, src
            width *= 2
        emit_row(oidx, bufs[src])
    em.loop_nest([shape[d] for d in outer_dims], row)
    for buf in bufs:
        em.release(buf)


def _full_index(oidx: list, axis: int, i: ir.Value) -> list:
    full = list(oidx)
    full.insert(axis, i)
    return full


def _key_less(em: Emitter, dtype: np.dtype, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(a < c, a == c) in sort order: NaNs last and equal to each other, -0.0 == 0.0."""
    b = em.b
    if dtype.kind == "c":  # the reference's lexicographic keys: real part, then imaginary
        part = np.dtype(dtypes.finfo_of(dtype).dtype)
        (ar, ai), (cr, ci) = parts(b, a), parts(b, c)
        lt_re, eq_re = _key_less(em, part, ar, cr)
        lt_im, eq_im = _key_less(em, part, ai, ci)
        return b.or_(lt_re, b.and_(eq_re, lt_im)), b.and_(eq_re, eq_im)
    if dtypes.is_inexact(dtype):
        a_nan, c_nan = b.fcmp_unordered("uno", a, a), b.fcmp_unordered("uno", c, c)
        lt = b.or_(b.and_(b.not_(a_nan), c_nan), b.fcmp_ordered("<", a, c))
        eq = b.or_(b.and_(a_nan, c_nan), b.fcmp_ordered("==", a, c))
        return lt, eq
    if dtype == dtypes.bool_ or dtype.kind == "u":
        return b.icmp_unsigned("<", a, c), b.icmp_unsigned("==", a, c)
    return b.icmp_signed("<", a, c), b.icmp_signed("==", a, c)


def _sort(em: Emitter, eqn, ins, dests):
    axis, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    aval = eqn.outvars[0].aval
    ops = [em.materialize(x) if isinstance(x, Lazy) else x for x in ins]
    outs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    b = em.b

    def less(oidx, i, j):
        result = ir.Constant(I1, 0)
        decided = ir.Constant(I1, 0)
        for x in ops[:num_keys]:
            xi = em.value_at(x, _full_index(oidx, axis, i))
            xj = em.value_at(x, _full_index(oidx, axis, j))
            lt, eq = _key_less(em, x.aval.dtype, xi, xj)
            result = b.select(decided, result, lt)
            decided = b.or_(decided, b.not_(eq))
        return result

    def emit_row(oidx, perm):
        def put(k):
            src = _full_index(oidx, axis, em.load(perm, k))
            dst = em.linear(aval.shape, _full_index(oidx, axis, k))
            for x, o in zip(ops, outs):
                em.store(o, dst, em.value_at(x, src))
        em.loop(aval.shape[axis], put, name="put")
    _sort_rows(em, aval.shape, axis, less, emit_row)
    return outs


def _total_order(em: Emitter, dtype: np.dtype, v: ir.Value) -> ir.Value:
    """An integer ordered like JAX's total order of floats (-NaN < -inf < -0 < 0 < inf < NaN)."""
    b = em.b
    if not dtypes.is_inexact(dtype):
        return b.zext(v, I8) if dtype == dtypes.bool_ else v
    it = ir.IntType(dtype.itemsize * 8)
    bits = b.bitcast(v, it)
    neg = b.icmp_signed("<", bits, ir.Constant(it, 0))
    return b.select(neg, b.xor(bits, ir.Constant(it, (1 << (dtype.itemsize * 8 - 1)) - 1)), bits)


def _top_k(em: Emitter, eqn, ins, dests):
    (x,) = ins
    x = em.materialize(x) if isinstance(x, Lazy) else x
    k, axis = eqn.params["k"], eqn.params["axis"]
    dtype = x.aval.dtype
    if dtype.kind == "c":  # the reference orders the raw bits of the struct, not a number order
        raise NativeCompileError("native top_k of complex numbers is not supported")
    vals, idxs = [d or em.alloc(v.aval) for d, v in zip(dests, eqn.outvars)]
    out_shape = eqn.outvars[0].aval.shape
    b = em.b
    signed = dtypes.is_inexact(dtype) or dtype.kind == "i"

    def greater(oidx, i, j):
        ki = _total_order(em, dtype, em.value_at(x, _full_index(oidx, axis, i)))
        kj = _total_order(em, dtype, em.value_at(x, _full_index(oidx, axis, j)))
        return b.icmp_signed(">", ki, kj) if signed else b.icmp_unsigned(">", ki, kj)

    def emit_row(oidx, perm):
        def put(t):
            p = em.load(perm, t)
            dst = em.linear(out_shape, _full_index(oidx, axis, t))
            em.store(vals, dst, em.value_at(x, _full_index(oidx, axis, p)))
            em.store(idxs, dst, b.trunc(p, ir.IntType(32)))
        em.loop(k, put, name="topk")
    _sort_rows(em, x.aval.shape, axis, greater, emit_row)
    return [vals, idxs]


def _scatter(em: Emitter, eqn, ins, dests):
    from ...lax.indexing import GatherScatterMode
    name = eqn.primitive.name
    p = eqn.params
    dn = p["dimension_numbers"]
    if name == "scatter_apply":
        operand, indices, *consts = ins
        updates = None
        upd_shape = p["update_shape"]
    else:
        operand, indices, updates = ins
        upd_shape = updates.aval.shape
    aval = eqn.outvars[0].aval
    dtype = aval.dtype
    b = em.b
    if dests[0] is None and em.can_update_in_place(eqn, operand):
        out = em.take_over(operand)
    else:
        out = em.materialize(operand, dests[0] or em.alloc(aval))
    window_dims = [d for d in range(aval.ndim)
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    sizes = [1] * aval.ndim
    for d, w in zip(window_dims, dn.update_window_dims):
        sizes[d] = upd_shape[w]
    scatter_axes = [a for a in range(len(upd_shape)) if a not in dn.update_window_dims]
    order = scatter_axes + list(dn.update_window_dims)  # the reference's update order

    def body(ord_idx):
        uidx: list = [None] * len(upd_shape)
        for a, i in zip(order, ord_idx):
            uidx[a] = i
        bidx = [uidx[a] for a in scatter_axes]
        starts, in_bounds = _window_starts(em, aval.shape, indices, bidx,
                                           dn.scatter_dims_to_operand_dims,
                                           dn.operand_batching_dims,
                                           dn.scatter_indices_batching_dims, sizes)
        coord = []
        for d in range(aval.ndim):
            c = starts.get(d, _zero())
            if d in window_dims:
                c = b.add(c, uidx[dn.update_window_dims[window_dims.index(d)]])
            coord.append(c)
        lin = em.linear(aval.shape, coord)

        def write():
            old = em.load(out, lin)
            if name == "scatter_apply":
                closed = p["jaxpr"]
                (new,) = em.emit_jaxpr(closed.jaxpr, [], list(consts) + [Scalar(old, ShapedArray(
                    (), dtype))])
                new = em.scalar_of(new)
            else:
                u = em.value_at(updates, uidx)
                op = {"scatter": None, "scatter-add": "add", "scatter-sub": "sub",
                      "scatter-mul": "mul", "scatter-min": "min", "scatter-max": "max"}[name]
                if op == "mul" and dtype.kind == "c":  # np.multiply.at: plain products
                    new = accumulating_mul(b, old, u)
                else:
                    new = u if op is None else emit_scalar(b, op, [dtype] * 2, dtype, [old, u],
                                                           {})
            em.store(out, lin, new)
        if p["mode"] == GatherScatterMode.CLIP:
            write()
        else:  # out-of-bounds windows are dropped
            with b.if_then(in_bounds):
                write()
    if aval.size:
        em.loop_nest([upd_shape[a] for a in order], body)
    return [out]


def _bitcast_resize(em: Emitter, eqn, ins, dests):
    """bitcast_convert_type between widths: the same row-major bytes read as another type."""
    x = em.materialize(ins[0])
    aval = eqn.outvars[0].aval
    if dtypes.bool_ in (x.aval.dtype, aval.dtype):
        raise NativeCompileError("bitcast_convert_type of bool")
    out = dests[0] or em.alloc(aval)
    view = Buf(em.b.bitcast(x.ptr, mem_type(aval.dtype).as_pointer()), aval)
    em.loop(aval.size, lambda i: em.store(out, i, em.load(view, i)), name="bytes")
    return [out if aval.ndim or dests[0] is not None else _as_value(em, out)]


_STRUCTURAL: dict[str, Callable] = {
    "bitcast_convert_type": _bitcast_resize,
    "scatter": _scatter, "scatter-add": _scatter, "scatter-sub": _scatter,
    "scatter-mul": _scatter, "scatter-min": _scatter, "scatter-max": _scatter,
    "scatter_apply": _scatter,
    "sort": _sort, "top_k": _top_k,
    "dynamic_update_slice": _dynamic_update_slice, "cumsum": _cumulative,
    "cumprod": _cumulative, "cummax": _cumulative, "cummin": _cumulative,
    "cumlogsumexp": _cumulative, "threefry2x32": _threefry2x32,
    "iota_2x32_shape": _iota_2x32_shape,
    "reduce_sum": _reduce, "reduce_prod": _reduce, "reduce_max": _reduce,
    "reduce_min": _reduce, "reduce_and": _reduce, "reduce_or": _reduce, "reduce_xor": _reduce,
    "argmax": _argminmax, "argmin": _argminmax, "jit": _inline_call, "cond": _cond,
    "checkpoint": _inline_call, "custom_jvp_call": _inline_call,
    "custom_vjp_call": _inline_call, "custom_lin": _custom_lin,
    "while": _while, "scan": _scan, "dot_general": _dot_general, "row_map": _row_map,
}



def has_lowering(name: str) -> bool:
    """Whether the native backend compiles primitive `name`: fused element by element (a
    scalar emitter or an index map) or by a structural rule."""
    from . import complex_ops, scalar_ops
    scalar = name in scalar_ops.EMITTERS or name in complex_ops.EMITTERS
    return name in _STRUCTURAL or name in _INDEX_MAPS or (name in ELEMENTWISE and scalar)

# --- donation: outputs written into donated inputs' memory -----------------------------------

# structural rules whose results are always fresh memory (a destination or a workspace slot);
# any other rule may hand an operand's buffer back as a result (an inlined call returning it)
_FRESH_RESULTS = frozenset({
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
    "sort", "top_k", "dot_general", "threefry2x32", "iota_2x32_shape", "bitcast_convert_type",
    "dynamic_update_slice", "scatter", "scatter-add", "scatter-sub", "scatter-mul",
    "scatter-min", "scatter-max", "scatter_apply", "while", "scan", "cond", "row_map"})
_SCATTERS = frozenset(n for n in _FRESH_RESULTS if n.startswith("scatter"))


def _in_place_operand(eqn, j: int) -> int | None:
    """The operand whose buffer result j may overwrite: the rule copies that operand into the
    result's destination (a no-op when they coincide) before anything else touches it, and
    never reads the operand again (loop carries, updated arrays)."""
    name, p = eqn.primitive.name, eqn.params
    if name == "while":
        return p["cond_nconsts"] + p["body_nconsts"] + j
    if name == "scan":
        return p["num_consts"] + j if j < p["num_carry"] else None
    if (name == "dynamic_update_slice" or name in _SCATTERS) and j == 0:
        return 0
    return None


def plan_aliases(jaxpr: Jaxpr, candidates: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Of the donated (output index, invar index) pairs, those whose output can be written into
    the input's memory: output index -> invar index. A pair qualifies when every read of the
    input (or of a value sharing its buffer) happens before the output's writer runs, or inside
    it at the very element being written (an elementwise kernel, an in-place update or loop
    carry). Other pairs get fresh outputs. Rank-0 inputs are loaded into registers on entry."""
    if not candidates:
        return {}
    eqns, n = jaxpr.eqns, len(jaxpr.eqns)
    plan = plan_fusion(jaxpr)
    producer = {id(v): k for k, e in enumerate(eqns) for v in e.outvars}
    users: dict[int, list[int]] = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var):
                users.setdefault(id(v), []).append(k)
    out_positions: dict[int, list[int]] = {}
    for j, v in enumerate(jaxpr.outvars):
        if isinstance(v, Var):
            out_positions.setdefault(id(v), []).append(j)

    def written_directly(v) -> bool:  # emit_jaxpr computes it straight into its destination
        return id(v) in producer and len(out_positions.get(id(v), ())) == 1

    def read_points(v) -> list[int]:
        """Where v's memory is read: eqn indices, or n + j for the copy into output j."""
        points, stack = [], [v]
        while stack:
            u = stack.pop()
            for k in users.get(id(u), ()):
                lazy = eqns[k].outvars and id(eqns[k].outvars[0]) in plan.lazy
                if lazy:  # read wherever the fused value is finally computed
                    stack.append(eqns[k].outvars[0])
                else:
                    points.append(k)
            if not written_directly(u):
                points += [n + j for j in out_positions.get(id(u), ())]
        return points

    def sharing(x) -> dict[int, Var]:
        """x and the values that may be x's buffer handed on."""
        share = {id(x): x}
        for e in eqns:
            if not fusible(e) and e.primitive.name not in _FRESH_RESULTS and \
                    any(isinstance(v, Var) and id(v) in share for v in e.invars):
                share.update((id(v), v) for v in e.outvars)
        return share

    def reads_in_place(eqn, o, x, share: dict[int, Var]) -> bool:
        """Eqn (which writes o into x's buffer) reads x only at the element it writes."""
        if not fusible(eqn):
            pos = _in_place_operand(eqn, eqn.outvars.index(o))
            return pos is not None and eqn.invars[pos] is x and not any(
                isinstance(v, Var) and (id(v) in share or id(v) in plan.lazy)
                for i, v in enumerate(eqn.invars) if i != pos)
        stack = [(eqn, True)]  # (eqn of the fused tree, same index as the output so far)
        while stack:
            e, same_index = stack.pop()
            same_index = same_index and e.primitive.name in ELEMENTWISE
            for v in e.invars:
                if not isinstance(v, Var):
                    continue
                if id(v) in share:
                    if not (same_index and v is x):
                        return False
                elif id(v) in plan.lazy:
                    stack.append((eqns[producer[id(v)]], same_index))
        return True

    safe: dict[int, int] = {}
    for j, i in candidates:
        x, o = jaxpr.invars[i], jaxpr.outvars[j]
        if x.aval.ndim == 0 or o is x:
            safe[j] = i
            continue
        share = sharing(x)
        reads = [p for v in share.values() for p in read_points(v)]
        if isinstance(o, Var) and id(o) in share:
            continue
        if not (isinstance(o, Var) and written_directly(o)):
            ok = all(p < n + j for p in reads)  # copied in after every equation, in order
        else:
            k = producer[id(o)]
            ok = id(o) not in plan.lazy and all(p <= k for p in reads) and \
                (k not in reads or reads_in_place(eqns[k], o, x, share))
        if ok:
            safe[j] = i
    return safe


# --- the whole program -----------------------------------------------------------------------

class Program:
    """The result of code generation: LLVM IR text plus what the runtime needs to call it.
    `aliases`: output index -> invar index of the donated input whose buffer it is written into
    (the entry reads that output's pointer from the input's slot)."""

    def __init__(self, name: str, ir_text: str, workspace_bytes: int, emitter: Emitter,
                 aliases: dict[int, int]):
        self.name = name
        self.ir_text = ir_text
        self.workspace_bytes = workspace_bytes
        self.fusion_plans = emitter.fusion_plans
        self.aliases = aliases


def generate(closed: ClosedJaxpr, name: str,
             donated: Sequence[tuple[int, int]] = ()) -> Program:
    """LLVM IR for a closed jaxpr; consts are passed at run time before the inputs. `donated`:
    (output index, invar index) pairs that may share a buffer (see plan_aliases)."""
    jaxpr = closed.jaxpr
    aliases = plan_aliases(jaxpr, donated)
    em = Emitter(name)
    fnty = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I8P.as_pointer(), I8P])
    fn = ir.Function(em.module, fnty, name=name)
    fn.args[0].add_attribute("noalias")
    fn.args[1].add_attribute("noalias")
    fn.args[2].add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    em.b = ir.IRBuilder(entry)
    em.workspace = fn.args[2]

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
    em.emit_jaxpr(jaxpr, ins[:nconsts], ins[nconsts:], out_bufs)
    em.b.ret_void()
    return Program(name, str(em.module), em.workspace_bytes, em, aliases)
