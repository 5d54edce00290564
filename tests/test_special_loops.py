"""The loops of the incomplete gamma and beta functions as routines with vector variants
(backend/llvm/special_loops.py): every variant gives each lane the scalar routine's bits, a
vectorised kernel calls them and gives the bits of the same function in scalar code, and a
kernel of them runs on the pool from far fewer elements than a cheap one."""
import ctypes
import itertools

import numpy as np
import pytest
from llvmlite import ir

import tracejit
from tracejit import lax
from tracejit.backend.llvm import jit_engine, parallel_loops
from tracejit.backend.llvm import special_loops as sl
from tracejit.runtime import tiering
from tracejit.scipy import special


def _operands(name: str, dtype, n: int, rng) -> list[np.ndarray]:
    """Operands each loop meets: its domain, the far ends, and lanes switched off."""
    if name == "betainc_cf":
        a, b = (10 ** rng.uniform(-2, 3, n) for _ in range(2))
        x = rng.uniform(0, 1, n)
        a[:4], b[:4], x[:4] = [1e-30, 1e3, np.nan, 2.], [1., 1e-3, 1., np.inf], [.5, .9, .5, .5]
        return [v.astype(dtype) for v in (a, b, x)]
    x, a = rng.uniform(0, 60, n), 10 ** rng.uniform(-2, 2, n)
    x[:4], a[:4] = [np.nan, 1e-30, 1e4, 50.], [1., 3., 1e4, np.inf]
    flag = (rng.uniform(size=n) < 0.8).astype(np.float64)
    ops = [x, a, flag] + ([rng.uniform(-3, 3, n)] if name.endswith("_da") else [])
    return [v.astype(dtype) for v in ops]


def _harness(symbol: str, ty: ir.Type, nargs: int, lanes: int, masked: bool):
    """A function calling one vector variant on `lanes` elements read from memory (the mask
    from bytes), compiled beside the routine; returns a ctypes callable
    (operand pointers..., mask pointer, out pointer)."""
    module = ir.Module(name="harness")
    vec = ir.VectorType(ty, lanes)
    variant = ir.Function(module, sl._variant_type(ty, nargs, lanes, masked),
                          name=sl._variant_symbol(symbol, lanes, masked))
    ptr = ir.PointerType(ir.IntType(8))
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 2)), name="go")
    b = ir.IRBuilder(fn.append_basic_block())
    args = [b.load(b.bitcast(p, vec.as_pointer()), align=1) for p in fn.args[:nargs]]
    if masked:
        bytes_ = b.load(b.bitcast(fn.args[nargs], ir.VectorType(ir.IntType(8), lanes)
                                  .as_pointer()), align=1)
        args.append(b.icmp_unsigned("!=", bytes_, ir.Constant(bytes_.type, [0] * lanes)))
    b.store(b.call(variant, args), b.bitcast(fn.args[nargs + 1], vec.as_pointer()), align=1)
    b.ret_void()
    _, code = jit_engine.compile_ir(str(module))
    return code, ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (nargs + 2))(code.address("go"))


def _scalar(symbol: str, dtype, nargs: int):
    code = jit_engine._routine_engine(symbol)
    ctype = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    fn = ctypes.CFUNCTYPE(ctype, *[ctype] * nargs)(code.address(symbol))
    return lambda *ops: np.array([fn(*v) for v in zip(*[o.tolist() for o in ops])], dtype)


