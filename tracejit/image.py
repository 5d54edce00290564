"""jax.image: resizing and scale-and-translate resampling of n-dimensional arrays (user-facing
layer, built on jnp and lax). JAX's algorithm (jax/_src/image/scale.py): each spatial dimension
gets a dense (input size x output size) weight matrix from the method's kernel, and one einsum
contracts the image with all of them, so jit compiles it to products (natively, BLAS) and
grad and vmap come from those of einsum. Nearest-neighbour resizing is a gather instead.
"""
from __future__ import annotations

import enum
import math
from typing import Any, Callable, Sequence

import numpy as np

from . import numpy as jnp
from .core import dtypes
from .core.trace import concrete_value
from .lax import lenient as lax
from .lax._base import canonicalize_axis
from .lax.linalg import Precision
from .numpy._creation import canonicalize_shape
from .numpy._util import promote_dtypes_inexact
from .runtime.jit import jit

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


# --- the kernels: weight of an input sample at distance x (in output-pixel units) ----------

def _fill_lanczos_kernel(radius: float, x: Any) -> Any:
    y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    # y / (pi^2 x^2), with its limit 1 near x = 0 (the guard keeps 0/0 out of the gradient)
    out = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi**2 * x**2, 1)), 1)
    return jnp.where(x > radius, 0., out)


def _fill_keys_cubic_kernel(x: Any) -> Any:
    # Keys' cubic convolution kernel with A = -0.5 (R. G. Keys, IEEE Trans. ASSP 29(6), 1981):
    # what Pillow, TensorFlow and PyTorch use when antialiasing
    out = ((1.5 * x - 2.5) * x) * x + 1.
    out = jnp.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
    return jnp.where(x >= 2., 0., out)


def _fill_opencv_cubic_kernel(x: Any) -> Any:
    # A = -0.75: OpenCV's, which PyTorch uses without antialiasing
    a = -0.75
    out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    out = jnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
    return jnp.where(x >= 2.0, 0.0, out)


def _fill_triangle_kernel(x: Any) -> Any:
    return jnp.maximum(0, 1 - jnp.abs(x))


_area_kernel = object()  # (no kernel function: the weights are interval overlaps)


def compute_weight_mat(input_size: int, output_size: int, scale: Any, translation: Any,
                       kernel: Any, antialias: bool, edge_padding: bool,
                       radius: int | None) -> Any:
    """The (input_size, output_size) matrix whose column j weighs the input samples making
    output sample j."""
    dtype = dtypes.result_type(scale, translation)
    inv_scale = 1. / scale
    # Downsampling widens the kernel (a low-pass filter as well as an interpolation);
    # upsampling only interpolates.
    kernel_scale = jnp.maximum(inv_scale, 1.) if antialias else 1.
    # where the centre of each output sample falls in the input, in input-sample units
    sample_f = ((jnp.arange(output_size, dtype=dtype) + 0.5) * inv_scale
                - translation * inv_scale - 0.5)
    if edge_padding:  # the weights also cover k samples beyond each edge
        assert radius is not None
        if antialias:  # (not reachable from resize or scale_and_translate, as in JAX)
            concrete = concrete_value(
                scale, "Antialiasing with edge padding requires a static scale.")
            k = math.ceil(radius * max(1.0 / float(concrete), 1.0))
        else:
            k = radius
    else:
        k = 0
    expanded_indices = jnp.arange(-k, input_size + k, dtype=dtype)
    if kernel is _area_kernel:
        # the overlap of output sample i's interval, projected into the input, with input
        # sample j's interval [j, j + 1]
        left_i = jnp.arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
        right_i = left_i + inv_scale
        left_j = jnp.arange(input_size, dtype=dtype)
        right_j = left_j + 1.0
        weights = jnp.maximum(0.0, jnp.minimum(right_i[np.newaxis, :], right_j[:, np.newaxis])
                              - jnp.maximum(left_i[np.newaxis, :], left_j[:, np.newaxis]))
    else:
        x = jnp.abs(sample_f[np.newaxis, :] - expanded_indices[:, np.newaxis])
        weights = kernel(x / kernel_scale)

    def normalised(w):  # columns summing to one; a column of (almost) nothing stays zero
        total = jnp.sum(w, axis=0, keepdims=True)
        return jnp.where(jnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                         jnp.divide(w, jnp.where(total != 0, total, 1)), 0)

    if edge_padding:
        # the weights of samples beyond an edge move onto the edge sample (a scatter-add)
        clamped = jnp.clip(expanded_indices.astype(jnp.int32), 0, input_size - 1)
        out_index = lax.broadcast_in_dim(jnp.arange(output_size),
                                         (expanded_indices.shape[0], output_size), (1,))
        mat = jnp.zeros((input_size, output_size), dtype=dtype)
        return normalised(mat.at[clamped[:, np.newaxis], out_index].add(weights))
    weights = normalised(weights)
    # an output sample whose centre falls outside the input gets no weight at all
    # (sample_f already has the 0.5 taken off, hence the bounds)
    inside = jnp.logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
    return jnp.where(inside[np.newaxis, :], weights, 0)


