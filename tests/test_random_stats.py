"""Statistical sanity of tracejit.random's distributions with fixed seeds: Kolmogorov-Smirnov and
chi-square tests against scipy.stats, moments, supports and the constraints of each sampler.

The seeds are fixed, so these tests are deterministic; a p-value threshold of 1e-3 flags a wrong
distribution (a shifted or scaled sampler fails by many orders of magnitude).
"""
import numpy as np
import pytest
from scipy import stats

import tracejit
import tracejit.random as tr

N = 20000
P_MIN = 1e-3


def _key(seed=0):
    return tr.PRNGKey(seed)


def _ks(samples, cdf, *args):
    result = stats.kstest(np.asarray(samples, np.float64).ravel(), cdf, args=args)
    assert result.pvalue > P_MIN, result


def _chi2(counts, probs):
    counts = np.asarray(counts, np.float64)
    probs = np.asarray(probs, np.float64)
    result = stats.chisquare(counts, counts.sum() * probs / probs.sum())
    assert result.pvalue > P_MIN, result


@pytest.mark.parametrize("partitionable", [True, False])
def test_uniform(partitionable):
    tracejit.config.update("jax_threefry_partitionable", partitionable)
    x = np.asarray(tr.uniform(_key(1), (N,), minval=-2.0, maxval=3.0))
    assert x.min() >= -2.0 and x.max() < 3.0
    _ks(x, "uniform", -2.0, 5.0)
    assert abs(x.mean() - 0.5) < 4 * 5 / np.sqrt(12 * N)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_normal_moments_and_ks(dtype, x64):
    x = np.asarray(tr.normal(_key(2), (N,), dtype))
    assert x.dtype == dtype and np.isfinite(x).all()
    assert abs(x.mean()) < 4 / np.sqrt(N) and abs(x.var() - 1) < 0.05
    _ks(x, "norm")


def test_complex_normal_has_unit_variance_split_evenly():
    z = np.asarray(tr.normal(_key(3), (N,), np.complex64))
    _ks(z.real, "norm", 0, np.sqrt(0.5))
    _ks(z.imag, "norm", 0, np.sqrt(0.5))
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 4 / np.sqrt(N)


def test_truncated_normal():
    x = np.asarray(tr.truncated_normal(_key(4), -1.0, 2.0, (N,)))
    assert x.min() > -1.0 and x.max() < 2.0
    _ks(x, "truncnorm", -1.0, 2.0)


def test_bernoulli_and_rademacher():
    b = np.asarray(tr.bernoulli(_key(5), 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 4 * np.sqrt(0.21 / N)
    hi = np.asarray(tr.bernoulli(_key(6), np.float32(1e-3), (N,), mode="high"))
    assert abs(hi.mean() - 1e-3) < 4 * np.sqrt(1e-3 / N)
    r = np.asarray(tr.rademacher(_key(7), (N,)))
    assert set(np.unique(r)) == {-1, 1} and abs(r.mean()) < 4 / np.sqrt(N)


@pytest.mark.parametrize("dtype,lo,hi", [(np.int32, 0, 7), (np.int8, -128, 128),
                                         (np.uint8, 250, 256), (np.int32, -3, 1000)])
def test_randint_is_uniform_over_its_range(dtype, lo, hi):
    x = np.asarray(tr.randint(_key(8), (N,), lo, hi, dtype))
    assert x.dtype == dtype and x.min() >= lo and x.max() < hi
    counts = np.bincount((x.astype(np.int64) - lo), minlength=hi - lo)
    if hi - lo <= 256:
        _chi2(counts, np.full(hi - lo, 1 / (hi - lo)))
    else:
        _ks(x + np.asarray(tr.uniform(_key(9), (N,))), "uniform", lo, hi - lo)


def test_choice_frequencies():
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    x = np.asarray(tr.choice(_key(10), 4, (N,), p=p))
    _chi2(np.bincount(x, minlength=4), p)
    y = np.asarray(tr.choice(_key(11), 50, (N,)))
    _chi2(np.bincount(y, minlength=50), np.full(50, 1 / 50))
    no_rep = np.asarray(tr.choice(_key(12), 100, (60,), replace=False))
    assert len(np.unique(no_rep)) == 60
    weighted = np.asarray(tr.choice(_key(13), 5, (3,), replace=False,
                                    p=np.array([0.1, 0.2, 0.3, 0.2, 0.2], np.float32)))
    assert len(np.unique(weighted)) == 3


def test_permutations_are_uniform():
    keys = tr.split(_key(14), 6000)
    perms = np.asarray(tracejit.vmap(lambda k: tr.permutation(k, 5))(keys))
    assert (np.sort(perms, axis=1) == np.arange(5)).all()
    for position in range(5):
        _chi2(np.bincount(perms[:, position], minlength=5), np.full(5, 0.2))
    big = np.asarray(tr.permutation(_key(15), 100000))
    assert (np.sort(big) == np.arange(100000)).all()
    rows = np.asarray(tr.permutation(_key(16), np.arange(20).reshape(4, 5), axis=1,
                                     independent=True))
    assert (np.sort(rows, axis=1) == np.arange(20).reshape(4, 5)).all()


def test_categorical_frequencies():
    logits = np.log(np.array([0.05, 0.15, 0.3, 0.5], np.float32))
    x = np.asarray(tr.categorical(_key(17), logits, shape=(N,)))
    _chi2(np.bincount(x, minlength=4), np.exp(logits))
    top = np.asarray(tr.categorical(_key(18), np.zeros((3, 8), np.float32), shape=(8, 3),
                                    replace=False))
    assert (np.sort(top, axis=0) == np.arange(8)[:, None]).all()


@pytest.mark.parametrize("name,dist", [("exponential", "expon"), ("laplace", "laplace"),
                                       ("logistic", "logistic"), ("cauchy", "cauchy"),
                                       ("gumbel", "gumbel_r")])
def test_inverse_cdf_samplers(name, dist):
    x = np.asarray(getattr(tr, name)(_key(19), (N,)))
    assert np.isfinite(x).all()
    _ks(x, dist)


@pytest.mark.parametrize("mode", ["high", "highest"])
def test_gumbel_high_resolution_modes(mode):
    _ks(tr.gumbel(_key(20), (N,), mode=mode), "gumbel_r")


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5, 10.0])
def test_gamma(a):
    x = np.asarray(tr.gamma(_key(21), a, (5000,)))
    assert (x >= 0).all()
    _ks(x, "gamma", a)


