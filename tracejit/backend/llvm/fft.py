"""Structural rule for fft: our own FFT emitted as LLVM IR (no library call). codegen's Emitter
dispatches to it through `rules.STRUCTURAL`.

Each transformed axis is one pass from a source buffer to a fresh destination. A pass gathers a
tile of `t` lines into a work buffer laid out [n, t] (the line index innermost), so every loop
of the transform runs contiguously over the tile: a Stockham autosort FFT whose initial stride
is t transforms all t lines at once, with radix-8/4/2/3/5 (and generic odd-radix, primes up to
13) steps, no bit reversal. A length with a larger prime factor goes through Bluestein's chirp-z
identity on a power-of-two FFT, so every length costs O(n log n). Twiddles are filled once per
call into a workspace table from two small float64 tables (exp(a + b) = exp(a) exp(b)), then
only loaded in the loops: no per-element trigonometry, no megabytes of constants in the IR.
Each Stockham size and direction is one LLVM function of its own, shared by the program's
passes, calling one routine per radix step whose sizes are arguments. Those steps and the
twiddle fill are the runtime's library, compiled once per machine (the thread pool's cache) and
linked by name, not compiled into each program. A real transform of even n packs its line into
a complex one of n/2 and unpacks the bins (half the work). Many lines' tiles run in chunks on
the thread pool (thread_pool.py), each tile as on one thread.
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np
from llvmlite import ir

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax.fft import FftType, fft_p
from . import thread_pool
from .codegen import Buf, Emitter
from .complex_ops import pack, parts
from .interrupt import emit_poll
from .rules import STRUCTURAL
from .types import F32, F64, I8, I32, I64, mem_type

_TILE = 4096            # complex elements per work buffer row block: lines per tile = this / n
_MAX_DIRECT_PRIME = 13  # larger prime factors go through Bluestein
# Complex points transformed (lines x length) from which the tiles run on the thread pool: a
# 2^15-point transform takes ~100 us on one core, far above a pool call's wake-up (~5-50 us).
# (On the shared 2-vCPU machine two threads measured no faster than one at any size; results
# are bit-identical either way.)
_PARALLEL_MIN_WORK = 1 << 15
_MAX_CHUNKS = 16                 # chunks per pool call (a few per core: a delayed thread holds
_MAX_SCRATCH_BYTES = 4 << 20     # little back); scratch regions: at most this much in all
I8P = I8.as_pointer()


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _radices(n: int) -> list[int] | None:
    """Stockham's radices for n (8s first, then a 4 or a 2, then odd primes), or None when n
    has a prime factor above _MAX_DIRECT_PRIME. Radix 8 passes over a tile fewer times than 4
    (512: three steps, not five): 512x512 complex64 row FFTs, alternating with radix 4 in three
    rounds, 0.41-0.59 against 0.57-0.75 ms; rfft2 of 512^2 0.51-0.75 against 0.61-1.1."""
    out = []
    while n % 8 == 0:
        out.append(8)
        n //= 8
    while n % 4 == 0:
        out.append(4)
        n //= 4
    if n % 2 == 0:
        out.append(2)
        n //= 2
    p = 3
    while n > 1 and p <= _MAX_DIRECT_PRIME:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 2
    return out if n == 1 else None


def _bluestein_size(n: int) -> int:
    return 1 << (2 * n - 2).bit_length()


class _Cx:
    """Complex arithmetic on (re, im) register pairs of one float type."""

    def __init__(self, b: ir.IRBuilder, ftype: ir.Type):
        self.b, self.f = b, ftype

    def add(self, x, y):
        return self.b.fadd(x[0], y[0]), self.b.fadd(x[1], y[1])

    def sub(self, x, y):
        return self.b.fsub(x[0], y[0]), self.b.fsub(x[1], y[1])

    def mul(self, x, y):
        b = self.b
        return (b.fsub(b.fmul(x[0], y[0]), b.fmul(x[1], y[1])),
                b.fadd(b.fmul(x[0], y[1]), b.fmul(x[1], y[0])))

    def scale(self, x, r: float):
        c = ir.Constant(self.f, r)
        return self.b.fmul(x[0], c), self.b.fmul(x[1], c)

    def times_i(self, x, sign: int):
        """x * (sign * i)."""
        neg = self.b.fneg
        return (neg(x[1]), x[0]) if sign > 0 else (x[1], neg(x[0]))

    def conj(self, x):
        return x[0], self.b.fneg(x[1])


def _butterfly(cx: _Cx, a: list, sign: int) -> list:
    """The length-p DFT of a (p = len(a)) with root exp(sign 2 pi i / p)."""
    p = len(a)
    if p == 1:
        return a
    if p == 2:
        return [cx.add(a[0], a[1]), cx.sub(a[0], a[1])]
    if p == 4:
        s02, d02 = cx.add(a[0], a[2]), cx.sub(a[0], a[2])
        s13, d13 = cx.add(a[1], a[3]), cx.times_i(cx.sub(a[1], a[3]), sign)
        return [cx.add(s02, s13), cx.add(d02, d13), cx.sub(s02, s13), cx.sub(d02, d13)]
    if p == 8:  # two DFT-4s (even and odd elements) joined by the roots w^k of 8
        even, odd = _butterfly(cx, a[0::2], sign), _butterfly(cx, a[1::2], sign)
        r = math.sqrt(0.5)
        w1 = cx.scale(cx.add(odd[1], cx.times_i(odd[1], sign)), r)      # (1 + sign i) / sqrt 2
        w3 = cx.scale(cx.sub(cx.times_i(odd[3], sign), odd[3]), r)      # (-1 + sign i) / sqrt 2
        twiddled = [odd[0], w1, cx.times_i(odd[2], sign), w3]
        return ([cx.add(e, o) for e, o in zip(even, twiddled)]
                + [cx.sub(e, o) for e, o in zip(even, twiddled)])
    # odd p: pair j with p - j, so each output pair (k, p - k) shares its cosine/sine sums
    h = p // 2
    s = [cx.add(a[j], a[p - j]) for j in range(1, h + 1)]
    d = [cx.sub(a[j], a[p - j]) for j in range(1, h + 1)]
    y = [None] * p
    y0 = a[0]
    for sj in s:
        y0 = cx.add(y0, sj)
    y[0] = y0
    for k in range(1, h + 1):
        t, u = a[0], None
        for j in range(1, h + 1):
            theta = 2 * math.pi * ((j * k) % p) / p
            t = cx.add(t, cx.scale(s[j - 1], math.cos(theta)))
            term = cx.scale(d[j - 1], math.sin(theta))
            u = term if u is None else cx.add(u, term)
        iu = cx.times_i(u, sign)
        y[k], y[p - k] = cx.add(t, iu), cx.sub(t, iu)
    return y


class _Roots:
    """exp(sign 2 pi i r / N) for a run-time r in [0, N), as float64 (re, im): the product of
    two entries of small float64 tables (r = hi K + lo, K ~ sqrt N), within 4.3 float64 ulps
    of the exact root (measured up to N = 2^20). The tables are the runtime's data, made once
    per process (`_root_table`) and declared in the module as external constants (one pair
    per N and sign), so any function of the module may read them."""

    def __init__(self, em: Emitter, big_n: int, sign: int):
        self.em, self.big_n, self.sign = em, big_n, sign
        # K a power of two at or above sqrt N: the split of r is a shift and a mask, so the
        # loops that fill tables from these roots vectorise
        self.k = 1 << math.isqrt(big_n - 1).bit_length()
        self.hi = self._table("hi", -(-big_n // self.k), self.k)
        self.lo = self._table("lo", self.k, 1)

    def _table(self, part: str, count: int, step: int) -> Buf:
        name = f"tracejit_fft_roots_{self.big_n}_{'inv' if self.sign > 0 else 'fwd'}_{part}"
        gv = self.em.module.globals.get(name)
        if gv is None:
            with _tables_lock:
                _root_table(name, self.big_n, self.sign, count, step)
            gv = ir.GlobalVariable(self.em.module, ir.ArrayType(I8, 16 * count), name=name)
            gv.linkage = "external"
            gv.global_constant = True
            gv.align = _TABLE_ALIGN
        # a constant expression, not an instruction: valid in every function of the module
        return Buf(gv.bitcast(mem_type(dtypes.complex128).as_pointer()),
                   ShapedArray((count,), dtypes.complex128))

    def fill(self, out: Buf, count: int) -> None:
        """out[r] = the root r in out's dtype, for r < count (a library routine)."""
        cdtype = out.aval.dtype
        name = f"tracejit_fft_fill_roots_{cdtype.name}"
        ptr = mem_type(cdtype).as_pointer()
        fn = _library_fn(self.em, name, ir.FunctionType(ir.VoidType(), [ptr] + [_F64X2P] * 2
                                                        + [I64] * 2),
                         lambda: _fill_module(name, cdtype))
        self.em.b.call(fn, [out.ptr, self.hi.ptr, self.lo.ptr, _c(count),
                            _c(self.k.bit_length() - 1)])

    def at(self, r: ir.Value) -> tuple[ir.Value, ir.Value]:
        em, b = self.em, self.em.b
        x = parts(b, em.load(self.hi, b.udiv(r, _c(self.k))))
        y = parts(b, em.load(self.lo, b.urem(r, _c(self.k))))
        return _Cx(b, F64).mul(x, y)


