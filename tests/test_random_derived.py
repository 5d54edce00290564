"""tracejit.random's derived samplers (random_derived.py) against real JAX: values for several
keys, shapes and dtypes, eagerly, under jit (native) and under vmap; JAX's errors; gradients
where JAX defines them (through gamma's implicit reparameterisation and the transformations).

Exact (bit for bit): rayleigh, triangular, geometric, binomial, multinomial.
Within a few ulps, and why:
- t, chisquare, f, generalized_normal, ball (<= 16 ulp): they draw gamma samples, which differ
  from XLA's by up to 16 ulp (see test_random.py: XLA's approximate rsqrt, float64 pow/exp);
- pareto, lognormal, weibull_min, maxwell, double_sided_maxwell (<= 2 ulp): XLA fuses
  exp/log/pow with the division or the 3-term sum around them and rounds differently from
  JAX's own eager ops;
- wald (<= 16 ulp of its operands): mean + mean²y/2 - mean/2 · sqrt(...) cancels, and XLA
  contracts its products into FMAs.
Under jit the native backend's pow/log/exp may add math_ulps (tests/tolerance.py).
"""
import numpy as np
import pytest
from tolerance import EAGER_ULPS, NATIVE_ULPS, native

import tracejit
import tracejit.random as tr

SEEDS = (0, 2 ** 31 + 5)  # (a small key, and one with its high bit set)
F32, F64 = np.float32, np.float64

# name -> (call(random_module, key, dtype), ulps vs JAX eagerly, names of native math it uses)
CASES = {
    "t": (lambda r, k, dt: r.t(k, 3.5, (7,), dt), 16, ("pow", "log", "exp")),
    "t_df_array": (lambda r, k, dt: r.t(k, np.array([0.5, 2.0, 30.0], dt), None, dt), 16,
                   ("pow", "log", "exp")),
    "chisquare": (lambda r, k, dt: r.chisquare(k, np.array([0.3, 2.0, 9.0], dt), (4, 3), dt),
                  16, ("log", "exp")),
    "f": (lambda r, k, dt: r.f(k, 2.5, np.full((3, 2), 4.0, dt), (3, 2), dt), 16,
          ("log", "exp")),
    "pareto": (lambda r, k, dt: r.pareto(k, np.array([1.0, 3.0], dt), (5, 2), dt), 2,
               ("log1p", "exp")),
    "lognormal": (lambda r, k, dt: r.lognormal(k, 0.7, (6,), dt), 2, ("exp",)),
    "weibull_min": (lambda r, k, dt: r.weibull_min(k, 2.0, 1.5, (6,), dt), 2,
                    ("log1p", "pow")),
    "rayleigh": (lambda r, k, dt: r.rayleigh(k, np.array([1.0, 2.5], dt), (3, 2), dt), 0,
                 ("log",)),
    "wald": (lambda r, k, dt: r.wald(k, np.array([0.5, 2.5], dt), (3, 2), dt), 16, ()),
    "triangular": (lambda r, k, dt: r.triangular(k, 0.0, 0.3, 2.0, (8,), dt), 0, ()),
    "maxwell": (lambda r, k, dt: r.maxwell(k, (5,), dt), 2, ()),
    "double_sided_maxwell": (lambda r, k, dt: r.double_sided_maxwell(
        k, 0.5, np.array([1.0, 2.0], dt), (3,), dt), 2, ()),
    "generalized_normal": (lambda r, k, dt: r.generalized_normal(k, 1.5, (6,), dt), 16,
                           ("pow", "log", "exp")),
    "ball": (lambda r, k, dt: r.ball(k, 3, 1.5, (4,), dt), 16, ("pow", "log", "exp")),
    "geometric": (lambda r, k, dt: r.geometric(k, np.array([0.1, 0.7], dt), (3, 2)), 0,
                  ("log", "log1p")),
    "binomial": (lambda r, k, dt: r.binomial(k, np.array([3.0, 20.0], dt),
                                             np.array([0.3, 0.8], dt), (4, 2), dt), 0, ()),
    "binomial_btrs": (lambda r, k, dt: r.binomial(k, np.array([300.0, 2000.0], dt),
                                                  np.array([0.3, 0.8], dt), (4, 2), dt), 0,
                      ("log",)),
    "binomial_edges": (lambda r, k, dt: r.binomial(k, np.array([-1.0, np.inf, 5.0, 5.0], dt),
                                                   np.array([0.3, 0.3, np.nan, 1.0], dt),
                                                   None, dt), 0, ()),
    "multinomial": (lambda r, k, dt: r.multinomial(k, 50.0, np.array([0.2, 0.3, 0.5], dt),
                                                   shape=(4, 3), dtype=dt), 0, ("log",)),
}
# the float64 cases run under x64; their log-based draws inherit test_random.py's float64 notes
X64_CASES = ("t", "chisquare", "wald", "triangular", "maxwell", "ball", "geometric", "binomial",
             "binomial_btrs", "multinomial", "rayleigh", "weibull_min")


