"""The roofs behind the matmul and sum rows' "bound by" column: this machine's float32 FMA peak
and its memory read bandwidth, each as an LLVM loop (no C compiler), on 1 and 2 threads.

    python -m benchmarks.roofline [rounds]

`fma`: 12 independent 16-lane FMA chains (enough to fill two FMA pipes of 4 cycles' latency),
GFLOP/s per CPU-second of the thread that ran it (thread CPU time: the core's rate whether or not
the scheduler let it run the whole time), so the peak holds on a shared machine too. `read`: a
sum of float32 in 16-lane loads into 4 accumulators (sum 10M's loop without its blocks), over
each thread's own part of one array, read again and again: 40 MB (sum 10M's input; the VM's two
vCPUs each have an L3 of their own, so each reads its 20 MB from there) and 400 MB (memory). Each
thread is pinned to its own CPU (os.sched_setaffinity on its native id), as the data it reads
stays in that CPU's caches; best round of the slowest thread, wall time. Then the floors they
put under the two rows: matmul 1024^2 (2^31 flops) at the two cores' peak, and sum 10M at the
two-thread L3 read rate.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import llvmlite.binding as llvm
import numpy as np

_CHAINS = 12


def _splat(v: str) -> str:
    return "<" + ", ".join([f"float {v}"] * 16) + ">"


def _fma_ir() -> str:
    """`float fma_loop(i64 n)`: n turns of _CHAINS independent 16-lane FMAs."""
    lines = ["declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)",
             "define float @fma_loop(i64 %n) {", "entry:", "  br label %loop", "loop:",
             "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    lines += [f"  %a{j} = phi <16 x float> [{_splat(f'{0.5 + j / 64:.6f}')}, %entry], "
              f"[%b{j}, %loop]" for j in range(_CHAINS)]
    lines += [f"  %b{j} = call <16 x float> @llvm.fma.v16f32(<16 x float> %a{j}, "
              f"<16 x float> {_splat('0.9990234375')}, <16 x float> {_splat('0.0009765625')})"
              for j in range(_CHAINS)]
    lines += ["  %i1 = add i64 %i, 1", "  %more = icmp ult i64 %i1, %n",
              "  br i1 %more, label %loop, label %done", "done:",
              "  %s0 = fadd <16 x float> %b0, %b1"]
    lines += [f"  %s{j} = fadd <16 x float> %s{j - 1}, %b{j + 1}" for j in range(1, _CHAINS - 1)]
    lines += [f"  %r = extractelement <16 x float> %s{_CHAINS - 2}, i32 0", "  ret float %r",
              "}"]
    return "\n".join(lines) + "\n"


def _read_ir() -> str:
    """`float read_sum(<16 x float>* p, i64 turns)`: the sum of 64 * turns floats from p
    (64-byte aligned) in 4 accumulators of 16 lanes, one 64-byte load into each a turn."""
    lines = ["define float @read_sum(<16 x float>* %p, i64 %turns) {", "entry:",
             "  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    lines += [f"  %a{j} = phi <16 x float> [zeroinitializer, %entry], [%b{j}, %loop]"
              for j in range(4)]
    lines.append("  %v0i = mul i64 %i, 4")
    for j in range(4):
        if j:
            lines.append(f"  %v{j}i = add i64 %v0i, {j}")
        lines += [f"  %q{j} = getelementptr inbounds <16 x float>, <16 x float>* %p, i64 %v{j}i",
                  f"  %v{j} = load <16 x float>, <16 x float>* %q{j}, align 64",
                  f"  %b{j} = fadd <16 x float> %a{j}, %v{j}"]
    lines += ["  %i1 = add i64 %i, 1", "  %more = icmp ult i64 %i1, %turns",
              "  br i1 %more, label %loop, label %done", "done:",
              "  %c0 = fadd <16 x float> %b0, %b1", "  %c1 = fadd <16 x float> %b2, %b3",
              "  %c = fadd <16 x float> %c0, %c1", "  %r = extractelement <16 x float> %c, i32 0",
              "  ret float %r", "}"]
    return "\n".join(lines) + "\n"


def _compile() -> tuple:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2)
    module = llvm.parse_assembly(_fma_ir() + _read_ir())
    module.verify()
    engine = llvm.create_mcjit_compiler(module, target)
    engine.finalize_object()
    fma = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(engine.get_function_address(
        "fma_loop"))
    read = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("read_sum"))
    return engine, fma, read  # (the engine owns the code: keep it alive)


def _on_threads(count: int, work, rounds: int) -> list[list[float]]:
    """Run work(t) on `count` threads, thread t pinned to CPU t, all starting each round
    together; the per-round results of each thread."""
    cpus = sorted(os.sched_getaffinity(0))
    results: list[list[float]] = [[] for _ in range(count)]
    start = threading.Barrier(count)

    def run(t):
        os.sched_setaffinity(threading.get_native_id(), {cpus[t % len(cpus)]})
        for _ in range(rounds):
            start.wait()
            results[t].append(work(t))
    threads = [threading.Thread(target=run, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


def fma_peak(fma, count: int, rounds: int, steps: int = 20_000_000) -> float:
    """float32 GFLOP/s per CPU-second of each thread (the lowest of the threads' bests)."""
    def work(_):
        t = time.thread_time()
        fma(steps)
        return 2 * 16 * _CHAINS * steps / (time.thread_time() - t) / 1e9
    return min(max(r) for r in _on_threads(count, work, rounds))


def read_rate(read, nbytes: int, count: int, rounds: int) -> float:
    """GB/s of `count` threads reading their parts of one `nbytes` array together (the best
    round's slowest thread)."""
    owner = np.empty(nbytes + 64, np.uint8)
    start = -owner.ctypes.data % 64
    data = owner[start:start + nbytes].view(np.float32)
    data[:] = 1.0
    per = nbytes // 4 // count // 64 * 64
    base = data.ctypes.data

    def work(t):
        read(base + 4 * t * per, per // 64)  # (a first pass: the data in this core's caches)
        best = float("inf")
        for _ in range(5):
            s = time.perf_counter()
            read(base + 4 * t * per, per // 64)
            best = min(best, time.perf_counter() - s)
        return best
    times = _on_threads(count, work, rounds)
    slowest = [max(r[i] for r in times) for i in range(rounds)]
    return per * count * 4 / min(slowest) / 1e9


def main(rounds: int = 5) -> None:
    _engine, fma, read = _compile()
    cpus = len(os.sched_getaffinity(0))
    print(f"{llvm.get_host_cpu_name()}, {cpus} CPUs; load average {os.getloadavg()[0]:.1f}; "
          f"best of {rounds} rounds")
    one, two = fma_peak(fma, 1, rounds), fma_peak(fma, min(2, cpus), rounds)
    print(f"  FMA peak, float32: {one:.0f} GFLOP/s per CPU-second on one thread, {two:.0f} each "
          f"on two ({two / 64:.2f} GHz at 2 FMAs of 16 lanes a cycle)")
    rates = {}
    two_threads = min(2, cpus)
    # (20 MB on one thread: what one core reads of sum 10M's input, alone)
    for mb, count in ((20, 1), (40, 1), (40, two_threads), (400, 1), (400, two_threads)):
        rates[mb, count] = read_rate(read, mb * 1_000_000, count, rounds)
        print(f"  read {mb} MB on {count} thread{'s' if count > 1 else ''}"
              f"{' (each its part)' if count > 1 else ''}: {rates[mb, count]:.0f} GB/s")
    matmul = 2 * 1024 ** 3 / (two_threads * two * 1e9)
    print(f"floors: matmul 1024^2 at the FMA peak of {two_threads} threads {matmul * 1e3:.2f} "
          f"ms; sum 10M (40 MB) at the {two_threads}-thread read rate "
          f"{40e6 / (rates[40, two_threads] * 1e9) * 1e6:.0f} us")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
