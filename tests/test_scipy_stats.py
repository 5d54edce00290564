"""tracejit.scipy.stats against real JAX (values, dtypes, the edge cases off each support),
eagerly and under jit, plus gradients and vmap; JAX's function names per distribution."""
import functools
import pathlib

import jax
import jax.scipy.stats as jst
import numpy as np
import pytest

import tracejit
import tracejit.numpy  # noqa: F401  (tracejit.numpy.floor inside jit)
from tracejit.scipy import stats

RNG = np.random.default_rng(0)
X = np.concatenate([np.linspace(-4, 6, 41), [0., 1., -np.inf, np.inf, np.nan]])
POS = np.concatenate([np.linspace(0.05, 8, 40), [0., 1., np.inf, np.nan, -1.]])
UNIT = np.concatenate([np.linspace(0, 1, 41), [-0.5, 1.5, np.nan]])
K = np.concatenate([np.arange(-2, 15), [2.5, np.nan]]).astype(float)

# JAX 0.10's public functions of each distribution, recorded from real JAX
NAMES = {
    "bernoulli": ["cdf", "logpmf", "pmf", "ppf"],
    "beta": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "betabinom": ["logpmf", "pmf"],
    "binom": ["logpmf", "pmf"],
    "cauchy": ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "chi2": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "dirichlet": ["logpdf", "pdf"],
    "expon": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "gamma": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "gennorm": ["cdf", "logpdf", "pdf"],
    "geom": ["logpmf", "pmf"],
    "gumbel_l": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "gumbel_r": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "laplace": ["cdf", "logpdf", "pdf"],
    "logistic": ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"],
    "multinomial": ["logpmf", "pmf"],
    "multivariate_normal": ["logpdf", "pdf"],
    "nbinom": ["logpmf", "pmf"],
    "norm": ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "pareto": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "poisson": ["cdf", "entropy", "logpmf", "pmf"],
    "t": ["logpdf", "pdf"],
    "truncnorm": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "uniform": ["cdf", "logpdf", "pdf", "ppf"],
    "vonmises": ["logpdf", "pdf"],
    "wrapcauchy": ["logpdf", "pdf"],
}


def test_module_names_are_jaxs():
    public = sorted(n for n in dir(jst) if not n.startswith("_"))
    assert public == sorted([*NAMES, "gaussian_kde", "mode", "rankdata", "sem"])
    assert [n for n in public if not hasattr(stats, n)] == []


def test_each_distribution_has_jaxs_functions():
    for dist, names in NAMES.items():
        theirs = getattr(jst, dist)
        assert all(callable(getattr(theirs, n)) for n in names), dist   # the record is right
        ours = getattr(stats, dist)
        assert [n for n in names if not callable(getattr(ours, n, None))] == [], dist


@functools.cache
def _recorded() -> dict[str, np.ndarray]:
    with np.load(pathlib.Path(__file__).with_name("data") / "scipy_stats_jax_outputs.npz") as f:
        return dict(f)


def _theirs(dist: str, fn: str) -> np.ndarray:
    """JAX's values on the case's grid as data/make_scipy_stats_table.py recorded them, op by
    op, as under jax.jit XLA rewrites some edge values (gumbel_r.pdf(-inf) is inf there, NaN op
    by op; cauchy.logcdf(-inf) finite)."""
    return _recorded()[f"{dist}.{fn}"]


def _grid(*cols):
    """Every combination of the columns, flattened to equal-length 1-D arrays."""
    mesh = np.meshgrid(*cols, indexing="ij")
    return [m.ravel().astype(np.float32) for m in mesh]


