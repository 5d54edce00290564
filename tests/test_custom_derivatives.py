"""jax.custom_derivatives against real JAX: symbolic zeros in custom_jvp / custom_vjp rules,
custom_gradient, linear_call with its transpose, closure_convert; values, what each rule sees,
and gradients against finite differences."""
from functools import partial

import jax
import jax.custom_derivatives as jcd
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit as tj
import tracejit.custom_derivatives as tcd
import tracejit.numpy as tnp

APIS = [(tj, tnp, tcd), (jax, jnp, jcd)]


def _both(build):
    """build(api, np_module, custom_derivatives_module) for tracejit, then for JAX."""
    return [build(*api) for api in APIS]


def _close(ours, theirs, rtol=1e-6):
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol)


# --- symbolic zeros ------------------------------------------------------------------------

def _jvp_with_symbolic_zeros(api, m, cd, seen):
    @api.custom_jvp
    def f(x, y):
        return x * m.sin(y)

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append(tuple(type(t) is cd.SymbolicZero for t in tangents))
        if type(tx) is cd.SymbolicZero:
            assert tx.shape == m.shape(x) and repr(tx) == "SymbolicZero"
            return f(x, y), x * m.cos(y) * ty * 10.0  # scaled: shows which branch ran
        out_t = m.sin(y) * tx
        return f(x, y), out_t if type(ty) is cd.SymbolicZero else out_t + x * m.cos(y) * ty
    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


