"""Autodiff: JVP and VJP of every covered primitive against central finite differences (float64),
VJP against JVP (the transpose identity), second order; control flow, custom rules, remat;
real programs and API behaviour (values, dtypes, weak types, errors) against JAX."""
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit import lax


# --- checking machinery --------------------------------------------------------------------

def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(x, np.float64) for x in tj.tree_util.tree_leaves(tree)]


def _vdot(a, b) -> float:
    return sum(float(np.vdot(x, y)) for x, y in zip(_leaves(a), _leaves(b)))


def check_jvp(f: Callable, args: list, rng, eps: float = 1e-6, tol: float = 1e-6) -> None:
    """jvp(f) against a central finite difference along a random direction."""
    tangents = [rng.standard_normal(np.shape(a)) for a in args]
    _, t_out = tj.jvp(f, tuple(args), tuple(tangents))
    plus = f(*[a + eps * t for a, t in zip(args, tangents)])
    minus = f(*[a - eps * t for a, t in zip(args, tangents)])
    for t, p, m in zip(_leaves(t_out), _leaves(plus), _leaves(minus)):
        np.testing.assert_allclose(t, (p - m) / (2 * eps), rtol=tol, atol=tol)


def check_vjp(f: Callable, args: list, rng, tol: float = 1e-9) -> None:
    """<ct, jvp(t)> == <vjp(ct), t>, and cotangents have their primal's dtype."""
    tangents = [rng.standard_normal(np.shape(a)) for a in args]
    out, pullback = tj.vjp(f, *args)
    _, t_out = tj.jvp(f, tuple(args), tuple(tangents))
    ct = tj.tree_util.tree_map(lambda o: rng.standard_normal(np.shape(o)), out)
    cts = pullback(ct)
    for c, a in zip(cts, args):
        assert np.shape(c) == np.shape(a) and c.dtype == np.asarray(a).dtype
    lhs, rhs = _vdot(ct, t_out), _vdot(cts, tangents)
    assert math.isclose(lhs, rhs, rel_tol=tol, abs_tol=tol), (lhs, rhs)


def check_second_order(f: Callable, args: list, rng, tol: float = 1e-5) -> None:
    """The JVP of the gradient of <w, f> against finite differences (forward-over-reverse)."""
    w = tj.tree_util.tree_map(lambda o: rng.standard_normal(np.shape(o)), f(*args))
    argnums = tuple(range(len(args)))
    grad_f = tj.grad(lambda *a: sum(tnp.sum(o * c) for o, c in
                                    zip(tj.tree_util.tree_leaves(f(*a)),
                                        tj.tree_util.tree_leaves(w))), argnums=argnums)
    check_jvp(grad_f, args, rng, eps=1e-5, tol=tol)


# --- op records ----------------------------------------------------------------------------

class Rec(NamedTuple):
    name: str
    fn: Callable
    shapes: tuple            # argument shapes
    domain: tuple = (-2, 2)  # uniform sampling range of the (float64) arguments
    eps: float = 1e-6
    vjp_tol: float = 1e-9


def _rand(rng, shape, domain):
    lo, hi = domain
    return rng.uniform(lo, hi, shape)


