"""jax.scipy.spatial.transform: 3-D rotations as unit quaternions (x, y, z, w), and spherical
linear interpolation (user-facing layer, in jax.numpy). Rotation and Slerp are NamedTuples, so
they are pytrees that pass through jit, vmap and grad; every leading axis is a batch axis."""
from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ... import numpy as jnp
from ... import random as jrandom

_AXIS = {"x": 0, "y": 1, "z": 2}


def _float_array(x: Any, what: str) -> Any:
    """`x` as a real, non-weak floating array: integers become the default float, floating
    dtypes (float16, bfloat16, float32, float64) stay."""
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{what} must be real, got dtype {x.dtype}.")
    return jnp.asarray(x, jnp.result_type(x, float))


def _check_trailing(x: Any, shape: tuple[int, ...], what: str) -> None:
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        want = ", ".join(map(str, shape))
        raise ValueError(f"Expected {what} to have shape (..., {want}), got {x.shape}.")


def _batch_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of the rotations' and vectors' batch shapes (ValueError, as JAX's
    vectorized functions raise, when they do not broadcast)."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}") from None


def _select(flag: Any, if_true: Any, if_false: Any) -> Any:
    """`degrees`/`inverse` may be a Python bool (chosen now) or a traced boolean (as in JAX)."""
    if isinstance(flag, (bool, np.bool_)):
        return if_true if flag else if_false
    return jnp.where(flag, if_true, if_false)


def _parts(quat: Any) -> tuple[Any, Any, Any, Any]:
    return quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]


def _norm(v: Any) -> Any:
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _safe_norm(v: Any) -> tuple[Any, Any]:
    """(|v|^2, |v|) with the norm's gradient 0 rather than NaN at v = 0, where the rotation-
    vector formulas switch to their series (JAX's gradient there is NaN)."""
    norm2 = jnp.sum(v * v, axis=-1)
    positive = norm2 > 0
    return norm2, jnp.where(positive, jnp.sqrt(jnp.where(positive, norm2, 1)), 0)


def _normalize(quat: Any) -> Any:
    return quat / _norm(quat)[..., None]


def _compose(p: Any, q: Any) -> Any:
    """The Hamilton product p q (rotation q first, then p), broadcasting batch axes."""
    px, py, pz, pw = _parts(p)
    qx, qy, qz, qw = _parts(q)
    return jnp.stack([pw * qx + qw * px + (py * qz - pz * qy),
                      pw * qy + qw * py + (pz * qx - px * qz),
                      pw * qz + qw * pz + (px * qy - py * qx),
                      pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _parse_seq(seq: Any, fun: str, lengths: str) -> tuple[tuple[int, ...], bool]:
    """Axis indices and whether `seq` is intrinsic (upper case) or extrinsic (lower case)."""
    if not isinstance(seq, str):
        raise TypeError(f"Rotation.{fun}: `seq` must be a string such as 'xyz', got {seq!r}.")
    if lengths == "3" and len(seq) != 3:
        raise ValueError(f"Expected 3 axes, got {seq}.")
    if not 1 <= len(seq) <= 3:
        raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                         f"characters, got {seq}")
    intrinsic = re.fullmatch(r"[XYZ]+", seq) is not None
    if not (intrinsic or re.fullmatch(r"[xyz]+", seq)):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(a == b for a, b in itertools.pairwise(seq)):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return tuple(_AXIS[a] for a in seq.lower()), intrinsic


def _elementary(axis: int, angle: Any) -> Any:
    zero = jnp.zeros_like(angle)
    parts = [zero, zero, zero, jnp.cos(angle / 2)]
    parts[axis] = jnp.sin(angle / 2)
    return jnp.stack(parts, axis=-1)


def _from_matrix(m: Any) -> Any:
    """Shepperd's method: build the quaternion from the largest of w, |x|, |y|, |z| (picked by
    the largest of the trace and the diagonal entries), then normalize."""
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    choice = jnp.argmax(jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], -1), -1)
    quat = jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                      m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1)
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        parts = [None] * 4
        parts[i] = 1 - trace + 2 * m[..., i, i]
        parts[j] = m[..., j, i] + m[..., i, j]
        parts[k] = m[..., k, i] + m[..., i, k]
        parts[3] = m[..., k, j] - m[..., j, k]
        quat = jnp.where((choice == i)[..., None], jnp.stack(parts, axis=-1), quat)
    return _normalize(quat)


