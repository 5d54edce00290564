"""Jaxpr -> LLVM IR: one module per executable with one entry function for the whole program.

Values live in one of three forms while emitting: `Scalar` (rank 0, in a register), `Buf` (an
array in memory: an input, an output, or a slot of the workspace) and `Lazy` (a fused value,
computed elementwise inside the loop nest of whoever consumes it). Fusion decisions come from
`compiler.fusion`; this module turns them into loop nests and hands every other equation to its
rule: shape ops fused as index arithmetic (index_maps) and primitives with loops of their own
(reductions, control_flow, linalg, indexing, sorting, bits) fill the tables in `rules`; which
donated inputs hold outputs is planned in aliasing.

Entry signature: `void entry(i8** inputs, i8** outputs, i8* workspace)`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import llvmlite.ir as ir
import numpy as np

from ...compiler.fusion import FusionPlan, fusible, plan_fusion
from ...core import dtypes
from ...core.avals import ShapedArray
from ...core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from ...core.primitive import ELEMENTWISE, Primitive
from .aliasing import plan_aliases
from .rules import INDEX_MAPS, STRUCTURAL
from .scalar_ops import bf16_bits, bf16_widen, emit_scalar
from .types import I1, I8, I64, const, mem_type

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
        ins = [self.read(env, v) for v in eqn.invars]
        index_map = INDEX_MAPS.get(eqn.primitive)
        if index_map is not None:
            return index_map(self, ins, eqn, idx)
        args = [self.value_at(x, idx if x.aval.ndim else []) for x in ins]
        return emit_scalar(b, eqn.primitive, [x.aval.dtype for x in ins], lazy.aval.dtype, args,
                           eqn.params)

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
        rule = STRUCTURAL.get(eqn.primitive)
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