M = (3, 4)
UNARY = [
    ("neg", lax.neg, (-2, 2)), ("sin", lax.sin, (-2, 2)), ("cos", lax.cos, (-2, 2)),
    ("tan", lax.tan, (-1, 1)), ("asin", lax.asin, (-.9, .9)), ("acos", lax.acos, (-.9, .9)),
    ("atan", lax.atan, (-2, 2)), ("sinh", lax.sinh, (-2, 2)), ("cosh", lax.cosh, (-2, 2)),
    ("tanh", lax.tanh, (-2, 2)), ("asinh", lax.asinh, (-2, 2)), ("acosh", lax.acosh, (1.2, 3)),
    ("atanh", lax.atanh, (-.9, .9)), ("exp", lax.exp, (-2, 2)), ("exp2", lax.exp2, (-2, 2)),
    ("expm1", lax.expm1, (-2, 2)), ("log", lax.log, (.3, 3)), ("log1p", lax.log1p, (-.5, 2)),
    ("sqrt", lax.sqrt, (.3, 3)), ("rsqrt", lax.rsqrt, (.3, 3)), ("cbrt", lax.cbrt, (.3, 3)),
    ("logistic", lax.logistic, (-3, 3)), ("erf", lax.erf, (-2, 2)), ("erfc", lax.erfc, (-2, 2)),
    ("erf_inv", lax.erf_inv, (-.8, .8)), ("lgamma", lax.lgamma, (.5, 4)),
    ("square", lax.square, (-2, 2)), ("abs", lax.abs, (-2, 2)),
    ("integer_pow3", lambda x: lax.integer_pow(x, 3), (-2, 2)),
    ("integer_pow-2", lambda x: lax.integer_pow(x, -2), (.5, 2)),
    ("sign", lax.sign, (-2, 2)), ("floor", lax.floor, (-2, 2)), ("round", lax.round, (-2, 2)),
]
BINARY = [
    ("add", lax.add, (-2, 2)), ("sub", lax.sub, (-2, 2)), ("mul", lax.mul, (-2, 2)),
    ("div", lax.div, (.5, 2)), ("max", lax.max, (-2, 2)), ("min", lax.min, (-2, 2)),
    ("pow", lax.pow, (.5, 2)), ("atan2", lax.atan2, (.5, 2)), ("rem", lax.rem, (.5, 2)),
]
RECORDS = (
    [Rec(n, f, (M,), d) for n, f, d in UNARY]
    + [Rec(f"{n}{s}", f, s, d) for n, f, d in BINARY for s in ((M, M), ((), M), (M, ()))]
    + [
        Rec("pow_int_exponent", lambda x: lax.pow(x, np.array([0, 1, 2, 3], np.int32)), ((4,),),
            (.5, 2)),
        Rec("select_n", lambda x, y: lax.select_n(x > 0, x, y), (M, M)),
        Rec("select_n_scalar_pred", lambda x, y: lax.select_n(np.bool_(True), x, y), (M, M)),
        Rec("clamp", lambda lo, x, hi: lax.clamp(-lo * lo - .5, x, hi * hi + .5), ((), M, ())),
        Rec("clamp_arrays", lambda lo, x: lax.clamp(lo, x, lo + 1.5), (M, M)),
        Rec("fma", lax.fma, (M, M, M)),
        Rec("convert_f32", lambda x: lax.convert_element_type(
            lax.convert_element_type(x, np.float32), np.float64), (M,), eps=0.1, vjp_tol=1e-6),
        Rec("convert_int_zero", lambda x: x * lax.convert_element_type(
            lax.convert_element_type(x * 10, np.int32), np.float64), (M,)),
        Rec("argmax", lambda x: x * lax.convert_element_type(
            lax.argmax(x, 1, np.int32), np.float64)[:, None], (M,)),
    ]
    + [Rec(f"reduce_{n}{ax}", lambda x, f=f, ax=ax: f(x, ax), ((3, 4, 2),))
       for n, f in (("sum", lax.reduce_sum), ("prod", lax.reduce_prod),
                    ("max", lax.reduce_max), ("min", lax.reduce_min))
       for ax in ((0,), (1,), (0, 2), (0, 1, 2), ())]
    + [Rec(f"{n}_axis{ax}_rev{r}", lambda x, f=f, ax=ax, r=r: f(x, ax, r), ((4, 5),))
       for n, f in (("cumsum", lax.cumsum), ("cumprod", lax.cumprod), ("cummax", lax.cummax),
                    ("cummin", lax.cummin), ("cumlogsumexp", lax.cumlogsumexp))
       for ax in (0, 1) for r in (False, True)]
    + [
        Rec("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), (M,)),
        Rec("broadcast_unit", lambda x: lax.broadcast_in_dim(x, (3, 4, 5), (0, 2)),
            ((3, 1),)),
        Rec("broadcast_permuted", lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 0)),
            ((2, 4),)),
        Rec("reshape", lambda x: lax.reshape(x, (2, 6)), (M,)),
        Rec("reshape_dims", lambda x: lax.reshape(x, (12,), (1, 0)), (M,)),
        Rec("transpose", lambda x: lax.transpose(x, (2, 0, 1)), ((2, 3, 4),)),
        Rec("squeeze", lambda x: lax.squeeze(x, (1,)), ((3, 1, 4),)),
        Rec("expand_dims", lambda x: lax.expand_dims(x, (0, 2)), (M,)),
        Rec("rev", lambda x: lax.rev(x, (0, 1)), (M,)),
        Rec("concatenate", lambda x, y, z: lax.concatenate([x, y, z], 1),
            ((3, 1), M, (3, 2))),
        Rec("pad", lambda x, v: lax.pad(x, v, ((1, 2, 1), (-1, 0, 0))), (M, ())),
        Rec("pad_interior", lambda x: lax.pad(x, np.float64(0), ((0, 0, 2), (2, -2, 1))),
            (M,)),
        Rec("slice", lambda x: lax.slice(x, (0, 1), (3, 4)), (M,)),
        Rec("slice_strided", lambda x: lax.slice(x, (1, 0), (5, 4), (2, 3)), ((5, 4),)),
        Rec("dot_matmul", lambda x, y: lax.dot(x, y), (M, (4, 2))),
        Rec("dot_vec", lambda x, y: lax.dot(x, y), ((4,), (4,))),
        Rec("dot_general_batch", lambda x, y: lax.dot_general(
            x, y, (((2,), (1,)), ((0,), (0,)))), ((2, 3, 4), (2, 4, 5))),
        Rec("dot_general_mixed", lambda x, y: lax.dot_general(
            x, y, (((0, 2), (2, 1)), ((1,), (0,)))), ((2, 3, 4), (3, 4, 2))),
    ]
)
IDS = [r.name for r in RECORDS]


def _args(rec: Rec, rng) -> list:
    return [_rand(rng, s, rec.domain) for s in rec.shapes]


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_jvp_matches_finite_differences(rec, x64, rng):
    check_jvp(rec.fn, _args(rec, rng), rng, eps=rec.eps)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_vjp_is_transpose_of_jvp(rec, x64, rng):
    check_vjp(rec.fn, _args(rec, rng), rng, rec.vjp_tol)


SECOND = [r for r in RECORDS if r.name in {
    "sin", "tanh", "log", "sqrt", "logistic", "erf_inv", "mul", "div", "pow", "atan2",
    "max()(3, 4)", "reduce_prod(0, 2)", "reduce_max(1,)", "cumprod_axis0_revFalse",
    "cumlogsumexp_axis1_revTrue", "dot_general_batch", "pad", "select_n"}]