@pytest.mark.parametrize("name", sorted(sl.LOOPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_variant_gives_the_scalar_routines_bits(name, dtype):
    rng = np.random.default_rng(0)
    ty = ir.DoubleType() if dtype == np.float64 else ir.FloatType()
    symbol, nargs = sl._symbol(name, ty), sl.LOOPS[name].nargs
    n = 48
    ops = _operands(name, dtype, n, rng)
    want = _scalar(symbol, dtype, nargs)(*ops)
    assert np.isfinite(want[4:]).mean() > 0.9  # (the values the loops exist for)
    for lanes, masked in itertools.product(sl.WIDTHS, (False, True)):
        _code, go = _harness(symbol, ty, nargs, lanes, masked)  # (the code lives with _code)
        mask = (rng.uniform(size=n) < 0.6).astype(np.uint8) if masked else np.ones(n, np.uint8)
        # (lanes the mask leaves out hold other values: they change no other lane's bits)
        held = [np.where(mask, o, dtype(1e30) if k < 2 else o) for k, o in enumerate(ops)]
        got = np.full(n, np.nan, dtype)
        for start in range(0, n, lanes):
            go(*[o[start:].ctypes.data for o in held], mask[start:].ctypes.data,
               got[start:].ctypes.data)
        on = mask.astype(bool)
        np.testing.assert_array_equal(got[on].view(f"u{dtype().itemsize}"),
                                      want[on].view(f"u{dtype().itemsize}"),
                                      err_msg=f"{symbol} {lanes} lanes masked={masked}")


FUNCTIONS = {
    "betainc": (special.betainc, 3),
    "igamma": (lax.igamma, 2), "igammac": (lax.igammac, 2),
    "igamma_grad_a": (lax.igamma_grad_a, 2), "random_gamma_grad": (lax.random_gamma_grad, 2),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vectorised_kernel_gives_scalar_codes_bits(name, dtype, x64):
    """A kernel over 4,096 elements calls the vector variants; `lax.map` computes each
    element in scalar code (the scalar routine): the same bits."""
    fn, nargs = FUNCTIONS[name]
    rng = np.random.default_rng(1)
    n = 4096
    if nargs == 3:
        ops = [10 ** rng.uniform(-2, 2, n), 10 ** rng.uniform(-2, 2, n), rng.uniform(0, 1, n)]
    else:
        ops = [10 ** rng.uniform(-2, 2, n), rng.uniform(0, 60, n)]
    ops = [o.astype(dtype) for o in ops]
    vectorised = tracejit.jit(fn)
    text = vectorised.lower(*ops).compile().as_text(dialect="llvm")
    assert any(f"_{kind}{lanes}(" in text for kind in "nm" for lanes in sl.WIDTHS), \
        "the kernel calls no vector variant"
    per_element = tracejit.jit(lambda *xs: lax.map(lambda t: fn(*t), xs))
    vectorised(*ops)
    tiering.wait()  # (the final code: a first call may run the first tier's, unvectorised)
    got, want = np.asarray(vectorised(*ops)), np.asarray(per_element(*ops))
    assert np.isfinite(want).mean() > 0.9
    np.testing.assert_array_equal(got, want)


def test_iterative_kernels_run_on_the_pool_from_fewer_elements():
    """An element of an iterative op weighs ITERATIVE_WORK cheap ones: a betainc kernel of
    PARALLEL_MIN_ELEMENTS / ITERATIVE_WORK elements runs on the pool, an add that size does
    not; both halves of the threshold give the same values."""
    n = parallel_loops.PARALLEL_MIN_ELEMENTS // parallel_loops.ITERATIVE_WORK
    rng = np.random.default_rng(2)
    for size, pooled in [(n, True), (n // 2, False)]:
        a, b = (rng.uniform(0.1, 20, size).astype(np.float32) for _ in range(2))
        x = rng.uniform(0, 1, size).astype(np.float32)
        f = tracejit.jit(special.betainc)
        text = f.lower(a, b, x).compile().as_text(dialect="llvm")
        assert ("@tracejit_parallel_for(" in text) == pooled, size
        f(a, b, x)
        tiering.wait()
        want = np.asarray(tracejit.jit(lambda *xs: lax.map(lambda t: special.betainc(*t), xs))(
            a, b, x))
        np.testing.assert_array_equal(np.asarray(f(a, b, x)), want)
        text = tracejit.jit(lambda u: u + 1).lower(a).compile().as_text(dialect="llvm")
        assert "@tracejit_parallel_for(" not in text