_F64X2P = mem_type(dtypes.complex128).as_pointer()


def _fill_module(name: str, cdtype: np.dtype) -> ir.Module:
    """fill(out, hi, lo, count, shift): out[r] = hi[r >> shift] lo[r & (2^shift - 1)] for
    r < count, each product in float64 then rounded to out's dtype (what _Roots.at and
    _narrow give inline), a block of 2^shift r per hi entry: the inner loop runs over lo and
    out contiguously (over r, with both indices computed, it made gathers and ran ~0.3 ms
    slower than inline code for 2^19 roots)."""
    em = Emitter(name)
    ptr = mem_type(cdtype).as_pointer()
    fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [ptr] + [_F64X2P] * 2
                                                + [I64] * 2), name=name)
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")
    em.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
    out, hi, lo, count, shift = fn.args
    aval = ShapedArray((1,), dtypes.complex128)  # (elements are addressed through the args)
    hi, lo = Buf(hi, aval), Buf(lo, aval)
    out = Buf(out, ShapedArray((1,), cdtype))
    block = b.shl(_c(1), shift)
    f = F64 if cdtype == dtypes.complex128 else F32

    def per_block(h):
        x = parts(b, em.load(hi, h))
        start = b.mul(h, block)
        left = b.sub(count, start)
        todo = b.select(b.icmp_signed("<", left, block), left, block)
        row = Buf(b.gep(out.ptr, [start], inbounds=True), out.aval)

        def body(j):
            em.store(row, j, pack(b, *_narrow(b, f, _Cx(b, F64).mul(x, parts(b, em.load(lo, j))))))
        em.loop(todo, body, name="root")
    em.loop(b.lshr(b.add(count, b.sub(block, _c(1))), shift), per_block, name="block")
    b.ret_void()
    return em.module