@pytest.mark.parametrize("rec", SECOND, ids=[r.name for r in SECOND])
def test_second_order(rec, x64, rng):
    check_second_order(rec.fn, _args(rec, rng), rng)


def test_zero_derivative_ops_give_zero_gradients(x64):
    x = np.array([-1.3, 0.2, 2.7])
    for f in (lax.sign, lax.floor, lax.ceil, lambda v: lax.round(v, 1)):
        np.testing.assert_array_equal(tj.grad(lambda v: tnp.sum(f(v) * 1.0))(x), 0.0)


def test_stop_gradient_blocks_the_derivative():
    f = lambda m, control: lambda x: m.sum(x * control.stop_gradient(x ** 2))  # noqa: E731
    x = np.array([1., -2., 3.], np.float32)
    np.testing.assert_allclose(tj.grad(f(tnp, lax))(x), jax.grad(f(jnp, jax.lax))(x))
    assert tj.grad(lambda x: lax.stop_gradient(x) * 1.0)(2.0) == 0.0
    tree = lax.stop_gradient({"a": np.float32(1.0), "n": 3})
    assert tree["n"] == 3 and float(tree["a"]) == 1.0


def test_derivative_conventions_match_jax():
    """max/min ties split evenly, abs'(0) = 1, sqrt'(0) = inf, prod with zeros is exact."""
    cases = [
        (lambda m: lambda x: m.max(x), np.array([1., 3., 3.], np.float32)),
        (lambda m: lambda x: m.maximum(x, 1.), np.float32(1.)),
        (lambda m: lambda x: m.abs(x), np.float32(0.)),
        (lambda m: lambda x: m.sqrt(x), np.float32(0.)),
        (lambda m: lambda x: m.prod(x), np.array([2., 0., 3., 0.5, 1.5], np.float32)),
        (lambda m: lambda x: m.prod(x), np.array([2., 0., 3., 4., 1.5], np.float32)),
        (lambda m: lambda x: m.sum(m.cumprod(x)), np.array([2., 0., 3., 4.], np.float32)),
        (lambda m: lambda x: m.sum(m.power(x, 2)), np.array([0., 1.5], np.float32)),
        (lambda m: lambda x: m.max(m.minimum(x, 2.)), np.array([3., 2., 1.], np.float32)),
    ]
    for make, x in cases:
        np.testing.assert_allclose(tj.grad(make(tnp))(x), jax.jit(jax.grad(make(jnp)))(x),
                                   rtol=1e-6)


# --- control flow --------------------------------------------------------------------------

def _scan_program(m):
    def f(x):
        def body(c, xi):
            return c * m.sin(xi) + xi, c * xi
        c, ys = (lax if m is tnp else jax.lax).scan(body, x[0], x)
        return c + m.sum(ys)
    return f


def _cond_program(m):
    control = lax if m is tnp else jax.lax

    def f(x):
        return m.sum(control.cond(m.sum(x) > 3, lambda y: m.sin(y) * 2, lambda y: y ** 2, x))
    return f


def _switch_program(m):
    control = lax if m is tnp else jax.lax

    def f(x, i):
        return control.switch(i, [m.sin, m.cos, lambda z: z * z * x], x)
    return f


def _fori_program(m):
    control = lax if m is tnp else jax.lax

    def f(x):
        return control.fori_loop(0, 4, lambda i, c: c * x + m.sin(c) * i, x)
    return f


@pytest.mark.parametrize("program", [_scan_program, _cond_program, _fori_program],
                         ids=["scan", "cond", "fori_loop"])
@pytest.mark.parametrize("x_scale", [1.0, 0.1])
def test_control_flow_gradients_match_jax(program, x_scale):
    x = np.arange(1., 5., dtype=np.float32) * x_scale
    if program is _fori_program:
        x = np.float32(1.3 * x_scale)
    expected = jax.grad(program(jnp))(x)
    for f in (tj.grad(program(tnp)), tj.jit(tj.grad(program(tnp))),
              tj.grad(tj.jit(program(tnp)))):
        np.testing.assert_allclose(f(x), expected, rtol=2e-5, atol=1e-6)
    _, t = tj.jvp(program(tnp), (x,), (np.ones_like(x),))
    _, t_jax = jax.jvp(program(jnp), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, t_jax, rtol=2e-5, atol=1e-6)


def test_control_flow_against_finite_differences(x64, rng):
    x = rng.uniform(0.5, 1.5, 4)
    for program in (_scan_program, _cond_program):
        check_jvp(program(tnp), [x], rng)
        check_vjp(program(tnp), [x], rng)
        check_jvp(tj.grad(program(tnp)), [x], rng, eps=1e-5, tol=1e-5)
    check_jvp(_fori_program(tnp), [np.float64(1.1)], rng)
    check_vjp(_fori_program(tnp), [np.float64(1.1)], rng)


def test_switch_gradient_per_branch():
    for i in range(3):
        got = tj.grad(_switch_program(tnp))(np.float32(0.7), i)
        expected = jax.jit(jax.grad(_switch_program(jnp)), static_argnums=1)(np.float32(0.7), i)
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_scan_reverse_and_ys_gradients(x64, rng):
    def f(x, w):
        def body(c, xi):
            c = tnp.tanh(c * w + xi)
            return c, c * xi
        c, ys = lax.scan(body, tnp.zeros(2), x, reverse=True)
        return tnp.sum(c) + tnp.sum(ys ** 2)
    args = [rng.standard_normal((5, 2)), rng.standard_normal(2)]
    check_jvp(f, args, rng)
    check_vjp(f, args, rng)