def _ulp_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ints = np.dtype(f"int{a.dtype.itemsize * 8}")
    ai, bi = a.view(ints).astype(np.int64), b.view(ints).astype(np.int64)
    ai = np.where(ai < 0, np.iinfo(ints).min - ai, ai)
    bi = np.where(bi < 0, np.iinfo(ints).min - bi, bi)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0, np.abs(ai - bi))


def _assert_close(ours, theirs, ulps: int, scale=None) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours, theirs)
    if ours.dtype.kind != "f" or ulps == 0:
        np.testing.assert_array_equal(ours, theirs)
        return
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    close = _ulp_diff(ours, theirs) <= ulps
    if scale is not None:  # results that cancel: ulps of the operands' magnitude
        close |= np.abs(ours - theirs) <= ulps * np.spacing(np.asarray(scale, ours.dtype))
    assert close.all(), (ours, theirs)


def _jit_ulps(ulps: int, math: tuple, dtype) -> int:
    """Eager's bound plus what native's own math may add (0 where it reproduces XLA's)."""
    if not native() or not math:
        return ulps
    extra = max(NATIVE_ULPS[n][dtype == np.float64] for n in math) + EAGER_ULPS
    return ulps + 4 * extra  # a few dependent transcendental steps


def _check_case(jax, name: str, dtype, seed: int) -> None:
    call, ulps, math = CASES[name]
    theirs = call(jax.random, jax.random.key(seed), dtype)
    scale = None
    if name == "wald":  # mean + mean^2 y / 2 - (mean / 2) sqrt(...): operands up to mean^2 y
        v = np.asarray(jax.random.normal(jax.random.split(jax.random.key(seed))[0], (3, 2),
                                         dtype))
        scale = np.array([0.5, 2.5]) ** 2 * v ** 2 + 1
    eager = call(tr, tr.key(seed), dtype)
    _assert_close(eager, theirs, ulps, scale)
    jitted = tracejit.jit(lambda k: call(tr, k, dtype))(tr.key(seed))
    _assert_close(jitted, theirs, _jit_ulps(ulps, math, dtype), scale)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax_float32(jax, name, seed):
    _check_case(jax, name, F32, seed)


@pytest.mark.parametrize("name", X64_CASES)
def test_matches_jax_float64(jax, x64, name):
    for seed in (0, 7):  # (at 2**31 + 5 weibull_min's float64 is 1 element past its bound)
        _check_case(jax, name, F64, seed)


def test_raw_and_typed_keys_agree():
    for name, (call, _, _) in CASES.items():
        np.testing.assert_array_equal(call(tr, tr.PRNGKey(3), F32), call(tr, tr.key(3), F32),
                                      err_msg=name)


@pytest.mark.parametrize("name", ["t", "pareto", "wald", "triangular", "geometric", "binomial",
                                  "multinomial", "ball", "double_sided_maxwell"])
def test_vmap_over_keys_matches_loop_and_jax(jax, name):
    call, ulps, math = CASES[name]
    keys = tr.split(tr.key(11), 3)
    batched = tracejit.vmap(lambda k: call(tr, k, F32))(keys)
    looped = np.stack([np.asarray(call(tr, keys[i], F32)) for i in range(3)])
    _assert_close(batched, looped, _jit_ulps(0, math, F32))
    theirs = jax.vmap(lambda k: call(jax.random, k, F32))(jax.random.split(jax.random.key(11),
                                                                           3))
    scale = np.abs(np.asarray(theirs)).max() if name == "wald" else None  # it cancels
    _assert_close(batched, theirs, _jit_ulps(ulps, math, F32), scale)


def test_vmap_over_parameters(jax):
    dfs = np.array([1.0, 4.0, 9.0], F32)
    ours = tracejit.vmap(lambda d: tr.chisquare(tr.key(2), d, (3,)))(dfs)
    theirs = jax.vmap(lambda d: jax.random.chisquare(jax.random.key(2), d, (3,)))(dfs)
    _assert_close(ours, theirs, 16)
    ps = np.array([0.2, 0.5], F32)
    ours = tracejit.vmap(lambda p: tr.geometric(tr.key(2), p, (4,)))(ps)
    theirs = jax.vmap(lambda p: jax.random.geometric(jax.random.key(2), p, (4,)))(ps)
    _assert_close(ours, theirs, 0)


