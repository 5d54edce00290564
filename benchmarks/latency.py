"""The latencies behind the scalar loop rows' "bound by" column: loop-carried chains of this
core's scalar float32 operations, and cos's small-argument polynomial (backend/llvm/math.py,
|x| < 0.78) in several evaluation orders, each as an LLVM loop of 5M dependent steps.

    python -m benchmarks.latency

Prints ns and cycles per step (cycles at the clock a chain of multiplies implies, taking a
multiply as 3 cycles). The orders compute slightly different bits; math.py uses the last,
the completed square (13 cycles after t where Horner's took 15). None can be shorter: from t
alone, one operation gives t*t + c at most, two give t**4 + ... with leading coefficient 1, so
c0 t**8 needs a third multiply before the last fma adds the rest: 3 + 3 + 3 + 4.
"""
from __future__ import annotations

import ctypes
import struct
import time

import llvmlite.binding as llvm
import numpy as np

FMA = "call float @llvm.fma.f32"
MUL_CYCLES = 3


def _c(v: float) -> str:
    """A float32 constant in LLVM's exact hex form."""
    bits = struct.unpack("<Q", struct.pack("<d", float(np.float32(v))))[0]
    return f"0x{bits:016X}"


C0, C1, C2 = (_c(v) for v in (2.4425678930128925e-05, -0.0013887251261621714,
                              0.04166664555668831))
H, G = _c(-28.42756462097168), _c(897.7276611328125)   # math.py's _COS_SQUARE
# each body maps %x (and the constant %a) to %y; the cos bodies start from %t = %a * %x
CHAINS = {
    "fmul": "%y = fmul float %x, %a",
    "fadd": "%y = fadd float %x, %a",
    "fma": f"%y = {FMA}(float %x, float %a, float %a)",
    "fmul then fadd": f"%m = fmul float %x, %a\n  %y = fadd float %m, {_c(1e-3)}",
    "cos, Horner, z^2 beside (math.py before)": f"""%t = fmul float %a, %x
  %z = fmul float %t, %t
  %p1 = {FMA}(float {C0}, float %z, float {C1})
  %p = {FMA}(float %p1, float %z, float {C2})
  %h = {FMA}(float %z, float -0.5, float 1.0)
  %z2 = fmul float %z, %z
  %y = {FMA}(float %z2, float %p, float %h)""",
    "cos, Estrin": f"""%t = fmul float %a, %x
  %z = fmul float %t, %t
  %q = {FMA}(float {C1}, float %z, float {C2})
  %z2 = fmul float %z, %z
  %p = {FMA}(float {C0}, float %z2, float %q)
  %h = {FMA}(float %z, float -0.5, float 1.0)
  %y = {FMA}(float %z2, float %p, float %h)""",
    "cos, two halves added": f"""%t = fmul float %a, %x
  %z = fmul float %t, %t
  %w = {FMA}(float {C2}, float %z, float -0.5)
  %lo = {FMA}(float %z, float %w, float 1.0)
  %z2 = fmul float %z, %z
  %z3 = fmul float %z2, %z
  %r = {FMA}(float {C0}, float %z, float {C1})
  %hi = fmul float %z3, %r
  %y = fadd float %lo, %hi""",
    "cos, completed square (math.py's)": f"""%t = fmul float %a, %x
  %z = fmul float %t, %t
  %u = {FMA}(float %t, float %t, float {H})
  %q = {FMA}(float %u, float %u, float {G})
  %cz = fmul float %z, {C0}
  %p = fmul float %z, %cz
  %h = {FMA}(float %z, float -0.5, float 1.0)
  %y = {FMA}(float %p, float %q, float %h)""",
}


def _module(body: str) -> str:
    return f"""
declare float @llvm.fma.f32(float, float, float)
define float @chain(float %x0, float %a, i64 %n) {{
entry:
  br label %loop
loop:
  %x = phi float [%x0, %entry], [%y, %loop]
  %i = phi i64 [0, %entry], [%i1, %loop]
  {body}
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret float %y
}}"""


def main(steps: int = 5_000_000, repeats: int = 5) -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    engines, chains = [], {}
    for name, body in CHAINS.items():
        target = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
            opt=2)
        module = llvm.parse_assembly(_module(body))
        module.verify()
        engine = llvm.create_mcjit_compiler(module, target)  # (owns its target machine)
        engine.finalize_object()
        engines.append(engine)
        chains[name] = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_float,
                                        ctypes.c_int64)(engine.get_function_address("chain"))
    best = {}
    for _ in range(repeats):  # interleaved, so that a load change hits every chain alike
        for name, fn in chains.items():
            start = time.thread_time()
            fn(0.5, 0.9 if name.startswith("cos") else 1.0000001, steps)
            best[name] = min(best.get(name, 1.0), (time.thread_time() - start) / steps)
    ghz = MUL_CYCLES / (best["fmul"] * 1e9)
    print(f"{llvm.get_host_cpu_name()}, ~{ghz:.2f} GHz (from fmul = {MUL_CYCLES} cycles); "
          f"best of {repeats} x {steps:,} steps, thread CPU time")
    for name, seconds in best.items():
        print(f"  {name:44} {seconds * 1e9:6.3f} ns  {seconds * 1e9 * ghz:5.1f} cycles")


if __name__ == "__main__":
    main()
