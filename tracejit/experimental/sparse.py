"""`jax.experimental.sparse.BCOO`, the part numpyro uses (user-facing layer over numpy): a
sparse matrix as (data, indices) in COO form, without batch or dense dimensions. Products go
through the dense matrix (tracejit has no sparse kernels), so results equal JAX's; only memory
and time differ."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..tree_util import register_pytree_node_class


@register_pytree_node_class
class BCOO:
    """A sparse array: `data[i]` stands at position `indices[i]` of an array of `shape`;
    entries past the stored ones are padding (index = shape, value 0), as in JAX."""
    n_batch = 0
    n_dense = 0

    def __init__(self, args: tuple[Any, Any], *, shape: Sequence[int],
                 indices_sorted: bool = False, unique_indices: bool = False):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.shape = tuple(int(d) for d in shape)
        if self.indices.ndim != 2 or self.indices.shape[1] != len(self.shape) or \
                self.data.shape != self.indices.shape[:1]:
            raise ValueError(
                f"BCOO: tracejit supports sparse arrays without batch or dense dimensions: "
                f"data of shape (nse,) and indices of shape (nse, {len(self.shape)}) for "
                f"shape={self.shape}, got data {self.data.shape} and indices "
                f"{self.indices.shape}")
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices

    dtype = property(lambda self: self.data.dtype)
    nse = property(lambda self: self.indices.shape[0])
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __repr__(self) -> str:
        return (f"BCOO({self.dtype.name}[{', '.join(map(str, self.shape))}], "
                f"nse={self.nse})")

    def tree_flatten(self):
        return (self.data, self.indices), {"shape": self.shape,
                                           "indices_sorted": self.indices_sorted,
                                           "unique_indices": self.unique_indices}

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(tuple(children), **aux)

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """The nonzero entries of a dense (concrete) array, in row-major order; `nse` pads
        with (shape, 0) entries or must be at least the number of nonzeros."""
        if n_dense or n_batch:
            raise NotImplementedError("BCOO.fromdense: tracejit supports n_batch=0, n_dense=0")
        dense = np.asarray(mat)
        where = np.argwhere(dense != 0)
        if nse is None:
            nse = len(where)
        if nse < len(where):
            raise ValueError(f"BCOO.fromdense: nse={nse} is less than the {len(where)} "
                             f"nonzero entries")
        indices = np.full((nse, dense.ndim), dense.shape, dtype=index_dtype)
        indices[:len(where)] = where
        data = np.zeros(nse, dense.dtype)
        data[:len(where)] = dense[tuple(where.T)]
        return cls((jnp.asarray(data), jnp.asarray(indices)), shape=dense.shape,
                   indices_sorted=True, unique_indices=True)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None) -> BCOO:
        """A BCOO with the stored entries of a scipy.sparse matrix, in its COO order."""
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(index_dtype or np.int32)
        data = np.asarray(coo.data, dtypes.canonicalize_dtype(coo.data.dtype))
        return cls((jnp.asarray(data), jnp.asarray(indices)), shape=coo.shape)

    def todense(self) -> Any:
        """The dense array (duplicate entries add up; padding entries fall outside)."""
        out = jnp.zeros(self.shape, self.dtype)
        return out.at[tuple(self.indices[:, d] for d in range(self.ndim))].add(
            self.data, mode="drop")

    @property
    def T(self) -> BCOO:  # noqa: N802
        return self.transpose()

    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        axes = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        return BCOO((self.data, self.indices[:, list(axes)]),
                    shape=tuple(self.shape[a] for a in axes))

    def __matmul__(self, other: Any) -> Any:
        return jnp.matmul(self.todense(), other)

    def __rmatmul__(self, other: Any) -> Any:
        return jnp.matmul(other, self.todense())

    def __mul__(self, scalar: Any) -> BCOO:
        if jnp.ndim(scalar) != 0:
            return NotImplemented
        return BCOO((self.data * scalar, self.indices), shape=self.shape)

    __rmul__ = __mul__

    def __neg__(self) -> BCOO:
        return BCOO((-self.data, self.indices), shape=self.shape)


def todense(arr: Any) -> Any:
    """A sparse array as a dense one; dense arrays as they are."""
    return arr.todense() if isinstance(arr, BCOO) else jnp.asarray(arr)


__all__ = ["BCOO", "todense"]