LOC_SCALE = [np.array([0., 1.5]), np.array([0.5, 2.])]
# (distribution, function names, argument grid); the first column varies the point
CASES = [
    ("norm", NAMES["norm"], lambda f: _grid(UNIT if f in ("ppf", "isf") else X, *LOC_SCALE)),
    ("gamma", NAMES["gamma"], lambda f: _grid(POS, [0.3, 1., 4.5], *LOC_SCALE)),
    ("beta", NAMES["beta"], lambda f: _grid(UNIT, [0.5, 1., 3.], [0.7, 2.], [0., 0.1], [1.])),
    ("poisson", ["cdf", "logpmf", "pmf"], lambda f: _grid(K, [0.5, 3., 20.], [0., 1.])),
    ("bernoulli", ["logpmf", "pmf"], lambda f: _grid(K[:6], [0., 0.3, 1.], [0., 1.])),
    ("bernoulli", ["cdf"], lambda f: _grid(np.array([-1., 0., 0.5, 1., 2.]), [0.3, -0.1])),
    ("bernoulli", ["ppf"], lambda f: _grid(UNIT, [0.3, 1.5])),
    ("binom", NAMES["binom"], lambda f: _grid(K, [0., 5., 10.], [0., 0.3, 1.], [0., 1.])),
    ("betabinom", NAMES["betabinom"], lambda f: _grid(K, [0., 10.], [0.5, 2.], [1., 3.])),
    ("nbinom", NAMES["nbinom"], lambda f: _grid(K, [1., 4.5], [0.2, 0.7])),
    ("geom", NAMES["geom"], lambda f: _grid(K, [0.2, 0.7], [0., 1.])),
    ("t", NAMES["t"], lambda f: _grid(X, [1., 3.5, 30.], *LOC_SCALE)),
    ("cauchy", NAMES["cauchy"], lambda f: _grid(UNIT if f in ("ppf", "isf") else X,
                                                *LOC_SCALE)),
    ("laplace", NAMES["laplace"], lambda f: _grid(X, *LOC_SCALE)),
    ("logistic", NAMES["logistic"], lambda f: _grid(UNIT if f in ("ppf", "isf") else X,
                                                    *LOC_SCALE)),
    ("uniform", NAMES["uniform"], lambda f: _grid(UNIT * 3 - 1, *LOC_SCALE)),
    ("expon", NAMES["expon"], lambda f: _grid(UNIT if f == "ppf" else X, *LOC_SCALE)),
    ("chi2", NAMES["chi2"], lambda f: _grid(POS, [1., 2., 7.], *LOC_SCALE)),
    ("pareto", NAMES["pareto"], lambda f: _grid(UNIT if f == "ppf" else POS + 1,
                                                [0.5, 3.], *LOC_SCALE)),
    ("gumbel_l", NAMES["gumbel_l"], lambda f: _grid(UNIT if f == "ppf" else X, *LOC_SCALE)),
    ("gumbel_r", NAMES["gumbel_r"], lambda f: _grid(UNIT if f == "ppf" else X, *LOC_SCALE)),
    ("vonmises", NAMES["vonmises"], lambda f: _grid(X, [0.5, 4., -1.])),
    ("wrapcauchy", NAMES["wrapcauchy"], lambda f: _grid(X + 2, [0.3, 0.9, 1.5])),
    ("gennorm", NAMES["gennorm"], lambda f: _grid(X, [0.8, 2., 5.])),
    ("truncnorm", NAMES["truncnorm"], lambda f: _grid(X, [-1., 0.5, 3.], [1., 4.], *LOC_SCALE)),
]
PARAMS = [(d, f, g) for d, fs, g in CASES for f in fs]


def test_recorded_values_are_the_grids():
    """The record holds each case, of its grid's shape (make it again after changing a grid)."""
    recorded = _recorded()
    assert sorted(k for k in recorded if k != "jax_version") == sorted(
        f"{d}.{f}" for d, f, _ in PARAMS)
    for d, f, grid in PARAMS:
        assert recorded[f"{d}.{f}"].shape == grid(f)[0].shape, (d, f)


@pytest.mark.parametrize("dist, fn, grid", PARAMS, ids=[f"{d}.{f}" for d, f, _ in PARAMS])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_matches_jax(dist, fn, grid, jit):
    args = grid(fn)
    ours = getattr(getattr(stats, dist), fn)
    if jit:
        ours = tracejit.jit(ours)
    want = _theirs(dist, fn)
    with np.errstate(all="ignore"):
        got = ours(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    got = np.asarray(got)
    # both are float32 compositions of the same formulas; XLA's transcendental functions and
    # FMA contraction differ from ours by a few ulp, which the lgamma/igamma terms amplify
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want))


def test_float64_values_against_scipy(x64):
    import scipy.stats as sst
    x = np.linspace(0.01, 30, 200)
    for ours, theirs in [(lambda v: stats.gamma.cdf(v, 3.5, 0., 2.), sst.gamma(3.5, 0, 2).cdf),
                         (lambda v: stats.gamma.sf(v, 0.4), sst.gamma(0.4).sf),
                         (lambda v: stats.chi2.logcdf(v, 5.), sst.chi2(5.).logcdf),
                         (lambda v: stats.t.logpdf(v, 2.5, 1., 3.), sst.t(2.5, 1., 3.).logpdf),
                         (lambda v: stats.beta.cdf(v / 31, 2.5, 0.7), lambda v: sst.beta(
                             2.5, 0.7).cdf(v / 31)),
                         (lambda v: stats.poisson.cdf(tracejit.numpy.floor(v), 7.3),
                          lambda v: sst.poisson(7.3).cdf(np.floor(v)))]:
        got = np.asarray(tracejit.jit(ours)(x))
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, theirs(x), rtol=1e-11, atol=1e-300)


