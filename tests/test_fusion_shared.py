"""Fusion of a value read more than once inside one kernel (compiler/fusion.py): it is computed
in the kernel, once per element, instead of being stored by a kernel of its own. Native results
against NumPy (bit for bit where only + - * are involved, a product whose only reader adds it
being one fma, as XLA contracts it: `_fma`) and the reference interpreter, and the kernel
counts of the compiled programs."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.lax.elementwise import _fma_impl as _fma

F32 = np.float32
RNG = np.random.default_rng(0)


def _kernels(f, *args) -> list[str]:
    """The compiled program's kernel summary lines ("sub -> mul -> add", ...)."""
    text = tracejit.jit(f).lower(*args).compile().as_text()
    return re.findall(r"^// kernel \d+: (.*)$", text, re.M)


def _close_to_interpreter(f, *args, rtol=2e-6):
    got = tracejit.jit(f)(*args)
    want = tracejit.jit(f, backend="interpret")(*args)
    for g, w in zip(tracejit.tree_util.tree_leaves(got), tracejit.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-6)
    return got


def _tanh_backward(d, t, w):
    """The tanh derivative of an MLP's backward pass as grad writes it: (d w^T) * (1 - t^2)
    computed as p + p * t with p = (d w^T) * (1 - t)."""
    p = d * w.reshape(1, -1) * (1.0 - t)
    return p + p * t


@pytest.mark.parametrize("shape", [(3, 5), (257, 64)])   # the second above the pool's threshold
def test_product_read_twice_is_one_kernel_and_exact(shape):
    d = RNG.standard_normal((shape[0], 1)).astype(F32)
    t = RNG.uniform(-1, 1, shape).astype(F32)
    w = RNG.standard_normal(shape[1]).astype(F32)
    assert len(_kernels(_tanh_backward, d, t, w)) == 1
    got = tracejit.jit(_tanh_backward)(d, t, w)
    p = d * w.reshape(1, -1) * (F32(1) - t)
    np.testing.assert_array_equal(np.asarray(got), _fma(p, t, p))  # (p is read twice)


def test_value_read_twice_by_the_root_itself():
    a, b, c = (RNG.standard_normal((7, 9)).astype(F32) for _ in range(3))

    def f(a, b, c):
        x = a * b + c
        return x * x - x
    assert _kernels(f, a, b, c) == ["mul -> add -> mul -> sub"]
    x = _fma(a, b, c)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(f)(a, b, c)), _fma(x, x, -x))


def test_expensive_value_read_twice_under_a_reduction():
    x = RNG.standard_normal((33, 17)).astype(F32)

    def f(x):
        e = jnp.exp(x * 0.5)
        return jnp.sum(jnp.sin(e) * e, axis=1), jnp.max(x * x + x, axis=0)
    assert _kernels(f, x) == ["mul -> exp -> sin -> mul -> reduce_sum",
                              "mul -> add -> reduce_max"]
    got = _close_to_interpreter(f, x, rtol=1e-5)
    e = np.exp(x.astype(np.float64) * 0.5)
    np.testing.assert_allclose(got[0], np.sum(np.sin(e) * e, axis=1), rtol=1e-5)
    np.testing.assert_array_equal(got[1], np.max(_fma(x, x, x), axis=0))


def test_shared_value_that_is_also_an_output_is_stored():
    x = RNG.standard_normal((6, 8)).astype(F32)

    def f(x):
        t = jnp.tanh(x)
        return t, t * 2.0 + t * t
    assert _kernels(f, x) == ["tanh", "mul -> mul -> add"]
    t, y = _close_to_interpreter(f, x)
    np.testing.assert_allclose(t, np.tanh(x), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(t) * 2 + np.asarray(t) ** 2)


def test_value_read_at_another_element_or_by_two_kernels_is_stored():
    x = RNG.standard_normal((5, 5)).astype(F32)

    def f(x):
        e = jnp.exp(x) + 1.0
        return e * e.T, jnp.sin(e), jnp.sum(e)
    kernels = _kernels(f, x)
    assert sum(k.count("exp") for k in kernels) == 1   # computed once, stored
    got = _close_to_interpreter(f, x, rtol=1e-5)
    e = np.exp(x.astype(np.float64)) + 1
    np.testing.assert_allclose(got[0], e * e.T, rtol=1e-5)


