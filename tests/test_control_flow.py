"""lax control flow (cond, switch, scan, while_loop, fori_loop, map, associative_scan) against
real JAX: values, dtypes, weak types, pytrees, closures, nesting, jaxprs, and error classes and
messages.

Every case is written once against a (jit, lax, jnp) triple and run on both libraries."""
import jax
import numpy as np
import pytest

import tracejit
from tracejit.core import jaxpr as jaxpr_mod

JAX = (jax, jax.lax, jax.numpy)
TJ = (tracejit, tracejit.lax, tracejit.numpy)


def assert_same(ours, theirs, path="out"):
    """Same pytree structure, and per leaf the same value, shape, dtype and weak type."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (path, ours, theirs)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys(), (path, ours, theirs)
        for k in theirs:
            assert_same(ours[k], theirs[k], f"{path}[{k!r}]")
    elif theirs is None:
        assert ours is None, path
    else:
        a, b = np.asarray(ours), np.asarray(theirs)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), (path, a, b)
        assert getattr(ours, "weak_type", type(ours)) == getattr(theirs, "weak_type",
                                                                 type(theirs)), path
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6, err_msg=path)


F = np.float32
X3 = np.array([0.5, -1.25, 2.0], F)
U43 = np.arange(12, dtype=F).reshape(4, 3) / 7
V4 = np.array([1.0, -2.0, 3.5, 0.25], F)
I3 = np.array([1, 2, 3], np.int32)
W3 = np.array([2.0, 3.0, -1.0], F)  # closed over (a constant of the traced bodies)


# --- the seed's examples -------------------------------------------------------------------

def symplectic_euler_step(state, dt):
    q, p = state
    p = p - dt * q  # harmonic oscillator: force = -q
    q = q + dt * p
    return q, p


def leapfrog_step(state, dt):
    q, p = state
    p_half = p - 0.5 * dt * q
    q = q + dt * p_half
    return q, p_half - 0.5 * dt * q


def dynamics_step(lax, state, dt, method_selector):
    return lax.cond(method_selector > 0, symplectic_euler_step, leapfrog_step, state, dt)


def fixed_point_iteration(lax, jnp, initial_guess, coeff, num_iters):
    def body_fun(carry, _):
        x = carry
        next_x = jnp.cos(coeff * x)
        return next_x, None
    final_x, _ = lax.scan(body_fun, initial_guess, xs=None, length=num_iters)
    return final_x


# --- value cases: (id, fn(lax, jnp, *args), args) ------------------------------------------

def _cond_pytree(lax, jnp, p, x, y):
    return lax.cond(p, lambda a, b: {"s": a + b, "d": (a - b, b * 2)},
                    lambda a, b: {"s": a * b, "d": (a * 3, b)}, x, y)


def _switch3(lax, jnp, i, x):
    return lax.switch(i, [lambda v: (v["a"] + 1, v["b"]), lambda v: (v["a"] * 2, -v["b"]),
                          lambda v: (v["a"] - v["b"], v["b"] * v["b"])],
                      {"a": x, "b": F(1.5)})


def _collatz_steps(lax, jnp, n):
    def body(s):
        n, k = s
        n = lax.select(lax.eq(lax.rem(n, 2), 0), lax.div(n, 2), 3 * n + 1)
        return n, k + 1
    return lax.while_loop(lambda s: lax.ne(s[0], 1), body, (n, 0))


def _nested(lax, jnp, x, n):
    """scan inside cond inside while (inside jit when run under jit)."""
    def inner_scan(c):
        return lax.scan(lambda a, u: (a + u * x, a * W3), c, U43)

    def body(state):
        i, c = state
        c2, ys = lax.cond(lax.gt(i, 1), inner_scan, lambda c: (c * 2.0, U43 + c), c)
        return i + 1, c2 + ys.sum(0)
    return lax.while_loop(lambda s: lax.lt(s[0], n), body, (0, jnp.asarray(X3)))


def _scan_pytree(lax, jnp, u, v, a):
    def f(carry, x):
        a, d = carry
        new = (a + x["u"] * d["b"], {"b": d["b"] + x["v"]})
        return new, (a.sum() * x["v"], {"z": x["u"] - a})
    return lax.scan(f, (a, {"b": F(1.0)}), {"u": u, "v": v})


VALUE_CASES = [
    ("cond_pytree_true", _cond_pytree, (True, X3, F(2.0))),
    ("cond_pytree_false", _cond_pytree, (False, X3, F(2.0))),
    ("cond_int_pred", _cond_pytree, (2, X3, F(2.0))),
    ("cond_int_pred_zero", _cond_pytree, (np.int32(0), X3, F(2.0))),
    ("cond_float_pred_nan", _cond_pytree, (F(np.nan), X3, F(2.0))),
    ("cond_python_scalar_operands", lambda lax, jnp, p: lax.cond(
        p, lambda a, b: a * b, lambda a, b: a - b, 3.0, 2), (False,)),
    ("cond_weak_true_strong_false", lambda lax, jnp, p: lax.cond(
        p, lambda: 1.0, lambda: jnp.float32(2)), (True,)),
    ("cond_strong_true_weak_false", lambda lax, jnp, p: lax.cond(
        p, lambda: jnp.float32(2), lambda: 1.0), (True,)),
    ("cond_list_and_none", lambda lax, jnp, p, x: lax.cond(
        p, lambda v, _: [v, None, v * 2], lambda v, _: [v + 1, None, v], x, None), (True, X3)),
    ("cond_operand_keyword", lambda lax, jnp, p, x: lax.cond(
        p, lambda v: v + 1, lambda v: v - 1, operand=x), (False, X3)),
    ("cond_closure", lambda lax, jnp, p, x: lax.cond(
        p, lambda: x * W3, lambda: x + W3), (True, X3)),
    ("cond_seed_symplectic", lambda lax, jnp, q, p, dt, m: dynamics_step(lax, (q, p), dt, m),
     (X3, W3, F(0.1), F(1.0))),
    ("cond_seed_leapfrog", lambda lax, jnp, q, p, dt, m: dynamics_step(lax, (q, p), dt, m),
     (X3, W3, F(0.1), F(-1.0))),
    ("switch_negative_index", _switch3, (-1, X3)),
    ("switch_0", _switch3, (0, X3)),
    ("switch_1", _switch3, (np.int32(1), X3)),
    ("switch_2", _switch3, (2, X3)),
    ("switch_out_of_range", _switch3, (7, X3)),
    ("switch_uint8_index", _switch3, (np.uint8(1), X3)),
    ("scan_pytree", _scan_pytree, (U43, V4, X3)),
    ("scan_reverse", lambda lax, jnp, u: lax.scan(
        lambda c, x: (c * 0.5 + x, c), np.zeros(3, F), u, reverse=True), (U43,)),
    ("scan_xs_none_length", lambda lax, jnp, x: lax.scan(
        lambda c, _: (c * 1.5 - 1, c.sum()), x, None, length=5), (X3,)),
    ("scan_length_zero", lambda lax, jnp, x: lax.scan(
        lambda c, u: (c + u, (u * 2, c)), x, np.zeros((0, 3), F)), (X3,)),
    ("scan_none_ys", lambda lax, jnp, u: lax.scan(
        lambda c, x: (c + x, None), np.zeros(3, F), u), (U43,)),
    ("scan_unroll_2", lambda lax, jnp, u: lax.scan(
        lambda c, x: (c + x, c * x), np.ones(3, F), u, unroll=2), (U43,)),
    ("scan_unroll_true", lambda lax, jnp, u: lax.scan(
        lambda c, x: (c - x, c), np.ones(3, F), u, unroll=True), (U43,)),
    ("scan_closure", lambda lax, jnp, u, y: lax.scan(
        lambda c, x: (c + x * y + W3, c * y), W3, u), (U43, F(0.5))),
    ("scan_weak_int_carry", lambda lax, jnp, xs: lax.scan(
        lambda c, x: (c + x, c), 0, xs), (I3,)),
    ("scan_weak_carry_promoted", lambda lax, jnp, xs: lax.scan(
        lambda c, x: (c + x, c), 0, xs), (V4,)),
    ("scan_list_pair", lambda lax, jnp, xs: lax.scan(
        lambda c, x: [c * x, x], 1.0, xs), (V4,)),
    ("scan_seed_fixed_point", lambda lax, jnp, x0, coeff: fixed_point_iteration(
        lax, jnp, x0, coeff, 50), (X3, F(0.9))),
    ("map", lambda lax, jnp, u: lax.map(lambda r: r * 2 + 1, u), (U43,)),
    ("map_pytree", lambda lax, jnp, u, v: lax.map(
        lambda d: {"s": d[0].sum() + d[1]}, (u, v)), (U43, V4)),
    ("while_collatz", _collatz_steps, (np.int32(27),)),
    ("while_zero_iterations", lambda lax, jnp, x: lax.while_loop(
        lambda c: lax.gt(c[0], 100.0), lambda c: (c[0] * 2, c[1]), (x, {"k": 1})),
     (F(3.0),)),
    ("while_closure", lambda lax, jnp, x, y: lax.while_loop(
        lambda c: lax.lt(c, y), lambda c: c + x, 0.0), (F(0.75), F(10.0))),
    ("fori_concrete", lambda lax, jnp, x: lax.fori_loop(
        0, 5, lambda i, c: c * 2.0 + i, x), (X3,)),
    ("fori_empty_range", lambda lax, jnp, x: lax.fori_loop(
        5, 2, lambda i, c: c + i, x), (X3,)),
    ("fori_weak_int_to_float", lambda lax, jnp: lax.fori_loop(
        0, 3, lambda i, x: x + 1.0, 0), ()),
    ("fori_weak_int", lambda lax, jnp: lax.fori_loop(0, 3, lambda i, x: x + i, 0), ()),
    ("fori_weak_float", lambda lax, jnp: lax.fori_loop(0, 3, lambda i, x: x + i, 0.0), ()),
    ("fori_weak_int_strong_float", lambda lax, jnp: lax.fori_loop(
        0, 3, lambda i, x: x + jnp.float32(1), 0), ()),
    ("fori_mixed_weak_bounds", lambda lax, jnp, x: lax.fori_loop(
        np.int32(1), 4, lambda i, c: c * i, x), (X3,)),
    ("fori_float_bounds", lambda lax, jnp: lax.fori_loop(
        0.0, 3.0, lambda i, c: c + i, 0), ()),
    ("nested", _nested, (F(0.5), 4)),
    ("associative_scan_add", lambda lax, jnp, x: lax.associative_scan(lax.add, x),
     (np.arange(1, 8, dtype=F),)),
    ("associative_scan_reverse_axis", lambda lax, jnp, u: lax.associative_scan(
        lax.max, u, reverse=True, axis=1), (U43 * np.array([1, -1, 1], F),)),
    ("associative_scan_pytree", lambda lax, jnp, x: lax.associative_scan(
        lambda a, b: {"p": a["p"] * b["p"], "s": a["s"] + b["s"]}, {"p": x, "s": x}), (V4,)),
    ("associative_scan_bool", lambda lax, jnp, m: lax.associative_scan(lax.bitwise_or, m),
     (np.array([False, True, False, False, True]),)),
    ("associative_scan_short", lambda lax, jnp, x: lax.associative_scan(lax.add, x),
     (np.ones(1, F),)),
]


@pytest.mark.parametrize("name,fn,args", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_match_jax(name, fn, args):
    def run(impl, jit):
        mod, lax, jnp = impl
        f = lambda *a: fn(lax, jnp, *a)  # noqa: E731
        return mod.jit(f)(*args) if jit else f(*args)

    assert_same(run(TJ, jit=False), run(JAX, jit=False))
    assert_same(run(TJ, jit=True), run(JAX, jit=True))


@pytest.mark.parametrize("name,fn,args", [c for c in VALUE_CASES if c[0] in (
    "cond_pytree_true", "switch_out_of_range", "scan_pytree", "scan_reverse", "while_collatz",
    "fori_concrete", "fori_weak_int_to_float", "nested")])
def test_disable_jit_matches_jax(name, fn, args):
    def run(impl):
        mod, lax, jnp = impl
        with mod.disable_jit():
            return fn(lax, jnp, *args)

    assert_same(run(TJ), run(JAX))


def test_fori_loop_traced_bounds_lowers_to_while():
    def f(jax_mod, lax, lo, hi, x):
        return jax_mod.jit(lambda lo, hi, x: lax.fori_loop(
            lo, hi, lambda i, c: c * 1.5 + i, x))(lo, hi, x)

    for lo, hi in [(0, 4), (3, 1), (np.int32(-2), np.int32(2))]:
        assert_same(f(*TJ[:2], lo, hi, X3), f(*JAX[:2], lo, hi, X3))
    text = str(tracejit.make_jaxpr(lambda n: tracejit.lax.fori_loop(
        0, n, lambda i, c: c + i, 0.0))(3))
    assert "while[" in text and "scan[" not in text
    text = str(tracejit.make_jaxpr(lambda: tracejit.lax.fori_loop(
        0, 3, lambda i, c: c + i, 0.0))())
    assert "scan[" in text and "while[" not in text


def test_fori_loop_index_dtypes_x64(x64):
    cases = [
        lambda jax_mod, lax: lax.fori_loop(0, 3, lambda i, c: c + i, 0),
        lambda jax_mod, lax: lax.fori_loop(0, 3, lambda i, c: c + i, 0.0),
        lambda jax_mod, lax: lax.fori_loop(0, 3, lambda i, c: c + i, np.float32(0)),
        lambda jax_mod, lax: jax_mod.jit(lambda n: lax.fori_loop(
            0, n, lambda i, c: (c[0] + i, i), (0.0, np.int16(0))))(np.int16(4)),
        lambda jax_mod, lax: jax_mod.jit(lambda n: lax.fori_loop(
            0, n, lambda i, c: c + i, 0.0))(3),
        lambda jax_mod, lax: lax.scan(lambda c, x: (c + x, c * 2), 0.0, np.arange(4.0)),
    ]
    for case in cases:
        assert_same(case(*TJ[:2]), case(*JAX[:2]))


def test_cond_traces_both_branches_once():
    def count(impl, jit):
        mod, lax, _ = impl
        calls = []

        def f(p, x):
            return lax.cond(p, lambda v: calls.append("t") or v + 1,
                            lambda v: calls.append("f") or v - 1, x)
        (mod.jit(f) if jit else f)(True, X3)
        return calls

    for jit in (False, True):
        assert count(TJ, jit) == count(JAX, jit) == ["t", "f"]


def test_legacy_cond_with_an_operand_per_branch():
    """cond(pred, true_operand, true_fun, false_operand, false_fun), eagerly and under jit."""
    def f(mod, lax, p):
        return lax.cond(p, 1.5, lambda x: x + 1, np.float32(2.0), lambda x: x * 2)
    for p in (True, False):
        assert_same(f(*TJ[:2], p), f(*JAX[:2], p))
        assert_same(TJ[0].jit(lambda q: f(*TJ[:2], q))(p), JAX[0].jit(lambda q: f(*JAX[:2], q))(p))


def _scan_closing_over(lax):
    return lambda x, y: lax.scan(lambda c, _: (c + y, c * y), x, None, length=3)


def test_closure_over_outer_tracer_becomes_operand():
    closed = tracejit.make_jaxpr(_scan_closing_over(tracejit.lax))(X3, F(2.0))
    (eqn,) = closed.jaxpr.eqns
    assert eqn.primitive.name == "scan" and eqn.params["num_consts"] == 1
    assert eqn.invars[0] is closed.jaxpr.invars[1]  # y is passed in, not baked in
    assert eqn.params["jaxpr"].consts == []
    assert_same(tracejit.jit(_scan_closing_over(tracejit.lax))(X3, F(2.0)),
                jax.jit(_scan_closing_over(jax.lax))(X3, F(2.0)))


def test_caller_arrays_stay_writable_and_forwarded_carries_come_back_as_given():
    x = np.array([1.0, 2.0], F)
    out = tracejit.lax.cond(True, lambda v: v, lambda v: v, x)
    stopped = tracejit.lax.while_loop(lambda c: tracejit.lax.lt(c.sum(), 0.0),
                                      lambda c: c * 2, x)
    x[0] = 5.0  # neither call froze the caller's buffer
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(stopped), [1.0, 2.0])
    for lax in (jax.lax, tracejit.lax):  # an unchanged carry is the init object itself
        carry, _ = lax.scan(lambda c, u: (c, u), x, None, length=2)
        assert carry is x
        result = lax.fori_loop(0, 3, lambda i, c: c, 2.5)
        assert type(result) is float and result == 2.5


# --- printed jaxprs: the same text as JAX's (whitespace aside) ------------------------------

JAXPR_CASES = [
    ("scan", lambda lax: lambda x: lax.scan(lambda c, x: (c + x, c * 2), 0.0, x), (V4,)),
    ("scan_reverse_consts", lambda lax: lambda x, y: lax.scan(
        lambda c, u: (c * y + u, u), x, U43, reverse=True), (X3, F(2.0))),
    ("cond", lambda lax: lambda x: lax.cond(
        lax.gt(x, 0.0), lambda x: x + 1, lambda x: x - 1, x), (F(1.0),)),
    ("switch", lambda lax: lambda i: lax.switch(
        i, [lambda: 1.0, lambda: 2.0, lambda: 3.0]), (1,)),
    ("while", lambda lax: lambda x: lax.while_loop(
        lambda c: lax.lt(c, 10.0), lambda c: c + x, 0.0), (F(1.0),)),
    ("map", lambda lax: lambda x: lax.map(lambda x: x * 2, x), (V4,)),
    ("scan_unchanged_carry", lambda lax: lambda xs, y: lax.scan(
        lambda c, x: ((c[0] + x, c[1]), x * c[1]), (0.0, y), xs), (V4, F(2.0))),
    ("scan_ys_are_xs", lambda lax: lambda xs: lax.scan(
        lambda c, x: (c + x, x), 0.0, xs), (V4,)),
    ("cond_passthrough", lambda lax: lambda p, x, y: lax.cond(
        p, lambda a, b: (a, b + 1), lambda a, b: (a, b - 1), x, y), (True, X3, F(2.0))),
    ("while_unchanged_carry", lambda lax: lambda y: lax.while_loop(
        lambda c: lax.lt(c[0], 10.0), lambda c: (c[0] + c[1], c[1]), (0.0, y)), (F(2.0),)),
]


@pytest.mark.parametrize("name,make,args", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_make_jaxpr_matches_jax(name, make, args):
    ours = tracejit.make_jaxpr(make(tracejit.lax))(*args)
    jaxpr_mod.check_jaxpr(ours.jaxpr)
    theirs = jax.make_jaxpr(make(jax.lax))(*args)
    assert " ".join(str(ours).split()) == " ".join(str(theirs).split())


def test_scan_jaxpr_is_nested():
    closed = tracejit.make_jaxpr(
        lambda x: tracejit.lax.scan(lambda c, u: (c + u, c), 0.0, x))(V4)
    text = str(closed)
    assert "scan[" in text and "jaxpr={ lambda ; " in text
    (eqn,) = closed.jaxpr.eqns
    body = eqn.params["jaxpr"]
    assert [a.str_short() for a in body.in_avals] == ["f32[]", "f32[]"]
    assert eqn.params["length"] == 4 and eqn.params["num_carry"] == 1


# --- errors: the same exception class as JAX (and the same message where marked) ----------

def _carry_dtype(lax, jnp):
    return lax.scan(lambda c, x: (c.astype(jnp.float32), x), jnp.int32(0), I3)


ERROR_CASES = [
    # (id, fn(lax, jnp), message: True = JAX's exact text, a str = the start both share)
    ("cond_dtype_mismatch", lambda lax, jnp: lax.cond(True, lambda: 1, lambda: 2.0), True),
    ("cond_structure_mismatch", lambda lax, jnp: lax.cond(
        True, lambda: (1.0, 2.0), lambda: [1.0, 2.0]), True),
    ("cond_length_mismatch", lambda lax, jnp: lax.cond(
        True, lambda: (1.0, 2.0), lambda: (1.0, 2.0, 3.0)), True),
    ("cond_dict_keys_mismatch", lambda lax, jnp: lax.cond(
        True, lambda: {"a": 1.0, "b": 2.0}, lambda: {"a": 1.0, "c": 2.0}), True),
    ("cond_shape_mismatch_path", lambda lax, jnp: lax.cond(
        True, lambda: {"a": jnp.ones(2)}, lambda: {"a": jnp.ones(3)}), True),
    ("cond_two_dtype_mismatches", lambda lax, jnp: lax.cond(
        True, lambda: (1, 2), lambda: (1.0, 2.0)), True),
    ("cond_leaf_vs_none", lambda lax, jnp: lax.cond(True, lambda: 1, lambda: None), True),
    ("cond_pred_vector", lambda lax, jnp: lax.cond(
        np.array([True]), lambda: 1.0, lambda: 2.0), True),
    ("cond_pred_complex", lambda lax, jnp: lax.cond(
        np.complex64(1), lambda: 1.0, lambda: 2.0), True),
    ("cond_pred_none", lambda lax, jnp: lax.cond(None, lambda: 1.0, lambda: 2.0), True),
    ("cond_pred_tuple", lambda lax, jnp: lax.cond((True,), lambda: 1.0, lambda: 2.0), True),
    ("cond_not_callable", lambda lax, jnp: lax.cond(True, 1, lambda: 1.0), True),
    ("cond_operand_and_keyword", lambda lax, jnp: lax.cond(
        True, lambda x: x, lambda x: x, 1, operand=2),
     "if 'operand' keyword is passed then no positional operands can be passed"),
    ("cond_returns_string", lambda lax, jnp: lax.cond(True, lambda: "a", lambda: "b"), None),
    ("cond_operand_string", lambda lax, jnp: lax.cond(True, lambda x: 1, lambda x: 2, "a"),
     None),
    ("switch_float_index", lambda lax, jnp: lax.switch(1.0, [lambda: 1.0, lambda: 2.0]), True),
    ("switch_bool_index", lambda lax, jnp: lax.switch(True, [lambda: 1.0, lambda: 2.0]), True),
    ("switch_vector_index", lambda lax, jnp: lax.switch(
        np.array([1]), [lambda: 1.0, lambda: 2.0]), True),
    ("switch_empty", lambda lax, jnp: lax.switch(0, []), True),
    ("switch_not_callable", lambda lax, jnp: lax.switch(0, [1, lambda: 1.0]), True),
    ("switch_shape_mismatch", lambda lax, jnp: lax.switch(
        1, [lambda: 1.0, lambda: jnp.ones(2)]), True),
    ("scan_carry_dtype", _carry_dtype, True),
    ("scan_carry_structure", lambda lax, jnp: lax.scan(
        lambda c, x: ((c, c), x), jnp.int32(0), I3),
     "scan body function carry input and carry output must have the same pytree structure, "
     "but they differ:\n\nThe input carry c is a <class "),
    ("scan_carry_tuple_length", lambda lax, jnp: lax.scan(
        lambda c, x: ((c[0], c[1], 1), x), (1, 2), I3), True),
    ("scan_carry_dict_children", lambda lax, jnp: lax.scan(
        lambda c, x: ({"a": c["a"], "b": 1}, x), {"a": 0}, I3), True),
    ("scan_carry_dict_keys", lambda lax, jnp: lax.scan(
        lambda c, x: ({"a": c["b"]}, x), {"b": 0}, I3), True),
    ("scan_carry_shape_path", lambda lax, jnp: lax.scan(
        lambda carry, x: ({"a": carry["a"], "b": lax.expand_dims(carry["b"], (0,))}, x),
        {"a": 1.0, "b": jnp.ones(2)}, I3), True),
    ("scan_carry_two_mismatches", lambda lax, jnp: lax.scan(
        lambda c, x: ((c[0].astype(jnp.float32), lax.expand_dims(c[1], (0,))), x),
        (jnp.int32(1), 2.0), I3), True),
    ("scan_length_disagrees", lambda lax, jnp: lax.scan(
        lambda c, x: (c, x), 0, I3, length=4), True),
    ("scan_different_lengths", lambda lax, jnp: lax.scan(
        lambda c, x: (c, x), 0, (I3, V4)), True),
    ("scan_nothing_to_scan", lambda lax, jnp: lax.scan(lambda c, x: (c, x), 0, None), True),
    ("scan_python_scalar_xs", lambda lax, jnp: lax.scan(lambda c, x: (c, x), 0, 3), True),
    ("scan_rank0_xs", lambda lax, jnp: lax.scan(lambda c, x: (c, x), 0, np.float32(1)), None),
    ("scan_body_not_pair", lambda lax, jnp: lax.scan(lambda c, x: c, 0, I3),
     "scan body output must be a pair, got "),
    ("scan_body_triple", lambda lax, jnp: lax.scan(lambda c, x: (c, x, x), 0, I3),
     "scan body output must be a pair, got "),
    ("scan_negative_unroll", lambda lax, jnp: lax.scan(
        lambda c, x: (c, x), 0, I3, unroll=-1), True),
    ("scan_not_callable", lambda lax, jnp: lax.scan(3, 0, None, length=2), True),
    ("while_cond_int", lambda lax, jnp: lax.while_loop(
        lambda c: c, lambda c: c + 1, jnp.int32(0)), True),
    ("while_cond_pair", lambda lax, jnp: lax.while_loop(
        lambda c: (lax.lt(c, 3), lax.lt(c, 3)), lambda c: c + 1, 0), True),
    ("while_cond_vector", lambda lax, jnp: lax.while_loop(
        lambda c: np.array([True]), lambda c: c + 1, 0), True),
    ("while_carry_dtype", lambda lax, jnp: lax.while_loop(
        lambda c: lax.lt(c, 3), lambda c: c + 1.0, jnp.int32(0)), True),
    ("while_carry_structure", lambda lax, jnp: lax.while_loop(
        lambda c: lax.lt(c, 3), lambda c: (c + 1, c), 0),
     "while_loop body function carry input and carry output must have the same pytree "
     "structure"),
    ("while_not_callable", lambda lax, jnp: lax.while_loop(3, lambda c: c, 0), True),
    ("fori_bounds_dtypes", lambda lax, jnp: lax.fori_loop(
        jnp.int32(0), jnp.int16(3), lambda i, c: c, 0), True),
    ("fori_float_and_int_bounds", lambda lax, jnp: lax.fori_loop(
        jnp.float32(0), 3, lambda i, c: c, 0), True),
    ("fori_carry_dtype", lambda lax, jnp: lax.fori_loop(
        0, 3, lambda i, c: c.astype(jnp.float32), jnp.int32(0)), True),
    ("fori_not_callable", lambda lax, jnp: lax.fori_loop(0, 2, 3, 0), True),
    ("map_scalar", lambda lax, jnp: lax.map(lambda x: x, 3), True),
    ("associative_scan_lengths", lambda lax, jnp: lax.associative_scan(
        lax.add, (I3, np.arange(4))), None),
    ("associative_scan_not_callable", lambda lax, jnp: lax.associative_scan(1, I3), True),
]


def assert_same_error(ours: Exception, theirs: Exception) -> None:
    """The same class: JAX's own classes by name, and every builtin class JAX's derives from."""
    builtin = [c for c in type(theirs).__mro__ if c.__module__ == "builtins"]
    assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
    assert all(isinstance(ours, c) for c in builtin), (ours, theirs)


def _error(impl_lax, impl_jnp, fn):
    with pytest.raises(Exception) as info:
        fn(impl_lax, impl_jnp)
    return info.value


@pytest.mark.parametrize("name,fn,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_jax(name, fn, message):
    theirs = _error(JAX[1], JAX[2], fn)
    ours = _error(TJ[1], TJ[2], fn)
    assert_same_error(ours, theirs)
    if message is True:
        assert str(ours) == str(theirs)
    elif message:
        assert str(ours).startswith(message) and str(theirs).startswith(message), (ours, theirs)


JIT_ERROR_CASES = [
    ("scan_traced_length", lambda lax: lambda n: lax.scan(
        lambda c, x: (c, x), 0, None, length=n), (2,)),
    ("fori_traced_bounds_unroll", lambda lax: lambda n: lax.fori_loop(
        0, n, lambda i, c: c + i, 0, unroll=2), (3,)),
    ("cond_traced_vector_pred", lambda lax: lambda p: lax.cond(
        p, lambda: 1.0, lambda: 2.0), (np.array([True, False]),)),
    ("switch_traced_float_index", lambda lax: lambda i: lax.switch(
        i, [lambda: 1.0, lambda: 2.0]), (F(1.0),)),
    ("python_if_on_traced_carry", lambda lax: lambda x: lax.scan(
        lambda c, u: (c + 1 if c > 0 else c, u), x, V4), (F(1.0),)),
]


@pytest.mark.parametrize("name,make,args", JIT_ERROR_CASES, ids=[c[0] for c in JIT_ERROR_CASES])
def test_errors_under_jit_match_jax(name, make, args):
    with pytest.raises(Exception) as theirs:
        jax.jit(make(jax.lax))(*args)
    with pytest.raises(Exception) as ours:
        tracejit.jit(make(tracejit.lax))(*args)
    assert_same_error(ours.value, theirs.value)
