"""The loops of special functions (continued fractions and series that run per element until
it converges) as routines compiled once per process, with vector variants that run the loop on
a vector of elements at once.

A kernel calls the scalar routine (`call`); the call names the vector variants (LLVM's
vector-function ABI, as math.py's trig slow paths), so the loop vectoriser, which cannot
vectorise a loop of data-dependent length inline, turns the kernel's element loop into one
call per vector and vectorises the code around it (betainc's lgamma, log and exp). A variant
steps all its lanes together until every lane has stopped, each lane keeping the values of its
own last step: the same operations on the same values as the scalar loop, so the same bits.
A vector costs about what one element did (the step is a chain of dependent divisions), and
waits for its slowest lane.

A loop is `LaneLoop(nargs, init, step, result)` over the routine's `nargs` arguments `args`:
`init(e, *args)` the carried values, `step(e, args, vals)` -> (new values, go on), repeated
while go on (at least once), then `result(e, args, vals)`. `e` is a math._Emitter, scalar or
over lanes (`_LaneEmitter`): the three must use only its operations."""
from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from llvmlite import ir

from ...lax import special as lsp
from . import math as m
from .math import _Emitter

__all__ = ["LOOPS", "VARIANTS", "call", "routine_module"]


class LaneLoop(NamedTuple):
    nargs: int
    init: Callable
    step: Callable
    result: Callable


