"""Structural rule for fft: our own FFT emitted as LLVM IR (no library call). codegen's Emitter
dispatches to it through `rules.STRUCTURAL`.

Each transformed axis is one pass from a source buffer to a fresh destination. A pass gathers a
tile of `t` lines into a work buffer laid out [n, t] (the line index innermost), so every loop
of the transform runs contiguously over the tile: a Stockham autosort FFT whose initial stride
is t transforms all t lines at once, with radix-4/2/3/5 (and generic odd-radix, primes up to
13) steps, no bit reversal. A length with a larger prime factor goes through Bluestein's chirp-z
identity on a power-of-two FFT, so every length costs O(n log n). Twiddles are filled once per
call into a workspace table from two small float64 constant tables (exp(a + b) = exp(a) exp(b)),
then only loaded in the loops: no per-element trigonometry, no megabytes of constants in the IR.
Each Stockham size and direction is one LLVM function of its own, shared by the program's
passes (LLVM's optimiser takes superlinear time in the size of one function).
"""
from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from ...core import dtypes
from ...core.avals import ShapedArray
from ...lax.fft import FftType, fft_p
from .codegen import Buf, Emitter
from .complex_ops import pack, parts
from .rules import STRUCTURAL
from .types import F32, F64, I64, mem_type

_TILE = 4096            # complex elements per work buffer row block: lines per tile = this / n
_MAX_DIRECT_PRIME = 13  # larger prime factors go through Bluestein


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _radices(n: int) -> list[int] | None:
    """Stockham's radices for n (4s first, then one 2, then odd primes), or None when n has
    a prime factor above _MAX_DIRECT_PRIME."""
    out = []
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
    two entries of small float64 constant tables (r = hi K + lo, K ~ sqrt N), within 4.3
    float64 ulps of the exact root (measured up to N = 2^20)."""

    def __init__(self, em: Emitter, big_n: int, sign: int):
        self.em, self.k = em, max(1, math.isqrt(big_n - 1) + 1)
        hi = np.arange(-(-big_n // self.k)) * self.k
        lo = np.arange(self.k)
        self.hi = em.const_value(self._table(hi, big_n, sign))
        self.lo = em.const_value(self._table(lo, big_n, sign))

    @staticmethod
    def _table(r: np.ndarray, big_n: int, sign: int) -> np.ndarray:
        # 2 pi (r / N) in float64 is within an ulp or two of the true angle: each entry is
        # within about 2 ulps of its exact value
        theta = 2 * np.pi * (r / big_n)
        return (np.cos(theta) + 1j * sign * np.sin(theta)).astype(np.complex128)

    def at(self, r: ir.Value) -> tuple[ir.Value, ir.Value]:
        em, b = self.em, self.em.b
        x = parts(b, em.load(self.hi, b.udiv(r, _c(self.k))))
        y = parts(b, em.load(self.lo, b.urem(r, _c(self.k))))
        return _Cx(b, F64).mul(x, y)


class _Pass:
    """One axis of one call: its tables (filled once) and the per-tile transform."""

    def __init__(self, em: Emitter, cdtype: np.dtype, n: int, tile: int, inverse: bool):
        self.em, self.b, self.n, self.t, self.inverse = em, em.b, n, tile, inverse
        self.cdtype = cdtype
        self.f = F64 if cdtype == dtypes.complex128 else F32
        self.cx = _Cx(em.b, self.f)
        self.radices = _radices(n)
        self.bluestein = self.radices is None
        self.size = _bluestein_size(n) if self.bluestein else n
        if self.bluestein:
            self.radices = _radices(self.size)
        self._owned: list[Buf] = []
        self.x = self._alloc(self.size * tile)
        self.y = self._alloc(self.size * tile)
        self.roots = self._alloc(self.size)  # exp(-2 pi i j / size): forward roots
        table = _Roots(em, self.size, -1)
        em.loop(self.size, lambda j: self._put(self.roots, j, self._narrow(table.at(j))),
                name="root")
        if self.bluestein:
            self._bluestein_tables()

    def _alloc(self, count: int) -> Buf:
        buf = self.em.alloc(ShapedArray((count,), self.cdtype))
        self._owned.append(buf)
        return buf

    def release(self) -> None:
        for buf in self._owned:
            self.em.release(buf)

    # --- element access ---------------------------------------------------------------------
    def _narrow(self, z):
        if self.f == F64:
            return z
        return self.b.fptrunc(z[0], F32), self.b.fptrunc(z[1], F32)

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
        # the filter is conj(chirp of this direction): the forward chirp's conjugate for a
        # forward transform, the chirp itself for an inverse one
        em.loop(size, lambda j: self._put(self.x, j, self.zero()), name="bzero")

        def put(j):
            c = self.chirp_at(j, conj=True)
            self._put(self.x, j, c)
            self._put(self.x, b.sub(_c(size), j), c)
        em.loop(n, lambda j: self._put(self.x, j, self.chirp_at(j, conj=True)), name="b0")
        em.loop(n - 1, lambda j: put(b.add(j, _c(1))), name="b1")
        spectrum = self.stockham(self.x, self.y, 1, -1)
        self.filter = self._alloc(size)
        em.loop(size, lambda j: self._put(self.filter, j, self.cx.scale(
            self._get(spectrum, j), 1.0 / size)), name="filt")

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


def _stockham_fn(em: Emitter, cdtype: np.dtype, size: int, radices: list[int],
                 sign: int) -> ir.Function:
    """The Stockham FFT of one size and direction as a function of its own, shared by every
    pass of the program that needs it: fft(x, y, roots, stride). Its own function keeps the
    entry function small, which LLVM's O3 pipeline needs (its cost grows faster than the size
    of one function)."""
    name = f"tracejit_fft_{cdtype.name}_{size}_{'inv' if sign > 0 else 'fwd'}"
    fn = em.module.globals.get(name)
    if fn is not None:
        return fn
    ptr = mem_type(cdtype).as_pointer()
    fn = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, I64]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")
    saved = em.b
    em.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
    try:
        aval = ShapedArray((size,), cdtype)
        x, y, roots = (Buf(arg, aval) for arg in fn.args[:3])
        cx = _Cx(b, F64 if cdtype == dtypes.complex128 else F32)

        def get(buf, i):
            return parts(b, em.load(buf, i))

        nc, ratio = size, 1
        s = fn.args[3]  # the stride: the interleaved sequences, times the radices so far
        for p in radices:
            m = nc // p

            def per_pp(pp, p=p, m=m, s=s, ratio=ratio, x=x, y=y):
                w = [None] * p
                if m > 1:  # the last stage's twiddles are all 1
                    for k in range(1, p):
                        r = get(roots, b.mul(pp, _c(k * ratio)))
                        w[k] = r if sign < 0 else cx.conj(r)
                src = b.mul(pp, s)
                dst = b.mul(pp, b.mul(s, _c(p)))
                step = b.mul(s, _c(m))

                def per_q(q):
                    at = b.add(src, q)
                    a = [get(x, b.add(at, b.mul(step, _c(j))) if j else at) for j in range(p)]
                    out = _butterfly(cx, a, sign)
                    to = b.add(dst, q)
                    for k in range(p):
                        v = out[k] if w[k] is None else cx.mul(out[k], w[k])
                        i = b.add(to, b.mul(s, _c(k))) if k else to
                        em.store(y, i, pack(b, *v))
                em.loop(s, per_q, name=f"r{p}q")
            em.loop(m, per_pp, name=f"r{p}")
            x, y = y, x
            nc, ratio = m, ratio * p
            s = b.mul(s, _c(p))
        b.ret_void()
    finally:
        em.b = saved
    return fn


def _axis_pass(em: Emitter, src: Buf, dst: Buf, axis: int, n: int, kind: str) -> None:
    """dst = the transform of src along `axis` (kind: 'fft', 'ifft', 'rfft' (real src, first
    n//2+1 bins), 'irfft' (n//2+1 bins src, real dst)); IFFT/IRFFT scale by 1/n."""
    b = em.b
    shape = src.aval.shape
    n_in, n_out = shape[axis], dst.aval.shape[axis]
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    lines = outer * inner
    if lines == 0 or n_out == 0:
        return
    cdtype = src.aval.dtype if src.aval.dtype.kind == "c" else dst.aval.dtype
    if n == 0:  # (an rfft of nothing: one zero bin)
        zero = ir.Constant(F64 if cdtype == dtypes.complex128 else F32, 0.0)
        em.loop(dst.aval.size, lambda i: em.store(dst, i, pack(b, zero, zero)), name="z")
        return
    work = _bluestein_size(n) if _radices(n) is None else n
    t = max(1, min(lines, _TILE // work))
    ps = _Pass(em, cdtype, n, t, kind in ("ifft", "irfft"))
    scale = 1.0 / n if ps.inverse else None

    def line_base(ln_global, length):
        o, i = b.udiv(ln_global, _c(inner)), b.urem(ln_global, _c(inner))
        return b.add(b.mul(o, _c(length * inner)), i)

    def tile(g):
        start = b.mul(g, _c(t))
        last = _c(lines - t)  # the last tile overlaps the one before: lines are independent
        start = b.select(b.icmp_signed(">", start, last), last, start)

        def gather(ln):
            base = line_base(b.add(start, ln), n_in)

            def src_at(k):
                return b.add(base, b.mul(k, _c(inner)))

            def put(k, z):
                ps._put(ps.x, b.add(b.mul(k, _c(t)), ln), z)

            if kind == "rfft":
                em.loop(n, lambda k: put(k, (em.load(src, src_at(k)), ps.zero()[0])), name="g")
            elif kind == "irfft":  # the Hermitian completion of the stored half spectrum
                em.loop(n_in, lambda k: put(k, ps._get(src, src_at(k))), name="g")
                em.loop(n - n_in, lambda j: put(b.add(j, _c(n_in)), ps.cx.conj(ps._get(
                    src, src_at(b.sub(_c(n - n_in), j))))), name="gh")
            else:
                em.loop(n, lambda k: put(k, ps._get(src, src_at(k))), name="g")
            if ps.bluestein:
                em.loop(ps.size - n, lambda k: put(b.add(k, _c(n)), ps.zero()), name="gz")
        em.loop(t, gather, name="gl")
        out = ps.transform()

        def scatter(ln):
            base = line_base(b.add(start, ln), n_out)

            def put(k):
                z = ps.result_at(out, k, ln)
                if scale is not None:
                    z = ps.cx.scale(z, scale)
                i = b.add(base, b.mul(k, _c(inner)))
                if kind == "irfft":
                    em.store(dst, i, z[0])
                else:
                    ps._put(dst, i, z)
            em.loop(n_out, put, name="s")
        em.loop(t, scatter, name="sl")
    em.loop(-(-lines // t), tile, name="tile")
    ps.release()


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