def test_reverse_mode_scan_is_a_scan_consuming_residuals():
    """The backward pass of a scan is itself one reverse scan over saved residuals."""
    jaxpr = tj.make_jaxpr(tj.grad(_scan_program(tnp)))(np.arange(1., 5., dtype=np.float32))
    scans = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert [e.params["reverse"] for e in scans] == [False, True]
    forward, backward = scans
    assert len(forward.outvars) > 3  # carry + ys + stacked residuals
    assert any(v in backward.invars for v in forward.outvars[3:])


def test_while_loop_forward_mode_and_reverse_mode_error():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]
    out, t = tj.jvp(f, (1.1,), (1.0,))
    np.testing.assert_allclose([out, t], [1.1 ** 5, 5 * 1.1 ** 4], rtol=1e-6)
    _, f_lin = tj.linearize(f, 1.1)
    np.testing.assert_allclose(f_lin(2.0), 10 * 1.1 ** 4, rtol=1e-6)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop.*Try using lax.scan"):
        tj.grad(f)(1.1)
    with pytest.raises(ValueError, match="fori_loop with static start/stop"):
        tj.jit(lambda n, x: tj.grad(lambda x: lax.fori_loop(0, n, lambda i, c: c * x, x))(x))(
            3, 1.)


def test_grad_of_python_control_flow_on_values():
    """Outside jit, a Python `if` on a differentiated value works (as in JAX)."""
    def f(x):
        return x ** 2 if x > 0 else -x
    assert tj.grad(f)(2.0) == 4.0 and tj.grad(f)(-2.0) == -1.0
    assert tj.jvp(f, (3.0,), (1.0,))[1] == 6.0


# --- composition ---------------------------------------------------------------------------

def _loss(m):
    def loss(params, x, y):
        h = m.tanh(x @ params["w1"] + params["b1"])
        logits = h @ params["w2"]
        return m.mean((logits - y) ** 2)
    return loss


def _params(rng, dtype=np.float32):
    return {"w1": rng.standard_normal((3, 5)).astype(dtype),
            "b1": rng.standard_normal(5).astype(dtype),
            "w2": rng.standard_normal((5, 2)).astype(dtype)}


def test_compositions_agree_with_jax(rng):
    params = _params(rng)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    y = rng.standard_normal((7, 2)).astype(np.float32)
    expected = jax.jit(jax.grad(_loss(jnp)))(params, x, y)
    loss = _loss(tnp)
    for g in (tj.grad(loss), tj.jit(tj.grad(loss)), tj.grad(tj.jit(loss)),
              tj.jit(tj.grad(tj.jit(loss)))):
        got = g(params, x, y)
        for k in expected:
            np.testing.assert_allclose(got[k], expected[k], rtol=1e-5, atol=1e-6)
            assert got[k].dtype == expected[k].dtype
    # per-example gradients: vmap of grad, and under jit
    per_ex = jax.jit(jax.vmap(jax.grad(_loss(jnp)), in_axes=(None, 0, 0)))(
        params, x[:, None], y[:, None])
    for f in (tj.vmap(tj.grad(loss), in_axes=(None, 0, 0)),
              tj.jit(tj.vmap(tj.grad(loss), in_axes=(None, 0, 0))),
              tj.vmap(tj.jit(tj.grad(loss)), in_axes=(None, 0, 0))):
        got = f(params, x[:, None], y[:, None])
        for k in per_ex:
            np.testing.assert_allclose(got[k], per_ex[k], rtol=1e-5, atol=1e-6)


def test_higher_order_and_jacobians_agree_with_jax(rng):
    x = rng.standard_normal(3).astype(np.float32)

    def energy(m):
        return lambda r: m.sum(m.sin(r) * r ** 2) + m.prod(r) + m.sum(m.outer(r, r) ** 2)

    checks = [
        (tj.grad(tj.grad(lambda v: tnp.sum(tnp.sin(v) * v))), jax.grad(jax.grad(
            lambda v: jnp.sum(jnp.sin(v) * v))), x[0]),
        (tj.hessian(energy(tnp)), jax.hessian(energy(jnp)), x),
        (tj.jit(tj.hessian(energy(tnp))), jax.hessian(energy(jnp)), x),
        (tj.jacfwd(lambda v: tnp.tanh(v) * v[0]), jax.jacfwd(lambda v: jnp.tanh(v) * v[0]), x),
        (tj.jacrev(lambda v: tnp.tanh(v) * v[0]), jax.jacrev(lambda v: jnp.tanh(v) * v[0]), x),
        (tj.jacobian(lambda v: v[:2] ** 3), jax.jacobian(lambda v: v[:2] ** 3), x),
        (tj.vmap(tj.hessian(energy(tnp))), jax.vmap(jax.hessian(energy(jnp))),
         np.stack([x, 2 * x])),
    ]
    for ours, theirs, arg in checks:  # (JAX jitted: its eager mode is slow here)
        np.testing.assert_allclose(ours(arg), jax.jit(theirs)(arg), rtol=2e-5, atol=1e-5)


