"""Mutable array references (jax.new_ref / Ref / freeze, jax.ref) against real JAX: reads and
writes eagerly, Refs passed into jit (writes seen after the call) or closed over, Refs made
inside jit, under scan / fori_loop / while_loop / cond, grad and vmap through them, and JAX's
errors for what it rejects."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp

APIS = {"ours": (tj, tnp), "jax": (jax, jnp)}


def _both(program):
    """program(api, np_module) for tracejit and JAX: (ours, theirs)."""
    return program(*APIS["ours"]), program(*APIS["jax"])


def _same(ours, theirs, rtol=1e-6):
    ours_l, theirs_l = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ours_l) == len(theirs_l)
    for a, b in zip(ours_l, theirs_l):
        a = a[...] if isinstance(a, tj.Ref) else a
        b = b[...] if isinstance(b, jax.Ref) else b
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol)


def test_eager_reads_and_writes():
    def program(api, m):
        r = api.new_ref(m.arange(6.0).reshape(2, 3))
        reads = [r[...], r[0], r[:, 1], r[1, 2]]
        r[1] = m.ones(3)
        r[:, 0] += 10.0
        r[0, 2] = 7.0
        old = api.ref.swap(r, (0, 1), 5.0)
        api.ref.addupdate(r, ..., m.full((2, 3), 0.5))
        api.ref.set(r, 1, m.zeros(3))
        return reads, old, api.ref.get(r, 0), api.freeze(r)
    _same(*_both(program))


def test_ref_surface_is_jaxs():
    for api, m in APIS.values():
        r = api.new_ref(m.arange(6.0).reshape(2, 3))
        assert (r.shape, r.ndim, r.dtype, r.size, len(r)) == ((2, 3), 2, np.float32, 6, 2)
        assert isinstance(r, api.Ref) and not isinstance(r, api.Array)
    ours, theirs = tj.new_ref(tnp.arange(3.0)), jax.new_ref(jnp.arange(3.0))
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert str(tj.typeof(ours)) == str(jax.typeof(theirs)) == "Ref{float32[3]}"
    assert repr(tj.new_ref(1)) == repr(jax.new_ref(1))
    with pytest.raises(TypeError, match="unsupported operand"):
        ours + 1
    with pytest.raises(TypeError, match="Error interpreting argument to new_ref"):
        tj.new_ref([1.0, 2.0])


@pytest.mark.parametrize("value,match", [
    (np.ones(3, np.int32), "Invalid dtype for `swap`. Ref dtype: float32. Value dtype: int32"),
    (np.ones(4, np.float32), "Invalid shape for `swap`. Ref shape: \\(3,\\)"),
    (2.0, "Invalid shape for `swap`"),
    (2, "Invalid"),
])
def test_bad_writes_raise_jaxs_errors(value, match):
    for api, m in APIS.values():
        r = api.new_ref(m.zeros(3))
        with pytest.raises(ValueError, match=match):
            r[...] = value


def test_refs_passed_into_jit_are_written_back():
    def program(api, m):
        @api.jit
        def step(r, x):
            r[...] = r[...] * x
            r[0] += 1.0
            return x + 1

        a, b = api.new_ref(m.arange(3.0)), api.new_ref(m.ones(3))
        outs = [step(a, 2.0), step(a, 3.0), step(b, 2.0)]
        kw = api.jit(lambda x, *, r: r.__setitem__(..., r[...] - x))
        kw(1.0, r=b)
        return outs, a, b
    _same(*_both(program))


def test_one_trace_serves_every_ref_of_a_signature():
    traces = []

    @tj.jit
    def bump(r):
        traces.append(1)
        r[...] += 1.0

    refs = [tj.new_ref(tnp.full(2, float(i))) for i in range(3)]
    for r in refs:
        bump(r)
        bump(r)
    assert len(traces) == 1
    np.testing.assert_array_equal([r[...] for r in refs], [[2, 2], [3, 3], [4, 4]])


def test_closed_over_refs_and_refs_made_inside_jit():
    def program(api, m):
        counter = api.new_ref(m.zeros((), m.int32))
        total = api.new_ref(m.zeros(2))

        @api.jit
        def f(x):
            counter[...] += 1
            total[...] += x
            local = api.new_ref(m.zeros_like(x))
            local[...] = x * 2
            local[0] += 1.0
            return local[...] + total[...], api.freeze(api.new_ref(x)) + 1

        outs = [f(m.ones(2)), f(m.arange(2.0))]
        nested = api.jit(lambda x: f(x)[0] * 2)(m.ones(2))  # a jit in a jit, closing over both
        return outs, nested, counter, total
    _same(*_both(program))


def test_refs_under_scan_fori_while_and_cond():
    def program(api, m):
        lax = api.lax

        def accumulate(xs, n):
            acc = api.new_ref(0.0)
            hist = api.new_ref(m.zeros(3))

            def body(c, x):
                acc[...] += x
                return c + 1, acc[...]
            c, ys = lax.scan(body, 0, xs)

            def fori_body(i, carry):
                hist[i % 3] += 1.0
                return carry * 2
            carry = lax.fori_loop(0, n, fori_body, 1.0)

            def wbody(k):
                hist[0] += acc[...]
                return k + 1
            lax.while_loop(lambda k: k < 2, wbody, 0)
            lax.cond(acc[...] > 3.0, lambda: hist.__setitem__(2, -1.0),
                     lambda: hist.__setitem__(1, -1.0))
            return c, ys, carry, acc[...], hist[...]

        xs = m.arange(4.0)
        return (accumulate(xs, 5), api.jit(accumulate, static_argnums=1)(xs, 5),
                api.jit(accumulate)(xs, 4))  # traced bounds: a while loop
    _same(*_both(program))


def test_cond_and_switch_write_refs_passed_to_jit():
    def program(api, m):
        def choose(p, i, r):
            api.lax.cond(p, lambda: r.__setitem__(..., r[...] + 1.0),
                         lambda: r.__setitem__(..., r[...] - 1.0))
            api.lax.switch(i, [lambda: r.__setitem__(0, 10.0), lambda: None,
                               lambda: r.__setitem__(1, 20.0)])
        rs = [api.new_ref(m.zeros(2)) for _ in range(3)]
        jitted = api.jit(choose)
        jitted(True, 0, rs[0])
        jitted(False, 2, rs[1])
        choose(False, 1, rs[2])
        return rs
    _same(*_both(program))


def test_grad_and_vmap_through_refs_made_inside():
    def program(api, m):
        def f(x):
            r = api.new_ref(x)
            r[...] = m.sin(r[...])
            acc = api.new_ref(m.zeros_like(x))

            def body(c, _):
                acc[...] += r[...] * c
                return c * 2.0, None
            api.lax.scan(body, 1.0, None, length=3)
            return m.sum(acc[...] * 2)
        x = m.linspace(0.1, 1.0, 3)
        return (api.grad(f)(x), api.jit(api.grad(f))(x), api.vmap(api.grad(f))(m.stack([x, x])),
                api.vmap(f)(m.stack([x, 2 * x])))
    ours, theirs = _both(program)
    _same(ours, theirs, rtol=2e-6)
    eps = 1e-3
    x = np.linspace(0.1, 1.0, 3)
    fd = [(np.sum(2 * 7 * np.sin(x + eps * e)) - np.sum(2 * 7 * np.sin(x - eps * e))) / (2 * eps)
          for e in np.eye(3)]
    np.testing.assert_allclose(ours[0], fd, rtol=1e-4)


def test_returning_a_ref_raises_jaxs_error():
    ours, theirs = [], []
    for api, out in ((tj, ours), (jax, theirs)):
        for stage in (lambda x: api.jit(lambda v: api.new_ref(v))(x),
                      lambda x: api.lax.cond(True, lambda: api.new_ref(x),
                                             lambda: api.new_ref(x))):
            with pytest.raises(ValueError) as e:
                stage(1.0)
            out.append(str(e.value).split(" at ")[0] + str(e.value).split("traced for")[1]
                       .split("\n")[0])
    assert ours == theirs


def test_one_ref_passed_twice_raises_jaxs_error():
    def both_args(a, b):
        a[...] += b[...]
    for api, m in APIS.values():
        r = api.new_ref(m.ones((2, 3)))
        with pytest.raises(ValueError, match="only one reference to a mutable array may be "
                                             "passed as an argument to a function, but when "
                                             "tracing both_args at .* for jit the mutable array "
                                             "reference of type Ref{float32\\[2,3\\]} appeared "
                                             "at both a and b"):
            api.jit(both_args)(r, r)


def test_a_ref_made_inside_jit_cannot_be_used_after_it():
    leaked = []

    @tj.jit
    def f(x):
        r = tj.new_ref(x)
        leaked.append(r)
        return r[...] * 2
    tj.new_ref(0.0)  # (Refs are in use: jit stages with their scope)
    np.testing.assert_allclose(f(2.0), 4.0)
    with pytest.raises(ValueError, match="created inside a staged function"):
        leaked[0][...]


def test_writing_a_transformed_value_into_an_outside_ref_raises_as_jax():
    for api, m in APIS.values():
        r = api.new_ref(m.arange(3.0))
        with pytest.raises(Exception, match="differentiated value on a non-differentiated "
                                            "array reference of type Ref{float32\\[3\\]}"):
            api.grad(lambda x: (r.__setitem__(0, x), r[0] * 2)[1])(1.0)
        np.testing.assert_allclose(api.grad(lambda x: r[1] * x)(1.0), 1.0)  # reading is fine
