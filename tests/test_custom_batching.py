"""jax.custom_batching (custom_vmap, sequential_vmap) against real JAX 0.10: each program runs on
both libraries (`lib` is tracejit or jax) and the values, the rule's arguments and the errors
are compared — under vmap (any in_axes, pytrees, nested), jit around and inside, forward-mode
differentiation (JAX's jvp-of-rule), and reverse mode, which both refuse unless custom_vjp
wraps the function. Values agree to float32 rounding (our sin/cos polynomials against XLA's:
a few ulps)."""
import numpy as np
import pytest

import tracejit
from tracejit.custom_batching import custom_vmap as t_custom_vmap

jax = pytest.importorskip("jax")


def _both(program):
    """program(lib) run on tracejit and on JAX; returns (ours, theirs)."""
    return program(tracejit), program(jax)


def _assert_same(ours, theirs, rtol=2e-6):
    o_leaves, o_tree = tracejit.tree_util.tree_flatten(ours)
    j_leaves, j_tree = jax.tree_util.tree_flatten(theirs)
    assert len(o_leaves) == len(j_leaves) and str(o_tree) == str(j_tree), (o_tree, j_tree)
    for o, j in zip(o_leaves, j_leaves):
        assert getattr(o, "weak_type", False) == getattr(j, "weak_type", False)
        o, j = np.asarray(o), np.asarray(j)
        assert o.shape == j.shape and o.dtype == j.dtype, (o.shape, o.dtype, j.shape, j.dtype)
        np.testing.assert_allclose(o, j, rtol=rtol, atol=1e-7)


def _sin_mul(lib, log):
    """JAX's docstring example: f(x, y) = sin(x) * y, batched as cos(xs) * ys."""
    jnp = lib.numpy

    @lib.custom_batching.custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap
    def f_vmap_rule(axis_size, in_batched, xs, ys):
        log.append((axis_size, in_batched, type(in_batched).__name__))
        return jnp.cos(xs) * ys, True
    return f


X = np.linspace(-1.0, 2.0, 3).astype(np.float32)
Y = np.array([1.0, 0.5, -2.0], np.float32)


@pytest.mark.parametrize("case", ["eager", "vmap", "vmap_none", "jit_vmap", "vmap_jit",
                                  "nested", "jvp", "vmap_jvp", "vmap_jvp_both", "jvp_vmap",
                                  "vmap_jit_scan", "vmap_cond"])
def test_custom_vmap_matches_jax(case):
    logs = {}

    def program(lib):
        log = logs.setdefault(lib.__name__, [])
        f = _sin_mul(lib, log)
        ones, zeros = lib.numpy.ones_like, lib.numpy.zeros_like
        return {
            "eager": lambda: (f(1.0, 2.0), f(X, Y)),
            "vmap": lambda: lib.vmap(f)(X, Y),
            "vmap_none": lambda: lib.vmap(f, (0, None))(X, 2.0),
            "jit_vmap": lambda: lib.jit(lib.vmap(f))(X, Y),
            "vmap_jit": lambda: lib.vmap(lib.jit(f), (None, 0))(1.5, Y),
            "nested": lambda: lib.vmap(lib.vmap(f), (0, None))(np.stack([X, Y]), Y),
            "jvp": lambda: lib.jvp(f, (X, Y), (ones(X), Y)),
            # (tangents made by ones_like/zeros_like are unbatched: the rule sees neither
            # argument batched and runs under a vmap of its own, JAX's jvp-of-rule)
            "vmap_jvp": lambda: lib.vmap(lambda a, b: lib.jvp(f, (a, b),
                                                              (ones(a), zeros(b))))(X, Y),
            "vmap_jvp_both": lambda: lib.vmap(lambda a, b: lib.jvp(f, (a, b), (b, a)))(X, Y),
            "jvp_vmap": lambda: lib.jvp(lib.vmap(f, (0, None)), (X, 2.0), (Y, 1.0)),
            # (the rule applies inside the bodies that vmap batches)
            "vmap_jit_scan": lambda: lib.vmap(lib.jit(lambda xs: lib.lax.scan(
                lambda c, x: (c + f(x, c), c), 1.0, xs)[0]))(np.stack([X, Y])),
            "vmap_cond": lambda: lib.vmap(lambda p, x: lib.lax.cond(
                p, lambda: f(x, 2.0), lambda: x))(np.array([True, False, True]), X),
        }[case]()

    ours, theirs = _both(program)
    _assert_same(ours, theirs)
    assert logs["tracejit"] == logs["jax"]  # the rule saw the same axis sizes and flags