def test_jacobian_pytree_structure_matches_jax():
    def f(m):
        return lambda d, s: {"a": d["u"] * 2 * s, "b": m.sum(d["v"]) * s}
    args = ({"u": np.ones(2, np.float32), "v": np.arange(3., dtype=np.float32)},
            np.float32(1.5))
    for jac in ("jacfwd", "jacrev"):
        ours = getattr(tj, jac)(f(tnp), argnums=(0, 1))(*args)
        theirs = jax.jit(getattr(jax, jac)(f(jnp), argnums=(0, 1)))(*args)
        assert tj.tree_util.tree_structure(ours) == tj.tree_util.tree_structure(
            jax.tree_util.tree_map(np.asarray, theirs))
        for a, b in zip(tj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            np.testing.assert_allclose(a, b, rtol=1e-6)
            assert np.shape(a) == np.shape(b)


def test_transformed_programs_run_on_the_native_backend(rng):
    """jit of every transformation order compiles natively and agrees with the interpreter."""
    params = _params(rng)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    y = rng.standard_normal((7, 2)).astype(np.float32)
    xs = np.arange(1., 9., dtype=np.float32).reshape(2, 4)
    programs = [
        (tj.grad(_loss(tnp)), (params, x, y)),
        (tj.vmap(tj.grad(_loss(tnp)), in_axes=(None, 0, 0)), (params, x[:, None], y[:, None])),
        (tj.vmap(tj.grad(_scan_program(tnp))), (xs,)),
        (tj.grad(_cond_program(tnp)), (xs[0],)),
        (tj.hessian(lambda v: tnp.sum(tnp.sin(v) * v[0]) + tnp.prod(v)), (xs[0],)),
        (lambda v: tj.jvp(lambda u: lax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * u), (0, u))[1], (v,),
            (tnp.ones_like(v),))[1], (xs[0],)),
    ]
    for f, args in programs:
        native = tj.jit(f, backend="native")(*args)
        reference = tj.jit(f, backend="interpret")(*args)
        for a, b in zip(tj.tree_util.tree_leaves(native), tj.tree_util.tree_leaves(reference)):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


# --- real programs -------------------------------------------------------------------------

def test_seed_jit_of_grad_compiles_forward_and_backward_together(rng):
    params = _params(rng)
    data = (rng.standard_normal((4, 3)).astype(np.float32),
            rng.standard_normal((4, 2)).astype(np.float32))

    def loss_fn(m):
        return lambda params, data: _loss(m)(params, *data)
    grad_fn = tj.jit(tj.grad(loss_fn(tnp)))
    got, expected = grad_fn(params, data), jax.jit(jax.grad(loss_fn(jnp)))(params, data)
    for k in expected:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-5, atol=1e-6)
    jaxpr = tj.make_jaxpr(tj.grad(loss_fn(tnp)))(params, data)
    names = {e.primitive.name for e in jaxpr.eqns}
    assert {"tanh", "dot_general", "transpose"} <= names  # forward and backward in one jaxpr


def test_logistic_regression_and_softmax_cross_entropy_match_jax(rng):
    x = rng.standard_normal((20, 4)).astype(np.float32)
    labels = (rng.uniform(size=20) > 0.5).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)

    def logreg(m, nn):
        def loss(w, b):
            z = x @ w + b
            return -m.mean(labels * nn.log_sigmoid(z) + (1 - labels) * nn.log_sigmoid(-z))
        return loss

    def xent(m, nn):
        def loss(logits):
            onehot = nn.one_hot(np.array([0, 2, 1]), 3)
            return -m.mean(m.sum(onehot * nn.log_softmax(logits), axis=-1))
        return loss

    logits = rng.standard_normal((3, 3)).astype(np.float32)
    for ours, theirs, args in (
            (tj.value_and_grad(logreg(tnp, tj.nn), argnums=(0, 1)),
             jax.value_and_grad(logreg(jnp, jax.nn), argnums=(0, 1)), (w, np.float32(0.1))),
            (tj.value_and_grad(xent(tnp, tj.nn)), jax.value_and_grad(xent(jnp, jax.nn)),
             (logits,))):
        got, expected = ours(*args), jax.jit(theirs)(*args)
        for a, b in zip(tj.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            assert a.dtype == b.dtype


def test_mlp_trained_inside_jit_with_fori_loop(rng):
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = np.sin(x @ np.array([[1.], [-2.], [0.5]], np.float32))
    loss = _loss(tnp)

    @tj.jit
    def train(params):
        def step(i, p):
            g = tj.grad(loss)(p, x, y)
            return tj.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
        return lax.fori_loop(0, 200, step, params)

    params = {"w1": rng.standard_normal((3, 5)).astype(np.float32) * 0.5,
              "b1": np.zeros(5, np.float32),
              "w2": rng.standard_normal((5, 1)).astype(np.float32) * 0.5}
    before = float(loss(params, x, y))
    after = float(loss(train(params), x, y))
    assert after < 0.5 * before


def test_gradient_through_scan_ode_integrator(x64, rng):
    """d(final state)/d(parameters) of an RK2 integrator written with scan, against FD."""
    def solve(theta, y0):
        def step(y, _):
            k1 = -theta[0] * y + theta[1] * tnp.sin(y)
            k2 = -theta[0] * (y + 0.05 * k1) + theta[1] * tnp.sin(y + 0.05 * k1)
            return y + 0.1 * k2, y
        y, traj = lax.scan(step, y0, None, length=30)
        return y + 0.1 * tnp.sum(traj)
    args = [np.array([0.7, 1.3]), np.float64(0.4)]
    check_jvp(solve, args, rng)
    check_vjp(solve, args, rng)
    g = tj.grad(solve)(*args)
    eps = 1e-6
    fd = [(solve(args[0] + eps * e, args[1]) - solve(args[0] - eps * e, args[1])) / (2 * eps)
          for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)


# --- custom rules, remat, linear_transpose -------------------------------------------------

def _custom_jvp_fun(api):
    @api.custom_jvp
    def f(x, y):
        return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        return f(x, y), 3.0 * tangents[0] + x * tangents[1]
    return f


def _custom_vjp_fun(api, m):
    @api.custom_vjp
    def f(x, y):
        return m.sin(x) * y

    def fwd(x, y):
        return f(x, y), (m.cos(x), y)

    def bwd(res, g):
        return 2.0 * res[0] * res[1] * g, None
    f.defvjp(fwd, bwd)
    return f


TRANSFORMS = [  # (transform of (api, f), whether its arguments are batched)
    (lambda api, f: api.grad(f, argnums=(0, 1)), False),
    (lambda api, f: api.jit(api.grad(f, argnums=(0, 1))), False),
    (lambda api, f: api.grad(api.jit(f), argnums=(0, 1)), False),
    (lambda api, f: api.vmap(api.grad(f, argnums=(0, 1))), True),
    (lambda api, f: api.grad(lambda x, y: api.vmap(f)(x, y).sum(), argnums=(0, 1)), True),
]


def test_custom_jvp_and_custom_vjp_match_jax():
    x, y = np.float32(0.3), np.float32(2.0)
    pairs = [(_custom_jvp_fun(tj), _custom_jvp_fun(jax)),
             (_custom_vjp_fun(tj, tnp), _custom_vjp_fun(jax, jnp))]
    for ours, theirs in pairs:
        for transform, batched in TRANSFORMS:
            a, b = (np.full(3, x), np.full(3, y)) if batched else (x, y)
            got, expected = transform(tj, ours)(a, b), transform(jax, theirs)(a, b)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-6)
    ours = _custom_jvp_fun(tj)
    np.testing.assert_allclose(tj.jvp(ours, (x, y), (1.0, 1.0))[1], 3.0 + x)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        tj.jvp(_custom_vjp_fun(tj, tnp), (x, y), (1.0, 1.0))