def _from_rotvec(rotvec: Any) -> Any:
    angle2, angle = _safe_norm(rotvec)
    small = angle <= 1e-3
    safe = jnp.where(small, 1.0, angle)  # keeps the unused branch (and its gradient) finite
    scale = jnp.where(small, 0.5 - angle2 / 48 + angle2 * angle2 / 3840,
                      jnp.sin(safe / 2) / safe)
    return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(quat: Any) -> tuple[Any, Any]:
    """(rotation vectors in radians, their scale factor over the vector part)."""
    quat = jnp.where(quat[..., 3:] < 0, -quat, quat)  # w >= 0 puts the angle in [0, pi]
    angle = 2 * jnp.arctan2(_safe_norm(quat[..., :3])[1], quat[..., 3])
    small = angle <= 1e-3
    safe = jnp.where(small, 1.0, angle)
    angle2 = angle * angle
    scale = jnp.where(small, 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880,
                      safe / jnp.sin(safe / 2))
    return quat[..., :3], scale


def _as_euler(quat: Any, axes: tuple[int, ...], extrinsic: bool) -> Any:
    """Bernardes & Viollet's quaternion-to-Euler method (as SciPy and JAX use): the middle
    angle from the quaternion directly, the outer two from half sums and differences; at the
    gimbal locks (middle angle 0 or pi) the third angle is set to zero."""
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    w = quat[..., 3]
    if symmetric:
        a, b, c, d = w, quat[..., i], quat[..., j], quat[..., k] * sign
    else:
        a, b = w - quat[..., j], quat[..., i] + quat[..., k] * sign
        c, d = quat[..., j] + w, quat[..., k] * sign - quat[..., i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    at_zero = jnp.abs(middle) <= eps
    locked = at_zero | (jnp.abs(middle - np.pi) <= eps)
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    zero = jnp.zeros_like(middle)
    # At a lock, all of the rotation goes to the first angle of the sequence as given.
    lock_angle = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    first = jnp.where(locked, lock_angle if extrinsic else zero, half_sum - half_diff)
    third = jnp.where(locked, zero if extrinsic else lock_angle, half_sum + half_diff)
    if not symmetric:
        third = third * sign
        middle = middle - np.pi / 2
    angles = jnp.stack([first, middle, third] if extrinsic else [third, middle, first], -1)
    return (angles + np.pi) % (2 * np.pi) - np.pi


def _make_canonical(quat: Any) -> Any:
    """Flip the sign so that the first nonzero of (w, x, y, z) is positive."""
    x, y, z, w = _parts(quat)
    neg = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return jnp.where(neg[..., None], -quat, quat)


class Rotation(NamedTuple):
    """Rotation(s) in 3 dimensions, held as unit quaternions `quat` of shape (..., 4) in
    scalar-last order (x, y, z, w); shape (4,) is a single rotation. JAX's counterpart of
    scipy.spatial.transform.Rotation."""
    quat: Any

    @classmethod
    def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
        """One batch of the given rotations in order (a single rotation counts as one)."""
        if not all(isinstance(r, Rotation) for r in rotations):
            raise TypeError("Rotation.concatenate expects a sequence of Rotation objects, got "
                            f"{[type(r).__name__ for r in rotations]}.")
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: Any = False) -> Rotation:
        """From Euler angles of shape (..., len(seq)) (a scalar for one axis): 'xyz' lower case
        rotates about the fixed frame's axes (extrinsic), 'XYZ' about the rotating frame's
        (intrinsic)."""
        axes, intrinsic = _parse_seq(seq, "from_euler", "1-3")
        angles = jnp.atleast_1d(_float_array(angles, "`angles`"))
        if angles.shape[-1] != len(axes):
            raise ValueError(
                f"Expected `angles` to have shape (..., {len(axes)}) for seq {seq!r}, got "
                f"{angles.shape}" + (" (for several rotations about one axis pass "
                                     "angles[:, None])." if len(axes) == 1 else "."))
        angles = _select(degrees, jnp.deg2rad(angles), angles)
        quat = _elementary(axes[0], angles[..., 0])
        for n, axis in enumerate(axes[1:], 1):
            step = _elementary(axis, angles[..., n])
            quat = _compose(quat, step) if intrinsic else _compose(step, quat)
        return cls(quat)

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        """From rotation matrices of shape (..., 3, 3) (the nearest rotation if not exactly
        orthogonal)."""
        matrix = _float_array(matrix, "`matrix`")
        _check_trailing(matrix, (3, 3), "`matrix`")
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        """From Modified Rodrigues Parameters of shape (..., 3)."""
        mrp = _float_array(mrp, "`mrp`")
        _check_trailing(mrp, (3,), "`mrp`")
        sq1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
        return cls(jnp.concatenate([2 * mrp, 2 - sq1], axis=-1) / sq1)

    @classmethod
    def from_quat(cls, quat: Any, scalar_first: bool = False) -> Rotation:
        """From quaternions of shape (..., 4), normalized; (x, y, z, w) order unless
        `scalar_first` (SciPy's keyword; JAX has only scalar-last)."""
        quat = _float_array(quat, "`quat`")
        _check_trailing(quat, (4,), "`quat`")
        if scalar_first:
            quat = jnp.roll(quat, -1, axis=-1)
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: Any = False) -> Rotation:
        """From rotation vectors of shape (..., 3): axis times angle."""
        rotvec = _float_array(rotvec, "`rotvec`")
        _check_trailing(rotvec, (3,), "`rotvec`")
        return cls(_from_rotvec(_select(degrees, jnp.deg2rad(rotvec), rotvec)))

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation, or `num` of them in a batch (SciPy's `num`; JAX takes none)."""
        quat = jnp.array([0., 0., 0., 1.], dtype=dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Rotations drawn uniformly from SO(3) (normalized Gaussian quaternions). JAX itself
        raises NotImplementedError here; this is tracejit's extension."""
        shape = (4,) if num is None else (num, 4)
        return cls.from_quat(jrandom.normal(random_key, shape))

    def __getitem__(self, indexer: Any) -> Rotation:
        """The rotation(s) at `indexer` along the batch axis."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        """How many rotations the (leading batch axis of the) object holds."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other: Any) -> Rotation:
        """`self * other`: `other` first, then `self`; batch axes broadcast."""
        if not isinstance(other, Rotation):
            return NotImplemented
        _batch_shape(self.quat.shape[:-1], other.quat.shape[:-1])
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors: Any, inverse: Any = False) -> Any:
        """Rotate vectors of shape (..., 3) (by the inverse rotation if `inverse`); the batch
        axes of rotations and vectors broadcast."""
        vectors = jnp.asarray(vectors)
        _check_trailing(vectors, (3,), "`vectors`")
        _batch_shape(self.quat.shape[:-1], vectors.shape[:-1])
        matrix = self.as_matrix()
        matrix = _select(inverse, jnp.swapaxes(matrix, -1, -2), matrix)
        return jnp.sum(matrix * vectors[..., None, :], axis=-1)

    def as_euler(self, seq: str, degrees: Any = False) -> Any:
        """Euler angles of shape (..., 3) for a 3-axis `seq` (see from_euler), the first and
        third in [-pi, pi], the middle in [0, pi] (symmetric seq) or [-pi/2, pi/2]."""
        axes, intrinsic = _parse_seq(seq, "as_euler", "3")
        angles = _as_euler(self.quat, axes, not intrinsic)
        return _select(degrees, jnp.rad2deg(angles), angles)

    def as_matrix(self) -> Any:
        """Rotation matrices of shape (..., 3, 3)."""
        x, y, z, w = _parts(self.quat)
        x2, y2, z2, w2 = x * x, y * y, z * z, w * w
        xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
        rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
                [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
                [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
        return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)

    def as_mrp(self) -> Any:
        """Modified Rodrigues Parameters of shape (..., 3), with norm at most 1."""
        w = self.quat[..., 3:]
        sign = jnp.where(w < 0, -1, 1).astype(self.quat.dtype)
        return sign * self.quat[..., :3] / (1 + sign * w)

    def as_rotvec(self, degrees: Any = False) -> Any:
        """Rotation vectors of shape (..., 3): axis times angle, angle in [0, pi]."""
        vec, scale = _as_rotvec(self.quat)
        return _select(degrees, jnp.rad2deg(scale), scale)[..., None] * vec

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """Quaternions of shape (..., 4): (x, y, z, w), or (w, x, y, z) if `scalar_first`;
        `canonical` picks the sign with w > 0 (or the first nonzero of x, y, z positive)."""
        quat = _make_canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def inv(self) -> Rotation:
        """The inverse rotation(s)."""
        return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self) -> Any:
        """Rotation angles in radians, in [0, pi], shape (...)."""
        return 2 * jnp.arctan2(_safe_norm(self.quat[..., :3])[1], jnp.abs(self.quat[..., 3]))

    def mean(self, weights: Any = None) -> Rotation:
        """The (weighted) mean rotation of a 1-D batch: the eigenvector of the largest
        eigenvalue of sum_i w_i q_i q_i^T (its sign is arbitrary)."""
        n = len(self)
        if self.quat.ndim != 2:
            raise ValueError("Rotation.mean expects a 1-D batch of rotations (quat of shape "
                             f"(N, 4)), got quat of shape {self.quat.shape}; reshape it first.")
        w = (jnp.ones(n, dtype=self.quat.dtype) if weights is None
             else jnp.asarray(weights, dtype=self.quat.dtype))
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != n:
            raise ValueError("Expected `weights` to have number of values equal to number of "
                             f"rotations, got {w.shape[0]} values and {n} rotations.")
        k = jnp.matmul(self.quat.T * w, self.quat)
        return Rotation(jnp.linalg.eigh(k)[1][:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (quat of shape (4,))."""
        return self.quat.ndim == 1


class Slerp(NamedTuple):
    """Spherical linear interpolation between key rotations at increasing key times (build it
    with Slerp.init, then call it with times). JAX's counterpart of
    scipy.spatial.transform.Slerp; times outside the key range extrapolate (SciPy raises)."""
    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        """Key times of shape (N,) (strictly increasing; not checked, as in JAX, since they
        may be traced) and N >= 2 key rotations."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        if rotations.quat.ndim != 2:
            raise ValueError("`rotations` must be a 1-D batch (quat of shape (N, 4)), got "
                             f"quat of shape {rotations.quat.shape}.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        start, end = Rotation(rotations.quat[:-1]), Rotation(rotations.quat[1:])
        return cls(times=times, timedelta=jnp.diff(times), rotations=start,
                   rotvecs=(start.inv() * end).as_rotvec())

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotation at each time (a single rotation for a scalar time)."""
        times = jnp.asarray(times, dtype=self.times.dtype)
        if times.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        t = jnp.atleast_1d(times)
        # The segment that starts before t; before the first key time the first segment and
        # after the last one the last segment extrapolates (JAX's clamped indexing mixes the
        # last key time with the last segment there, which jumps back; this stays continuous).
        seg = jnp.clip(jnp.searchsorted(self.times, t) - 1, 0, self.timedelta.shape[0] - 1)
        alpha = (t - self.times[seg]) / self.timedelta[seg]
        result = self.rotations[seg] * Rotation.from_rotvec(self.rotvecs[seg] * alpha[:, None])
        return result[0] if times.ndim == 0 else result
