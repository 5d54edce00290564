"""lax.custom_linear_solve and lax.custom_root against real JAX (values, jit, vmap, forward
and reverse implicit derivatives) and finite differences; JAX's errors for bad solvers."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
import tracejit.scipy.sparse.linalg  # noqa: F401

jax = pytest.importorskip("jax")
jnp = jax.numpy
import jax.scipy.sparse.linalg  # noqa: E402,F401

RNG = np.random.RandomState(0)
A0 = RNG.randn(3, 3)
A0 = A0 @ A0.T + 3 * np.eye(3)
B0 = RNG.randn(3)


def lin_solve(lib, np_, A, b, symmetric=False, has_aux=False):
    def solve(mv, x):
        out = np_.linalg.solve(A, x)
        return (out, np_.sum(out)) if has_aux else out

    def tsolve(vm, x):
        out = np_.linalg.solve(A.T, x)
        return (out, np_.sum(out)) if has_aux else out
    return lib.lax.custom_linear_solve(lambda x: A @ x, b, solve,
                                       None if symmetric else tsolve,
                                       symmetric=symmetric, has_aux=has_aux)


def newton_sqrt(lib, np_, a):
    f = lambda x: x ** 2 - a

    def solve(f, x0):
        return lib.lax.while_loop(lambda x: np_.abs(f(x)) > 1e-6,
                                  lambda x: x - f(x) / (2 * x), x0)
    return lib.lax.custom_root(f, np_.ones_like(a), solve, lambda g, y: y / g(1.0))


def loss(lib, np_, A, b, symmetric=False):
    return np_.sum(lin_solve(lib, np_, A, b, symmetric) ** 2)


CASES = {
    "solve": lambda lib, np_: lin_solve(lib, np_, A0, B0),
    "solve_jit": lambda lib, np_: lib.jit(lambda A, b: lin_solve(lib, np_, A, b))(A0, B0),
    "aux": lambda lib, np_: lin_solve(lib, np_, A0, B0, has_aux=True),
    "grad": lambda lib, np_: lib.grad(lambda A, b: loss(lib, np_, A, b), (0, 1))(A0, B0),
    "grad_sym": lambda lib, np_: lib.grad(lambda A, b: loss(lib, np_, A, b, True),
                                          (0, 1))(A0, B0),
    "jit_grad": lambda lib, np_: lib.jit(lib.grad(lambda A, b: loss(lib, np_, A, b),
                                                  (0, 1)))(A0, B0),
    "jvp": lambda lib, np_: lib.jvp(lambda A, b: lin_solve(lib, np_, A, b), (A0, B0),
                                    (np.ones((3, 3)), B0)),
    "vmap_b": lambda lib, np_: lib.vmap(lambda b: lin_solve(lib, np_, A0, b))(
        np.stack([B0, 2 * B0])),
    "vmap_A": lambda lib, np_: lib.vmap(lambda A: lin_solve(lib, np_, A, B0))(
        np.stack([A0, 2 * A0])),
    "vmap_grad": lambda lib, np_: lib.vmap(lib.grad(lambda A: loss(lib, np_, A, B0)))(
        np.stack([A0, 2 * A0])),
    "root": lambda lib, np_: newton_sqrt(lib, np_, 2.0),
    "root_jit": lambda lib, np_: lib.jit(lambda a: newton_sqrt(lib, np_, a))(2.0),
    "root_grad": lambda lib, np_: lib.grad(lambda a: newton_sqrt(lib, np_, a))(2.0),
    "root_jit_grad": lambda lib, np_: lib.jit(lib.grad(lambda a: newton_sqrt(lib, np_, a)))(
        2.0),
    "root_vmap": lambda lib, np_: lib.vmap(lambda a: newton_sqrt(lib, np_, a))(
        np.array([2.0, 3.0])),
    "root_vmap_grad": lambda lib, np_: lib.vmap(lib.grad(lambda a: newton_sqrt(lib, np_, a)))(
        np.array([2.0, 3.0])),
    "root_jvp": lambda lib, np_: lib.jvp(lambda a: newton_sqrt(lib, np_, a), (2.0,), (1.0,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_jax(name, x64):
    expected = CASES[name](jax, jnp)
    got = CASES[name](tracejit, tnp)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    g_leaves, g_tree = tracejit.tree_util.tree_flatten(got)
    assert len(e_leaves) == len(g_leaves) and str(e_tree) == str(g_tree)
    for g, e in zip(g_leaves, e_leaves):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-9, atol=1e-12)


def test_gradients_against_finite_differences(x64):
    g = tracejit.grad(lambda A: loss(tracejit, tnp, A, B0))(A0)
    eps, fd = 1e-6, np.zeros_like(A0)
    exact = lambda A: np.sum(np.linalg.solve(A, B0) ** 2)
    for i in np.ndindex(A0.shape):
        d = np.zeros_like(A0)
        d[i] = eps
        fd[i] = (exact(A0 + d) - exact(A0 - d)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-9)
    gr = tracejit.grad(lambda a: newton_sqrt(tracejit, tnp, a))(3.0)
    np.testing.assert_allclose(float(gr), 0.5 / np.sqrt(3.0), rtol=1e-6)


def test_solve_runs_natively_once(x64):
    """Under jit only the solve body is compiled: the jaxpr has one custom_linear_solve."""
    jaxpr = tracejit.make_jaxpr(lambda b: lin_solve(tracejit, tnp, A0, b))(B0)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["custom_linear_solve"]


def test_errors_as_jax():
    def no_transpose(lib, np_):
        return lib.grad(lambda b: np_.sum(lib.lax.custom_linear_solve(
            lambda x: 2.0 * x, b, lambda mv, x: x / 2.0)))(np.ones(3, np.float32))

    def bad_shape(lib, np_):
        return lib.lax.custom_linear_solve(lambda x: x, np.ones(3, np.float32),
                                           lambda mv, x: x[:2])

    def bad_aux(lib, np_):
        return lib.lax.custom_linear_solve(lambda x: x, np.ones(3, np.float32),
                                           lambda mv, x: x, has_aux=True)

    for case in (no_transpose, bad_shape, bad_aux):
        with pytest.raises(Exception) as theirs:
            case(jax, jnp)
        with pytest.raises(type(theirs.value)) as ours:
            case(tracejit, tnp)
        assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]


# --- jax.scipy.sparse.linalg ------------------------------------------------------------------

SPD = A0 + 2 * np.eye(3)
GEN = A0 + np.triu(RNG.randn(3, 3))


def _grad_oracle(A, b):
    """d/dA sum(x**2) for x = A^-1 b: -A^-T (2x) x^T."""
    x = np.linalg.solve(A, b)
    return -np.outer(np.linalg.solve(A.T, 2 * x), x)


def test_sparse_solvers_against_numpy(x64):
    """Values and implicit gradients against NumPy's direct solves (tolerances tight enough
    that each solver must converge); eager, jit, vmap and pytrees."""
    spl = tracejit.scipy.sparse.linalg
    b = B0
    diag = np.diag(1 / np.diag(SPD))
    x_spd, x_gen = np.linalg.solve(SPD, b), np.linalg.solve(GEN, b)
    cases = {
        "cg": (spl.cg(SPD, b, tol=1e-10)[0], x_spd),
        "cg_fun_M": (spl.cg(lambda x: SPD @ x, b, M=diag, tol=1e-10)[0], x_spd),
        "cg_tree": (spl.cg(lambda t: {"a": 2.0 * t["a"], "b": 3.0 * t["b"]},
                           {"a": b[:2], "b": b[2:]}, tol=1e-10)[0]["b"], b[2:] / 3),
        "bicgstab": (spl.bicgstab(GEN, b, tol=1e-10)[0], x_gen),
        "gmres": (spl.gmres(GEN, b, tol=1e-10)[0], x_gen),
        "gmres_restart": (spl.gmres(GEN, b, tol=1e-10, restart=2,
                                    solve_method="incremental")[0], x_gen),
        "cg_grad": (tracejit.grad(lambda A: tnp.sum(spl.cg(A, b, tol=1e-12)[0] ** 2))(SPD),
                    _grad_oracle(SPD, b)),
        "bicgstab_jit_grad": (tracejit.jit(tracejit.grad(
            lambda A: tnp.sum(spl.bicgstab(A, b, tol=1e-12)[0] ** 2)))(GEN),
            _grad_oracle(GEN, b)),
        "gmres_vmap": (tracejit.vmap(lambda b: spl.gmres(GEN, b, tol=1e-10)[0])(
            np.stack([b, -b])), np.stack([x_gen, -x_gen])),
    }
    for name, (got, expected) in cases.items():
        assert got.dtype == np.float64, name
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-7, atol=1e-10,
                                   err_msg=name)
    info = spl.gmres(GEN, b)[1]
    assert info.dtype == jnp.zeros((), int).dtype and int(info) == 0


def test_sparse_cg_matches_jax(x64):
    """JAX's own iteration (same stopping rule): equal to rounding at a loose tolerance."""
    for lib in (jax, tracejit):
        lib.config.update("jax_enable_x64", True)
    got = tracejit.scipy.sparse.linalg.cg(SPD, B0, tol=1e-2)[0]
    expected = jax.scipy.sparse.linalg.cg(SPD, B0, tol=1e-2)[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-12)


def test_sparse_solver_errors_as_jax():
    spl = tracejit.scipy.sparse.linalg
    with pytest.raises(ValueError, match="square matrix"):
        spl.cg(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="matching shapes"):
        spl.cg(np.eye(2), np.ones(2), x0=np.ones(3))
    with pytest.raises(ValueError, match="invalid solve_method"):
        spl.gmres(np.eye(2), np.ones(2), solve_method="qr")