def test_broadcast_operands_and_integer_values():
    i = RNG.integers(-20, 20, (4, 6)).astype(np.int32)
    r = RNG.integers(-3, 3, (6,)).astype(np.int32)

    def f(i, r):
        s = i * r + 3
        return (s * s) // 2 + jnp.where(s > 0, s, -s)
    s = i * r + 3
    assert len(_kernels(f, i, r)) == 1
    np.testing.assert_array_equal(np.asarray(tracejit.jit(f)(i, r)),
                                  (s * s) // 2 + np.abs(s))


def test_mlp_step_gradient_against_finite_differences():
    """The tanh MLP step of the benchmarks: its backward pass's `p + p * t` is one kernel with
    the product before it, and the gradient matches central differences."""
    x = RNG.standard_normal((16, 8)).astype(np.float64).astype(F32)
    y = RNG.standard_normal((16, 1)).astype(F32)
    w1 = (RNG.standard_normal((8, 8)) / 3).astype(F32)
    w2 = (RNG.standard_normal((8, 1)) / 3).astype(F32)

    def loss(w1, w2):
        return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)
    g1, g2 = tracejit.jit(tracejit.grad(loss, argnums=(0, 1)))(w1, w2)
    kernels = _kernels(tracejit.grad(loss, argnums=(0, 1)), w1, w2)
    assert any("mul -> mul -> add" in k for k in kernels) and len(kernels) <= 3

    def np_loss(w1, w2):
        return np.mean((np.tanh(x.astype(np.float64) @ w1) @ w2 - y) ** 2)
    w1d, w2d, eps = w1.astype(np.float64), w2.astype(np.float64), 1e-6
    for (i, j) in [(0, 0), (3, 5), (7, 2)]:
        up, dn = w1d.copy(), w1d.copy()
        up[i, j] += eps
        dn[i, j] -= eps
        fd = (np_loss(up, w2d) - np_loss(dn, w2d)) / (2 * eps)
        np.testing.assert_allclose(g1[i, j], fd, rtol=1e-3, atol=1e-5)
    up, dn = w2d.copy(), w2d.copy()
    up[4, 0] += eps
    dn[4, 0] -= eps
    np.testing.assert_allclose(g2[4, 0], (np_loss(w1d, up) - np_loss(w1d, dn)) / (2 * eps),
                               rtol=1e-3, atol=1e-5)


def test_inside_vmap_and_scan_bodies():
    x = RNG.standard_normal((3, 4, 5)).astype(F32)

    def step(c, xi):
        t = jnp.tanh(xi + c)
        p = t * (1.0 - t)
        return c + p.sum() * 0.01, p + p * t
    f = tracejit.vmap(lambda xs: lax.scan(step, jnp.float32(0.0), xs))
    _close_to_interpreter(f, x, rtol=1e-5)


def test_donated_input_written_by_a_kernel_sharing_a_value():
    """The kernel reads the donated input only at the element it writes (through the shared
    value too), so its output takes over the input's buffer; the values stay NumPy's."""
    x = RNG.standard_normal((64, 32)).astype(F32)

    def f(x):
        for _ in range(20):   # diamonds: each step reads the previous value twice
            x = x + x * 0.5
        return x
    want = x.copy()
    for _ in range(20):
        want = want + want * F32(0.5)
    assert len(_kernels(f, x)) <= 2
    got = tracejit.jit(f, donate_argnums=0)(tracejit.numpy.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), want)


def test_cheap_bias_add_is_copied_into_each_kernel_reading_it():
    """XLA's duplication of cheap producers: `x @ w + b` read by relu (after the custom_jvp
    call is inlined) and by a transposed read is recomputed in both kernels, never stored; an
    add of two full arrays read by two kernels is stored (copying it would read both twice)."""
    x, w = RNG.standard_normal((8, 5)).astype(F32), RNG.standard_normal((5, 6)).astype(F32)
    b = RNG.standard_normal(6).astype(F32)

    def f(x, w, b):
        h = x @ w + b
        return tracejit.nn.relu(h), h.T * 2.0
    assert _kernels(f, x, w, b) == ["broadcast_in_dim -> add -> max",
                                    "broadcast_in_dim -> add -> transpose -> mul"]
    got = tracejit.jit(f)(x, w, b)
    h = np.asarray(tracejit.jit(lambda x, w: x @ w)(x, w)) + b
    np.testing.assert_array_equal(np.asarray(got[0]), np.maximum(h, 0))
    np.testing.assert_array_equal(np.asarray(got[1]), h.T * 2)

    def g(x, y):
        s = x + y
        return jnp.sum(s, axis=0), s.T * 2.0
    y = RNG.standard_normal((8, 5)).astype(F32)
    assert _kernels(g, x, y) == ["add", "reduce_sum", "transpose -> mul"]
    np.testing.assert_array_equal(np.asarray(tracejit.jit(g)(x, y)[1]), (x + y).T * 2)


