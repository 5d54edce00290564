"""The jaxpr passes: each keeps a program's results bit for bit (the reference interpreter
before and after, on random inputs with NaN, ±Inf and -0.0), never mutates its input, and
changes the structure as intended (equation counts, loop signatures, hoisted equations)."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.compiler import passes
from tracejit.core.interpret import eval_jaxpr
from tracejit.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprTypeError, Var, check_jaxpr
from tracejit.core.trace import get_aval
from tracejit.lax.elementwise import convert_element_type_p

F32 = np.float32
W = np.linspace(-1.0, 2.0, 3, dtype=F32)          # a closed-over constant
SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0]


def _sample(aval, rng, trial):
    shape, dtype = aval.shape, np.dtype(aval.dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    if trial == 0:  # every special value, in every position across the flat array
        x.flat[:] = [SPECIALS[i % len(SPECIALS)] for i in range(x.size)]
    elif x.size:
        x.flat[rng.integers(0, x.size)] = SPECIALS[trial % len(SPECIALS)]
    return x


def _run(pass_name, closed):
    """Apply one pass (or the whole pipeline) to a ClosedJaxpr: (jaxpr, consts)."""
    if pass_name == "optimize":
        return passes.optimize(closed.jaxpr, closed.consts)
    if pass_name == "fold_constants":
        return passes.fold_constants(closed.jaxpr, closed.consts)
    return getattr(passes, pass_name)(closed.jaxpr), closed.consts


def _assert_same_results(closed, jaxpr, consts, trials=4, ulps=0):
    """Same bits (or, with ulps, floats within that many units in the last place: a row
    divided by a per-row value is multiplied by its reciprocal, compiler/rows.py)."""
    check_jaxpr(jaxpr)
    assert jaxpr.out_avals == closed.jaxpr.out_avals  # weak types included
    rng = np.random.default_rng(0)
    for trial in range(trials):
        args = [_sample(a, rng, trial) for a in closed.jaxpr.in_avals]
        want = eval_jaxpr(closed.jaxpr, closed.consts, *args)
        got = eval_jaxpr(jaxpr, consts, *args)
        assert len(got) == len(want)
        for w, g in zip(want, got):
            w, g = np.asarray(w), np.asarray(g)
            assert g.dtype == w.dtype and g.shape == w.shape
            if ulps and w.dtype.kind == "f":
                np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
                ok = ~np.isnan(w)
                assert np.all(np.abs(g[ok] - w[ok]) <= ulps * np.spacing(np.abs(w[ok])))
                continue
            np.testing.assert_array_equal(g, w)
            if w.dtype.kind == "f":
                np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def _count(jaxpr, name=None):
    """Equations of a jaxpr (with `name`, if given), not counting those inside sub-jaxprs."""
    return sum(1 for e in jaxpr.eqns if name is None or e.primitive.name == name)


def _body(jaxpr, name, param="jaxpr"):
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == name]
    return eqn, eqn.params[param].jaxpr


def _names(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def _jaxpr(f, *args):
    return tracejit.make_jaxpr(f)(*args)


# --- semantics: every pass on every program ------------------------------------------------

def _scan_program(x):
    def body(c, y):
        c1, c2, c3 = c
        inv = jnp.sin(W) * x[0]                 # invariant in the loop
        return (c1 + inv * y, c2 * 2.0, c3 * 1.0), (c1 - y, jnp.cos(W) + y)
    (a, _, c), (ys, _) = lax.scan(body, (x, x, x), jnp.stack([x, -x, x * 2]))
    return a, c, ys


def _while_program(x, n):
    def body(c):
        i, v, unused, same = c
        return i + 1, v * jnp.exp(W * 0.5) + same, unused - v, same + 0
    return lax.while_loop(lambda c: c[0] < n + c[3], body, (0, x, x, 1))[1]


def _nested_program(x):
    def outer(c, y):
        def inner(d, z):
            return d + jnp.tanh(x * 3.0) * z, d * z
        d, ds = lax.scan(inner, c, jnp.stack([y, y + 1]))
        return d, ds.sum(0)
    return lax.scan(outer, x, jnp.stack([x, x - 1, x * x]))


def _cond_program(x):
    def true_fun(x):
        return x + 1, jnp.sin(x), x * 1
    def false_fun(x):
        return x - 1, jnp.cos(x), -(-x)
    a, _, c = lax.cond(jnp.sum(x) > 0, true_fun, false_fun, x)
    return a + c


def _call_in_loop_program(x):
    g = tracejit.jit(lambda a, b: (a * b, jnp.sin(a), a + b))
    def body(c, y):
        p, _, s = g(c, y)
        return p + s, s
    return lax.scan(body, x, jnp.stack([x, x]))[0]


def _shape_program(x):
    y = jnp.expand_dims(x, 0).squeeze(0).reshape(3, 2).reshape(2, 3).T.T
    z = lax.transpose(lax.transpose(y, (1, 0)), (1, 0)).reshape(6).reshape(2, 3)
    return y + z * jnp.full((2, 3), 2.0) + lax.broadcast_in_dim(x[0, 0], (2, 3), ())


PROGRAMS = [
    ("identities", lambda x: -(-(x * 1 + 0.0 - 0.0)) * 1.0 + x * 0.0 - x * -0.0,
     [np.zeros(7, F32)]),
    ("int_identities", lambda x: lax.bitwise_not(lax.bitwise_not((x * 1 + 0 - 0) // 3)),
     [np.zeros(5, np.int32)]),
    ("weak_scalar", lambda x: x * 1.0 + x * F32(1.0) + lax.neg(lax.neg(x)), [1.0]),
    ("cse", lambda x: jnp.sin(x) * jnp.sin(x) + jnp.cos(x) + jnp.cos(x) + jnp.sum(x) * 2,
     [np.zeros(6, F32)]),
    ("consts", lambda x: x + jnp.cos(W) * 2 + jnp.arange(3.0) + lax.sin(2.0) + jnp.sum(W),
     [np.zeros(3, F32)]),
    ("shapes", _shape_program, [np.zeros((2, 3), F32)]),
    ("scan", _scan_program, [np.zeros(3, F32)]),
    ("fori", lambda x: lax.fori_loop(0, 4, lambda i, c: c * jnp.cos(x) + i, x),
     [np.zeros(3, F32)]),
    ("while", _while_program, [np.zeros(3, F32), np.int32(3)]),
    ("nested_scan", _nested_program, [np.zeros(2, F32)]),
    ("cond", _cond_program, [np.zeros(4, F32)]),
    ("call_in_loop", _call_in_loop_program, [np.zeros(3, F32)]),
]
PASSES = ["dce", "cse", "fold_constants", "simplify", "licm", "forward_carries", "fuse",
          "optimize"]


@pytest.mark.parametrize("pass_name", PASSES)
@pytest.mark.parametrize("name,f,args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_pass_keeps_results(pass_name, name, f, args):
    closed = _jaxpr(f, *args)
    before = str(closed.jaxpr)
    jaxpr, consts = _run(pass_name, closed)
    assert str(closed.jaxpr) == before  # the input is not mutated
    assert jaxpr is not closed.jaxpr
    _assert_same_results(closed, jaxpr, consts)


@pytest.mark.parametrize("name,f,args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_native_agrees_with_interpreter_after_pipeline(name, f, args):
    rng = np.random.default_rng(1)
    args = [_sample(get_aval(a), rng, 0) if np.ndim(a) else a for a in args]
    native = tracejit.jit(f, backend="native")(*args)
    ref = tracejit.jit(f, backend="interpret")(*args)
    native, ref = tracejit.tree_util.tree_leaves(native), tracejit.tree_util.tree_leaves(ref)
    assert len(native) == len(ref)
    for n, r in zip(native, ref):
        assert n.dtype == r.dtype and n.shape == r.shape
        np.testing.assert_allclose(np.asarray(n), np.asarray(r), rtol=2e-6, atol=1e-6)


# --- dce -----------------------------------------------------------------------------------

def test_dce_drops_unused_equations():
    closed = _jaxpr(lambda x: (jnp.sin(x), jnp.cos(x) * 2)[0], np.ones(3, F32))
    assert _count(closed.jaxpr) == 3
    assert _names(passes.dce(closed.jaxpr)) == ["sin"]


def test_dce_scan_drops_unused_ys_and_independent_carries():
    def f(x):
        def body(c, y):
            a, b, k = c
            # a feeds b; k is used by nothing but itself
            return (a + y, b * a, k + 1), (a * y, jnp.sin(y))
        return lax.scan(body, (x, x, 0), jnp.stack([x, x]))
    closed = _jaxpr(lambda x: f(x)[0][1], np.ones(3, F32))  # only carry b is used
    eqn, body = _body(closed.jaxpr, "scan")
    assert (eqn.params["num_carry"], len(eqn.outvars), _count(body)) == (3, 5, 5)
    jaxpr = passes.dce(closed.jaxpr)
    eqn, body = _body(jaxpr, "scan")
    # b needs a (so a stays), k and both ys go
    assert (eqn.params["num_carry"], len(eqn.outvars)) == (2, 2)
    assert sorted(_names(body)) == ["add", "mul"]
    _assert_same_results(closed, jaxpr, closed.consts)


def test_dce_scan_keeps_carry_another_output_reads():
    def f(x):
        return lax.scan(lambda c, y: ((c[0] * 2, c[1] + c[0]), c[1] * y), (x, x), x)
    closed = _jaxpr(lambda x: f(x)[1], np.ones(3, F32))  # only ys, which read carry 1 <- 0
    jaxpr = passes.dce(closed.jaxpr)
    eqn, _ = _body(jaxpr, "scan")
    assert (eqn.params["num_carry"], len(eqn.outvars)) == (2, 3)
    _assert_same_results(closed, jaxpr, closed.consts)


def test_dce_scan_drops_unused_consts_and_xs():
    def f(x, xs):
        return lax.scan(lambda c, y: (c + jnp.sin(W), (c * y[0], y[1])), x, (xs, xs * 2))
    closed = _jaxpr(lambda x, xs: f(x, xs)[0], np.ones(3, F32), np.ones((4, 3), F32))
    eqn, _ = _body(closed.jaxpr, "scan")
    n_operands = len(eqn.invars)
    jaxpr = passes.dce(closed.jaxpr)
    eqn, body = _body(jaxpr, "scan")
    assert len(eqn.invars) == n_operands - 2 and len(body.invars) == len(eqn.invars)
    assert eqn.params["num_consts"] == 1 and _count(jaxpr, "mul") == 0  # xs * 2 is gone
    _assert_same_results(closed, jaxpr, closed.consts)


def test_dce_while_keeps_carries_the_condition_reads():
    def f(x, n):
        def body(c):
            i, v, w, u = c
            return i + 1, v * 2.0, w + v, u * jnp.cos(W)
        return lax.while_loop(lambda c: c[0] < n, body, (0, x, x, x))
    closed = _jaxpr(lambda x, n: f(x, n)[1], np.ones(3, F32), np.int32(4))
    jaxpr = passes.dce(closed.jaxpr)
    eqn, body = _body(jaxpr, "while", "body_jaxpr")
    # i (read by the condition) and v (the result) stay; w and u go, and so does W
    assert len(eqn.outvars) == 2 and eqn.params["body_nconsts"] == 0
    assert sorted(_names(body)) == ["add", "mul"]
    _assert_same_results(closed, jaxpr, closed.consts)


def test_dce_cond_drops_outputs_and_operands():
    def f(x, y):
        return lax.cond(x[0] > 0, lambda x, y: (x + 1, y * 2), lambda x, y: (x - 1, y * 3), x, y)
    closed = _jaxpr(lambda x, y: f(x, y)[0], np.ones(3, F32), np.ones(3, F32))
    jaxpr = passes.dce(closed.jaxpr)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "cond"]
    assert len(eqn.outvars) == 1 and len(eqn.invars) == 2  # index and x; y is gone
    for branch in eqn.params["branches"]:
        assert len(branch.jaxpr.invars) == 1 and _count(branch.jaxpr) == 1
    _assert_same_results(closed, jaxpr, closed.consts)


def test_dce_call_in_loop_body_drops_unused_outputs():
    closed = _jaxpr(_call_in_loop_program, np.ones(3, F32))
    _, body = _body(closed.jaxpr, "scan")
    (call,) = [e for e in body.eqns if e.primitive.name == "jit"]
    assert len(call.outvars) == 3
    jaxpr = passes.dce(closed.jaxpr)
    _, body = _body(jaxpr, "scan")
    (call,) = [e for e in body.eqns if e.primitive.name == "jit"]
    assert len(call.outvars) == 2 and "sin" not in _names(call.params["jaxpr"].jaxpr)


def test_dce_keeps_binders():
    closed = _jaxpr(lambda x, y: x * 2, np.ones(3, F32), np.ones(3, F32))
    jaxpr = passes.dce(closed.jaxpr)
    assert jaxpr.invars == closed.jaxpr.invars and jaxpr.constvars == closed.jaxpr.constvars


# --- cse -----------------------------------------------------------------------------------

def test_cse_merges_repeated_equations():
    closed = _jaxpr(PROGRAMS[3][1], np.ones(6, F32))
    assert _count(closed.jaxpr, "sin") == 2 and _count(closed.jaxpr, "cos") == 2
    jaxpr = passes.cse(closed.jaxpr)
    assert _count(jaxpr, "sin") == 1 and _count(jaxpr, "cos") == 1
    assert _count(jaxpr) == _count(closed.jaxpr) - 2


@pytest.mark.parametrize("f,count", [
    (lambda x: (jnp.sum(x, 0), jnp.sum(x, 1)), 2),              # different params
    (lambda x: (x * 0.0, x * -0.0), 2),                         # literals differing in sign
    (lambda x: (x * np.nan, x * np.nan), 1),                    # a NaN literal equals itself
    (lambda x: (lax.convert_element_type(x, np.int32),
                lax.convert_element_type(x, np.int16)), 2),     # different dtype params
    (lambda x: (x + 1, x + 1.0), 1),                            # the same weak literal 1.0
    (lambda x: (lax.add(x, 1.0), lax.add(x, F32(1.0))), 2),     # a weak and a strong literal
], ids=["params", "signed_zero", "nan", "dtype_param", "same_literal", "weak_literal"])
def test_cse_compares_params_and_literals_exactly(f, count):
    closed = _jaxpr(f, np.ones((2, 2), F32))
    assert _count(closed.jaxpr) == 2
    jaxpr = passes.cse(closed.jaxpr)
    assert _count(jaxpr) == count
    _assert_same_results(closed, jaxpr, closed.consts)


def test_cse_inside_loop_bodies():
    closed = _jaxpr(lambda x: lax.scan(lambda c, y: (jnp.exp(c) + jnp.exp(c), y), x, x)[0],
                    np.ones(3, F32))
    jaxpr = passes.cse(closed.jaxpr)
    _, body = _body(jaxpr, "scan")
    assert _names(body).count("exp") == 1
    _assert_same_results(closed, jaxpr, closed.consts)


def test_cse_merges_loops_sharing_a_body():
    closed = _jaxpr(lambda x: lax.scan(lambda c, y: (c * y, c), x, x), np.ones(3, F32))
    (eqn,) = closed.jaxpr.eqns
    twin = eqn.replace(outvars=[Var(v.aval) for v in eqn.outvars])
    j = closed.jaxpr
    doubled = Jaxpr(j.constvars, j.invars, j.outvars + twin.outvars, j.eqns + [twin])
    check_jaxpr(doubled)
    jaxpr = passes.cse(doubled)
    assert _count(jaxpr, "scan") == 1
    assert jaxpr.outvars[:2] == jaxpr.outvars[2:]
    _assert_same_results(ClosedJaxpr(doubled, closed.consts), jaxpr, closed.consts)


# --- fold_constants ------------------------------------------------------------------------

def test_fold_constants_evaluates_constant_subgraphs():
    closed = _jaxpr(PROGRAMS[4][1], np.ones(3, F32))
    jaxpr, consts = passes.fold_constants(closed.jaxpr, closed.consts)
    # everything but the four additions to x is known; the three vector terms become consts
    assert _names(jaxpr) == ["add"] * 4
    assert all(_count(jaxpr, n) == 0 for n in ("sin", "cos", "iota", "reduce_sum"))
    assert len(consts) == len(jaxpr.constvars)
    scalars = [v for e in jaxpr.eqns for v in e.invars if not isinstance(v, Var)]
    assert len(scalars) == 2  # sin(2.0) and sum(W) are literals now
    np.testing.assert_array_equal(consts[0], np.cos(W) * F32(2))
    _assert_same_results(closed, jaxpr, consts)


def test_fold_constants_size_cap():
    big = np.linspace(0, 1, 2000, dtype=F32)
    closed = _jaxpr(lambda x: x + jnp.cos(big), np.ones(2000, F32))
    jaxpr, consts = passes.fold_constants(closed.jaxpr, closed.consts)
    assert _names(jaxpr) == ["cos", "add"]
    jaxpr, consts = passes.fold_constants(closed.jaxpr, closed.consts, max_size=2000)
    assert _names(jaxpr) == ["add"]
    _assert_same_results(closed, jaxpr, consts)


def test_fold_constants_in_bodies():
    closed = _jaxpr(lambda x: lax.scan(
        lambda c, y: (c + jnp.arange(3.0) + lax.sin(2.0), y), x, x)[0], np.ones(3, F32))
    jaxpr, consts = passes.fold_constants(closed.jaxpr, closed.consts)
    eqn, body = _body(jaxpr, "scan")
    assert _names(body) == ["add", "add"]
    np.testing.assert_array_equal(eqn.params["jaxpr"].consts[0], np.arange(3.0, dtype=F32))
    _assert_same_results(closed, jaxpr, consts)


def test_fold_constants_leaves_broadcast_scalars():
    closed = _jaxpr(lambda x: jnp.where(x > 0, x, 0.0) * (jnp.ones(3) * 2.0), np.ones(3, F32))
    jaxpr, consts = passes.fold_constants(passes.simplify(closed.jaxpr), closed.consts)
    jaxpr = passes.dce(jaxpr)
    # the select reads a broadcast 0.0; the product became `mul d 2.0`
    assert consts == [] and _names(jaxpr) == ["gt", "broadcast_in_dim", "select_n", "mul"]
    _assert_same_results(closed, jaxpr, consts)


def test_fold_constants_keeps_special_values():
    closed = _jaxpr(lambda x: x + jnp.log(jnp.array([0.0, -1.0, 1.0], F32)) * 0.0
                    + lax.div(jnp.array([1, -7], np.int32), jnp.array([0, 2], np.int32))[0],
                    np.ones(3, F32))
    jaxpr, consts = passes.fold_constants(closed.jaxpr, closed.consts)
    assert _count(jaxpr, "log") == 0 and _count(jaxpr, "div") == 0
    _assert_same_results(closed, jaxpr, consts)


# --- simplify ------------------------------------------------------------------------------

def _convert(x, dtype, weak):
    return convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=weak)


# program, args, primitives left after simplify + dce
SIMPLIFY_RECORDS = [
    ("mul_one", lambda x: x * 1.0, [np.ones(3, F32)], []),
    ("one_mul", lambda x: lax.mul(F32(1.0), x), [np.ones(3, F32)], []),
    ("mul_one_int", lambda x: x * 1, [np.ones(3, np.int32)], []),
    ("mul_zero", lambda x: x * 0.0, [np.ones(3, F32)], ["mul"]),         # NaN * 0 is NaN
    ("add_zero_int", lambda x: 0 + x + 0, [np.ones(3, np.int8)], []),
    ("add_zero_float", lambda x: x + 0.0, [np.ones(3, F32)], ["add"]),   # -0.0 + 0.0 is 0.0
    ("add_neg_zero", lambda x: -0.0 + x + -0.0, [np.ones(3, F32)], []),
    ("sub_zero", lambda x: x - 0.0, [np.ones(3, F32)], []),
    ("sub_neg_zero", lambda x: x - -0.0, [np.ones(3, F32)], ["sub"]),
    ("zero_sub", lambda x: 0.0 - x, [np.ones(3, F32)], ["sub"]),
    ("complex_mul_one", lambda x: x * (1 + 0j), [np.ones(3, np.complex64)], ["mul"]),
    ("neg_neg", lambda x: -(-x), [np.ones(3, F32)], []),
    ("neg_neg_neg", lambda x: -(-(-x)), [np.ones(3, np.int32)], ["neg"]),
    ("not_not", lambda x: ~~x, [np.ones(3, np.uint8)], []),
    ("rev_rev", lambda x: lax.rev(lax.rev(x, (0,)), (0,)), [np.ones((2, 3), F32)], []),
    ("rev_rev_other", lambda x: lax.rev(lax.rev(x, (0,)), (1,)), [np.ones((2, 3), F32)],
     ["rev", "rev"]),
    ("convert_same", lambda x: _convert(x, F32, False), [np.ones(3, F32)], []),
    ("convert_weak", lambda x: _convert(x, F32, True), [np.ones(3, F32)],
     ["convert_element_type"]),
    ("convert_other", lambda x: _convert(x, np.int32, False), [np.ones(3, F32)],
     ["convert_element_type"]),
    ("weak_mul_strong_one", lambda x: lax.mul(x, F32(1.0)), [1.0], ["mul"]),  # strong result
    ("weak_mul_weak_one", lambda x: x * 1.0, [1.0], []),
    ("reshape_chain", lambda x: x.reshape(6).reshape(3, 2).reshape(1, 6),
     [np.ones((2, 3), F32)], ["reshape"]),
    ("reshape_back", lambda x: x.reshape(6).reshape(3, 2).reshape(2, 3),
     [np.ones((2, 3), F32)], []),
    ("transpose_back", lambda x: x.T.T, [np.ones((2, 3), F32)], []),
    ("transpose_chain", lambda x: lax.transpose(lax.transpose(x, (1, 2, 0)), (1, 2, 0)),
     [np.ones((2, 3, 4), F32)], ["transpose"]),
    ("squeeze_expand", lambda x: jnp.expand_dims(x, (0, 2)).squeeze((0, 2)),
     [np.ones((2, 3), F32)], []),
    ("expand_squeeze_reshape", lambda x: jnp.expand_dims(x.squeeze(0), 1),
     [np.ones((1, 3), F32)], ["reshape"]),
    # jnp converts each broadcast weak constant to f32: the converts now act on the scalars
    ("broadcast_scalar", lambda x: x * jnp.full(x.shape, 2.0) + lax.broadcast(1.5, x.shape),
     [np.ones((2, 3), F32)], ["convert_element_type", "mul", "convert_element_type", "add"]),
    ("broadcast_var_scalar", lambda x: x * lax.broadcast(x[0, 0], x.shape),
     [np.ones((2, 3), F32)], ["slice", "squeeze", "mul"]),
    ("broadcast_select_case", lambda x: lax.select(x > 0, x, lax.broadcast(x[0, 0], x.shape)),
     [np.ones((2, 3), F32)], ["gt", "slice", "squeeze", "broadcast_in_dim", "select_n"]),
    ("broadcast_select_pred", lambda x: lax.select(lax.broadcast(x[0, 0] > 0, x.shape), x, -x),
     [np.ones((2, 3), F32)], ["slice", "squeeze", "gt", "neg", "select_n"]),
    ("broadcast_both", lambda x: lax.broadcast(x, (2,)) * lax.broadcast(x, (2,)) + 1.0,
     [F32(1.0)], ["mul", "add", "broadcast_in_dim"]),
    ("broadcast_then_identity", lambda x: x * jnp.ones_like(x), [np.ones(4, F32)], []),
    ("broadcast_of_identity", lambda x: x + jnp.ones(x.shape) * 3.0, [np.ones((2, 3), F32)],
     ["add"]),
    # a pvaried (broadcast) operand of a batched product: one product with the operand itself
    ("dot_broadcast_batch", lambda x, y: lax.dot_general(
        x, lax.broadcast_in_dim(y, (4, 2, 3), (1, 2)), (((2,), (1,)), ((0,), (0,)))),
     [np.ones((4, 5, 2), F32), np.ones((2, 3), F32)], ["dot_general"]),
    ("dot_broadcast_batch_not_leading", lambda x, y: lax.dot_general(
        x, lax.broadcast_in_dim(y, (4, 2, 3), (1, 2)), (((2,), (1,)), ((1,), (0,)))),
     [np.ones((5, 4, 2), F32), np.ones((2, 3), F32)], ["broadcast_in_dim", "dot_general"]),
    # shard_map over one device: x / 1 (pmean), sums over the device axis, a constant
    # broadcast to [devices] then to a value's shape, the weight gradient transposed after
    # its (unit) device sum -- each against the interpreter's values, -0.0/NaN/Inf included
    ("div_one", lambda x: x / 1.0, [np.ones(3, F32)], []),
    ("div_one_int", lambda x: lax.div(x, np.int32(1)), [np.ones(3, np.int32)], []),
    ("one_div", lambda x: 1.0 / x, [np.ones(3, F32)], ["div"]),
    ("div_one_complex", lambda x: x / (1 + 0j), [np.ones(3, np.complex64)], ["div"]),
    ("sum_unit_axes", lambda x: x.sum((0, 2)), [np.ones((1, 3, 1), F32)], ["reshape", "add"]),
    ("sum_unit_axis_int", lambda x: x.sum(0), [np.ones((1, 3), np.int32)], ["reshape"]),
    ("max_unit_axis", lambda x: x.max(1), [np.ones((3, 1), F32)], ["reshape"]),
    ("prod_unit_axis_int", lambda x: x.prod(0), [np.ones((1, 4), np.int32)], ["reshape"]),
    ("prod_unit_axis_complex", lambda x: x.prod(0), [np.ones((1, 5), np.complex64)],
     ["reduce_prod"]),
    ("sum_unit_axis_complex", lambda x: x.sum(0), [np.ones((1, 5), np.complex64)],
     ["reshape", "add"]),
    ("sum_sized_axis", lambda x: x.sum(0), [np.ones((2, 3), F32)], ["reduce_sum"]),
    # a select whose predicate is a constant (a comparison of constants, folded), or whose
    # cases are one value: that case
    ("select_known_predicate", lambda x: lax.select_n(np.bool_(True), x, -x),
     [np.ones(3, F32)], ["neg"]),
    ("select_known_index", lambda x: lax.select_n(np.int32(2), x, -x, x * 2.0),
     [np.ones(3, F32)], ["mul"]),
    ("select_same_cases", lambda x, p: lax.select(p, x, x),
     [np.ones(3, F32), np.array([True, False, True])], []),
    ("select_unknown_predicate", lambda x, p: lax.select(p, x, -x),
     [np.ones(3, F32), np.array([True, False, True])], ["neg", "select_n"]),
    ("broadcast_broadcast", lambda x: x * lax.broadcast_in_dim(
        lax.broadcast_in_dim(F32(2.0), (1,), ()), (1, 2, 3), (0,)), [np.ones((1, 2, 3), F32)],
     ["mul"]),
    ("broadcast_broadcast_var", lambda x: lax.broadcast_in_dim(
        lax.broadcast_in_dim(x, (2, 3), (1,)), (4, 2, 3), (1, 2)), [np.ones(3, F32)],
     ["broadcast_in_dim"]),
    # a slice of a concatenate within one operand: a slice of it (the operand itself where
    # whole); across two operands, strided or of another dtype's operand: left
    ("slice_of_concatenate", lambda x, y: lax.slice(jnp.concatenate([x, y]), (4, 1), (6, 3)),
     [np.arange(12, dtype=F32).reshape(4, 3), np.arange(9, dtype=F32).reshape(3, 3)],
     ["slice"]),
    ("slice_of_concatenate_whole_operand", lambda x, y: jnp.concatenate([x, y], 1)[:, 3:],
     [np.ones((2, 3), F32), np.arange(8, dtype=F32).reshape(2, 4)], []),
    ("slice_across_concatenate", lambda x, y: jnp.concatenate([x, y])[3:5],
     [np.arange(12, dtype=F32).reshape(4, 3), np.arange(9, dtype=F32).reshape(3, 3)],
     ["concatenate", "slice"]),
    ("strided_slice_of_concatenate", lambda x, y: jnp.concatenate([x, y])[4::2],
     [np.arange(12, dtype=F32).reshape(4, 3), np.arange(9, dtype=F32).reshape(3, 3)],
     ["concatenate", "slice"]),
    # concatenates of concatenates along one dimension: one; along another: kept
    ("concatenate_of_concatenates", lambda x, y: jnp.concatenate(
        [jnp.concatenate([x, y]), x[::-1], jnp.concatenate([y, x])]),
     [np.arange(6, dtype=F32).reshape(2, 3), np.arange(3, dtype=F32).reshape(1, 3)],
     ["rev", "concatenate"]),
    ("concatenate_across_dimensions", lambda x, y: jnp.concatenate(
        [jnp.concatenate([x, x], 1), jnp.concatenate([y, y], 1)]),
     [np.arange(6, dtype=F32).reshape(2, 3), np.arange(3, dtype=F32).reshape(1, 3)],
     ["concatenate", "concatenate", "concatenate"]),
    ("product_transposed_after_unit_sum", lambda x, y: lax.transpose(
        lax.dot_general(x, y, (((1,), (1,)), ((0,), (0,)))).sum(0), (1, 0)),
     [np.ones((1, 5, 2), F32), np.ones((1, 5, 3), F32)],
     ["transpose", "reshape", "add", "dot_general"]),
]


@pytest.mark.parametrize("name,f,args,left", SIMPLIFY_RECORDS,
                         ids=[r[0] for r in SIMPLIFY_RECORDS])
def test_simplify(name, f, args, left):
    closed = _jaxpr(f, *args)
    jaxpr = passes.dce(passes.simplify(closed.jaxpr))
    assert sorted(_names(jaxpr)) == sorted(left)
    _assert_same_results(closed, jaxpr, closed.consts)


def test_product_transposed_after_a_unit_sum_is_written_transposed():
    """The weight gradient under shard_map over one device: transpose(sum over the device
    axis (size 1) of a batched product) becomes the product with its operands swapped."""
    closed = _jaxpr(lambda x, y: lax.transpose(
        lax.dot_general(x, y, (((1,), (1,)), ((0,), (0,)))).sum(0), (1, 0)),
        np.ones((1, 5, 2), F32), np.ones((1, 5, 3), F32))
    jaxpr = passes.dce(passes.transposed_products(passes.dce(passes.simplify(closed.jaxpr))))
    assert _names(jaxpr) == ["dot_general", "reshape", "add"]  # (0.0 + x: a float sum's bits)
    dot = jaxpr.eqns[0]
    assert dot.invars == closed.jaxpr.invars[::-1]
    _assert_same_results(closed, jaxpr, closed.consts)


def test_simplify_rules_apply_inside_bodies():
    closed = _jaxpr(lambda x: lax.scan(lambda c, y: (-(-c) * 1.0, y.T.T), x, x)[1],
                    np.ones((3, 2, 2), F32))
    jaxpr = passes.dce(passes.simplify(closed.jaxpr))
    _, body = _body(jaxpr, "scan")
    assert _names(body) == []
    _assert_same_results(closed, jaxpr, closed.consts)


# --- licm ----------------------------------------------------------------------------------

def test_licm_hoists_invariant_equations_out_of_scan():
    closed = _jaxpr(lambda x: lax.scan(lambda c, y: (c + jnp.sin(x) * 2.0, c * y), x,
                                       jnp.stack([x, x]))[0], np.ones(3, F32))
    _, body = _body(closed.jaxpr, "scan")
    assert "sin" in _names(body)
    jaxpr = passes.licm(closed.jaxpr)
    eqn, body = _body(jaxpr, "scan")
    assert _names(body) == ["add", "mul"]  # the sin and the mul by 2.0 moved out
    assert _count(jaxpr, "sin") == 1 and _names(jaxpr).index("sin") < _names(jaxpr).index("scan")
    assert eqn.params["num_consts"] == 2
    _assert_same_results(closed, jaxpr, closed.consts)


def test_licm_while_body_and_condition():
    def f(x, n):
        return lax.while_loop(lambda c: c[0] < n * 2,
                              lambda c: (c[0] + 1, c[1] * jnp.exp(x)), (0, x))
    closed = _jaxpr(f, np.ones(3, F32), np.int32(3))
    jaxpr = passes.licm(closed.jaxpr)
    eqn, body = _body(jaxpr, "while", "body_jaxpr")
    cond = eqn.params["cond_jaxpr"].jaxpr
    assert "exp" not in _names(body) and "mul" not in _names(cond)
    assert (eqn.params["cond_nconsts"], eqn.params["body_nconsts"]) == (2, 2)
    assert _count(jaxpr, "exp") == 1 and _count(jaxpr, "mul") == 1
    _assert_same_results(closed, jaxpr, closed.consts)


def test_licm_from_nested_loops_to_the_top():
    closed = _jaxpr(_nested_program, np.ones(2, F32))
    jaxpr = passes.licm(closed.jaxpr)
    assert _count(jaxpr, "tanh") == 1
    _, outer = _body(jaxpr, "scan")
    _, inner = _body(outer, "scan")
    assert "tanh" not in _names(inner) and "tanh" not in _names(outer)
    _assert_same_results(closed, jaxpr, closed.consts)


def test_licm_leaves_variant_and_size_growing_equations():
    def body(c, y):
        grown = lax.broadcast_in_dim(y[0] * 0 + c[0, 0] * 0 + jnp.sum(W), (3, 3), ())
        return c + jnp.sin(c) + lax.broadcast_in_dim(W, (3, 3), (1,)) + grown, y
    closed = _jaxpr(lambda x: lax.scan(body, x, x)[0], np.ones((2, 3, 3), F32)[0])
    jaxpr = passes.licm(closed.jaxpr)
    _, body_jaxpr = _body(jaxpr, "scan")
    assert _names(body_jaxpr).count("broadcast_in_dim") == 2 and "sin" in _names(body_jaxpr)
    assert _names(jaxpr) == ["reduce_sum", "scan"]  # only the sum of W moved
    _assert_same_results(closed, jaxpr, closed.consts)


# --- forward_carries -----------------------------------------------------------------------

def test_forward_carries_scan():
    def f(x):
        return lax.scan(lambda c, y: ((c[0] + y, c[1] * 1.0), c[1] * y), (x[0], x[1]), x)
    closed = _jaxpr(f, np.ones((3, 2), F32))
    simplified = passes.simplify(closed.jaxpr)  # the body now returns c[1] as it came
    eqn, _ = _body(simplified, "scan")
    assert eqn.params["num_carry"] == 2
    jaxpr = passes.forward_carries(simplified)
    eqn, body = _body(jaxpr, "scan")
    assert (eqn.params["num_carry"], eqn.params["num_consts"], len(eqn.outvars)) == (1, 1, 2)
    assert len(body.outvars) == 2
    # the forwarded carry's result is its initial value, read straight from the input
    (second,) = [e for e in jaxpr.eqns if e.outvars[0] is jaxpr.outvars[1]]
    assert second.primitive.name != "scan"
    _assert_same_results(closed, jaxpr, closed.consts)


def test_forward_carries_while_read_by_condition():
    def f(x, n):
        return lax.while_loop(lambda c: c[0] < c[2], lambda c: (c[0] + 1, c[1] * 2.0, c[2] + 0),
                              (0, x, n))
    closed = _jaxpr(f, np.ones(3, F32), np.int32(4))
    simplified = passes.simplify(closed.jaxpr)
    jaxpr = passes.forward_carries(simplified)
    eqn, body = _body(jaxpr, "while", "body_jaxpr")
    assert len(eqn.outvars) == 2 and len(body.outvars) == 2
    assert (eqn.params["cond_nconsts"], eqn.params["body_nconsts"]) == (1, 1)
    assert jaxpr.outvars[2] is jaxpr.invars[1]
    _assert_same_results(closed, jaxpr, closed.consts)


def test_forward_carries_then_licm_hoists_what_read_them():
    def f(x):
        return lax.scan(lambda c, y: ((c[0] + jnp.exp(c[1]), c[1] * 1.0), y), (x, x), x)[0]
    closed = _jaxpr(f, np.ones(3, F32))
    jaxpr, consts = passes.optimize(closed.jaxpr, closed.consts)
    _, body = _body(jaxpr, "scan")
    assert _names(body) == ["add"] and _names(jaxpr) == ["exp", "scan"]
    _assert_same_results(closed, jaxpr, consts)


# --- the pipeline --------------------------------------------------------------------------

def test_optimize_passes_for_deep_programs():
    def f(x):
        for _ in range(2500):
            x = -x
        return x * 1.0
    closed = _jaxpr(f, np.ones(3, F32))
    jaxpr, consts = passes.optimize(closed.jaxpr, closed.consts)
    assert _count(jaxpr) == 0
    _assert_same_results(closed, jaxpr, consts, trials=1)


def test_native_executable_runs_the_pipeline():
    f = tracejit.jit(lambda x: (jnp.sin(x) + jnp.sin(x)) * 1.0 + jnp.cos(W) * 0.0,
                     backend="native")
    text = f.lower(np.ones(3, F32)).compile().as_text()
    assert text.count("= sin ") == 1 and " cos " not in text  # CSE'd, folded


# --- fusion ----------------------------------------------------------------------------------

def _fused(jaxpr):
    return [e for e in jaxpr.eqns if e.primitive.name == "fused"]


def test_fuse_writes_each_kernel_as_one_equation():
    """Producers computed inside their consumer's loops go into its `fused` equation; the body
    ends with the root (here the reduction); `e`, read twice inside that one kernel at the
    element being reduced, is computed there rather than stored."""
    def f(x):
        e = jnp.exp(x * 2.0 + 1.0)
        return jnp.sum(jnp.sin(e) * e), jnp.cos(x)
    closed = _jaxpr(f, np.zeros(5, F32))
    jaxpr = passes.fuse(closed.jaxpr)
    assert _names(jaxpr) == ["fused", "cos"]
    (kernel,) = _fused(jaxpr)
    assert _names(kernel.params["body"].jaxpr) == ["mul", "add", "exp", "sin", "mul",
                                                   "reduce_sum"]
    _assert_same_results(closed, jaxpr, closed.consts)


def test_fuse_stores_a_value_two_kernels_read():
    """A value read by two kernels, or by one at another element (a transpose), is stored once
    by a kernel of its own."""
    def f(x):
        e = jnp.exp(x * 2.0 + 1.0)
        return jnp.sum(e), jnp.sin(e), e * e.T
    closed = _jaxpr(f, np.zeros((4, 4), F32))
    jaxpr = passes.fuse(closed.jaxpr)
    assert _names(jaxpr) == ["fused", "reduce_sum", "sin", "fused"]
    first = _fused(jaxpr)[0]
    assert _names(first.params["body"].jaxpr) == ["mul", "add", "exp"]
    assert all(e.invars[0] is first.outvars[0] for e in jaxpr.eqns[1:])
    _assert_same_results(closed, jaxpr, closed.consts)


def test_fuse_copies_a_cheap_broadcast_into_each_consumer():
    def f(x, s):
        b = jnp.broadcast_to(s, x.shape)
        return jnp.exp(x) * b, jnp.sin(x) + b
    closed = _jaxpr(f, np.zeros(4, F32), F32(2.0))
    jaxpr = passes.fuse(closed.jaxpr)
    assert _count(jaxpr, "broadcast_in_dim") == 0 and len(_fused(jaxpr)) == 2
    for eqn in _fused(jaxpr):
        assert _count(eqn.params["body"].jaxpr, "broadcast_in_dim") == 1
    _assert_same_results(closed, jaxpr, closed.consts)


def test_fuse_inside_loop_bodies_and_row_kernels():
    def f(x):
        def body(c, _):
            return tracejit.nn.softmax(c * 2.0 + 1.0) * 0.5, jnp.tanh(c.T) * 3.0 + 1.0
        return lax.scan(body, x, None, length=3)
    closed = _jaxpr(f, np.zeros((4, 20), F32))  # (rows of rows.MIN_ROW_ELEMENTS or more)
    jaxpr, consts = passes.optimize(closed.jaxpr, closed.consts)
    _, body = _body(jaxpr, "scan")
    (row_eqn,) = [e for e in body.eqns if e.primitive.name == "row_map"]
    assert _fused(body) and _fused(row_eqn.params["body"].jaxpr)
    _assert_same_results(closed, jaxpr, consts, ulps=2)  # softmax's reciprocal


def test_enable_checks_names_the_pass_that_broke_a_jaxpr(monkeypatch):
    def cse(jaxpr):  # a broken pass: drops the first equation, whose output is still read
        return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns[1:])
    monkeypatch.setattr(passes, "cse", cse)
    closed = _jaxpr(lambda x: jnp.sin(x) * 2.0, np.zeros(3, F32))
    assert tracejit.config.jax_enable_checks  # (the tests turn the checks on)
    with pytest.raises(JaxprTypeError, match="after the cse pass"):
        passes.optimize(closed.jaxpr, closed.consts)
    tracejit.config.update("jax_enable_checks", False)
    passes.optimize(closed.jaxpr, closed.consts)  # unchecked: nothing notices


# shard_map's cut of this process's own block out of an Allgather of every process's block
# (the per-process programs of a jit over arrays split over processes, compiler/block_maps.py):
# read from the block itself through the moves around the gather, never where the cut is
# another process's block. This process is rank 0, position 0 of the gather's two (traced
# and simplified only: the gather never runs here); the oracle is NumPy's block.
def _own_cut_program(shape, before, after, starts, limits):
    from tracejit.core.global_array import note_own_block_cut
    from tracejit.lax.processes import allgather_p

    def moved(v, steps):
        for kind, arg in steps:
            v = lax.reshape(v, arg) if kind == "reshape" else lax.transpose(v, arg)
        return v

    def f(block):
        gathered = allgather_p.bind(moved(block, before), ranks=(0, 1), axis_name="data")
        cut = lax.slice(moved(gathered, after), starts, limits)
        note_own_block_cut(cut._var)
        return cut * 2.0

    return _jaxpr(f, np.zeros(shape, F32))


OWN_CUTS = [  # (block shape, moves before the gather, after it, the cut, whether it is ours)
    # one device per process: the gathered rows merged, this process's rows cut
    ((2, 8), [], [("reshape", (4, 8))], (0, 0), (2, 8), True),
    # two devices per process on a 2-d mesh (tests/mpi/programs.py's cells_scaled)
    ((2, 6), [("reshape", (2, 2, 3)), ("transpose", (1, 0, 2))],
     [("transpose", (1, 0, 2, 3)), ("reshape", (2, 4, 3)), ("transpose", (1, 0, 2)),
      ("reshape", (4, 6))], (0, 0), (2, 6), True),
    # columns split (the gather moved to the columns)
    ((4, 4), [], [("transpose", (1, 0, 2)), ("reshape", (4, 8))], (0, 0), (4, 4), True),
    # the cut has neither the block's shape nor the gathered operand's: a reshape of the block
    ((4,), [("reshape", (2, 2))], [("reshape", (2, 4))], (0, 0), (1, 4), True),
    # a transpose before the gather: the cut is the gathered operand, read as it is
    ((4, 4), [("transpose", (1, 0))], [("reshape", (8, 4))], (0, 0), (4, 4), True),
    # the other process's rows; this process's block transposed after the gather
    ((2, 8), [], [("reshape", (4, 8))], (2, 0), (4, 8), False),
    ((4, 4), [], [("transpose", (0, 2, 1)), ("reshape", (8, 4))], (0, 0), (4, 4), False),
]


@pytest.mark.parametrize("shape,before,after,starts,limits,ours", OWN_CUTS)
def test_own_block_cut_reads_the_block(shape, before, after, starts, limits, ours):
    closed = _own_cut_program(shape, before, after, starts, limits)
    jaxpr = passes.dce(passes.simplify(closed.jaxpr))
    check_jaxpr(jaxpr)
    assert ("mpi_allgather" in _names(jaxpr)) != ours, _names(jaxpr)
    if ours:  # (NumPy: the moves on this block and another process's, gathered, cut)
        block, other = np.random.default_rng(0).standard_normal((2,) + shape).astype(F32)
        stacked = np.stack([_numpy_moves(b, before) for b in (block, other)])
        want = _numpy_moves(stacked, after)[tuple(map(slice, starts, limits))] * 2
        (out,) = eval_jaxpr(jaxpr, closed.consts, block)
        np.testing.assert_array_equal(np.asarray(out), want)


def _numpy_moves(v, steps):
    for kind, arg in steps:
        v = v.reshape(arg) if kind == "reshape" else v.transpose(arg)
    return v


# --- composites: expanded first, so their operations fuse -------------------------------------

@pytest.mark.parametrize("algorithm", ["RNG_PHILOX", "RNG_THREE_FRY"])
def test_rng_bit_generator_expands_and_fuses_with_its_reader(algorithm):
    """rng_bit_generator is a composite: the pipeline's first pass puts its operations in its
    place — counters and one hash, threefry2x32's or philox4x32's, whose words fuse as a unit —
    and fusion makes one kernel of counters and hash, and one of the words' interleaving and
    their reader (emitted equation by equation in the backend before, a program of unsafe_rbg
    beta draws was 1,517 loops and 6.4 s of LLVM; philox's rounds were 40 kernels). The bits
    are those of the primitive's impl."""
    key = np.array([1, 2, 3, 4], np.uint32)

    def f(k):
        new, bits = lax.rng_bit_generator(k, (1000,),
                                          algorithm=getattr(lax.RandomAlgorithm, algorithm))
        return new, bits >> 3
    closed = _jaxpr(f, key)
    jaxpr, consts = passes.optimize(closed.jaxpr, closed.consts)
    names = {n for e in jaxpr.eqns for n in _all_names(e)}
    assert "rng_bit_generator" not in names
    shift = [e for e in jaxpr.eqns if "shift_right_logical" in _all_names(e)]
    assert len(shift) == 1 and shift[0].primitive.name == "fused"
    assert "concatenate" in _all_names(shift[0])
    word_hash = "philox4x32" if algorithm == "RNG_PHILOX" else "threefry2x32"
    hashed = [e for e in jaxpr.eqns if word_hash in _all_names(e)]
    assert len(hashed) == 1 and {"add", "lt"} <= set(_all_names(hashed[0]))  # (the counters)
    # (ten fused kernels at most, thirteen kernels in all: the key's column slices are loads
    # in their scalar readers' kernels, fusion._picks_from_stored -- fifteen kernels before)
    assert len([e for e in jaxpr.eqns if e.primitive.name == "fused"]) <= 10
    assert len(jaxpr.eqns) <= 16
    want = eval_jaxpr(closed.jaxpr, closed.consts, key)  # (the primitive's impl)
    for got in (eval_jaxpr(jaxpr, consts, key), tracejit.jit(f)(key)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _all_names(eqn) -> list[str]:
    """eqn's primitive's name and those of every equation inside it (a fused kernel's body)."""
    inner = [getattr(v, "jaxpr", v) for v in eqn.params.values()]
    return [eqn.primitive.name] + [n for j in inner if hasattr(j, "eqns")
                                   for e in j.eqns for n in _all_names(e)]