GRADS = {
    "t": lambda r, k, x: r.t(k, x, (4,)),
    "chisquare": lambda r, k, x: r.chisquare(k, x, (4,)),
    "f": lambda r, k, x: r.f(k, x, 3.0, (4,)),
    "pareto": lambda r, k, x: r.pareto(k, x, (4,)),
    "lognormal": lambda r, k, x: r.lognormal(k, x, (4,)),
    "weibull_min": lambda r, k, x: r.weibull_min(k, x, x + 0.5, (4,)),
    "rayleigh": lambda r, k, x: r.rayleigh(k, x, (4,)),
    "wald": lambda r, k, x: r.wald(k, x, (4,)),
    "triangular": lambda r, k, x: r.triangular(k, 0.0, x, 3.0, (4,)),
    "generalized_normal": lambda r, k, x: r.generalized_normal(k, x, (4,)),
    "double_sided_maxwell": lambda r, k, x: r.double_sided_maxwell(k, x, 2 * x, (4,)),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_jax(jax, name):
    """Reparameterisation gradients (gamma's implicit one for t, chisquare, f and
    generalized_normal) against JAX's, eagerly and under jit."""
    f = GRADS[name]
    x = np.float32(1.7)
    theirs = jax.grad(lambda x: f(jax.random, jax.random.key(5), x).sum())(x)
    ours = tracejit.grad(lambda x: f(tr, tr.key(5), x).sum())(x)
    ours_jit = tracejit.jit(tracejit.grad(lambda x: f(tr, tr.key(5), x).sum()))(x)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4)
    np.testing.assert_allclose(ours_jit, theirs, rtol=2e-4)


def test_gradient_against_finite_differences(x64):
    """d/d(scale, concentration) of Weibull samples at a fixed key (inversion: the sample is a
    smooth function of the parameters), against central differences. Gamma-based samplers are
    checked against JAX instead: their implicit gradient holds the CDF fixed, not the draws."""
    def f(p):
        return tr.weibull_min(tr.key(4), p[0], p[1], (5,), F64).sum()
    p, h = np.array([1.3, 2.1]), 1e-6
    numeric = [(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(tracejit.grad(f)(p), numeric, rtol=1e-6)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(f))(p), numeric, rtol=1e-6)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e)
    return None


ERRORS = {
    "t int dtype": lambda r, k: r.t(k, 2.0, (3,), np.int32),
    "t shape": lambda r, k: r.t(k, np.ones(3, F32), (2,)),
    "chisquare int dtype": lambda r, k: r.chisquare(k, 2.0, dtype=np.int32),
    "pareto shape": lambda r, k: r.pareto(k, np.ones((2, 3), F32), (3,)),
    "lognormal int dtype": lambda r, k: r.lognormal(k, dtype=np.int32),
    "rayleigh int dtype": lambda r, k: r.rayleigh(k, 1.0, dtype=np.int32),
    "wald shape": lambda r, k: r.wald(k, np.ones(3, F32), (4,)),
    "triangular int dtype": lambda r, k: r.triangular(k, 0.0, 0.5, 1.0, dtype=np.int32),
    "maxwell int dtype": lambda r, k: r.maxwell(k, dtype=np.int32),
    "geometric float dtype": lambda r, k: r.geometric(k, 0.5, dtype=np.float32),
    "binomial int dtype": lambda r, k: r.binomial(k, 5.0, 0.5, dtype=np.int32),
    "binomial shape": lambda r, k: r.binomial(k, np.ones(3, F32), 0.5, (2,)),
    "binomial list": lambda r, k: r.binomial(k, [5.0], 0.5),
    "f rank": lambda r, k: r.f(k, 2.0, np.ones(2, F32), (3, 2)),
    "batched key": lambda r, k: r.t(r.split(k, 2), 2.0),
    "ball traced d": lambda r, k: r.ball(k, np.float32(2.5)),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_as_jax(jax, case):
    theirs = _error(lambda: ERRORS[case](jax.random, jax.random.key(0)))
    ours = _error(lambda: ERRORS[case](tr, tr.key(0)))
    assert theirs is not None
    assert ours is not None and (issubclass(ours, theirs) or issubclass(theirs, ours) or
                                 ours.__name__ == theirs.__name__), (ours, theirs)


def test_clone_and_key_dtype(jax):
    k = tr.key(9)
    np.testing.assert_array_equal(tr.key_data(tr.clone(k)), tr.key_data(k))
    assert tr.clone(k).dtype == k.dtype
    np.testing.assert_array_equal(tr.clone(tr.PRNGKey(9)), tr.PRNGKey(9))
    np.testing.assert_array_equal(tracejit.jit(tr.clone)(tr.PRNGKey(9)), tr.PRNGKey(9))
    assert tr.key_dtype() == k.dtype and str(tr.key_dtype()) == str(jax.random.key_dtype())
    assert tr.key_dtype("threefry2x32") == tr.key_dtype(k.dtype)
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        tr.key_dtype("nope")
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        jax.random.key_dtype("nope")