def test_kernel_limits_cut_long_chains_not_wide_kernels():
    """Fusion's two limits (fusion.MAX_KERNEL_COST, MAX_KERNEL_DEPTH): a wide kernel of more
    than MAX_KERNEL_DEPTH equations whose chains are short stays one kernel (ndtri's three
    rational functions); a chain of cheap ops is cut at the depth, one of transcendental ops
    at the cost; every piece computes what the interpreter does."""
    from tracejit.compiler.fusion import MAX_KERNEL_COST, MAX_KERNEL_DEPTH, TRANSCENDENTAL_COST
    x = RNG.uniform(0.1, 0.9, 1000).astype(F32)

    def wide(x):  # 8 independent chains of 8 ops, summed: depth ~12, ~70 equations
        terms = []
        for k in range(8):
            t = x + float(k)
            for _ in range(3):
                t = t * t - x
            terms.append(lax.polynomial(t, (1.0, 0.5, 0.25, 0.125)))
        return sum(terms[1:], terms[0])
    assert len(tracejit.jit(wide).trace(x).jaxpr.eqns) > 2 * MAX_KERNEL_DEPTH
    assert len(_kernels(wide, x)) == 1
    _close_to_interpreter(wide, x)

    def chain(x, n, op):
        for _ in range(n):
            x = op(x)
        return x
    n = 3 * MAX_KERNEL_DEPTH
    assert len(_kernels(lambda x: chain(x, n, lambda v: v * 0.5 + 0.25), x)) == 6  # 2n eqns
    per_kernel = min(MAX_KERNEL_DEPTH, MAX_KERNEL_COST // TRANSCENDENTAL_COST)
    assert len(_kernels(lambda x: chain(x, n, jnp.sin), x)) == -(-n // per_kernel)
    _close_to_interpreter(lambda x: chain(x, n, jnp.sin), x)

    def heavy(x):  # a wide kernel of transcendental ops past the cost: cut
        return sum((jnp.sin(x + float(k)) for k in range(1, 40)), jnp.sin(x))
    assert len(_kernels(heavy, x)) > 1
    _close_to_interpreter(heavy, x, rtol=1e-5)


def test_an_op_of_broadcasts_runs_at_their_shape_and_is_stored_once():
    """sin of meshgrid's X (a (2000, 2000) broadcast of 2,000 values) is sin of the 2,000
    values, broadcast (passes._broadcast_last, as XLA's simplifier sinks broadcasts); and a
    transcendental value that a broadcast enlarges is stored by a kernel of its own (fusion),
    not computed again for every element its consumer reads. Values: the same operations on
    the same values, so the same bits as sin computed alone, and NumPy's within rounding."""
    a = RNG.uniform(-3, 3, 300).astype(F32)
    b = RNG.uniform(-3, 3, 200).astype(F32)

    def meshgrid(a, b):
        x, y = jnp.meshgrid(a, b)
        return jnp.sin(x) * y + jnp.exp(y * 0.5)

    def written_out(a, b):  # the broadcasts written by hand, and a broadcast value reused
        s = jnp.tanh(a)
        return s[None, :] * b[:, None] + s[None, :]
    for f in (meshgrid, written_out):
        text = tracejit.jit(f).lower(a, b).compile().as_text()
        assert not re.search(r"f32\[200,300\] = (sin|exp|tanh) ", text), text
        assert re.search(r"f32\[300\] = (sin|tanh) ", text)
    got = np.asarray(tracejit.jit(meshgrid)(a, b))
    s, e = np.asarray(tracejit.jit(jnp.sin)(a)), np.asarray(tracejit.jit(jnp.exp)(b * F32(0.5)))
    np.testing.assert_array_equal(got, _fma(s[None, :], b[:, None], e[:, None]))
    np.testing.assert_allclose(got, np.sin(a)[None, :] * b[:, None] + np.exp(b * 0.5)[:, None],
                               rtol=2e-6, atol=2e-6)
    _close_to_interpreter(written_out, a, b)


@pytest.mark.parametrize("mode", ["reflect", "symmetric", "edge", "wrap"])
def test_padding_an_edge_made_from_another_is_one_kernel_per_axis(mode):
    """jnp.pad's reflect and symmetric modes concatenate a reversed edge, then slice the other
    edge out of that concatenate (passes._slice_of_concatenate reads it from the operand) and
    concatenate again (passes._flatten_concatenates makes the two one): one kernel per padded
    axis, each cut into loop pieces, where each step was a kernel storing its whole result.
    NumPy's values, bit for bit."""
    x = RNG.standard_normal((40, 50)).astype(F32)
    f = lambda a: jnp.pad(a, ((3, 5), (7, 2)), mode=mode)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(tracejit.jit(f)(x)),
                                  np.pad(x, ((3, 5), (7, 2)), mode=mode))
    assert len(_kernels(f, x)) <= 2
