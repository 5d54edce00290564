"""bfloat16 in the native (LLVM) backend against the reference interpreter (ml_dtypes' NumPy
arithmetic: each op in float32, rounded to bfloat16): bit for bit for exact ops, conversions,
bitcasts, shape and index ops, sorts and in-order reductions; within one bfloat16 ulp for
transcendental functions and reassociated float32 sums."""
import ml_dtypes
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax

BF16 = np.dtype(ml_dtypes.bfloat16)
_SPECIAL_BITS = [
    0x0000, 0x8000,  # ±0
    0x7F80, 0xFF80,  # ±inf
    0x7FC0, 0xFFC0,  # ±NaN
    0x0001, 0x8001, 0x007F, 0x0080,  # subnormals, the smallest normal
    0x7F7F, 0xFF7F,  # ±max
    0x3F80, 0xBF80, 0x3F81, 0x3F00, 0x4040, 0x3FC0, 0x4020, 0x4B00, 0x4B01, 0xCAFF,
]
SPECIALS = np.array(_SPECIAL_BITS, np.uint16).view(BF16)


def _values(seed: int, n: int = 200) -> np.ndarray:
    """Specials, every bit pattern class (uniform random bits, NaN payloads excluded: arithmetic
    quietens them in both backends, but NaN propagation picks either operand) and values near 1."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    bits = bits[(bits & 0x7F80) != 0x7F80]  # inf and NaN come from SPECIALS only
    near = (rng.standard_normal(n) * 4).astype(BF16)
    return np.concatenate([SPECIALS, bits.view(BF16), near])


def _pairs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of specials, then random pairs."""
    sx, sy = (a.ravel() for a in np.meshgrid(SPECIALS, SPECIALS))
    x, y = _values(seed), _values(seed + 1)
    n = min(len(x), len(y))
    return np.concatenate([sx, x[:n]]), np.concatenate([sy, y[:n]])


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == BF16 or a.dtype.kind == "f":
        return a.view(f"u{a.dtype.itemsize}")
    if a.dtype.kind == "c":
        return a.view(f"u{a.dtype.itemsize // 2}").reshape(a.shape + (2,))
    return a


def _both(f, *args):
    return (tracejit.jit(f, backend="native")(*args), tracejit.jit(f, backend="interpret")(*args))