class _LaneEmitter(_Emitter):
    """_Emitter over vectors of `lanes` values of the float type `ty`: numbers are splats."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type, lanes: int):
        super().__init__(builder, ty)
        self.lanes = lanes
        self.ty = ir.VectorType(ty, lanes)
        self.ity = ir.VectorType(self.ity, lanes)

    def v(self, x) -> ir.Value:
        if isinstance(x, ir.Value):
            return x
        return ir.Constant(self.ty, [float(self.np(x))] * self.lanes)

    def i(self, x) -> ir.Value:
        return x if isinstance(x, ir.Value) else ir.Constant(self.ity, [int(x)] * self.lanes)

    def call(self, name: str, *args) -> ir.Value:
        kind = "f64" if self.f64 else "f32"
        fn = self.b.module.declare_intrinsic(f"{name}.v{self.lanes}{kind}", (),
                                             ir.FunctionType(self.ty, [self.ty] * len(args)))
        return self.b.call(fn, [self.v(a) for a in args])


# Vector widths of each routine's variants: AVX-512's 16 float32 lanes down to SSE's 2
# float64 lanes, whichever the vectoriser picks.
WIDTHS = m.VECTOR_WIDTHS


def _type_name(ty: ir.Type) -> str:
    return "f64" if isinstance(ty, ir.DoubleType) else "f32"


def _symbol(name: str, ty: ir.Type) -> str:
    return f"tracejit_loop_{name}_{_type_name(ty)}"


def _variant_symbol(symbol: str, lanes: int, masked: bool) -> str:
    return f"{symbol}_{'m' if masked else 'n'}{lanes}"


def _variant_type(ty: ir.Type, nargs: int, lanes: int, masked: bool) -> ir.FunctionType:
    vec = ir.VectorType(ty, lanes)
    mask = [ir.VectorType(ir.IntType(1), lanes)] if masked else []
    return ir.FunctionType(vec, [vec] * nargs + mask)


def _vfabi_attribute(symbol: str, nargs: int) -> str:
    """The names of the routine's vector variants, unmasked (`N`: a call the loop makes on
    every element) and masked (`M`: a call in a conditional block)."""
    names = ",".join(
        f"_ZGV_LLVM_{'M' if masked else 'N'}{lanes}{'v' * nargs}_{symbol}"
        f"({_variant_symbol(symbol, lanes, masked)})"
        for lanes, masked in itertools.product(WIDTHS, (False, True)))
    return f'"{m._VFABI}"="{names}"'


def call(e: _Emitter, name: str, *args) -> ir.Value:
    """Emit a call of loop `name`'s routine for e's type on `args` (scalars of that type)."""
    nargs = LOOPS[name].nargs
    if len(args) != nargs:
        raise TypeError(f"loop {name} takes {nargs} operands, got {len(args)}")
    module, symbol = e.b.module, _symbol(name, e.ty)
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(e.ty, [e.ty] * nargs), name=symbol)
        fn.attributes = m._PureAttributes(("readnone", "nounwind", "willreturn"))
        fn.attributes.add(_vfabi_attribute(symbol, nargs))
        variants = []
        for lanes, masked in itertools.product(WIDTHS, (False, True)):
            variant = ir.Function(module, _variant_type(e.ty, nargs, lanes, masked),
                                  name=_variant_symbol(symbol, lanes, masked))
            variant.attributes = m._PureAttributes(("readnone", "nounwind", "willreturn"))
            variants.append(variant)
        m._keep(module, variants)  # (kept until the vectoriser has looked for them)
    return e.b.call(fn, [e.v(a) for a in args])


def _define(module: ir.Module, symbol: str, loop: LaneLoop, ty: ir.Type, lanes: int = 0,
            masked: bool = False) -> None:
    """The scalar routine (`lanes` 0), or a vector variant: the loop on every lane the mask
    selects (all, unmasked) until each has stopped, a lane keeping the values of its own last
    step (selects on the lanes still going)."""
    if lanes:
        fn = ir.Function(module, _variant_type(ty, loop.nargs, lanes, masked),
                         name=_variant_symbol(symbol, lanes, masked))
    else:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * loop.nargs), name=symbol)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    e = _LaneEmitter(b, ty, lanes) if lanes else _Emitter(b, ty)
    args = list(fn.args[:loop.nargs])
    init = [e.v(v) for v in loop.init(e, *args)]
    if lanes:
        lane_mask = ir.VectorType(ir.IntType(1), lanes)
        none = ir.Constant(lane_mask, [0] * lanes)
        init.append(fn.args[loop.nargs] if masked else ir.Constant(lane_mask, [1] * lanes))
    pre = b.block
    body = fn.append_basic_block("loop")
    b.branch(body)
    b.position_at_end(body)
    phis = [b.phi(v.type) for v in init]
    for phi, v in zip(phis, init):
        phi.add_incoming(v, pre)
    new, go = loop.step(e, args, phis[:len(phis) - bool(lanes)])
    if lanes:
        on = phis[-1]
        new = [b.select(on, nv, old) for nv, old in zip(new, phis)]
        # (a select, not `and`: a lane the mask leaves out may hold poison, and so its `go`)
        new.append(b.select(on, go, none))
        go = b.icmp_unsigned("!=", b.bitcast(new[-1], ir.IntType(lanes)),
                             ir.Constant(ir.IntType(lanes), 0))
    for phi, v in zip(phis, new):
        phi.add_incoming(v, b.block)
    done = fn.append_basic_block("done")
    b.cbranch(go, body, done)
    b.position_at_end(done)
    b.ret(loop.result(e, args, new[:len(new) - bool(lanes)]))


def _routines() -> dict[str, tuple[str, ir.Type]]:
    return {_symbol(name, ty): (name, ty) for name, ty in itertools.product(
        LOOPS, (ir.FloatType(), ir.DoubleType()))}


def routine_module(symbol: str) -> ir.Module:
    """The module defining routine `symbol` (one of VARIANTS' keys) and its vector variants."""
    name, ty = _routines()[symbol]
    module = ir.Module(name=symbol)
    loop = LOOPS[name]
    _define(module, symbol, loop, ty)
    for lanes, masked in itertools.product(WIDTHS, (False, True)):
        _define(module, symbol, loop, ty, lanes, masked)
    return module


# -- the loops -------------------------------------------------------------------------------

def _eps(e: _Emitter) -> float:
    return float(np.finfo(e.np).eps)


def betainc_numerator(e: _Emitter, n, a, b, x):
    """The n-th partial numerator of DLMF 8.17.22 for a float step n >= 1 (1 at n = 1)."""
    mm = e.floor(e.mul(e.sub(n, 1.0), 0.5))
    a2m = e.add(a, e.mul(mm, 2.0))
    odd = e.div(e.mul(e.mul(mm, e.sub(b, mm)), x), e.mul(e.sub(a2m, 1.0), a2m))
    even = e.div(e.mul(e.neg(e.mul(e.add(a, mm), e.add(e.add(a, b), mm))), x),
                 e.mul(a2m, e.add(a2m, 1.0)))
    even0 = e.div(e.mul(e.neg(e.add(a, b)), x), e.add(a, 1.0))
    even = e.select(e.eq(mm, 0.0), even0, even)
    is_even = e.eq(e.sub(n, e.mul(e.floor(e.mul(n, 0.5)), 2.0)), 0.0)
    return e.select(e.eq(n, 1.0), 1.0, e.select(is_even, even, odd))


def _betainc_cf_step(e: _Emitter, args, vals):
    """One step of Lentz's algorithm for I_x(a, b)'s continued fraction (JAX's, 200 steps at
    most in float32, 600 in float64)."""
    a, b, x = args
    n, c, d, h = vals
    tiny = _eps(e) / 2
    num = betainc_numerator(e, n, a, b, x)
    c_n = e.add(1.0, e.div(num, c))
    c_n = e.select(e.lt(e.abs(c_n), tiny), tiny, c_n)
    d_n = e.add(1.0, e.mul(num, d))
    d_n = e.div(1.0, e.select(e.lt(e.abs(d_n), tiny), tiny, d_n))
    delta = e.mul(c_n, d_n)
    n1 = e.add(n, 1.0)
    go = e.and_(e.ge(e.abs(e.sub(delta, 1.0)), tiny), e.lt(n1, float(600 if e.f64 else 200)))
    return [n1, c_n, d_n, e.mul(h, delta)], go


def _flag(e: _Emitter, flag):
    """A lane's `enabled` operand (1.0 or 0.0: the routines take floats) as a truth value."""
    return e.b.fcmp_ordered("!=", flag, e.v(0.0))


def _igamma_series_init(e: _Emitter, x, a, flag, *_):
    return [_flag(e, flag), 0.0, a, 1.0, 1.0, 0.0, 0.0]


def _igamma_series_step(derivative: bool):
    """One term of P(a, x)'s series x**n / ((a + 1)...(a + n)) and of its a-derivative, until
    the term (derivative: the derivative's term) is below eps of the sum (100,000 terms at
    most, as lax/special.py's)."""
    def step(e: _Emitter, args, vals):
        x = args[0]
        on, n, r, c, ans, dc_da, dans_da = vals
        eps = _eps(e)
        r_n = e.add(r, 1.0)
        x_r = e.div(x, r_n)
        dc_n = e.sub(e.mul(dc_da, x_r), e.div(e.mul(c, x), e.mul(r_n, r_n)))
        dans_n = e.add(dans_da, dc_n)
        c_n = e.mul(c, x_r)
        ans_n = e.add(ans, c_n)
        more = (e.gt(e.abs(e.div(dc_n, dans_n)), eps) if derivative else
                e.gt(e.div(c_n, ans_n), eps))
        n1 = e.add(n, 1.0)
        new = [e.select(on, nv, ov) for nv, ov in
               zip((r_n, c_n, ans_n, dc_n, dans_n), (r, c, ans, dc_da, dans_da))]
        go = e.and_(e.and_(on, more), e.lt(n1, float(lsp.SERIES_MAX_STEPS)))
        return [go, n1, *new], go
    return step


def _igammac_cf_init(e: _Emitter, x, a, flag, *_):
    y = e.sub(1.0, a)
    z = e.add(e.add(x, y), 1.0)
    pkm1, qkm1 = e.add(x, 1.0), e.mul(z, x)
    ans = e.div(pkm1, qkm1)
    dqkm1 = e.neg(x)
    dans = e.div(e.sub(0.0, e.mul(ans, dqkm1)), qkm1)
    return [_flag(e, flag), 0.0, y, z, ans, dans, 1.0, x, pkm1, qkm1, 0.0, 0.0, 0.0, dqkm1]


def _igammac_cf_step(derivative: bool):
    """One step of Legendre's continued fraction for Q(a, x) (Cephes' igamc) and its
    a-derivative, until the step changes the value (derivative: the derivative's value) by
    at most eps (2,000 steps at most, JAX's)."""
    def step(e: _Emitter, args, vals):
        on, c, y, z, ans, dans, pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1 = vals
        eps = _eps(e)
        c_n = e.add(c, 1.0)
        y_n, z_n = e.add(y, 1.0), e.add(z, 2.0)
        yc = e.mul(y_n, c_n)
        pk = e.sub(e.mul(pkm1, z_n), e.mul(pkm2, yc))
        qk = e.sub(e.mul(qkm1, z_n), e.mul(qkm2, yc))
        nz = e.b.fcmp_unordered("!=", qk, e.v(0.0))
        r = e.div(pk, qk)
        t = e.select(nz, e.abs(e.div(e.sub(ans, r), r)), 1.0)
        ans_n = e.select(nz, r, ans)
        dpk = e.add(e.sub(e.sub(e.mul(dpkm1, z_n), pkm1), e.mul(dpkm2, yc)), e.mul(pkm2, c_n))
        dqk = e.add(e.sub(e.sub(e.mul(dqkm1, z_n), qkm1), e.mul(dqkm2, yc)), e.mul(qkm2, c_n))
        dans_n = e.select(nz, e.div(e.sub(dpk, e.mul(ans_n, dqk)), qk), dans)
        grad_t = e.select(nz, e.abs(e.sub(dans_n, dans)), 1.0)
        s = e.select(e.gt(e.abs(pk), 1.0 / eps), eps, 1.0)
        shifted = [e.mul(v, s) for v in (pkm1, qkm1, pk, qk, dpkm1, dqkm1, dpk, dqk)]
        old = (y, z, ans, dans, pkm2, qkm2, pkm1, qkm1, dpkm2, dqkm2, dpkm1, dqkm1)
        new = [e.select(on, nv, ov) for nv, ov in zip((y_n, z_n, ans_n, dans_n, *shifted), old)]
        go = e.and_(on, e.gt(grad_t, eps) if derivative else e.gt(t, eps))
        return [go, c_n, *new], e.and_(go, e.lt(c_n, float(lsp.CF_MAX_STEPS)))
    return step


def _sum_and_derivative(ans: int, dans: int):
    """A derivative loop's result: the sum's a-derivative plus the sum times d log(ax) / da
    (the routine's last operand)."""
    return lambda e, args, vals: e.add(e.mul(vals[ans], args[3]), vals[dans])


LOOPS: dict[str, LaneLoop] = {
    # I_x(a, b)'s continued fraction (DLMF 8.17.22) by Lentz's algorithm: its value h
    "betainc_cf": LaneLoop(3, lambda e, a, b, x: [1.0, _eps(e) / 2, 0.0, _eps(e) / 2],
                           _betainc_cf_step, lambda e, args, vals: vals[3]),
    # P(a, x)'s series sum (x, a, enabled); with d log(ax) / da, the a-derivative's sum
    "igamma_series": LaneLoop(3, _igamma_series_init, _igamma_series_step(False),
                              lambda e, args, vals: vals[4]),
    "igamma_series_da": LaneLoop(4, _igamma_series_init, _igamma_series_step(True),
                                 _sum_and_derivative(4, 6)),
    # Q(a, x)'s continued fraction (x, a, enabled), and the a-derivative's
    "igammac_cf": LaneLoop(3, _igammac_cf_init, _igammac_cf_step(False),
                           lambda e, args, vals: vals[4]),
    "igammac_cf_da": LaneLoop(4, _igammac_cf_init, _igammac_cf_step(True),
                              _sum_and_derivative(4, 5)),
}

# each routine's vector variants, defined in its module (routine_module)
VARIANTS: dict[str, list[str]] = {
    symbol: [_variant_symbol(symbol, lanes, masked)
             for lanes, masked in itertools.product(WIDTHS, (False, True))]
    for symbol in _routines()}