def test_loggamma_small_concentration():
    a = 0.05
    logs = np.asarray(tr.loggamma(_key(22), a, (5000,)), np.float64)
    assert np.isfinite(logs).all()
    _ks(logs, lambda v: stats.gamma.cdf(np.exp(v), a))


def test_beta_and_dirichlet():
    x = np.asarray(tr.beta(_key(23), 0.5, 2.0, (5000,)))
    assert ((x >= 0) & (x <= 1)).all()
    _ks(x, "beta", 0.5, 2.0)
    alpha = np.array([0.5, 1.0, 3.0], np.float32)
    d = np.asarray(tr.dirichlet(_key(24), alpha, (4000,)))
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), alpha / alpha.sum(), atol=0.01)
    _ks(d[:, 2], "beta", 3.0, 1.5)


@pytest.mark.parametrize("lam", [0.5, 3.0, 12.0, 100.0])
def test_poisson(lam):
    x = np.asarray(tr.poisson(_key(25), lam, (5000,)))
    assert x.dtype == np.int32 and (x >= 0).all()
    assert abs(x.mean() - lam) < 4 * np.sqrt(lam / 5000)
    assert abs(x.var() / lam - 1) < 0.1
    support = np.arange(x.max() + 1)
    pmf = stats.poisson.pmf(support, lam)
    keep = pmf * len(x) >= 5  # chi-square over the well-populated counts
    counts = np.bincount(x, minlength=len(support))[keep]
    _chi2(counts, pmf[keep] / pmf[keep].sum())


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_covariance(method):
    cov = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]], np.float32)
    mean = np.array([1.0, -1.0, 0.5], np.float32)
    x = np.asarray(tr.multivariate_normal(_key(26), mean, cov, (N,), method=method))
    np.testing.assert_allclose(x.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)
    whitened = np.linalg.solve(np.linalg.cholesky(cov), (x - mean).T)
    _ks(whitened[0], "norm")


def test_orthogonal_matrices():
    q = np.asarray(tr.orthogonal(_key(27), 4, (500,)), np.float64)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-5)
    dets = np.linalg.det(q)
    np.testing.assert_allclose(np.abs(dets), 1, atol=1e-5)
    assert 0.4 < (dets > 0).mean() < 0.6  # Haar measure on O(n): both components equally
    _ks(q[:, 0, 0] * np.sqrt(4), lambda v: stats.beta.cdf((v / 2 + 1) / 2, 1.5, 1.5))
    wide = np.asarray(tr.orthogonal(_key(28), 2, m=5), np.float64)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)