def test_dirichlet_and_multinomial_match_jax():
    alpha = np.array([0.5, 2., 3.], np.float32)
    x = RNG.dirichlet(alpha, size=5).T.astype(np.float32)          # components on axis 0
    for args in [(x, alpha), (x[:2], alpha), (np.array([0.2, 0.2, 0.2], np.float32), alpha)]:
        np.testing.assert_allclose(stats.dirichlet.logpdf(*args),
                                   jst.dirichlet.logpdf(*args), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="one-dimensional"):
        stats.dirichlet.logpdf(x, alpha[None])
    counts, p = np.array([2, 0, 3]), np.array([0.2, 0.3, 0.5], np.float32)
    for n in (5, 6):
        np.testing.assert_allclose(stats.multinomial.logpmf(counts, n, p),
                                   jst.multinomial.logpmf(counts, n, p), rtol=1e-5)
    with pytest.raises(ValueError, match="integer type"):
        stats.multinomial.logpmf(counts.astype(np.float32), 5, p)


def test_multivariate_normal_diagonal_and_scalar_cov_match_jax():
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    mean = np.array([0.5, -1., 2.], np.float32)
    for cov in (np.float32(1.7),):
        np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, cov),
                                   jst.multivariate_normal.logpdf(x, mean, cov), rtol=1e-5)
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x[:, 0], 0.5, 2.),
                               jst.multivariate_normal.logpdf(x[:, 0], 0.5, 2.), rtol=1e-5)


def test_poisson_entropy_matches_jax():
    mu = np.array([0., 0.5, 5., 50., 500.], np.float32)
    np.testing.assert_allclose(stats.poisson.entropy(mu), jst.poisson.entropy(mu), rtol=1e-5)


@pytest.mark.parametrize("dist, fn, args, argnums", [
    ("gamma", "logpdf", (2.5, 1.7, 0., 1.3), (0, 1, 3)),
    ("gamma", "cdf", (2.5, 1.7), (0, 1)),
    ("beta", "logpdf", (0.3, 2., 3.), (0, 1, 2)),
    ("beta", "cdf", (0.3, 2., 3.), (0,)),
    ("t", "logpdf", (0.7, 3.5, 0.2, 1.5), (0, 1, 2, 3)),
    ("poisson", "logpmf", (3., 2.5), (1,)),
    ("binom", "logpmf", (3., 10., 0.4), (2,)),
    ("chi2", "sf", (2.5, 3.), (0, 1)),
    ("norm", "logcdf", (-3.5, 0.2, 1.1), (0, 1, 2)),
    ("truncnorm", "logpdf", (0.5, -1., 2.), (0,)),
    ("dirichlet", "logpdf", (np.array([0.2, 0.3, 0.5]), np.array([1.5, 2., 0.7])), (0, 1)),
])
def test_gradients_match_jax(dist, fn, args, argnums, x64):
    ours = getattr(getattr(stats, dist), fn)
    theirs = getattr(getattr(jst, dist), fn)
    for i in argnums:
        got = tracejit.jit(tracejit.grad(ours, i))(*args)
        want = jax.jit(jax.grad(theirs, i))(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-8, atol=1e-12)


def test_vmap_over_parameters_matches_a_loop():
    xs = np.linspace(0.1, 5, 7).astype(np.float32)
    a = np.linspace(0.5, 4, 7).astype(np.float32)
    f = tracejit.vmap(stats.gamma.cdf)
    np.testing.assert_allclose(f(xs, a), [stats.gamma.cdf(x, s) for x, s in zip(xs, a)],
                               rtol=1e-6)
    g = tracejit.jit(tracejit.vmap(stats.beta.logpdf, in_axes=(None, 0, 0)))
    np.testing.assert_allclose(g(np.float32(0.3), a, a[::-1]),
                               [stats.beta.logpdf(0.3, s, r) for s, r in zip(a, a[::-1])],
                               rtol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"bw_method": "silverman"}, {"bw_method": 0.3},
                                {"weights": "w"}], ids=str)