def test_rule_gets_pytrees_and_unbatched_outputs():
    """in_batched mirrors the arguments (a list of one pytree per argument); the rule may
    return outputs it leaves unbatched, which stay so."""
    logs = {}

    def program(lib):
        log = logs.setdefault(lib.__name__, [])
        jnp = lib.numpy

        @lib.custom_batching.custom_vmap
        def f(p, z):
            return {"s": p["a"] * jnp.sum(p["b"]) + z, "n": jnp.sum(p["b"])}

        @f.def_vmap
        def rule(axis_size, in_batched, p, z):
            log.append((axis_size, in_batched))
            out = {"s": p["a"] * 10 + (z if in_batched[1] else z * jnp.ones(axis_size)),
                   "n": jnp.sum(p["b"])}
            return out, {"s": True, "n": False}

        p = {"a": X, "b": np.ones((2,), np.float32)}
        return (lib.vmap(f, ({"a": 0, "b": None}, None))(p, 3.0),
                lib.jit(lib.vmap(f, ({"a": 0, "b": None}, 0)))(p, Y))

    ours, theirs = _both(program)
    _assert_same(ours, theirs)
    assert logs["tracejit"] == logs["jax"]


def test_reverse_mode_is_refused_as_in_jax():
    for make in [lambda lib, f: lib.grad(f)(1.0, 2.0),
                 lambda lib, f: lib.vmap(lib.grad(f))(X, Y),
                 lambda lib, f: lib.linearize(f, 1.0, 2.0),
                 lambda lib, f: lib.jit(lib.grad(f))(1.0, 2.0)]:
        errs = []
        for lib in (tracejit, jax):
            with pytest.raises(ValueError) as info:
                make(lib, _sin_mul(lib, []))
            errs.append(str(info.value))
        assert errs[0] == errs[1]
        assert "Linearization failed to produce known values" in errs[0]


def test_custom_vjp_around_custom_vmap():
    """JAX's documented way to have both: custom_vjp outside, its def_vmap forwarded to the
    inner custom_vmap; grad, vmap, vmap of grad and jit of those."""
    def program(lib):
        jnp = lib.numpy

        @lib.custom_vjp
        @lib.custom_batching.custom_vmap
        def f(x, y):
            return jnp.sin(x) * y

        @f.def_vmap
        def f_vmap_rule(axis_size, in_batched, xs, ys):
            return jnp.cos(xs) * ys, True

        def f_fwd(x, y):
            return f(x, y), (jnp.cos(x), jnp.sin(x), y)

        def f_bwd(res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)

        f.defvjp(f_fwd, f_bwd)
        return (lib.vmap(f)(X, Y), lib.grad(f)(0.5, 2.0), lib.vmap(lib.grad(f))(X, Y),
                lib.jit(lib.vmap(lib.grad(f, argnums=(0, 1))))(X, Y))

    _assert_same(*_both(program))


def test_jit_compiles_the_body_natively():
    """Unbatched under jit, the call is inlined: the compiled program has no custom_vmap call
    (and no call back into Python) and computes the function, not the rule."""
    f = _sin_mul(tracejit, [])
    assert "custom_vmap_call" in str(tracejit.make_jaxpr(f)(X, Y))
    compiled = tracejit.jit(f).lower(X, Y).compile()
    text = compiled.as_text()
    assert "custom_vmap_call" not in text and "callback" not in text
    np.testing.assert_allclose(compiled(X, Y), np.sin(X) * Y, rtol=2e-6)
    inside = tracejit.jit(lambda xs: tracejit.lax.scan(lambda c, x: (c + f(x, 2.0), c), 0.0,
                                                       xs)[0])
    np.testing.assert_allclose(inside(X), np.sum(np.sin(X) * 2), rtol=2e-6)