def _line_module(name: str, what: str, cdtype: np.dtype) -> ir.Module:
    """One of the routines a tile of one contiguous line calls, f(a, b, c, m[, scale]) with
    complex elements, computing what the tile's gather or scatter computes inline:
    rfft_unpack(dst, z, w, m): a real line's m + 1 bins from Z, the DFT of its m packed
    points, and w^k (`_rfft_ends`, `_rfft_bin`); irfft_pack(z, x, w, m): 2 Z_k from the bins
    (`_irfft_end`, `_irfft_bin`); scaled_copy(dst, src, _, m, scale): dst[k] = src[k] scale."""
    em = Emitter(name)
    f = F64 if cdtype == dtypes.complex128 else F32
    ptr = mem_type(cdtype).as_pointer()
    extra = [f] if what == "scaled_copy" else []
    fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [ptr] * 3 + [I64, *extra]),
                     name=name)
    fn.args[0].add_attribute("noalias")
    em.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
    aval = ShapedArray((1,), cdtype)  # (elements are addressed through the arguments)
    out, x, w = (Buf(arg, aval) for arg in fn.args[:3])
    m = fn.args[3]
    cx = _Cx(b, f)

    def get(buf, i):
        return parts(b, em.load(buf, i))

    def put(i, v):
        em.store(out, i, pack(b, *v))

    def from_one(body):  # body(k) for 0 < k < m
        em.loop(b.sub(m, _c(1)), lambda j: body(b.add(j, _c(1))), name="k")
    if what == "rfft_unpack":
        x0, xm = _rfft_ends(cx, get(x, _c(0)))
        put(_c(0), x0)
        put(m, xm)
        from_one(lambda k: put(k, _rfft_bin(cx, get(x, k), get(x, b.sub(m, k)), get(w, k))))
    elif what == "irfft_pack":
        put(_c(0), _irfft_end(cx, get(x, _c(0)), get(x, m)))
        from_one(lambda k: put(k, _irfft_bin(cx, get(x, k), get(x, b.sub(m, k)), get(w, k))))
    else:
        scale = fn.args[4]
        em.loop(m, lambda k: put(k, [b.fmul(v, scale) for v in get(x, k)]), name="k")
    b.ret_void()
    return em.module


def _copy(b: ir.IRBuilder, dst: ir.Value, src: ir.Value, nbytes: int) -> None:
    """memcpy of nbytes from src to dst (distinct buffers)."""
    memcpy = b.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
    b.call(memcpy, [b.bitcast(dst, I8P), b.bitcast(src, I8P), _c(nbytes),
                    ir.Constant(ir.IntType(1), 0)])


_TABLE_ALIGN = 64
_tables: dict[str, np.ndarray] = {}  # symbol -> its memory, kept for the process
_tables_lock = threading.Lock()


@functools.cache
def _root_table(name: str, big_n: int, sign: int, count: int, step: int) -> None:
    """Make exp(sign 2 pi i r / N) for r = 0, step, ..., (count - 1) step and bind it to `name`
    for programs' linker: process memory, not constants in each program's IR (the 56 KiB of a
    2^20-point rfft's tables were 134 KB of its 146 KB of IR text, printed, hashed and parsed
    by every first call)."""
    import llvmlite.binding as llvm
    # 2 pi (r / N) in float64 is within an ulp or two of the true angle: each entry is within
    # about 2 ulps of its exact value
    theta = 2 * np.pi * (np.arange(count) * step / big_n)
    values = (np.cos(theta) + 1j * sign * np.sin(theta)).astype(np.complex128)
    raw = np.zeros(values.nbytes + _TABLE_ALIGN, np.uint8)
    start = -raw.ctypes.data % _TABLE_ALIGN
    raw[start:start + values.nbytes] = values.view(np.uint8)
    _tables[name] = raw
    llvm.add_symbol(name, raw.ctypes.data + start)


def _narrow(b: ir.IRBuilder, f: ir.Type, z):
    return z if f == F64 else (b.fptrunc(z[0], F32), b.fptrunc(z[1], F32))