def test_gaussian_kde_matches_jax(kw):
    data = RNG.normal(size=50).astype(np.float32)
    if kw.get("weights") == "w":
        kw = {"weights": RNG.uniform(size=50).astype(np.float32)}
    pts = np.linspace(-3, 3, 11).astype(np.float32)
    theirs, ours = jst.gaussian_kde(data, **kw), stats.gaussian_kde(data, **kw)
    for m in ("evaluate", "logpdf", "pdf", "__call__"):
        np.testing.assert_allclose(getattr(ours, m)(pts),
                                   jax.jit(lambda k, x, m=m: getattr(k, m)(x))(theirs, pts),
                                   rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours.integrate_box_1d(-1., 0.5),
                               theirs.integrate_box_1d(-1., 0.5), rtol=1e-5)
    np.testing.assert_allclose(ours.integrate_gaussian(0.3, 1.2),
                               theirs.integrate_gaussian(0.3, 1.2), rtol=1e-5)
    np.testing.assert_allclose(ours.integrate_kde(stats.gaussian_kde(data[:20])),
                               theirs.integrate_kde(jst.gaussian_kde(data[:20])), rtol=1e-5)
    np.testing.assert_allclose(ours.covariance, theirs.covariance, rtol=1e-5)
    # a pytree: it passes through jit and grad
    np.testing.assert_allclose(tracejit.jit(lambda k, x: k.logpdf(x))(ours, pts),
                               theirs.logpdf(pts), rtol=1e-5)
    g = tracejit.grad(lambda d: stats.gaussian_kde(d, **kw).logpdf(pts).sum())(data)
    want = jax.jit(jax.grad(lambda d: jst.gaussian_kde(d, **kw).logpdf(pts).sum()))(data)
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)
    assert ours.resample(tracejit.random.PRNGKey(0), (5,)).shape == (1, 5)
    with pytest.raises(ValueError, match="bw_method"):
        stats.gaussian_kde(data, bw_method="wide")
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        ours.integrate_box(0., 1.)


def test_mode_rankdata_and_sem_match_jax():
    a = RNG.integers(0, 4, size=(5, 6))
    f = RNG.normal(size=7).astype(np.float32)
    f[3] = f[1]
    modes = [(axis, keepdims) for axis in (0, 1, None, -1) for keepdims in (False, True)]
    methods = ("average", "min", "max", "dense", "ordinal")
    inputs = (a[0], f, a)

    def jax_side(a, f):  # (JAX's every case in one program: one XLA compile, not 28)
        xs = (a[0], f, a)
        return ([jst.mode(a, axis=axis, keepdims=keepdims) for axis, keepdims in modes],
                [[jst.rankdata(x, m) for x in xs] + [jst.rankdata(a, m, axis=1)]
                 for m in methods])
    want_modes, want_ranks = jax.jit(jax_side)(a, f)
    for (axis, keepdims), want in zip(modes, want_modes):
        got = stats.mode(a, axis=axis, keepdims=keepdims)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    for method, wants in zip(methods, want_ranks):
        for x, want in zip(inputs, wants):
            got = tracejit.jit(stats.rankdata, static_argnums=1)(x, method)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(stats.rankdata(a, method, axis=1), wants[-1])
    np.testing.assert_array_equal(stats.rankdata(np.array([1., np.nan])), [np.nan, np.nan])
    with pytest.raises(ValueError, match="unknown method"):
        stats.rankdata(f, "mean")
    with pytest.raises(NotImplementedError, match="omit"):
        stats.mode(a, nan_policy="omit")
    np.testing.assert_allclose(stats.sem(f), jst.sem(f), rtol=1e-6)
    np.testing.assert_allclose(stats.sem(a, axis=1, ddof=0), jst.sem(a, axis=1, ddof=0),
                               rtol=1e-6)


@pytest.mark.parametrize("dist, fn, grid", PARAMS, ids=[f"{d}.{f}" for d, f, _ in PARAMS])
def test_float32_stays_float32_with_x64(dist, fn, grid, x64):
    """No float64 constant leaks into float32 code (NumPy scalars are not weakly typed)."""
    args = [a[:3] for a in grid(fn)]
    # (JAX 0.10's norm.ppf/isf return float64 here: its ndtri mixes in float64 constants)
    assert getattr(getattr(stats, dist), fn)(*args).dtype == np.float32