CALLS = {
    "grad_x": lambda api, f: api.grad(f)(1.5, 0.5),
    "grad_y": lambda api, f: api.grad(f, 1)(1.5, 0.5),
    "grad_both": lambda api, f: api.grad(f, (0, 1))(1.5, 0.5),
    "jit_grad_y": lambda api, f: api.jit(api.grad(f, 1))(1.5, 0.5),
    "grad_jit_y": lambda api, f: api.grad(api.jit(f), 1)(1.5, 0.5),
    "jvp_x": lambda api, f: api.jvp(lambda x: f(x, 0.5), (1.5,), (1.0,)),
    "vmap_grad_y": lambda api, f: api.vmap(api.grad(f, 1))(np.arange(3.0), np.ones(3)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_custom_jvp_symbolic_zeros_reach_the_rule_as_jax(call):
    """Unperturbed inputs' tangents arrive as SymbolicZero: the rule sees JAX's pattern."""
    results = []
    for api, m, cd in APIS:
        seen: list = []
        f = _jvp_with_symbolic_zeros(api, m, cd, seen)
        results.append((CALLS[call](api, f), seen))
    (ours, our_seen), (theirs, their_seen) = results
    _close(ours, theirs)
    assert set(our_seen) == set(their_seen)


def test_custom_jvp_rule_may_return_a_symbolic_zero():
    def build(api, m, cd):
        @api.custom_jvp
        def f(x, y):
            return x * y, x + y

        def f_jvp(primals, tangents):
            x, y = primals
            return f(x, y), (cd.SymbolicZero.from_primal_value(x), tangents[0])
        f.defjvp(f_jvp, symbolic_zeros=True)
        return (api.jvp(lambda x: f(x, 2.0), (3.0,), (1.0,)),
                api.grad(lambda x: f(x, 2.0)[1] + f(x, 2.0)[0])(3.0))
    _close(*_both(build))


def _vjp_with_symbolic_zeros(api, m, cd, seen):
    @api.custom_vjp
    def f(x, y):
        return x * y, m.sin(x)

    def fwd(x, y):
        seen.append(("fwd", type(x).__name__, bool(x.perturbed), bool(y.perturbed)))
        xv, yv = cd.custom_vjp_primal_tree_values((x, y))
        return f(xv, yv), (xv, yv)

    def bwd(res, cts):
        x, y = res
        c0, c1 = cts
        seen.append(("bwd", type(c0) is cd.SymbolicZero, type(c1) is cd.SymbolicZero))
        gx = m.zeros_like(x) if type(c0) is cd.SymbolicZero else c0 * y
        if type(c1) is not cd.SymbolicZero:
            gx = gx + c1 * m.cos(x)
        gy = cd.SymbolicZero(api.typeof(y)) if type(c0) is cd.SymbolicZero else c0 * x
        return gx, gy
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


VJP_CALLS = {
    "first_output_x": lambda api, f: api.grad(lambda x: f(x, 3.0)[0])(2.0),
    "second_output_both": lambda api, f: api.grad(lambda x, y: f(x, y)[1], (0, 1))(2.0, 3.0),
    "both_outputs_y": lambda api, f: api.grad(lambda y: sum(f(2.0, y)), 0)(3.0),
    "jit": lambda api, f: api.jit(api.grad(lambda x: f(x, 3.0)[1]))(2.0),
    "vmap": lambda api, f: api.vmap(api.grad(lambda x, y: f(x, y)[0], (0, 1)))(
        np.arange(3.0), np.ones(3)),
}


@pytest.mark.parametrize("call", sorted(VJP_CALLS))
def test_custom_vjp_symbolic_zeros_as_jax(call):
    """fwd gets CustomVJPPrimal(value, perturbed); zero cotangents reach bwd symbolically."""
    results = []
    for api, m, cd in APIS:
        seen: list = []
        results.append((VJP_CALLS[call](api, _vjp_with_symbolic_zeros(api, m, cd, seen)),
                        seen))
    (ours, our_seen), (theirs, their_seen) = results
    _close(ours, theirs)
    assert set(our_seen) == set(their_seen)


@pytest.mark.parametrize("call", ["grad", "jit", "vmap"])
def test_python_scalar_residuals_reach_bwd_unchanged(call):
    """A Python bool saved by fwd reaches bwd as that bool, as in JAX (equinox branches on its
    `perturbed` flags there), while array residuals stay arrays."""
    results = []
    for api, m, cd in APIS:
        seen: list = []

        @api.custom_vjp
        def f(x):
            return m.sin(x)

        def fwd(x):
            return m.sin(x), (True, 2, m.cos(x))

        def bwd(res, g):
            flag, k, c = res
            seen.append((type(flag), type(k)))
            return (g * c * k if flag else g,)
        f.defvjp(fwd, bwd)
        g = api.grad(lambda x: f(x))
        value = {"grad": lambda: g(0.5), "jit": lambda: api.jit(g)(0.5),
                 "vmap": lambda: api.vmap(g)(np.arange(3.0))}[call]()
        results.append((np.asarray(value), seen))
    (ours, our_seen), (theirs, their_seen) = results
    _close(ours, theirs)
    for flag, k in our_seen + their_seen:  # JAX's int is its TypedInt, an int subclass
        assert flag is bool and issubclass(k, int)


def test_zero_from_primal_and_primal_tree_values():
    tree = {"a": np.ones(3, np.float32), "b": np.int32(2)}
    for api, m, cd in APIS[:1]:
        zs = cd.zero_from_primal(tree, symbolic_zeros=True)
        theirs = jcd.zero_from_primal(tree, symbolic_zeros=True)
        assert [(z.shape, str(z.dtype)) for z in jax.tree_util.tree_leaves(zs)] == \
            [(z.shape, str(z.dtype)) for z in jax.tree_util.tree_leaves(theirs)]
        dense = cd.zero_from_primal(tree)
        _close(dense["a"], jcd.zero_from_primal(tree)["a"])
        with pytest.raises(TypeError, match="unexpected leaf type"):
            cd.custom_vjp_primal_tree_values((1.0,))


# --- custom_gradient -----------------------------------------------------------------------

def test_custom_gradient_matches_jax():
    def build(api, m, cd):
        @api.custom_gradient
        def square(x):
            return x ** 2, lambda g: (g * x,)

        @api.custom_gradient
        def mul(x, y):
            return x * y, lambda g: (g * y, g * x)

        @api.custom_gradient
        def clip_gradient(x):
            return x, lambda g: (m.clip(g, -0.1, 0.1),)

        xs = np.linspace(-1.0, 1.0, 4, dtype=np.float32)
        return (square(3.0), api.grad(square)(3.0), api.jit(api.grad(square))(3.0),
                api.vmap(api.grad(square))(xs), mul(3.0, 4.0),
                api.grad(mul, argnums=(0, 1))(3.0, 4.0),
                api.grad(lambda x: m.sum(clip_gradient(x * 5.0)))(xs),
                api.grad(lambda x: m.sum(m.sin(clip_gradient(x)) ** 2))(xs))
    _close(*_both(build))


# --- linear_call ---------------------------------------------------------------------------

def _transpose(api, f, example):
    def transposed(y):
        return api.linear_transpose(f, example)(y)[0]
    return transposed


def test_linear_call_and_its_transpose_match_jax():
    """JAX's docstring examples: the transpose used is the given one (7, not the identity)."""
    def build(api, m, cd):
        def div_add(x, denom):
            return x + cd.linear_call(lambda r, x: x / r, lambda r, t: t / r, denom, x)

        def custom_id(x):
            return cd.linear_call(lambda _, x: x, lambda _, t: 7.0 * m.ones_like(t), (), x)

        t = partial(_transpose, api)
        return (div_add(9.0, 3.0), t(partial(div_add, denom=3.0), 1.0)(18.0),
                custom_id(1.0), t(custom_id, 1.0)(1.0), t(t(custom_id, 1.0), 1.0)(1.0),
                t(t(t(custom_id, 1.0), 1.0), 1.0)(1.0),
                api.grad(lambda x: div_add(x, 3.0) * 2)(1.0),
                api.jit(api.grad(lambda x: div_add(x, 3.0)))(1.0),
                api.jvp(lambda x: div_add(x, 3.0), (1.0,), (1.0,)),
                api.jit(lambda x: div_add(x, 4.0))(np.arange(3.0, dtype=np.float32)))
    _close(*_both(build))


def test_linear_call_under_vmap_against_a_loop():
    """(JAX has no batching rule for linear_call; ours batches both the call and the given
    transpose, checked against a Python loop.)"""
    def div_add(x, denom):
        return x + tcd.linear_call(lambda r, x: x / r, lambda r, t: 2 * t / r, denom, x)
    xs, ds = np.arange(1.0, 4.0, dtype=np.float32), np.float32([2, 4, 8])
    g = tj.grad(div_add)
    loop = [g(x, d) for x, d in zip(xs, ds)]
    np.testing.assert_allclose(tj.vmap(g)(xs, ds), loop, rtol=1e-6)
    np.testing.assert_allclose(1 + 2 / ds, loop, rtol=1e-6)
    np.testing.assert_allclose(tj.grad(lambda x: tj.vmap(div_add)(x, ds).sum())(xs), loop,
                               rtol=1e-6)


def test_linear_call_rejects_a_differentiated_residual():
    f = lambda d: tcd.linear_call(lambda r, x: x / r, lambda r, t: t / r, d, 1.0)  # noqa: E731
    with pytest.raises(TypeError, match="residual arguments"):
        tj.grad(f)(2.0)


# --- closure_convert -----------------------------------------------------------------------

def test_closure_convert_hoists_differentiated_closures():
    """With a custom_vjp taking the converted function, gradients flow to the closed-over
    value through the hoisted arguments (JAX's docstring pattern)."""
    def build(api, m, cd):
        def apply(fn, x, *consts):
            return fn(x, *consts)
        apply = api.custom_vjp(apply, nondiff_argnums=(0,))

        def fwd(fn, x, *consts):
            return fn(x, *consts), (x, consts)

        def bwd(fn, res, g):
            x, consts = res
            _, vjp = api.vjp(fn, x, *consts)
            return vjp(g)
        apply.defvjp(fwd, bwd)

        def outer(w):
            conv, consts = cd.closure_convert(lambda x: m.sin(x * w), 1.0)
            return apply(conv, 2.0, *consts), len(consts)

        return (outer(0.3), api.grad(lambda w: outer(w)[0])(0.3))
    ours, theirs = _both(build)
    _close(ours, theirs)
    np.testing.assert_allclose(ours[1], 2.0 * np.cos(0.6), rtol=1e-6)


def test_closure_convert_checks_the_argument_structure():
    conv, consts = tcd.closure_convert(lambda x: x[0] * 2, (1.0,))
    assert consts == [] and float(conv((3.0,))) == 6.0
    with pytest.raises(TypeError, match="same Pytree structure"):
        conv([3.0, 4.0])


def test_custom_vjp_bwd_wrong_shape_is_jaxs_value_error():
    """A bwd rule returning a cotangent of the wrong shape: ValueError with JAX's message."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import pytest

    import tracejit
    import tracejit.numpy as tnp
    messages = []
    for lib, np_ in ((jax, jnp), (tracejit, tnp)):
        @lib.custom_vjp
        def f(x):
            return np_.sin(x)
        f.defvjp(lambda x: (f(x), x), lambda r, g: (np_.ones(3),))
        with pytest.raises(ValueError) as info:
            lib.grad(lambda x: f(x).sum())(np.ones(2, np.float32))
        messages.append(str(info.value))
    assert messages[1] == messages[0]
