"""tracejit.scipy.spatial.transform (Rotation, Slerp) against real JAX 0.10's
jax.scipy.spatial.transform and SciPy's Rotation: every conversion on batches and single
rotations, Euler sequences, composition, eagerly, under jit and vmap, gradients, and errors."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SciRotation

import tracejit
import tracejit.numpy as tnp
from tracejit.scipy.spatial.transform import Rotation, Slerp

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.scipy.spatial import transform as jtransform

RNG = np.random.default_rng(0)
QUATS = RNG.normal(size=(5, 4)).astype(np.float32)
VECS = RNG.normal(size=(5, 3)).astype(np.float32)
SEQS = [a + b + c for a in "xyz" for b in "xyz" for c in "xyz" if a != b and b != c]
# exact quaternions at Euler gimbal locks and half turns, plus a generic one
SPECIAL = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [.5, .5, .5, .5],
                    [0, 0, .6, -.8]], np.float32)


def close(got, want, rtol=2e-5, atol=2e-6):
    """Same structure, shapes, dtypes and weak types; values within float32 rounding (XLA
    fuses and contracts the same formulas differently)."""
    got_l, want_l = tracejit.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        assert g.weak_type == w.weak_type
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def conversions(R, quat, vecs):
    """Every method of Rotation `R` on a batch and on a single rotation (SciPy checks more)."""
    r, one = R.from_quat(quat), R.from_quat(quat[1])
    matrix = r.as_matrix()
    return [r.quat, one.quat, r.as_quat(canonical=True),
            one.as_quat(canonical=True, scalar_first=True), matrix, r.as_rotvec(degrees=True),
            one.as_rotvec(), r.as_mrp(), r.magnitude(), one.inv().quat,
            r.apply(vecs, inverse=True), r.apply(vecs[0]), one.apply(vecs), (r * one).quat,
            r[1:4].quat, R.concatenate([r, r[:2]]).quat, R.from_matrix(matrix[3]).quat,
            R.from_matrix(matrix * 1.1).quat,  # not orthogonal: the nearest rotation
            R.from_rotvec(vecs * 57.0, degrees=True).quat, R.from_rotvec(vecs[0] * 1e-4).quat,
            R.from_mrp(vecs[4] * 0.5).quat, R.identity().quat,
            # integer and Python inputs become float32, not weakly typed
            R.from_quat(np.array([1, 2, 3, 4])).quat, R.from_euler("z", 90, degrees=True).quat]


def test_conversions_and_composition_match_jax():
    # JAX compiles its side once (eagerly, each of its vectorized ops compiles on its own)
    want = jax.jit(lambda q, v: conversions(jtransform.Rotation, q, v))(QUATS, VECS)
    close(conversions(Rotation, tnp.asarray(QUATS), tnp.asarray(VECS)), want)
    close(tracejit.jit(lambda q, v: conversions(Rotation, q, v))(QUATS, VECS), want)
    r = Rotation.from_quat(QUATS)
    assert len(r) == 5 and not r.single and Rotation.from_quat(QUATS[0]).single
    # a second oracle for the conventions and the rest of the methods: SciPy
    sci = SciRotation.from_quat(QUATS.astype(np.float64))
    sci_one = sci[2]
    for got, want in [(r.as_matrix(), sci.as_matrix()), (r.as_rotvec(), sci.as_rotvec()),
                      (r[2].as_matrix(), sci_one.as_matrix()), (r[2].as_mrp(), sci_one.as_mrp()),
                      (r.as_quat(scalar_first=True), sci.as_quat(scalar_first=True)),
                      (r.inv().as_matrix(), sci.inv().as_matrix()),
                      (r.apply(VECS), sci.apply(VECS)), (r[2].magnitude(), sci_one.magnitude()),
                      ((r[2] * r).as_matrix(), (sci_one * sci).as_matrix()),
                      (Rotation.from_matrix(sci.as_matrix()).as_matrix(), sci.as_matrix()),
                      (Rotation.from_rotvec(sci.as_rotvec()).as_matrix(), sci.as_matrix()),
                      (Rotation.from_mrp(sci.as_mrp()).as_matrix(), sci.as_matrix()),
                      (Rotation.from_matrix(np.eye(3, dtype=int)).quat, np.eye(4)[3]),
                      (Rotation(-SPECIAL).as_quat(canonical=True),  # w = 0: x, y, z decide
                       SciRotation.from_quat(-SPECIAL).as_quat(canonical=True)),
                      (Rotation.concatenate([r[0], r[1:3]]).as_matrix(),
                       SciRotation.concatenate([sci[0], sci[1:3]]).as_matrix())]:
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_float64_and_float16_keep_their_dtype(x64):
    q64 = QUATS.astype(np.float64)
    r, sci = Rotation.from_quat(q64), SciRotation.from_quat(q64)
    for got, want in [(r.as_matrix(), sci.as_matrix()), (r.as_rotvec(), sci.as_rotvec()),
                      (r.as_euler("ZYX"), sci.as_euler("ZYX")),
                      (r.apply(VECS), sci.apply(VECS)), (r.magnitude(), sci.magnitude()),
                      (Rotation.from_euler("xzy", q64[:, :3]).as_quat(canonical=True),
                       SciRotation.from_euler("xzy", q64[:, :3]).as_quat(canonical=True))]:
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert Rotation.identity().quat.dtype == np.float64  # dtype=float: the default float
    r16 = Rotation.from_quat(QUATS.astype(np.float16))
    assert r16.quat.dtype == r16.as_matrix().dtype == np.float16  # as in JAX
    np.testing.assert_allclose(r16.as_matrix(), sci.as_matrix(), atol=5e-3)


def euler_values(R, angles, special):
    out = []
    for seq in ("xyz", "ZXZ"):
        out += [R.from_euler(seq, angles).quat, R.from_quat(special).as_euler(seq, degrees=True)]
    return out + [R.from_euler("z", angles[0, 0]).quat, R.from_euler("Y", angles[:, :1]).quat,
                  R.from_euler("YX", angles[:, :2]).quat]


def test_euler_sequences_intrinsic_extrinsic_and_degrees():
    angles = RNG.uniform(-3, 3, size=(4, 3)).astype(np.float32)
    angles[:, 1] *= 0.45  # inside the middle angle's range, where the round trip holds
    want = jax.jit(lambda a, s: euler_values(jtransform.Rotation, a, s))(angles, SPECIAL)
    close(euler_values(Rotation, tnp.asarray(angles), tnp.asarray(SPECIAL)), want,
          rtol=1e-4, atol=1e-4)  # as_euler at a gimbal lock: rounding of degrees
    # all 24 sequences against SciPy
    for seq in SEQS:
        for s in (seq, seq.upper()):
            r = Rotation.from_euler(s, angles)
            sci = SciRotation.from_euler(s, angles.astype(np.float64))
            np.testing.assert_allclose(r.as_matrix(), sci.as_matrix(), atol=2e-6)
            np.testing.assert_allclose(r.as_euler(s, degrees=True), sci.as_euler(s, True),
                                       atol=2e-3)
            # at the gimbal locks the angles still give the same rotation
            locked = Rotation.from_euler(s, Rotation(SPECIAL).as_euler(s))
            np.testing.assert_allclose(locked.as_matrix(),
                                       SciRotation.from_quat(SPECIAL).as_matrix(), atol=2e-6)
    # under jit: half of the sequences (extrinsic and intrinsic)
    seqs = SEQS[::4] + [seq.upper() for seq in SEQS[1::4]]
    got = tracejit.jit(lambda q: [Rotation(q).as_euler(s) for s in seqs])(
        Rotation.from_euler("xyz", angles).quat)
    sci = SciRotation.from_euler("xyz", angles.astype(np.float64))
    for s, g in zip(seqs, got):
        np.testing.assert_allclose(g, sci.as_euler(s), atol=2e-5)


def transformed(ns, q, v):
    """vmap over rotations, vectors and angles (a Rotation out), and grad through as_matrix,
    apply, from_euler and as_rotvec, with `ns` = (Rotation, Slerp, vmap, grad) of a library."""
    R, _, vmap, grad = ns

    def loss(quat, vec):
        r = R.from_quat(quat)
        return (r.as_matrix() ** 2 * np.arange(9.).reshape(3, 3)).sum() + (
            r.apply(vec, inverse=True) ** 3).sum()

    return [vmap(lambda q, v: R.from_quat(q).apply(v, inverse=True))(q, v),
            vmap(R.from_quat(q[0]).apply)(v), vmap(lambda a: R.from_euler("XYZ", a))(v).quat,
            grad(loss, argnums=(0, 1))(q[0], v[1]),
            (R.from_quat(q) * R.from_quat(q[0]).inv()).quat]


OURS = (Rotation, Slerp, tracejit.vmap, tracejit.grad)
THEIRS = (jtransform.Rotation, jtransform.Slerp, jax.vmap, jax.grad)


def test_pytree_through_jit_vmap_and_grad():
    want = jax.jit(lambda q, v: transformed(THEIRS, q, v))(QUATS, VECS)
    got = transformed(OURS, tnp.asarray(QUATS), tnp.asarray(VECS))
    close(got[:3], want[:3], atol=1e-5)
    close(got[3], want[3], rtol=1e-4, atol=1e-5)
    # Rotation in and out of jit as a pytree
    r = tracejit.jit(lambda r, s: r * s.inv())(Rotation.from_quat(QUATS),
                                                Rotation.from_quat(QUATS[0]))
    assert isinstance(r, Rotation)
    close(r.quat, want[4])
    # vmap over a Rotation argument, and `inverse` / `degrees` traced (JAX allows both)
    rots = Rotation.from_quat(QUATS)
    close(tracejit.vmap(lambda r, v: r.apply(v, inverse=True))(rots, VECS), want[0], atol=1e-5)
    close(tracejit.jit(lambda flag: rots.apply(VECS, inverse=flag))(True), want[0], atol=1e-5)
    close(tracejit.jit(lambda flag: Rotation.from_rotvec(VECS, degrees=flag).as_rotvec(flag))(
        False), rots.from_rotvec(VECS).as_rotvec())
    # at the identity the rotation-vector scale takes its series branch: a finite gradient
    # (JAX's is NaN there), the derivative of the identity map
    g = tracejit.grad(lambda a: Rotation.from_rotvec(a).as_rotvec().sum())(tnp.zeros(3))
    np.testing.assert_allclose(g, np.ones(3), rtol=1e-6)
    # through from_euler and composition: central differences
    angles, vec = VECS[2].astype(np.float64), VECS[1].astype(np.float64)

    def loss(a):
        return ((Rotation.from_quat(QUATS[0]) * Rotation.from_euler("xyz", a)).apply(
            vec) ** 3).sum()

    steps = np.eye(3) * 1e-3
    fd = [(loss(angles + h) - loss(angles - h)) / 2e-3 for h in steps]
    np.testing.assert_allclose(tracejit.grad(loss)(angles), fd, rtol=1e-3, atol=1e-3)


def averaged(ns, q, w, times, at):
    R, S, vmap, _ = ns
    r = R.from_quat(q)
    slerp = S.init(times, r[:4])
    alpha = (5.0 - times[2]) / (times[3] - times[2])
    return [r.mean().as_matrix(), r.mean(w).as_matrix(), tuple(slerp), slerp(at).quat,
            slerp(1.7).quat, vmap(lambda t: slerp(t).as_matrix())(at),
            # after the last key time: the last segment continued
            (r[2] * R.from_rotvec(slerp.rotvecs[2] * alpha)).quat]


def test_mean_slerp_and_random():
    w = np.array([1., 2., 0.5, 3., 1.], np.float32)
    times = np.array([0., 1., 2.5, 4.], np.float32)
    at = np.array([-0.5, 0., 0.3, 1., 2., 2.5, 3.9, 4.], np.float32)  # before, in, at the end
    want = jax.jit(lambda *a: averaged(THEIRS, *a))(QUATS, w, times, at)
    got = averaged(OURS, QUATS, w, times, at)
    close(got[:-1], want[:-1], atol=1e-5)  # the mean's sign is arbitrary: its matrix is compared
    slerp = Slerp.init(times, Rotation.from_quat(QUATS[:4]))
    close(slerp(np.float32(5.0)).quat, want[-1], atol=1e-5)
    # through jit: Slerp as an argument, and built from traced times and rotations
    close(tracejit.jit(lambda s, t: s(t))(slerp, at).quat, want[3], atol=1e-5)
    close(tracejit.jit(lambda q, w, t: (Rotation(q).mean(w).as_matrix(),
                                        Slerp.init(t, Rotation(q[:4]))(1.7).quat))(
        Rotation.from_quat(QUATS).quat, w, times), (want[1], want[4]), atol=1e-5)
    from scipy.spatial.transform import Slerp as SciSlerp
    sci = SciRotation.from_quat(QUATS[:4].astype(np.float64))
    np.testing.assert_allclose(slerp(at[1:]).as_matrix(),
                               SciSlerp(times, sci)(at[1:]).as_matrix(), atol=1e-5)
    # random (JAX raises NotImplementedError): uniform on SO(3), so E[R] = 0
    rand = Rotation.random(tracejit.random.key(1), 4000)
    assert rand.quat.shape == (4000, 4) and rand.quat.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rand.quat, axis=-1), 1, rtol=1e-6)
    np.testing.assert_allclose(np.mean(rand.as_matrix(), 0), np.zeros((3, 3)), atol=0.05)
    assert Rotation.random(tracejit.random.key(1)).single
    np.testing.assert_array_equal(Rotation.identity(3).as_matrix(), np.tile(np.eye(3), (3, 1, 1)))


def test_errors_match_jax():
    """The errors JAX raises (built without computing, so JAX compiles nothing), then clear
    errors where JAX silently returns a wrong-sized quaternion."""
    q, v = QUATS, VECS
    for f, error in [
            (lambda R, S, a: R.from_euler("xyzx", a(q[0])), ValueError),
            (lambda R, S, a: R.from_euler("", a(q[0])), ValueError),
            (lambda R, S, a: R.from_euler("xyZ", a(q[0, :3])), ValueError),
            (lambda R, S, a: R.from_euler("abc", a(q[0, :3])), ValueError),
            (lambda R, S, a: R.from_euler("xxy", a(q[0, :3])), ValueError),
            (lambda R, S, a: R.from_euler("xyz", a(q[0, :2])), ValueError),
            (lambda R, S, a: R.from_euler("z", a(q[0, :3])), ValueError),
            (lambda R, S, a: R(a(q)).as_euler("xy"), ValueError),
            (lambda R, S, a: R(a(q)).as_euler("xYz"), ValueError),
            (lambda R, S, a: R(a(q)).as_euler("zzx"), ValueError),
            (lambda R, S, a: len(R(a(q[0]))), TypeError),
            (lambda R, S, a: R(a(q[0]))[0], TypeError),
            (lambda R, S, a: R(a(q[0])).mean(), TypeError),
            (lambda R, S, a: R(a(q)).mean(np.ones(4)), ValueError),
            (lambda R, S, a: R(a(q)).mean(np.ones((5, 1))), ValueError),
            (lambda R, S, a: R(a(q)) * R(a(q[:2])), ValueError),
            (lambda R, S, a: R(a(q)).apply(a(v[:, :2])), ValueError),
            (lambda R, S, a: S.init([0, 1], a(q[:2])), TypeError),
            (lambda R, S, a: S.init([0.], R(a(q[:1]))), ValueError),
            (lambda R, S, a: S.init([0., 1.], R(a(q[:3]))), ValueError),
            (lambda R, S, a: S.init([[0., 1., 2.]], R(a(q[:3]))), ValueError),
            (lambda R, S, a: S(a(q[:3, 0]), a(q[:2, 0]), R(a(q[:2])), a(v[:2]))(np.ones((2, 2))),
             ValueError)]:
        with pytest.raises(error) as want:
            f(jtransform.Rotation, jtransform.Slerp, jnp.asarray)
        with pytest.raises(error) as got:
            f(Rotation, Slerp, tnp.asarray)
        if "core dimension" not in str(want.value) and "Incompatible" not in str(want.value):
            assert str(got.value) == str(want.value)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        Rotation(QUATS).apply(VECS[:2])
    for f, match in [(lambda: Rotation.from_quat(q[:, :3]), r"`quat`.*\(\.\.\., 4\)"),
                     (lambda: Rotation.from_rotvec(q), r"`rotvec`.*\(\.\.\., 3\)"),
                     (lambda: Rotation.from_mrp(q), r"`mrp`.*\(\.\.\., 3\)"),
                     (lambda: Rotation.from_matrix(np.eye(2)), r"`matrix`.*\(\.\.\., 3, 3\)"),
                     (lambda: Rotation.from_quat(q.reshape(5, 1, 4)).mean(), "1-D batch"),
                     (lambda: Rotation.from_quat(q + 1j), "must be real")]:
        with pytest.raises((ValueError, TypeError), match=match):
            f()