def _branching_custom_jvp(api, np_mod, calls):
    """A custom_jvp function with Python control flow on its argument (as library code has)."""
    @api.custom_jvp
    def f(x):
        calls.append("f")
        return np_mod.sin(x) if x > 0 else x

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("jvp")
        (x,), (t,) = primals, tangents
        return f(x), np_mod.cos(x) * t
    return f


@pytest.mark.parametrize("how", ["grad", "jvp", "call", "grad_of_grad_rule"])
def test_custom_jvp_function_is_not_traced_where_its_rule_or_value_serves(how):
    """Under grad/jvp the rule replaces the function, and on concrete values it runs as is,
    so `if x > 0` in it works, as in JAX; which of the two ran, in order, is JAX's too."""
    def run(api, np_mod):
        calls = []
        f = _branching_custom_jvp(api, np_mod, calls)
        out = {"grad": lambda: api.grad(f)(1.0),
               "jvp": lambda: api.jvp(f, (1.0,), (2.0,)),
               "call": lambda: f(2.0),
               "grad_of_grad_rule": lambda: api.grad(lambda v: f(v) * v)(0.5)}[how]()
        return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))], calls
    (ours, our_calls), (theirs, their_calls) = run(tj, tnp), run(jax, jnp)
    assert our_calls == their_calls
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-6)


def test_custom_jvp_closing_over_a_differentiated_value_raises():
    def outer(y):
        @tj.custom_jvp
        def f(x):
            return x * y

        @f.defjvp
        def f_jvp(primals, tangents):
            return f(primals[0]), tangents[0] * y
        return f(2.0)
    for g in (tj.grad(outer), tj.jit(tj.grad(outer))):
        with pytest.raises(TypeError, match="closed-over value"):
            g(3.0)
    np.testing.assert_allclose(tj.vmap(outer)(np.arange(3.0)), [0.0, 2.0, 4.0])


def test_custom_jvp_defjvps_and_nondiff_argnums():
    f = tj.custom_jvp(lambda x, y: x * y)
    f.defjvps(lambda g, ans, x, y: g * 10.0, lambda g, ans, x, y: g * 100.0)
    assert tj.grad(f, argnums=(0, 1))(2.0, 3.0) == (10.0, 100.0)

    def clip_body(lo, x):
        return tnp.maximum(x, lo)
    clip = tj.custom_vjp(clip_body, nondiff_argnums=(0,))
    clip.defvjp(lambda lo, x: (clip(lo, x), x), lambda lo, res, g: (g * (res > lo),))
    np.testing.assert_allclose(tj.grad(lambda x: tnp.sum(clip(0.5, x)))(
        np.array([0.1, 0.9], np.float32)), [0.0, 1.0])