class _Pass:
    """One transform length of one call: its tables (filled once per call, before any line)
    and the transform of a tile of `t` lines held in a work buffer [size, t] (the line index
    innermost). Emitting code uses the emitter's current builder, so a tile can be emitted in
    a chunk function of the thread pool after `bind` gives it that function's pointers."""

    def __init__(self, em: Emitter, cdtype: np.dtype, n: int, lines: int, inverse: bool):
        self.em, self.n, self.inverse = em, n, inverse
        self.cdtype = cdtype
        self.f = F64 if cdtype == dtypes.complex128 else F32
        self.radices = _radices(n)
        self.bluestein = self.radices is None
        self.size = _bluestein_size(n) if self.bluestein else n
        if self.bluestein:
            self.radices = _radices(self.size)
        self.t = max(1, min(lines, _TILE // self.size))
        self._owned: list[Buf] = []
        self.roots = self._alloc(self.size)  # exp(-2 pi i j / size): forward roots
        table = _Roots(em, self.size, -1)
        table.fill(self.roots, self.size)
        self.chirp = self.filter = None
        if self.bluestein:
            self._bluestein_tables()

    @property
    def b(self) -> ir.IRBuilder:
        return self.em.b

    @property
    def cx(self) -> _Cx:
        return _Cx(self.em.b, self.f)

    def _alloc(self, count: int) -> Buf:
        buf = self.em.alloc(ShapedArray((count,), self.cdtype))
        self._owned.append(buf)
        return buf

    def release(self) -> None:
        for buf in self._owned:
            self.em.release(buf)

    def tables(self) -> dict[str, Buf]:
        """The per-call tables a tile reads."""
        out = {"roots": self.roots}
        if self.bluestein:
            out.update(chirp=self.chirp, filter=self.filter)
        return out

    def scratch(self) -> ShapedArray:
        """The memory of a tile's two work buffers."""
        return ShapedArray((2 * self.size * self.t,), self.cdtype)

    def bind(self, tables: dict[str, Buf], scratch: Buf) -> None:
        """Point the tile code at these tables and this scratch (pointers of the function
        being emitted)."""
        for name, buf in tables.items():
            setattr(self, name, buf)
        aval = ShapedArray((self.size * self.t,), self.cdtype)
        self.x = Buf(scratch.ptr, aval)
        self.y = Buf(self.b.gep(scratch.ptr, [_c(self.size * self.t)], inbounds=True), aval)

    # --- element access ---------------------------------------------------------------------
    def _narrow(self, z):
        return _narrow(self.b, self.f, z)

    def _get(self, buf: Buf, i: ir.Value):
        return parts(self.b, self.em.load(buf, i))

    def _put(self, buf: Buf, i: ir.Value, z) -> None:
        self.em.store(buf, i, pack(self.b, *z))

    def zero(self):
        zero = ir.Constant(self.f, 0.0)
        return zero, zero

    # --- Stockham autosort ------------------------------------------------------------------
    def stockham(self, x: Buf, y: Buf, stride: int, sign: int) -> Buf:
        """The unnormalised DFT (root exp(sign 2 pi i / size)) of the `stride` interleaved
        sequences in x (element k of sequence q at k * stride + q); x and y are clobbered and
        the buffer holding the result is returned."""
        fn = _stockham_fn(self.em, self.cdtype, self.size, self.radices, sign)
        self.b.call(fn, [x.ptr, y.ptr, self.roots.ptr, _c(stride)])
        return y if len(self.radices) % 2 else x

    # --- Bluestein --------------------------------------------------------------------------
    def _bluestein_tables(self) -> None:
        """chirp[j] = exp(-i pi j^2 / n) and spectrum = DFT(conj of the direction's chirp,
        wrapped to the power-of-two size) / size, once per call."""
        em, b, n, size = self.em, self.b, self.n, self.size
        self.chirp = self._alloc(n)
        table = _Roots(em, 2 * n, -1)
        em.loop(n, lambda j: self._put(self.chirp, j, self._narrow(
            table.at(b.urem(b.mul(j, j), _c(2 * n))))), name="chirp")
        x = em.alloc(ShapedArray((size,), self.cdtype))
        y = em.alloc(ShapedArray((size,), self.cdtype))
        # the filter is conj(chirp of this direction): the forward chirp's conjugate for a
        # forward transform, the chirp itself for an inverse one
        em.loop(size, lambda j: self._put(x, j, self.zero()), name="bzero")

        def put(j):
            c = self.chirp_at(j, conj=True)
            self._put(x, j, c)
            self._put(x, b.sub(_c(size), j), c)
        em.loop(n, lambda j: self._put(x, j, self.chirp_at(j, conj=True)), name="b0")
        em.loop(n - 1, lambda j: put(b.add(j, _c(1))), name="b1")
        spectrum = self.stockham(x, y, 1, -1)
        self.filter = self._alloc(size)
        em.loop(size, lambda j: self._put(self.filter, j, self.cx.scale(
            self._get(spectrum, j), 1.0 / size)), name="filt")
        em.release(x)
        em.release(y)

    def chirp_at(self, j: ir.Value, conj: bool = False):
        """This direction's chirp exp(sign i pi j^2 / n) (or its conjugate)."""
        c = self._get(self.chirp, j)
        return self.cx.conj(c) if self.inverse != conj else c

    def transform(self):
        """The DFT of the tile gathered in self.x (element k of line l at k * t + l) into a
        buffer of the same layout, which is returned (unnormalised)."""
        sign = 1 if self.inverse else -1
        if not self.bluestein:
            return self.stockham(self.x, self.y, self.t, sign)
        em, b, t = self.em, self.b, self.t

        def weigh(k):
            ck = self.chirp_at(k)

            def line(ln):
                i = b.add(b.mul(k, _c(t)), ln)
                self._put(self.x, i, self.cx.mul(self._get(self.x, i), ck))
            em.loop(t, line, name="bl")
        em.loop(self.n, weigh, name="bw")
        spectrum = self.stockham(self.x, self.y, t, -1)
        other = self.y if spectrum is self.x else self.x

        def convolve(k):
            fk = self._get(self.filter, k)
            em.loop(t, lambda ln: self._put(spectrum, b.add(b.mul(k, _c(t)), ln), self.cx.mul(
                self._get(spectrum, b.add(b.mul(k, _c(t)), ln)), fk)), name="cl")
        em.loop(self.size, convolve, name="conv")
        # the inverse power-of-two DFT; the filter carries its 1/size
        return self.stockham(spectrum, other, t, 1)

    def result_at(self, out: Buf, k: ir.Value, ln: ir.Value):
        z = self._get(out, self.b.add(self.b.mul(k, _c(self.t)), ln))
        return self.cx.mul(z, self.chirp_at(k)) if self.bluestein else z


# --- running lines: tiles, chunks on the thread pool --------------------------------------

def _for_each(em: Emitter, count: int, bufs: dict[str, Buf], body, scratch: ShapedArray | None,
              work: int) -> None:
    """`for i in range(count): body(bufs, scratch, i)`; with `work` (complex elements
    transformed) of _PARALLEL_MIN_WORK or more, as chunks of consecutive i on the thread pool,
    each chunk with a scratch region of its own and `bufs` rebuilt from the chunk function's
    context. Which i a chunk holds is fixed at compile time and each i is computed alike on
    every thread, so results are bit-identical for every thread count."""
    sbytes = scratch.size * scratch.dtype.itemsize if scratch is not None else 0
    n_chunks = min(count, _MAX_CHUNKS, _MAX_SCRATCH_BYTES // sbytes if sbytes else count)
    if work < _PARALLEL_MIN_WORK or n_chunks < 2 or em.split is not None:
        sbuf = em.alloc(scratch) if scratch is not None else None
        em.loop(count, lambda i: body(bufs, sbuf, i), name="each")
        em.release(sbuf)
        return
    per = -(-count // n_chunks)
    n_chunks = -(-count // per)
    keys = list(bufs)
    body_fn = ir.Function(em.module, thread_pool.BODY_TYPE,
                          name=em.module.get_unique_name("fft_chunks"))
    body_fn.linkage = "internal"
    saved = em.b
    b = em.b = ir.IRBuilder(body_fn.append_basic_block("entry"))
    try:
        ctx = b.bitcast(body_fn.args[0], I8P.as_pointer())
        chunk = body_fn.args[1]

        def slot(k):
            return b.load(b.gep(ctx, [_c(k)], inbounds=True))
        sbuf = None
        if scratch is not None:
            raw = b.gep(slot(0), [b.mul(chunk, _c(sbytes))], inbounds=True)
            sbuf = Buf(b.bitcast(raw, mem_type(scratch.dtype).as_pointer()), scratch)
        kb = {key: Buf(b.bitcast(slot(1 + j), bufs[key].ptr.type), bufs[key].aval)
              for j, key in enumerate(keys)}
        lo = b.mul(chunk, _c(per))
        hi = b.add(lo, _c(per))
        hi = b.select(b.icmp_signed("<", hi, _c(count)), hi, _c(count))
        em.loop(b.sub(hi, lo), lambda j: body(kb, sbuf, b.add(lo, j)), name="chunk")
        b.ret_void()
    finally:
        em.b = saved
    b = em.b
    regions = em.alloc(ShapedArray((n_chunks * sbytes,), np.dtype(np.uint8))) if sbytes \
        else None
    words = [b.bitcast(regions.ptr, I8P) if regions else ir.Constant(I8P, None)]
    words += [b.bitcast(bufs[key].ptr, I8P) for key in keys]
    ctx_mem = em._entry_alloca(ir.ArrayType(I8P, len(words)))
    for k, w in enumerate(words):
        b.store(w, b.gep(ctx_mem, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True))
    pool_fn = em.module.globals.get(thread_pool.symbol())
    if pool_fn is None:
        pool_fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]),
                              thread_pool.SYMBOL)
    b.call(pool_fn, [b.bitcast(body_fn, I8P), b.bitcast(ctx_mem, I8P), _c(n_chunks)])
    em.release(regions)
    emit_poll(em)  # Ctrl-C made the pool skip chunks: leave now (the outputs are discarded)


def _tiles(em: Emitter, ps: _Pass, lines: int, bufs: dict[str, Buf], gather, scatter) -> None:
    """Every one of `lines` lines through ps's transform, a tile of t = ps.t lines at a time:
    gather(bufs, start, t, put) calls put(k, ln, z) with element k (< ps.n) of line start + ln
    (ln < t), scatter(bufs, start, t, get) reads bin k of line start + ln as get(k, ln); each
    orders its loops to suit its memory (_by_line: a line at a time)."""
    t = ps.t
    tables = {"ps." + name: buf for name, buf in ps.tables().items()}

    def tile(kb, scratch, g):
        b = em.b
        ps.bind({name[3:]: buf for name, buf in kb.items() if name.startswith("ps.")}, scratch)
        start = b.mul(g, _c(t))
        last = _c(lines - t)  # the last tile overlaps the one before: lines are independent
        start = b.select(b.icmp_signed(">", start, last), last, start)

        def put(k, ln, z):
            ps._put(ps.x, b.add(b.mul(k, _c(t)), ln), z)
        gather(kb, start, t, put)
        if ps.bluestein:
            em.loop(t, lambda ln: em.loop(ps.size - ps.n, lambda k: put(
                b.add(k, _c(ps.n)), ln, ps.zero()), name="gz"), name="gzl")
        out = ps.out = ps.transform()
        scatter(kb, start, t, lambda k, ln: ps.result_at(out, k, ln))
    _for_each(em, -(-lines // t), {**bufs, **tables}, tile, ps.scratch(), lines * ps.size)


def _by_line(em: Emitter, access):
    """A tile's gather or scatter from a per-line one, access(bufs, line, f) with f(k, ...)
    for element k of that line: the lines one after another."""
    def tiled(kb, start, t, f):
        em.loop(t, lambda ln: access(kb, em.b.add(start, ln),
                                     lambda k, *z: f(k, ln, *z)), name="line")
    return tiled


# --- real transforms through a half-length complex one -------------------------------------
# z_j = x_2j + i x_2j+1 (m = n/2 complex points): with Z its DFT, the real input's bins are
# X_k = E_k + w^k O_k (w = exp(-2 pi i / n)), E_k = (Z_k + conj Z_m-k) / 2 the even samples'
# DFT and O_k = (Z_k - conj Z_m-k) / 2i the odd ones'; irfft runs this backwards.

def _rfft_bin(cx: _Cx, zk, zmk, w):
    """X_k (0 < k < m) from Z_k, Z_m-k and w^k."""
    c = cx.conj(zmk)
    e = cx.scale(cx.add(zk, c), 0.5)
    o = cx.times_i(cx.scale(cx.sub(zk, c), 0.5), -1)
    return cx.add(e, cx.mul(w, o))


def _rfft_ends(cx: _Cx, z0):
    """(X_0, X_m): real, exactly."""
    zero = ir.Constant(cx.f, 0.0)
    return (cx.b.fadd(z0[0], z0[1]), zero), (cx.b.fsub(z0[0], z0[1]), zero)


def _irfft_bin(cx: _Cx, xk, xmk, w):
    """2 Z_k (0 < k < m) from X_k, X_m-k and w^k (X Hermitian: the upper bins are conj X_m-k)."""
    c = cx.conj(xmk)
    return cx.add(cx.add(xk, c), cx.times_i(cx.mul(cx.sub(xk, c), cx.conj(w)), 1))


def _irfft_end(cx: _Cx, x0, xm):
    """2 Z_0; the imaginary parts of X_0 and X_m are ignored, as by NumPy and JAX."""
    return cx.b.fadd(x0[0], xm[0]), cx.b.fsub(x0[0], xm[0])


def _stockham_fn(em: Emitter, cdtype: np.dtype, size: int, radices: list[int],
                 sign: int) -> ir.Function:
    """The Stockham FFT of one size and direction as a function of its own, shared by every
    pass of the program that needs it: fft(x, y, roots, stride), one call of a radix's step
    function (`_step_fn`) per radix. Functions of their own keep the entry function small,
    which LLVM's O3 pipeline needs (its cost grows faster than the size of one function)."""
    name = f"tracejit_fft_{cdtype.name}_{size}_{'inv' if sign > 0 else 'fwd'}"
    fn = em.module.globals.get(name)
    if fn is not None:
        return fn
    ptr = mem_type(cdtype).as_pointer()
    fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, I64]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, y, roots, s = fn.args
    nc, ratio = size, 1
    for k, p in enumerate(radices):
        m = nc // p
        args = [x, y, roots, s, _c(m), _c(ratio)]
        if k == 0:  # one line (s == 1): the step with its butterflies' loop innermost
            with b.if_else(b.icmp_unsigned("==", s, _c(1))) as (one, many):
                with one:
                    b.call(_step_fn(em, cdtype, p, sign, m > 1, unit=True), args)
                with many:
                    b.call(_step_fn(em, cdtype, p, sign, m > 1), args)
        else:
            b.call(_step_fn(em, cdtype, p, sign, m > 1), args)
        x, y = y, x
        nc, ratio = m, ratio * p
        s = b.mul(s, _c(p))
    b.ret_void()
    return fn


def _step_name(cdtype: np.dtype, p: int, sign: int, twiddled: bool, unit: bool) -> str:
    return (f"tracejit_fft_{cdtype.name}_radix{p}{'' if twiddled else '_last'}"
            f"{'_unit' if unit else ''}_{'inv' if sign > 0 else 'fwd'}")


def _step_type(cdtype: np.dtype) -> ir.FunctionType:
    ptr = mem_type(cdtype).as_pointer()
    return ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr] + [I64] * 3)


def _step_fn(em: Emitter, cdtype: np.dtype, p: int, sign: int, twiddled: bool,
             unit: bool = False) -> ir.Function:
    """One radix-p Stockham step of the runtime's FFT library (`_step_module`)."""
    return _library_fn(em, _step_name(cdtype, p, sign, twiddled, unit), _step_type(cdtype),
                       lambda: _step_module(cdtype, p, sign, twiddled, unit))


# --- the runtime's FFT routines, compiled once per machine ---------------------------------
# The Stockham steps, the root tables' fill and a long line's packing and unpacking are the same
# in every program and process (their sizes are arguments), so like the thread pool they are
# compiled once per machine into the library cache and loaded by later processes; programs
# declare them and the linker finds them by name. In each program, their O3 and code generation
# were ~70 of a 2^20-point rfft's ~100 ms first call (CPU). One cache entry per routine, named by
# the routine (runtime/disk_cache.compile_library): a program loads only those it calls (a 2^20
# rfft: 5, ~12 ms of CPU in all when their IR was built to hash it and the entries' IR parsed;
# now each is found by name and its object code loaded, ~1 ms).

_library: dict[str, object] = {}  # symbol -> its machine code, kept for the process
_library_lock = threading.Lock()


def _library_fn(em: Emitter, name: str, fn_type: ir.FunctionType, make_module) -> ir.Function:
    """The declaration in em's module of the library routine `name`, which `make_module()`
    defines; compiled or loaded, and bound, the first time a process asks for it."""
    fn = em.module.globals.get(name)
    if fn is None:
        with _library_lock:
            if name not in _library:
                import llvmlite.binding as llvm

                from . import jit_engine
                code = jit_engine.compile_library(name, make_module)
                llvm.add_symbol(name, code.address(name))
                _library[name] = code
        fn = ir.Function(em.module, fn_type, name=name)
    return fn


def _step_module(cdtype: np.dtype, p: int, sign: int, twiddled: bool, unit: bool) -> ir.Module:
    """A module of one radix-p step in one direction, step(x, y, roots, s, m, ratio): the s
    interleaved sequences of x, m * p long, to y; the twiddle of butterfly pp's output k is
    roots[pp * k * ratio] (none in the last step, `twiddled` False, where they are all 1). Its
    sizes are arguments, so every step of every size with this radix runs the same code,
    vectorised over q without knowing them (x, y and roots are `noalias`, and
    `_output_scopes` tells LLVM that the p output streams are disjoint): as fast as the
    steps compiled into each program with their sizes constant were (a 2^19-point complex
    FFT's ten steps, one thread, best of 30: 0.86-0.96 ms against 0.88-0.99 ms). `unit`: the
    variant for s == 1 (a line's first step), whose loop over the butterflies is innermost
    and vectorised (as a loop of one sequence inside it, the first step took 0.8 of 3.2 ms
    more)."""
    em = Emitter(_step_name(cdtype, p, sign, twiddled, unit))
    _emit_step(em, cdtype, p, sign, twiddled, unit)
    return em.module


def _emit_step(em: Emitter, cdtype: np.dtype, p: int, sign: int, twiddled: bool,
               unit: bool) -> None:
    fn = ir.Function(em.module, _step_type(cdtype),
                     name=_step_name(cdtype, p, sign, twiddled, unit))
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")
    em.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
    aval = ShapedArray((1,), cdtype)  # (elements are addressed through the arguments)
    x, y, roots = (Buf(arg, aval) for arg in fn.args[:3])
    s, m, ratio = fn.args[3:]
    s = _c(1) if unit else s
    cx = _Cx(b, F64 if cdtype == dtypes.complex128 else F32)
    scopes = _output_scopes(em.module, fn.name, p)

    def get(buf, i):
        return parts(b, em.load(buf, i))

    def per_pp(pp):
        w = [None] * p
        if twiddled:
            for k in range(1, p):
                r = get(roots, b.mul(pp, b.mul(ratio, _c(k))))
                w[k] = r if sign < 0 else cx.conj(r)
        src = b.mul(pp, s)
        dst = b.mul(pp, b.mul(s, _c(p)))
        step = b.mul(s, m)

        def per_q(q):
            at = b.add(src, q)
            a = [get(x, b.add(at, b.mul(step, _c(j))) if j else at) for j in range(p)]
            out = _butterfly(cx, a, sign)
            to = b.add(dst, q)
            for k in range(p):
                v = out[k] if w[k] is None else cx.mul(out[k], w[k])
                i = b.add(to, b.mul(s, _c(k))) if k else to
                store = b.store(pack(b, *v), b.gep(y.ptr, [i], inbounds=True))
                store.set_metadata("alias.scope", scopes[k][0])
                store.set_metadata("noalias", scopes[k][1])
        em.loop(s, per_q, name=f"r{p}q")
    em.loop(m, per_pp, name=f"r{p}")
    b.ret_void()


def _output_scopes(module: ir.Module, name: str, p: int) -> list[tuple]:
    """Scoped-noalias metadata for a step's p output streams, (alias.scope, noalias) of each:
    output k of butterfly (pp, q) is y[pp s p + k s + q] with q < s, so no two streams ever
    touch one element. Said so, LLVM vectorises the loop over q as it does with the sizes
    constant; without it, the loop vectoriser's run-time overlap checks between the streams
    (symbolic strides s) failed on every call and the steps ran scalar: a 2^19-point complex
    FFT's eight middle radix-4 steps took 0.30-0.34 ms each against 0.07-0.11 ms."""
    def node(tag):  # a node of its own; operands set after (a self-reference is unhashable)
        return module.add_metadata([ir.MetaDataString(module, f"{name}.{tag}")])
    domain = node("y")
    domain.operands = (domain,)
    streams = [node(f"y{k}") for k in range(p)]
    for scope in streams:
        scope.operands = (scope, domain)
    out = []
    for k in range(p):
        mine, others = node(f"in{k}"), node(f"not{k}")
        mine.operands = (streams[k],)
        others.operands = tuple(streams[j] for j in range(p) if j != k)
        out.append((mine, others))
    return out


def _axis_pass(em: Emitter, src: Buf, dst: Buf, axis: int, n: int, kind: str) -> None:
    """dst = the transform of src along `axis` (kind: 'fft', 'ifft', 'rfft' (real src, first
    n//2+1 bins), 'irfft' (n//2+1 bins src, real dst)); IFFT/IRFFT scale by 1/n. A real
    transform of even n goes through a complex one of n/2 (half the work)."""
    shape = src.aval.shape
    n_in, n_out = shape[axis], dst.aval.shape[axis]
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    lines = outer * inner
    if lines == 0 or n_out == 0:
        return
    cdtype = src.aval.dtype if src.aval.dtype.kind == "c" else dst.aval.dtype
    f = F64 if cdtype == dtypes.complex128 else F32
    if n == 0:  # (an rfft of nothing: one zero bin)
        zero = ir.Constant(f, 0.0)
        em.loop(dst.aval.size, lambda i: em.store(dst, i, pack(em.b, zero, zero)), name="z")
        return
    inverse = kind in ("ifft", "irfft")
    scale = 1.0 / n if inverse else None
    half = n % 2 == 0 and (kind == "rfft" or kind == "irfft" and n_in == n // 2 + 1)
    m = n // 2 if half else n  # complex points per line
    bufs = {"src": src, "dst": dst}

    def base(line, length):
        b = em.b
        o, i = b.udiv(line, _c(inner)), b.urem(line, _c(inner))
        return b.add(b.mul(o, _c(length * inner)), i)

    def at(line, length, k):
        return em.b.add(base(line, length), em.b.mul(k, _c(inner)))

    def load(buf, i):
        return parts(em.b, em.load(buf, i))

    def store(buf, i, z):
        em.store(buf, i, pack(em.b, *z))

    def scaled(z):
        return z if scale is None else _Cx(em.b, f).scale(z, scale)

    def put_pair(kb, line, j, z):  # irfft: x_2j, x_2j+1 = Re, Im of z_j / n
        z = scaled(z)
        i = at(line, n, em.b.mul(j, _c(2)))
        em.store(kb["dst"], i, z[0])
        em.store(kb["dst"], em.b.add(i, _c(inner)), z[1])

    def packed(kb, line, j):  # rfft: z_j = x_2j + i x_2j+1
        i = at(line, n, em.b.mul(j, _c(2)))
        return em.load(kb["src"], i), em.load(kb["src"], em.b.add(i, _c(inner)))

    if half:  # w^k = exp(-2 pi i k / n), k < m, in the dtype: filled once per call
        bufs["w"] = em.alloc(ShapedArray((m,), cdtype))
        roots = _Roots(em, n, -1)
        roots.fill(bufs["w"], m)
    ps = _Pass(em, cdtype, m, lines, inverse)

    # a tile of one line held contiguously (t = 1, inner = 1: long lines): packing and
    # unpacking it are copies or the library's routines (_line_module), not loops of the program
    one_line = (ps.t == 1 and inner == 1 and not ps.bluestein
                and (half or kind in ("fft", "ifft") and n_in == n == n_out))
    ptr = mem_type(cdtype).as_pointer()

    def routine(what: str, args: list, *extra: ir.Type) -> None:
        name = f"tracejit_fft_{what}_{cdtype.name}"
        fn = _library_fn(em, name, ir.FunctionType(ir.VoidType(), [ptr] * 3 + [I64, *extra]),
                         lambda: _line_module(name, what, cdtype))
        em.b.call(fn, args)

    def line_ptr(buf, line, length):
        return em.b.bitcast(em.b.gep(buf.ptr, [em.b.mul(line, _c(length))], inbounds=True), ptr)

    def gather(kb, line, put):
        b, cx = em.b, _Cx(em.b, f)
        if one_line and kind == "irfft":
            routine("irfft_pack", [ps.x.ptr, line_ptr(kb["src"], line, n_in), kb["w"].ptr,
                                   _c(m)])
        elif one_line:
            _copy(b, ps.x.ptr, line_ptr(kb["src"], line, n), m * cdtype.itemsize)
        elif kind == "rfft" and half:
            em.loop(m, lambda k: put(k, packed(kb, line, k)), name="g")
        elif kind == "rfft":
            em.loop(n, lambda k: put(k, (em.load(kb["src"], at(line, n_in, k)),
                                         ps.zero()[0])), name="g")
        elif kind == "irfft" and half:
            def x(k):
                return load(kb["src"], at(line, n_in, k))
            def bin_(j):
                k = b.add(j, _c(1))
                put(k, _irfft_bin(cx, x(k), x(b.sub(_c(m), k)), load(kb["w"], k)))
            put(_c(0), _irfft_end(cx, x(_c(0)), x(_c(m))))
            em.loop(m - 1, bin_, name="g")
        elif kind == "irfft":  # the Hermitian completion of the stored half spectrum
            em.loop(n_in, lambda k: put(k, load(kb["src"], at(line, n_in, k))), name="g")
            em.loop(n - n_in, lambda j: put(b.add(j, _c(n_in)), cx.conj(load(
                kb["src"], at(line, n_in, b.sub(_c(n - n_in), j))))), name="gh")
        else:
            em.loop(n, lambda k: put(k, load(kb["src"], at(line, n_in, k))), name="g")

    def scatter(kb, line, get):
        b, cx = em.b, _Cx(em.b, f)
        if one_line and kind == "rfft":
            routine("rfft_unpack", [line_ptr(kb["dst"], line, n_out), ps.out.ptr, kb["w"].ptr,
                                    _c(m)])
        elif one_line and scale is not None:  # ifft; irfft: x_2j, x_2j+1 = Re, Im of z_j / n
            routine("scaled_copy", [line_ptr(kb["dst"], line, n_out), ps.out.ptr, ps.out.ptr,
                                    _c(m), ir.Constant(f, scale)], f)
        elif one_line:
            _copy(b, line_ptr(kb["dst"], line, n_out), ps.out.ptr, m * cdtype.itemsize)
        elif kind == "rfft" and half:
            x0, xm = _rfft_ends(cx, get(_c(0)))
            store(kb["dst"], at(line, n_out, _c(0)), x0)
            store(kb["dst"], at(line, n_out, _c(m)), xm)

            def bin_(j):
                k = b.add(j, _c(1))
                store(kb["dst"], at(line, n_out, k),
                      _rfft_bin(cx, get(k), get(b.sub(_c(m), k)), load(kb["w"], k)))
            em.loop(m - 1, bin_, name="s")
        elif kind == "irfft" and half:
            em.loop(m, lambda j: put_pair(kb, line, j, get(j)), name="s")
        elif kind == "irfft":
            em.loop(n, lambda k: em.store(kb["dst"], at(line, n, k), scaled(get(k))[0]),
                    name="s")
        else:
            em.loop(n_out, lambda k: store(kb["dst"], at(line, n_out, k), scaled(get(k))),
                    name="s")
    if inner > 1 and kind in ("fft", "ifft") and not ps.bluestein:
        # lines strided through memory (not the last axis): a tile's t lines lie side by side,
        # so element k of all t is read (written) before element k + 1, a run of t elements,
        # not one line down its stride after another (each line's n reads on n cache lines)
        def runs(start, t, length, each, name):
            """each(k, ln, i) for element k < length of line start + ln (ln < t) at index i.
            Where the t lines share their outer index (always with one outer index) element
            k of them is one run of t, from the first line's: no index taken apart for each
            element (512x257 complex64 columns on one thread, best of 300 calls, alternating
            three rounds: 0.73-1.11 -> 0.73-0.78 ms; rfft2 of 512^2 0.87-1.2 -> 0.72-1.1)."""
            b = em.b

            def run():
                first = base(start, length)
                em.loop(length, lambda k: em.loop(t, lambda ln: each(k, ln, b.add(b.add(
                    first, b.mul(k, _c(inner))), ln)), name=name + "l"), name=name + "k")

            def apart():
                em.loop(length, lambda k: em.loop(t, lambda ln: each(
                    k, ln, at(b.add(start, ln), length, k)), name=name + "l"), name=name + "k")
            if outer == 1:
                run()
                return
            whole = b.icmp_unsigned("<=", b.add(b.urem(start, _c(inner)), _c(t)), _c(inner))
            with b.if_else(whole) as (one_run, across):
                with one_run:
                    run()
                with across:
                    apart()

        def gather_tile(kb, start, t, put):
            runs(start, t, n, lambda k, ln, i: put(k, ln, load(kb["src"], i)), "g")

        def scatter_tile(kb, start, t, get):
            runs(start, t, n_out, lambda k, ln, i: store(kb["dst"], i, scaled(get(k, ln))), "s")
        _tiles(em, ps, lines, bufs, gather_tile, scatter_tile)
    else:
        _tiles(em, ps, lines, bufs, _by_line(em, gather), _by_line(em, scatter))
    ps.release()
    em.release(bufs.get("w"))


def _fft(em: Emitter, eqn, ins, dests):
    fft_type, lengths = eqn.params["fft_type"], eqn.params["fft_lengths"]
    x = em.materialize(ins[0])
    out_aval = eqn.outvars[0].aval
    out = dests[0] or em.alloc(out_aval)
    ndim, k = out_aval.ndim, len(lengths)
    axes = list(range(ndim - k, ndim))
    if fft_type == FftType.RFFT:  # the real axis first, then complex FFTs of the others
        passes = [(axes[-1], "rfft")] + [(a, "fft") for a in axes[:-1]]
    elif fft_type == FftType.IRFFT:  # the complex axes first, the real one last
        passes = [(a, "ifft") for a in axes[:-1]] + [(axes[-1], "irfft")]
    else:
        passes = [(a, "fft" if fft_type == FftType.FFT else "ifft") for a in axes]
    cdtype = out_aval.dtype if out_aval.dtype.kind == "c" else x.aval.dtype
    cur = x
    shape = list(x.aval.shape)
    for j, (axis, kind) in enumerate(passes):
        n = lengths[axis - (ndim - k)]
        shape[axis] = {"rfft": n // 2 + 1, "irfft": n}.get(kind, n)
        last = j == len(passes) - 1
        nxt = out if last else em.alloc(ShapedArray(tuple(shape), cdtype))
        _axis_pass(em, cur, nxt, axis, n, kind)
        if cur is not x:
            em.release(cur)
        cur = nxt
    return [out]


STRUCTURAL[fft_p] = _fft