def test_sequential_vmap_runs_a_loop(capfd):
    """Each batch element is computed by the function in a loop (its debug.print shows them in
    order); unbatched arguments reach every iteration as they are."""
    def program(lib):
        jnp = lib.numpy

        @lib.custom_batching.sequential_vmap
        def g(x, y):
            lib.debug.print("x={}", x)
            return {"a": x + 1, "b": y * x, "c": jnp.sum(y)}

        out = (lib.vmap(g, (0, None))(np.arange(3), 2),
               lib.jit(lib.vmap(g, (None, 0)))(1.5, Y),
               lib.vmap(lib.vmap(g))(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)))
        lib.effects_barrier()
        return out

    ours = program(tracejit)
    printed_ours = capfd.readouterr().out
    theirs = program(jax)
    printed_theirs = capfd.readouterr().out
    _assert_same(ours, theirs)
    assert printed_ours == printed_theirs and printed_ours.startswith("x=0\nx=1\nx=2\n")

    @tracejit.custom_batching.sequential_vmap
    def h(x, y):
        return x * y

    assert "scan" in str(tracejit.make_jaxpr(tracejit.vmap(h, (0, None)))(X, 2.0))


def test_sequential_vmap_pytrees_and_jvp():
    """Batched and unbatched leaves of one argument's pytree; forward mode through the loop."""
    def program(lib):
        jnp = lib.numpy

        @lib.custom_batching.sequential_vmap
        def g(p, z):
            return {"s": p["a"] * jnp.sum(p["b"]) + z, "t": (p["a"], z)}

        p = {"a": jnp.arange(3.0), "b": jnp.ones((3, 2))}
        both = lib.vmap(g, ({"a": 0, "b": 0}, None))
        return (both(p, 2.0),
                lib.vmap(g, ({"a": None, "b": 0}, 0))({"a": 1.5, "b": p["b"]}, jnp.arange(3.0)),
                lib.jvp(both, (p, 2.0), (p, 1.0)))

    _assert_same(*_both(program))


@pytest.mark.parametrize("case", ["no_rule", "keyword_only", "value_tree", "output_tree"])
def test_errors_are_jaxs(case):
    def program(lib):
        cv = lib.custom_batching.custom_vmap
        if case == "no_rule":
            return cv(lambda x: x)(1.0)
        if case == "keyword_only":
            def k(x, *, z):
                return x
            f = cv(k)
            f.def_vmap(lambda n, b, x: (x, True))
            return f(1.0, z=2.0)

        def two(n, b, x, y):
            return (x, x), True

        def two_lists(n, b, x, y):
            return [x * y], [True]

        f = cv(lambda x, y: x * y)
        f.def_vmap(two if case == "value_tree" else two_lists)
        return lib.vmap(f)(X, Y)

    errs = []
    for lib in (tracejit, jax):
        with pytest.raises(Exception) as info:
            program(lib)
        errs.append((type(info.value), str(info.value)))
    assert errs[0] == errs[1]


def test_keyword_arguments_resolve_to_positions():
    def program(lib):
        @lib.custom_batching.custom_vmap
        def h(x, y=2.0):
            return x * y

        h.def_vmap(lambda n, b, x, y: (x * y * 10, True))
        return h(3.0), h(3.0, y=3.0), lib.vmap(lambda x: h(x, y=4.0))(lib.numpy.asarray(X))

    _assert_same(*_both(program))


def test_refusals_beyond_jax_say_why():
    """Where JAX fails without a message (an AssertionError for a closed-over batched value;
    an IndexError for jacfwd, whose rule claims a batch axis its output lacks) or returns
    arrays of the wrong shape (a rule's output shape that contradicts its claim; vmap of a jvp
    whose primal and tangent are batched for different arguments: JAX's jvp-of-rule batches
    the rule's batched output again, (3, 3) for a (3,) result), tracejit raises a ValueError
    naming the cause."""
    c = np.arange(3.0, dtype=np.float32)

    def closes_over(cc):
        f = t_custom_vmap(lambda x: x * cc)
        f.def_vmap(lambda n, b, x: (x * 7, True))
        return f(cc)

    with pytest.raises(ValueError, match="closes over a value that vmap batches"):
        tracejit.vmap(closes_over)(c)
    with pytest.raises(ValueError, match=r"output 0 has shape \(\) where \(1,\) was expected"):
        tracejit.jacfwd(_sin_mul(tracejit, []))(1.0, 2.0)
    wrong = t_custom_vmap(lambda x: x * c)
    wrong.def_vmap(lambda n, b, x: (x, True))
    with pytest.raises(ValueError, match=r"has shape \(3,\) where \(3, 3\) was expected"):
        tracejit.vmap(wrong)(c)
    f = _sin_mul(tracejit, [])
    with pytest.raises(ValueError, match=r"has shape \(3, 3\) where \(3,\) was expected"):
        tracejit.vmap(lambda a, b: tracejit.jvp(f, (a, b), (tracejit.numpy.ones_like(a), b)))(
            X, Y)
