"""jax.scipy.stats.gaussian_kde: kernel density estimation with Gaussian kernels, a pytree as
in JAX (user-facing layer). One-dimensional data needs no linear algebra; in more dimensions
the inverse covariance and its Cholesky factor come from jnp.linalg (engineer D's LAPACK
functions)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ... import random
from ...core import dtypes
from ...numpy._util import check_arraylike, promote_dtypes_inexact
from ...tree_util import register_pytree_node_class
from .. import special


def _inverse(cov: Any) -> Any:
    if cov.shape == (1, 1):
        return 1 / cov
    return jnp.linalg.inv(cov)


def _lower_cholesky(m: Any) -> Any:
    if m.shape == (1, 1):
        return jnp.sqrt(m)
    return jnp.linalg.cholesky(m)


@register_pytree_node_class
class gaussian_kde:  # noqa: N801 - SciPy's and JAX's name
    """A Gaussian kernel density estimate of `dataset` (d rows of n points), with Scott's or
    Silverman's bandwidth, a scalar factor or a callable, and optional point weights."""
    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None):
        check_arraylike("gaussian_kde", dataset)
        dataset = jnp.atleast_2d(dataset)
        if dtypes.issubdtype(dataset.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            check_arraylike("gaussian_kde", weights)
            dataset, weights = promote_dtypes_inexact(dataset, jnp.asarray(weights))
            weights = jnp.atleast_1d(weights)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = promote_dtypes_inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self.dataset, self.weights = dataset, weights
        self.neff = neff = 1 / jnp.sum(weights ** 2)
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = jnp.power(neff, -1. / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = jnp.power(neff * (d + 2) / 4.0, -1. / (d + 4))
        elif not isinstance(bw_method, str) and np.ndim(bw_method) == 0 and \
                not callable(bw_method):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a "
                             "callable.")
        # the weighted sample covariance with numpy.cov's aweights correction
        mean = jnp.sum(dataset * weights, axis=1, keepdims=True)
        centred = dataset - mean
        cov = (centred * weights) @ centred.T / (1 - jnp.sum(weights ** 2))
        self.covariance = cov * factor ** 2
        self.inv_cov = _inverse(cov) / factor ** 2

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    def evaluate(self, points: Any) -> Any:
        """The estimated density at each point (d rows)."""
        check_arraylike("evaluate", points)
        return self._kernel_sum(self._reshape_points(points), in_log=False)

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x: Any) -> Any:
        """log of the estimated density, by logsumexp over the kernels."""
        check_arraylike("logpdf", x)
        return self._kernel_sum(self._reshape_points(x), in_log=True)

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """The estimate's mass on [low, high] (1-d data)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """The integral of the estimate times the N(mean, cov) density."""
        mean = jnp.atleast_1d(jnp.squeeze(mean))
        cov = jnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        return self._convolve(self.covariance + cov, self.dataset, self.weights, mean[:, None])

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """The integral of the product of two estimates."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        total = self.covariance + other.covariance
        # every pair of points: (d, n_self, n_other) differences
        diff = self.dataset[:, :, None] - other.dataset[:, None, :]
        vals = self._convolve(total, diff, 1., 0., reduce=False)
        return jnp.sum(vals * self.weights[:, None] * other.weights[None, :])

    def _convolve(self, cov, points, weights, mean, reduce=True):
        """sum_i weights_i N(points_i; mean, cov)."""
        chol = _lower_cholesky(cov)
        inv = _inverse(cov)
        norm = 1. / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diagonal(chol)))
        diff = points - mean
        arg = 0.5 * jnp.einsum("i...,ij,j...->...", diff, inv, diff)
        vals = norm * jnp.exp(-arg)
        return jnp.sum(vals * weights) if reduce else vals

    def resample(self, key: Any, shape: tuple = ()) -> Any:
        """Draws from the estimate: a data point (by weight) plus Gaussian noise."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(eps_key, jnp.zeros(self.d, self.covariance.dtype),
                                         self.covariance, shape=shape,
                                         dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not supported (as in JAX): use integrate_box_1d."""
        raise NotImplementedError("only 1D box integrations are supported; use "
                                  "`integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not supported (as in JAX): the estimate is immutable."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _reshape_points(self, points: Any) -> Any:
        points = jnp.asarray(points)
        if dtypes.issubdtype(points.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _kernel_sum(self, xi: Any, in_log: bool) -> Any:
        """sum_i w_i N(xi; data_i, covariance) for each column of xi (or its log)."""
        data, weights, xi, precision = promote_dtypes_inexact(self.dataset, self.weights, xi,
                                                              self.inv_cov)
        whitening = _lower_cholesky(precision)
        data_w = data.T @ whitening                 # (n, d)
        xi_w = xi.T @ whitening                     # (m, d)
        log_norm = jnp.sum(jnp.log(jnp.diagonal(whitening))) - 0.5 * self.d * math.log(2 * np.pi)
        arg = log_norm - 0.5 * jnp.sum(jnp.square(data_w[None, :, :] - xi_w[:, None, :]),
                                       axis=-1)     # (m, n)
        if in_log:
            return special.logsumexp(jnp.log(weights)[None, :] + arg, axis=1)
        return jnp.sum(weights[None, :] * jnp.exp(arg), axis=1)