def test_checkpoint_recomputes_instead_of_saving():
    def block(m):
        return lambda x: m.sin(m.sin(m.sin(x)))

    ours = lambda x: tj.checkpoint(block(tnp))(x) * 2  # noqa: E731
    theirs = lambda x: jax.checkpoint(block(jnp))(x) * 2  # noqa: E731
    x = np.float32(0.8)
    for transform, batched in ((lambda api, g: api.grad(g), False),
                               (lambda api, g: api.jit(api.grad(g)), False),
                               (lambda api, g: api.grad(api.grad(g)), False),
                               (lambda api, g: api.vmap(api.grad(g)), True)):
        arg = np.full(3, x) if batched else x
        np.testing.assert_allclose(transform(tj, ours)(arg), transform(jax, theirs)(arg),
                                   rtol=1e-6)
    # the forward pass runs inline (as JAX's) and saves only the input; the backward pass is
    # one checkpoint call that recomputes the sines from it
    jaxpr = tj.make_jaxpr(tj.grad(ours))(x)
    remat = [e for e in jaxpr.eqns if e.primitive.name == "checkpoint"]
    assert len(remat) == 1
    assert remat[0].invars[0] is jaxpr.jaxpr.invars[0]
    assert sum(e.primitive.name == "sin" for e in remat[0].params["jaxpr"].eqns) == 2
    assert tj.remat is tj.checkpoint


def test_linear_transpose_and_linearize_match_jax():
    f_ours = tj.linear_transpose(lambda x, y: 2 * x + y.sum(), np.float32(1.),
                                 np.ones(3, np.float32))
    f_jax = jax.linear_transpose(lambda x, y: 2 * x + y.sum(), np.float32(1.),
                                 np.ones(3, np.float32))
    for a, b in zip(f_ours(np.float32(3.)), f_jax(np.float32(3.))):
        np.testing.assert_allclose(a, b)
    out, f_jvp = tj.linearize(tnp.sin, 1.0)
    np.testing.assert_allclose(f_jvp(2.0), 2 * np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(out, np.sin(1.0), rtol=1e-6)


# --- API behaviour against JAX: dtypes, weak types, aux, argnums, errors -------------------

@pytest.mark.parametrize("case", [
    lambda api, m: api.grad(lambda x: x * 2.)(1.0),
    lambda api, m: api.grad(lambda x: x * 2.)(np.float32(1.0)),
    lambda api, m: api.grad(lambda x: m.sum(x ** 2))(np.ones(3, np.float16)),
    lambda api, m: api.value_and_grad(lambda x, y: x * y, argnums=(0, 1))(2.0, np.float32(3)),
    lambda api, m: api.grad(lambda x: (x * 2., {"aux": x}), has_aux=True)(1.0),
    lambda api, m: api.jvp(lambda x: m.sin(x), (1.0,), (1.0,)),
    lambda api, m: api.vjp(lambda x, y: x * y, 2.0, np.ones(2, np.float32))[1](
        np.ones(2, np.float32)),
    lambda api, m: api.grad(lambda x, y: x * y, argnums=1)(2.0, 3.0),
    lambda api, m: api.jacfwd(lambda x: x ** 2)(np.arange(3, dtype=np.float32)),
], ids=["weak", "strong", "f16", "value_and_grad", "has_aux", "jvp", "vjp", "argnums",
        "jacfwd"])
def test_results_and_dtypes_match_jax(case):
    ours, theirs = case(tj, tnp), case(jax, jnp)
    a_leaves, b_leaves = tj.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a_leaves) == len(b_leaves)
    for a, b in zip(a_leaves, b_leaves):
        np.testing.assert_allclose(a, b, rtol=1e-3)
        assert a.dtype == b.dtype  # (JAX's aux of a Python float is a float32 TypedFloat)
        if hasattr(b, "weak_type"):
            assert a.weak_type == b.weak_type