def _scale_and_translate(x: Any, output_shape: tuple, spatial_dims: Sequence[int], scale: Any,
                         translation: Any, kernel: Any, antialias: bool, precision: Any,
                         edge_padding: bool = False, radius: int | None = None) -> Any:
    input_shape = x.shape
    assert len(input_shape) == len(output_shape)
    assert len(spatial_dims) == len(scale)
    assert len(spatial_dims) == len(translation)
    if len(spatial_dims) == 0:
        return x
    contractions: list = []
    in_indices = list(range(len(output_shape)))
    out_indices = list(range(len(output_shape)))
    for i, d in enumerate(spatial_dims):
        d = canonicalize_axis(d, x.ndim)
        w = compute_weight_mat(input_shape[d], output_shape[d], scale[i], translation[i],
                               kernel, antialias, edge_padding=edge_padding,
                               radius=radius).astype(x.dtype)
        contractions += [w, [d, len(output_shape) + i]]
        out_indices[d] = len(output_shape) + i
    return jnp.einsum(x, in_indices, *contractions, out_indices, precision=precision)


class ResizeMethod(enum.Enum):
    """Image resize method: NEAREST, LINEAR, LANCZOS3, LANCZOS5, CUBIC (Keys, A = -0.5),
    CUBIC_PYTORCH (A = -0.75 with edge padding when not antialiasing, else CUBIC) and AREA
    (the average over each output sample's footprint; a box filter when upsampling)."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6
    # (every kernel here interpolates: under the identity warp the output is the input,
    # which lets resize skip the dimensions whose size does not change)

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        if s == "nearest":
            return ResizeMethod.NEAREST
        if s in ("linear", "bilinear", "trilinear", "triangle"):
            return ResizeMethod.LINEAR
        if s == "lanczos3":
            return ResizeMethod.LANCZOS3
        if s == "lanczos5":
            return ResizeMethod.LANCZOS5
        if s in ("cubic", "bicubic", "tricubic"):
            return ResizeMethod.CUBIC
        if s in ("cubic-pytorch", "bicubic-pytorch"):
            return ResizeMethod.CUBIC_PYTORCH
        if s == "area":
            return ResizeMethod.AREA
        raise ValueError(f'Unknown resize method "{s}"')


_kernels: dict[ResizeMethod, tuple[int, Any]] = {
    ResizeMethod.LINEAR: (1, _fill_triangle_kernel),
    ResizeMethod.LANCZOS3: (3, lambda x: _fill_lanczos_kernel(3., x)),
    ResizeMethod.LANCZOS5: (5, lambda x: _fill_lanczos_kernel(5., x)),
    ResizeMethod.CUBIC: (2, _fill_keys_cubic_kernel),
    ResizeMethod.CUBIC_PYTORCH: (2, _fill_opencv_cubic_kernel),
    ResizeMethod.AREA: (1, _area_kernel),
}


def _kernel_for(method: ResizeMethod, antialias: bool) -> tuple[Callable | Any, int, bool]:
    """(kernel, radius, edge_padding) of a method other than NEAREST."""
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _kernels[method]
    return kernel, radius, method == ResizeMethod.CUBIC_PYTORCH and not antialias


def _shape_error(shape: tuple, image_shape: tuple) -> ValueError:
    return ValueError("shape must have length equal to the number of dimensions of x; "
                      f" {shape} vs {image_shape}")


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: str | ResizeMethod,
                        antialias: bool = True, precision: Any = Precision.HIGHEST) -> Any:
    """Resample `image` to `shape`, mapping input location x in spatial dimension
    spatial_dims[k] to x * scale[k] + translation[k] (pixel centres at i + 0.5; outputs whose
    source lies outside the input are zero). `method` as for resize, but NEAREST is not
    supported; `antialias` widens the kernel when downsampling. The result is floating
    point. Differentiable in image, scale and translation."""
    shape = canonicalize_shape(shape)
    if len(shape) != image.ndim:
        raise _shape_error(shape, image.shape)
    if isinstance(method, str):
        method = ResizeMethod.from_string(method)
    if method == ResizeMethod.NEAREST:
        # (as in JAX: nearest-neighbour sampling is written only for a plain resize)
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    assert isinstance(method, ResizeMethod)
    kernel, radius, edge_padding = _kernel_for(method, antialias)
    image, = promote_dtypes_inexact(image)
    scale, translation = promote_dtypes_inexact(scale, translation)
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel,
                                antialias, precision, edge_padding=edge_padding, radius=radius)


def _resize_nearest(x: Any, output_shape: tuple) -> Any:
    for d in [i for i, (m, n) in enumerate(zip(x.shape, output_shape)) if m != n]:
        m, n = x.shape[d], output_shape[d]
        # in float32 whatever the precision, as JAX (its float64 version is off by one on
        # some sizes, and JAX keeps the float32 answer)
        offsets = (jnp.arange(n, dtype=np.float32) + 0.5) * m / n
        offsets = jnp.floor(offsets.astype(np.float32)).astype(np.int32)
        index: list[Any] = [slice(None)] * x.ndim
        index[d] = offsets
        x = x[tuple(index)]
    return x


@jit(static_argnums=(1, 2, 3, 4))
def _resize(image: Any, shape: tuple, method: str | ResizeMethod, antialias: bool,
            precision: Any) -> Any:
    if len(shape) != image.ndim:
        raise _shape_error(shape, image.shape)
    if isinstance(method, str):
        method = ResizeMethod.from_string(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    assert isinstance(method, ResizeMethod)
    image, = promote_dtypes_inexact(image)
    # dimensions keeping their size are left alone (every kernel interpolates)
    spatial_dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
    kernel, radius, edge_padding = _kernel_for(method, antialias)
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
    return _scale_and_translate(image, shape, spatial_dims, scale, [0.] * len(spatial_dims),
                                kernel, antialias, precision, edge_padding=edge_padding,
                                radius=radius)


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = Precision.HIGHEST) -> Any:
    """Resize `image` to `shape` (every dimension: leave batch and channel sizes as they are).
    `method`: a ResizeMethod or "nearest", "linear"/"bilinear"/"trilinear"/"triangle",
    "lanczos3", "lanczos5", "cubic"/"bicubic"/"tricubic", "cubic-pytorch"/"bicubic-pytorch",
    "area". NEAREST keeps the dtype (and ignores antialias and precision); the others give a
    floating-point result. `antialias` widens the kernel when downsampling."""
    return _resize(image, canonicalize_shape(shape), method, antialias, precision)