def _is_nan(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == BF16 or a.dtype.kind in "fc":
        return np.isnan(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    return np.zeros(a.shape, bool)


def _assert_bits(f, *args, any_nan: bool = False):
    """Native and reference outputs have the same bits; `any_nan`: where both are NaN their
    bits may differ (IEEE leaves open which operand's NaN, and so which sign, an op returns)."""
    native, ref = _both(f, *args)
    n_leaves, r_leaves = (tracejit.tree_util.tree_leaves(v) for v in (native, ref))
    assert len(n_leaves) == len(r_leaves)
    for k, (a, b) in enumerate(zip(n_leaves, r_leaves)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        bad = _bits(a) != _bits(b)
        if a.dtype.kind == "c":
            bad = bad.any(-1)
        if any_nan:
            bad &= ~(_is_nan(a) & _is_nan(b))
        assert not bad.any(), (f"output {k}: inputs {[np.asarray(x)[bad] for x in args]} "
                               f"native {np.asarray(a)[bad]} reference {np.asarray(b)[bad]}")


def _ulps(a, b) -> np.ndarray:
    """Distance in bfloat16 ulps (ordered bit patterns); NaN against NaN is 0."""
    def key(v):
        i = np.asarray(v).view(np.uint16).astype(np.int32)
        return np.where(i >= 0x8000, 0x8000 - i, i)
    a, b = np.asarray(a), np.asarray(b)
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return np.where(both_nan, 0, np.abs(key(a) - key(b)))


def _assert_ulps(native, ref, ulps: int, what: str):
    assert native.dtype == ref.dtype == BF16
    d = _ulps(native, ref)
    assert d.max(initial=0) <= ulps, f"{what}: {d.max()} ulps at {np.argmax(d)}"


BINARY = {"add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "rem": lax.rem,
          "max": lax.max, "min": lax.min, "nextafter": lax.nextafter}
COMPARE = {"eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_ops_are_bit_exact(op):
    x, y = _pairs(1)
    _assert_bits(BINARY[op], x, y, any_nan=True)


def test_comparisons_and_select_are_exact():
    x, y = _pairs(2)
    lo, hi = BF16.type(-1), BF16.type(2.5)  # (no ±0 bound: the reference's clamp is NumPy's)
    _assert_bits(lambda a, c: tuple(f(a, c) for f in COMPARE.values()) +
                 (lax.select(lax.lt(a, c), a, c), lax.clamp(lo, a, hi)), x, y, any_nan=True)


@pytest.mark.parametrize("name,f", [
    ("neg", lax.neg), ("abs", lax.abs), ("sign", lax.sign), ("floor", lax.floor),
    ("ceil", lax.ceil), ("round_away", lambda x: lax.round(x, 0)),
    ("round_even", lambda x: lax.round(x, 1)), ("square", lax.square), ("sqrt", lax.sqrt),
    ("rsqrt", lax.rsqrt), ("is_finite", lax.is_finite),
    ("integer_pow", lambda x: (lax.integer_pow(x, 3), lax.integer_pow(x, -2))),
])
def test_unary_ops_are_bit_exact(name, f):
    _assert_bits(f, _values(3), any_nan=True)


def test_fused_chains_round_every_op():
    """x*y+1 and friends: each intermediate is a bfloat16 in the reference, not a float32."""
    x, y = _pairs(4)
    _assert_bits(lambda a, c: (a * c + 1, (a - c) / 3 * a, lax.fma(a, c, a), a * 0.1 + c), x, y,
                 any_nan=True)


def test_constants_are_bfloat16_values():
    x = _values(5)
    consts = np.array([0.1, 1 / 3, 3e38, 1e-40, -2.5], BF16)
    _assert_bits(lambda a: (a + 0.1, a * np.array(1 / 3, BF16), tnp.where(a > 0, a, 1e-40),
                            a - consts[:, None]), x)


_OTHER = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32",
          "complex64"]


def _other_values(dtype: np.dtype, seed: int) -> np.ndarray:
    """Values of `dtype` that round to bfloat16 at, beside and across ties."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return np.array([True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1, -1, 255, 257, 0x1010000, 0x1018000, 0x1008000,
                 0x1008001, 0x7F7F7F7F, 2**53 + 2**45, 2**53 + 2**45 + 1, 2**62 + 2**54]
        edges = [v for v in edges if info.min <= v <= info.max]
        rand = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
        # bfloat16 ties m * 2**s + 2**(s-1) and their neighbours (through float32, the ones just
        # above a tie round twice: to the tie, then to even)
        bits = dtype.itemsize * 8 - (dtype.kind == "i")
        s = rng.integers(2, max(bits - 8, 3), 100)
        ties = [(int(m) << int(k)) + (1 << int(k - 1)) + d for m, k in
                zip(rng.integers(128, 256, 100), s) for d in (-1, 0, 1)]
        ties = [v for v in ties if v <= info.max]
        signs = -1 if dtype.kind == "i" else 1
        return np.concatenate([np.array(edges, dtype), rand, np.array(ties, dtype),
                               np.array([signs * v for v in ties], dtype)])
    bf = _values(seed).astype(np.float64)
    finite = bf[np.isfinite(bf)]
    ulp = np.abs(finite) * 2.0**-8  # (within a factor 2: ties and near-ties of some binade)
    # ties, just above and below them, as exactly as the dtype holds them
    near = np.concatenate([finite + ulp / 2, finite - ulp / 2, finite + ulp / 2 * (1 + 2**-20),
                           finite + ulp / 2 * (1 - 2**-20), finite + ulp / 2 * (1 + 2**-40)])
    wide = rng.standard_normal(300) * 10.0 ** rng.integers(-45, 45, 300)
    x = np.concatenate([bf, near, wide, [1e300, -1e300, 1e-300, 3.3961e38, 3.3962e38]])
    with np.errstate(all="ignore"):
        if dtype.kind == "c":
            return (x + 1j * x[::-1]).astype(dtype)
        return x.astype(dtype)


@pytest.mark.parametrize("other", _OTHER)
def test_conversions_are_bit_exact(other):
    other = np.dtype(other)
    x = _other_values(other, 6)
    _assert_bits(lambda a: lax.convert_element_type(a, BF16), x)
    _assert_bits(lambda a: lax.convert_element_type(a, other), _values(7))


@pytest.mark.parametrize("other", ["float64", "int64", "uint64", "complex128"])
def test_conversions_with_64_bit_types_are_bit_exact(x64, other):
    other = np.dtype(other)
    x = _other_values(other, 8)
    _assert_bits(lambda a: lax.convert_element_type(a, BF16), x)
    _assert_bits(lambda a: lax.convert_element_type(a, other), _values(9))


def test_bitcasts_keep_the_bits():
    rng = np.random.default_rng(10)
    bits = rng.integers(0, 1 << 16, 512, dtype=np.uint16)  # NaN payloads included
    x = bits.view(BF16)
    _assert_bits(lambda b: (lax.bitcast_convert_type(b, BF16),
                            lax.bitcast_convert_type(lax.bitcast_convert_type(b, BF16), np.int16),
                            lax.bitcast_convert_type(b.astype(np.int16), BF16)), bits)
    _assert_bits(lambda a: (lax.bitcast_convert_type(a, np.uint16),
                            lax.bitcast_convert_type(a, np.float16),
                            lax.bitcast_convert_type(a.reshape(-1, 2), np.float32),
                            lax.bitcast_convert_type(lax.bitcast_convert_type(a, np.uint8), BF16),
                            -a, lax.abs(a), a.reshape(16, 32).T), x)


def test_shape_and_index_ops_are_exact():
    x = _values(11)[:120].reshape(4, 30)
    idx = np.array([3, 0, 29, 7, 7], np.int32)

    def f(a):
        return (a.T, tnp.concatenate([a, a[::-1]], axis=1), tnp.pad(a, 1, constant_values=2.5),
                a[:, idx], a.at[:, idx].set(-a[:, :5]), a.at[:, idx].add(a[:, 5:10]),
                lax.dynamic_update_slice(a, a[:2, :3] * 2, (1, 4)), tnp.broadcast_to(a[0], (3, 30)))
    _assert_bits(f, x)


def test_sort_argmax_and_top_k_are_exact():
    x = _values(12)[:180].reshape(3, 60)
    _assert_bits(lambda a: (tnp.sort(a, axis=1), tnp.argsort(a, axis=0), tnp.argmax(a, axis=1),
                            tnp.argmin(a, axis=0), lax.top_k(a, 7)), x)


def test_reductions_match_the_reference_order():
    """lax.reduce_sum/prod of bfloat16: the reference (ml_dtypes' add.reduce) rounds every step
    to bfloat16 in index order, as the native loop does; max/min and cumulative ops (float32
    running values rounded once each, as XLA) are exact as well."""
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((5, 40, 6)) * 8).astype(BF16)
    ones = np.ones(1000, BF16)  # the in-order bfloat16 sum stalls at 256
    _assert_bits(lambda a: tuple(r(a, axes) for r in (lax.reduce_sum, lax.reduce_prod,
                                                      lax.reduce_max, lax.reduce_min)
                                 for axes in ((0,), (1,), (2,), (0, 2), (0, 1, 2))), x)
    _assert_bits(lambda a: (lax.reduce_sum(a, (0,)), lax.cumsum(a)), ones)
    _assert_bits(lambda a: tuple(c(a, axis, reverse=r) for c in (lax.cumsum, lax.cumprod,
                                                                  lax.cummax, lax.cummin)
                                 for axis in (0, 1, 2) for r in (False, True)), x)
    _assert_bits(lambda a: (lax.reduce_max(a, (0,)), lax.reduce_min(a[6:], (0,))), SPECIALS,
                 any_nan=True)


def test_dot_general_accumulates_in_float32():
    """Products of bfloat16 values are exact in float32; integer-valued data keeps every float32
    partial sum exact, so both backends agree bit for bit whatever the summation order. On
    random data the float32 sums may differ in their last bits (BLAS vs the loop's order), which
    moves the bfloat16 result by at most one ulp at a rounding boundary."""
    rng = np.random.default_rng(14)
    a = rng.integers(-8, 8, (2, 7, 33)).astype(BF16)
    c = rng.integers(-8, 8, (2, 33, 5)).astype(BF16)
    dims = (((2,), (1,)), ((0,), (0,)))
    _assert_bits(lambda u, v: (lax.dot_general(u, v, dims), tnp.dot(u[0], v[0])), a, c)
    a, c = (rng.standard_normal(s).astype(BF16) for s in ((6, 50), (50, 4)))
    native, ref = _both(lambda u, v: u @ v, a, c)
    _assert_ulps(native, ref, 1, "matmul")


TRANSCENDENTAL = ["exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
                  "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                  "cbrt", "erf", "erfc", "erf_inv", "lgamma", "digamma"]


@pytest.mark.parametrize("name", TRANSCENDENTAL)
def test_transcendentals_within_one_ulp(name):
    """Both compute in float32 and round once; the float32 results differ by a few float32
    ulps, which can move the bfloat16 rounding by one ulp at a boundary."""
    x = np.concatenate([_values(15), np.linspace(-10, 10, 401).astype(BF16)])
    native, ref = _both(getattr(lax, name), x)
    _assert_ulps(native, ref, 1, name)


def test_binary_transcendentals_within_one_ulp():
    x, y = _pairs(16)
    for name in ("pow", "atan2"):
        native, ref = _both(getattr(lax, name), x, y)
        _assert_ulps(native, ref, 1, name)
    native, ref = _both(lax.cumlogsumexp, _values(17))
    _assert_ulps(native, ref, 1, "cumlogsumexp")


def test_default_jit_compiles_bfloat16():
    """The reported failure: the default backend raised NotImplementedError for bfloat16."""
    x = tnp.ones(3, tnp.bfloat16)
    got = tracejit.jit(lambda v: v * 2 + 1)(x)
    np.testing.assert_array_equal(_bits(got), _bits(np.full(3, 3, BF16)))