def test_integer_inputs_allow_int_and_float0():
    g = tj.grad(lambda x, y: x * y, argnums=(0, 1), allow_int=True)(2.0, 3)
    expected = jax.grad(lambda x, y: x * y, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert float(g[0]) == float(expected[0])
    assert g[1].dtype == expected[1].dtype == tj.float0
    _, t = tj.jvp(lambda x: x * 2, (1,), (np.zeros((), tj.float0),))
    assert t.dtype == tj.float0


@pytest.mark.parametrize("call", [
    lambda api: api.grad(lambda x: x * 2.)(np.ones(3, np.float32)),
    lambda api: api.grad(lambda x: x * 2.)(1),
    lambda api: api.grad(lambda x: x > 0)(1.),
    lambda api: api.grad(lambda x: (x, x))(1.),
    lambda api: api.grad(lambda x: x, argnums=2)(1.),
    lambda api: api.grad(lambda x: x, has_aux=True)(1.),
    lambda api: api.jvp(lambda x: x * 2, (1,), (1,)),
    lambda api: api.jvp(lambda x: x * 2, (1.,), (np.ones(2, np.float32),)),
    lambda api: api.jvp(lambda x: x, 1., 1.),
    lambda api: api.jvp(lambda x: x, (1.,), ([1.],)),
    lambda api: api.vjp(lambda x: x * 2., np.ones(2, np.float32))[1](np.ones(3, np.float32)),
    lambda api: api.vjp(lambda x: x * 2., np.ones(2, np.float32))[1](np.ones(2, np.int32)),
    lambda api: api.jacfwd(lambda x: x)(1),
], ids=["nonscalar", "int_input", "bool_output", "tuple_output", "argnums", "aux",
        "jvp_int_tangent", "jvp_shapes", "jvp_not_tuple", "jvp_trees", "vjp_shape",
        "vjp_dtype", "jacfwd_int"])
def test_errors_match_jax(call):
    with pytest.raises(Exception) as theirs:
        call(jax)
    with pytest.raises(type(theirs.value)) as ours:
        call(tj)
    first = str(theirs.value).split(".")[0].split(";")[0][:40]
    assert first in str(ours.value)


CLOSURE_CASES = {  # jit called on a closure over a value an enclosing transformation traces
    "grad": lambda j, m: j.grad(lambda x: j.jit(lambda y: y * x)(1.0))(2.0),
    "grad_twice": lambda j, m: j.grad(j.grad(lambda x: j.jit(lambda y: m.sin(y * x))(3.0)))(2.0),
    "vmap": lambda j, m: j.vmap(lambda x: j.jit(lambda y: y + x)(1.0))(
        m.arange(6.0).reshape(3, 2)),
    "jacfwd": lambda j, m: j.jacfwd(lambda x: j.jit(lambda y: m.sin(y * x))(1.0))(2.0),
    "vmap_grad": lambda j, m: j.vmap(j.grad(lambda x: j.jit(lambda y: y * x * x)(2.0)))(
        m.arange(3.0)),
}


@pytest.mark.parametrize("case", sorted(CLOSURE_CASES))
def test_jit_of_a_closure_over_an_outer_tracer(case):
    """The closed-over tracer is an input of the call equation, so the enclosing transformation
    sees it (it was once compiled as a constant: grad gave 0, vmap raised)."""
    ours = CLOSURE_CASES[case](tj, tnp)
    theirs = CLOSURE_CASES[case](jax, jnp)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


# --- transformations of concrete values while jit traces an unrelated function --------------

def _transformed_while_tracing(lib) -> tuple[dict, dict, np.ndarray]:
    """Transformations called, inside a function jit traces, on concrete values that do not
    depend on its argument: per case, each result leaf's (staged: a tracer of the jit's
    trace, shape, dtype, weak type); which calls raise; and the jit's output (their values)."""
    seen, raised = {}, {}
    lnp = lib.numpy
    c = np.arange(1.0, 4.0, dtype=np.float32)

    @lib.custom_jvp
    def twice_sin(v):
        return lnp.sin(v)
    twice_sin.defjvp(lambda p, t: (twice_sin(p[0]), 2.0 * t[0]))

    def rec(name, tree):
        leaves = lib.tree_util.tree_leaves(tree)
        seen[name] = [(isinstance(t, lib.core.Tracer), tuple(t.shape), str(t.dtype),
                       bool(lib.typeof(t).weak_type)) for t in leaves]
        return sum(lnp.sum(t) for t in leaves)

    def f(y):
        total = y
        total += rec("grad_scalar", lib.grad(lambda v: v ** 3)(2.0))
        total += rec("grad", lib.grad(lambda v: (v ** 2).sum())(c))
        total += rec("value_and_grad", lib.value_and_grad(lambda v: (v ** 3).sum())(c))
        total += rec("grad_aux", lib.grad(lambda v: ((v ** 2).sum(), v * 2), has_aux=True)(c))
        total += rec("argnums", lib.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(c, 2.0))
        total += rec("jvp", lib.jvp(lambda v: v * 2, (1.5,), (1.0,)))
        primal, pullback = lib.vjp(lnp.sin, c)
        total += rec("vjp", (primal, pullback(lnp.ones(3))))
        primal, tangent = lib.linearize(lnp.tanh, c)
        total += rec("linearize", (primal, tangent(c)))
        total += rec("jacfwd", lib.jacfwd(lnp.sin)(c))
        total += rec("jacrev", lib.jacrev(lnp.cos)(c))
        total += rec("hessian", lib.hessian(lambda v: (v ** 3).sum())(c))
        total += rec("vmap_grad", lib.vmap(lib.grad(lambda v: v ** 3))(c))
        total += rec("custom_jvp", lib.grad(lambda v: twice_sin(v).sum())(c))
        total += rec("checkpoint", lib.grad(lib.checkpoint(lambda v: lnp.sin(v).sum()))(c))
        total += rec("scan", lib.grad(lambda v: lib.lax.scan(
            lambda a, b: (a * b, a), 1.0, v)[0])(c))
        total += rec("cond", lib.grad(lambda v: lib.lax.cond(True, lnp.sin, lnp.cos, v).sum())(c))
        total += rec("float16", lib.grad(lambda v: (v * v).sum())(c.astype(np.float16)))
        total += rec("of_argument", lib.grad(lambda v: (v * y).sum())(c))
        g = lib.grad(lambda v: (v ** 2).sum())(c)
        try:
            float(g[1])
            raised["float"] = "no error"
        except Exception as e:  # noqa: BLE001 - its type is the answer
            raised["float"] = type(e).__name__
        with lib.ensure_compile_time_eval():  # (computed at once: concrete, Python may read it)
            g = lib.grad(lambda v: (v ** 2).sum())(c)
            total += rec("compile_time_eval", g)
            raised["compile_time_eval"] = float(g[1])
        return total

    out = lib.jit(f)(np.float32(0.5))
    return seen, raised, np.asarray(out)


def test_transformations_of_concrete_values_are_staged_while_jit_traces():
    """grad (and the other transformations) of values unrelated to the argument of a function
    jit traces are staged into its program as JAX stages them (tracers of that trace, the
    types JAX gives, JAX's error on reading one), computed at once only under
    ensure_compile_time_eval; the program's value is JAX's."""
    ours, theirs = _transformed_while_tracing(tj), _transformed_while_tracing(jax)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1] == {"float": "ConcretizationTypeError", "compile_time_eval": 4.0}
    assert all(staged for name, leaves in ours[0].items() if name != "compile_time_eval"
               for staged, *_ in leaves)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5)
