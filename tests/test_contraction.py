"""backend/llvm/contraction.py: the fmas chosen in our IR are the ones LLVM's instruction
selection makes of `contract` flags in straight-line code (oracle: O3 machine code of the
flagged IR, one block), now at O0 too and whatever blocks the optimiser later makes; a product
read twice, or in another block than its sum, stays a rounded product."""
import ctypes

import numpy as np
import pytest
from llvmlite import ir

from tracejit.backend.llvm import jit_engine
from tracejit.backend.llvm.contraction import contract_products

F32 = ir.FloatType()
C = ("contract",)


def _x_a_b_d(b, p):
    return [b.load(b.gep(p, [ir.Constant(ir.IntType(64), k)])) for k in range(4)]


def _read_twice(bl, m, b):
    return bl.fmul(bl.fadd(m, b, flags=C), m)


# (name, emit(builder, x, a, b, d) -> the value stored): straight-line code
SNIPPETS = [
    ("x*a + b*d", lambda bl, x, a, b, d: bl.fadd(bl.fmul(x, a, flags=C), bl.fmul(b, d, flags=C),
                                                 flags=C)),
    ("x*a - b*d", lambda bl, x, a, b, d: bl.fsub(bl.fmul(x, a, flags=C), bl.fmul(b, d, flags=C),
                                                 flags=C)),
    ("b - x*a", lambda bl, x, a, b, d: bl.fsub(b, bl.fmul(x, a, flags=C), flags=C)),
    ("-(x*a) + b*d", lambda bl, x, a, b, d: bl.fadd(bl.fneg(bl.fmul(x, a, flags=C)),
                                                    bl.fmul(b, d, flags=C), flags=C)),
    ("b*d + -(x*a)", lambda bl, x, a, b, d: bl.fadd(bl.fmul(b, d, flags=C),
                                                    bl.fneg(bl.fmul(x, a, flags=C)), flags=C)),
    ("b - -(x*a)", lambda bl, x, a, b, d: bl.fsub(b, bl.fneg(bl.fmul(x, a, flags=C)), flags=C)),
    ("m=x*a; (m+b)*m", lambda bl, x, a, b, d: _read_twice(bl, bl.fmul(x, a, flags=C), b)),
    ("(x*a + b) + d*d", lambda bl, x, a, b, d: bl.fadd(
        bl.fadd(bl.fmul(x, a, flags=C), b, flags=C), bl.fmul(d, d, flags=C), flags=C)),
]


def _g(module: ir.Module) -> ir.Function:
    """g(y): y if |y| <= 1, else y / 2 if |y| <= 4, else slow(y) (y / 4, kept out of line),
    shaped like sin's code: `alwaysinline`, inlined before the optimiser as math.py's
    functions are, its paths joined in one block of three predecessors."""
    slow = ir.Function(module, ir.FunctionType(F32, [F32]), name="slow")
    slow.attributes.add("noinline")
    bl = ir.IRBuilder(slow.append_basic_block("entry"))
    bl.ret(bl.fmul(slow.args[0], ir.Constant(F32, 0.25)))
    g = ir.Function(module, ir.FunctionType(F32, [F32]), name="g")
    g.attributes.add("alwaysinline")
    g.linkage = "internal"
    entry, mid, far, done = (g.append_basic_block(n) for n in ("entry", "mid", "far", "done"))
    bl = ir.IRBuilder(entry)
    y = g.args[0]
    size = bl.call(module.declare_intrinsic("llvm.fabs", [F32]), [y])
    bl.cbranch(bl.fcmp_ordered(">", size, ir.Constant(F32, 1.0)), mid, done)
    bl.position_at_end(mid)
    halved = bl.fmul(y, ir.Constant(F32, 0.5))
    bl.cbranch(bl.fcmp_ordered(">", size, ir.Constant(F32, 4.0)), far, done)
    bl.position_at_end(far)
    quartered = bl.call(slow, [y])
    bl.branch(done)
    bl.position_at_end(done)
    out = bl.phi(F32)
    for v, block in ((y, entry), (halved, mid), (quartered, far)):
        out.add_incoming(v, block)
    bl.ret(out)
    return g


N = 64  # (a loop over rows of 4 floats, as a kernel's)


def _module(emit, *, call_between: bool = False) -> ir.Module:
    """f(float* in, float* out): out[i] = emit(in[4i .. 4i+3]) for i < N. `call_between`:
    x*a + g(b)*d, g's branches (once inlined) between the first product and the sum."""
    module = ir.Module(name="t")
    ptr = F32.as_pointer()
    i64 = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), name="f")
    entry, body, done = (fn.append_basic_block(n) for n in ("entry", "body", "done"))
    ir.IRBuilder(entry).branch(body)
    bl = ir.IRBuilder(body)
    i = bl.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    x, a, b, d = _x_a_b_d(bl, bl.gep(fn.args[0], [bl.mul(i, ir.Constant(i64, 4))]))
    if call_between:
        first = bl.fmul(x, a, flags=C)
        value = bl.fadd(first, bl.fmul(bl.call(_g(module), [b]), d, flags=C), flags=C)
    else:
        value = emit(bl, x, a, b, d)
    bl.store(value, bl.gep(fn.args[1], [i]))
    after = bl.add(i, ir.Constant(i64, 1))
    i.add_incoming(after, bl.block)
    bl.cbranch(bl.icmp_unsigned("<", after, ir.Constant(i64, N)), body, done)
    ir.IRBuilder(done).ret_void()
    return module


def _run(ir_text: str, fast: bool, inputs: np.ndarray) -> np.ndarray:
    module = jit_engine.optimize(jit_engine.parse(ir_text))
    code, _ = jit_engine.load(module, fast=fast)
    f = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(code.address("f"))
    got = np.zeros(N, np.float32)
    f(inputs.ctypes.data, got.ctypes.data)
    return got


def _inputs(seed=0, n=N):
    return np.ascontiguousarray(np.random.default_rng(seed).standard_normal((n, 4)),
                                np.float32)


@pytest.mark.parametrize("name,emit", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_the_fmas_are_instruction_selections_in_one_block(name, emit):
    inputs = _inputs()
    flagged = str(_module(emit))
    ours = _module(emit)
    contract_products(ours)
    ours = str(ours)
    assert "contract" not in ours
    want = _run(flagged, False, inputs)  # LLVM's choice in one block, at O3
    if name != "m=x*a; (m+b)*m":  # (the case would not test contraction)
        assert (want != _run(flagged.replace(" contract", ""), False, inputs)).any()
    for fast in (False, True):
        np.testing.assert_array_equal(_run(ours, fast, inputs), want)


def test_a_product_before_an_inlined_loop_is_chosen_as_in_one_block():
    """x*a + g(b)*d with a branch in g: left to LLVM, instruction selection (one block at a
    time, after inlining) could not reach x*a and contracted g(b)*d; ours contracts x*a, at O3
    and O0, as straight-line code does (oracle: NumPy's exact fma, g's result rounded)."""
    from tracejit.lax.elementwise import _fma_impl
    inputs = _inputs(1) * np.float32(8)
    x, a, b, d = inputs.T
    gb = np.where(np.abs(b) > 4, b * np.float32(0.25), np.where(np.abs(b) > 1, b * np.float32(0.5),
                                                                 b))
    first = _fma_impl(x, a, gb * d)
    flagged = str(_module(None, call_between=True))
    assert (_run(flagged, False, inputs) != first).any()  # LLVM's own choice: the other one
    ours = _module(None, call_between=True)
    contract_products(ours)
    for fast in (False, True):
        np.testing.assert_array_equal(_run(str(ours), fast, inputs), first)
