"""Speed of the vectorised LLVM math polynomials against NumPy over 10M float32 values.

    .venv/bin/python benchmarks/math_bench.py

Each function is compiled as a loop `out[i] = f(x[i])` (one thread) and timed best-of-5,
beside the matching NumPy ufunc. Also prints the LLVM time with libm calls for exp (what the
polynomials replace).
"""
from __future__ import annotations

import ctypes
import time

import numpy as np
from llvmlite import ir

from tracejit.backend.llvm import jit_engine
from tracejit.backend.llvm import math as llmath

N = 10_000_000
CASES = {"exp": np.exp, "log": np.log, "sin": np.sin, "tanh": np.tanh}


def _loop(module: ir.Module, name: str, body) -> None:
    f32 = ir.FloatType()
    i64 = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32.as_pointer()] * 2 + [i64]),
                     name=name)
    for a in fn.args[:2]:
        a.add_attribute("noalias")
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", fn.args[2], i64(0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(i64(0), entry)
    b.store(body(b, b.load(b.gep(fn.args[0], [i]))), b.gep(fn.args[1], [i]))
    nxt = b.add(i, i64(1))
    i.add_incoming(nxt, b.block)  # (the math may have opened blocks of its own)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[2]), loop, done)
    b.position_at_end(done)
    b.ret_void()


def _best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def main() -> None:
    module = ir.Module(name="math_bench")
    for name in CASES:
        _loop(module, f"bench_{name}", lambda b, x, name=name: llmath.emit(b, name, x))
    libm = ir.Function(module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), name="expf")
    _loop(module, "bench_libm_exp", lambda b, x: b.call(libm, [x]))
    _, code = jit_engine.compile_ir(str(module))

    rng = np.random.default_rng(0)
    inputs = {"exp": rng.uniform(-80, 80, N), "log": rng.uniform(1e-3, 1e3, N),
              "sin": rng.uniform(-100, 100, N), "tanh": rng.uniform(-10, 10, N)}
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    print(f"{'function':10s} {'llvm ms':>9s} {'numpy ms':>9s} {'speed-up':>9s}")
    for name, np_fn in CASES.items():
        x = inputs[name].astype(np.float32)
        out = np.empty_like(x)
        fn = proto(code.address(f"bench_{name}"))
        ours = _best(lambda fn=fn, x=x, out=out: fn(x.ctypes.data, out.ctypes.data, N))
        theirs = _best(lambda np_fn=np_fn, x=x, out=out: np_fn(x, out=out))
        print(f"{name:10s} {ours:9.2f} {theirs:9.2f} {theirs / ours:8.1f}x")
    x = inputs["exp"].astype(np.float32)
    out = np.empty_like(x)
    fn = proto(code.address("bench_libm_exp"))
    print(f"{'exp (libm)':10s} {_best(lambda: fn(x.ctypes.data, out.ctypes.data, N)):9.2f}")


if __name__ == "__main__":
    main()
