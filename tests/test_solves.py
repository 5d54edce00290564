"""lax.custom_linear_solve and lax.custom_root against real JAX (values, jit, vmap, forward
and reverse implicit derivatives) and finite differences; JAX's errors for bad solvers."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

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
    f = lambda x: x ** 2 - a  # noqa: E731

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
    exact = lambda A: np.sum(np.linalg.solve(A, B0) ** 2)  # noqa: E731
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
