"""Key-chain fission (compiler/key_chains.py): a scan that splits a PRNG key every step runs as
two scans, the key chain and the rest. Values: the SDE solver against real JAX's bits and the
reference interpreter, and every shape of split (reverse scans, keys among other carries, ys
read from the chain, chain values carried by the rest, nested scans, gradients) bit for bit
against the same program compiled without the pass and against the interpreter's run of the
rewritten jaxpr. Structure: which scans are split, and which are left alone (no threefry in
the chain, effects, one carry, stacked values over the bounds)."""
import numpy as np
import pytest
from tolerance import assert_jit_matches_eager, contraction_ulps

import tracejit
import tracejit.numpy as jnp
import tracejit.random as tr
from tracejit import lax
from tracejit.compiler import key_chains, passes
from tracejit.core.interpret import eval_jaxpr
from tracejit.lax.control_flow import scan_p
from tracejit.lax.random_bits import threefry2x32_p
from tracejit.runtime.jit import make_jaxpr


@pytest.fixture(scope="module")
def jax():
    return pytest.importorskip("jax")


def _sde(r, jnp_, lax_, steps, adaptive):
    """The seed article's SDE solver (benchmarks/workloads.py's), for tracejit or JAX."""
    def solve(key, x0, theta, dt):
        def step(carry, t):
            key, x, dt_current = carry
            key, subkey = r.split(key)
            dw = r.normal(subkey) * jnp_.sqrt(dt_current)
            dx = theta[0] * x * dt_current + theta[1] * x * dw
            x_new = x + dx
            if adaptive:
                dt_next = lax_.cond(jnp_.abs(dx / x) > 0.02, lambda d: d * 0.5, lambda d: d,
                                    dt_current)
            else:
                dt_next = dt_current
            return (key, x_new, dt_next), x_new
        (_, final_x, _), traj = lax_.scan(step, (key, x0, dt), xs=jnp_.arange(steps))
        return jnp_.concatenate([x0[jnp_.newaxis], traj]), final_x
    return solve


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    return x.view(f"uint{x.dtype.itemsize * 8}") if x.dtype.kind == "f" else x


def _scans(f, *args) -> list:
    """The top-level scans of f's program as the native backend optimises it (before fusion)."""
    closed = make_jaxpr(f)(*args)
    jaxpr = passes.split_key_chains(passes.dce(closed.jaxpr))
    return [e for e in jaxpr.eqns if e.primitive is scan_p]


def _hashes(scan) -> int:
    return sum(e.primitive is threefry2x32_p for e in scan.params["jaxpr"].jaxpr.eqns)


def _without_pass(monkeypatch, f, *args):
    with monkeypatch.context() as m:
        m.setattr(passes, "split_key_chains", lambda jaxpr: jaxpr)
        return tracejit.jit(f)(*args)


def _check(monkeypatch, f, *args, contractions: int = 0) -> None:
    """Native with the pass = native without it, and the interpreter on the rewritten jaxpr =
    the interpreter on the original, bit for bit; native = the interpreter bit for bit too, but
    for `contractions` sums per result of a normal draw (sqrt(2) * erf_inv(u), |.| < 6), one
    fma under jit (tests/tolerance.py `contraction_ulps`)."""
    got = tracejit.tree_util.tree_leaves(tracejit.jit(f)(*args))
    before = tracejit.tree_util.tree_leaves(_without_pass(monkeypatch, f, *args))
    closed = make_jaxpr(f)(*args)
    flat = [np.asarray(a) for a in tracejit.tree_util.tree_leaves(args)]
    want = eval_jaxpr(closed.jaxpr, closed.consts, *flat)
    split = eval_jaxpr(key_chains.split_key_chains(closed.jaxpr), closed.consts, *flat)
    for g, b, w, s in zip(got, before, want, split, strict=True):
        np.testing.assert_array_equal(_bits(g), _bits(b))
        np.testing.assert_array_equal(_bits(w), _bits(s))
        scale = np.abs(np.asarray(w, np.float64)).max(initial=0) + 6 if contractions else None
        assert_jit_matches_eager(g, w, ulps=contraction_ulps(contractions), scale=scale)


SDE_ARGS = (tr.PRNGKey(42), jnp.array(1.0), jnp.array([0.05, 0.2]), 0.01)


@pytest.mark.parametrize("adaptive", [False, True], ids=["fixed", "adaptive"])
def test_sde_matches_jax_exactly(adaptive, jax, monkeypatch):
    ours = tracejit.jit(_sde(tr, jnp, lax, 300, adaptive))(*SDE_ARGS)
    theirs = jax.jit(_sde(jax.random, jax.numpy, jax.lax, 300, adaptive))(
        jax.random.PRNGKey(42), jax.numpy.array(1.0), jax.numpy.array([0.05, 0.2]), 0.01)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(_bits(o), _bits(t))
    _check(monkeypatch, _sde(tr, jnp, lax, 300, adaptive), *SDE_ARGS)


def test_sde_splits_into_the_key_chain_and_the_draws():
    scans = _scans(_sde(tr, jnp, lax, 1000, True), *SDE_ARGS)
    assert len(scans) == 2
    keys, draws = scans
    assert keys.params["num_carry"] == 1 and _hashes(keys) == 1  # the split's hash alone
    assert draws.params["num_carry"] == 2 and _hashes(draws) == 1  # the normal's, then x, dt
    assert keys.outvars[1] in draws.invars  # the split keys, stacked: the draws' xs
    assert keys.outvars[1].aval.shape == (1000, 2, 2)


def _mixed(reverse):
    """Carries (x, key, n), ys reading the chain (the sub key, the carried key) and the rest; a
    carry of the rest that is a chain value (the last sub key)."""
    def f(key, x):
        def step(carry, t):
            x, key, _ = carry
            key, sub = tr.split(key)
            u = tr.uniform(sub, (3,))
            x = x * 0.5 + u * t
            return (x, key, sub), (sub, key, x[1] - x[2])
        return lax.scan(step, (x, key, key), xs=jnp.arange(9.0), reverse=reverse)
    return f


@pytest.mark.parametrize("reverse", [False, True])
def test_mixed_carries_and_ys(reverse, monkeypatch):
    f = _mixed(reverse)
    args = (tr.PRNGKey(3), jnp.zeros(3))
    _check(monkeypatch, f, *args)
    keys, rest = _scans(f, *args)
    assert keys.params["reverse"] == rest.params["reverse"] == reverse
    assert keys.params["num_carry"] == 1 and rest.params["num_carry"] == 2


def test_fold_in_chain_nested_scans_and_two_chains(monkeypatch):
    def f(key, other, x):
        def inner(c, _):
            y, k = c
            k, s = tr.split(k)
            return (y + tr.normal(s), k), None

        def step(carry, t):
            key, other, x = carry
            key = tr.fold_in(key, t)  # a chain through xs
            other, sub = tr.split(other)
            x = lax.scan(inner, (x, tr.fold_in(key, 7)), None, length=4)[0][0]
            return (key, other, x + tr.normal(sub)), x
        return lax.scan(step, (key, other, x), xs=jnp.arange(6))
    args = (tr.PRNGKey(0), tr.PRNGKey(1), jnp.float32(0.5))
    _check(monkeypatch, f, *args, contractions=6 * (4 + 1))  # (x + a draw, 5 a step)
    keys, rest = _scans(f, *args)
    assert keys.params["num_carry"] == 2 and rest.params["num_carry"] == 1


def test_gradient_through_a_split_scan(monkeypatch):
    def loss(theta, key):
        traj, final = _sde(tr, jnp, lax, 50, False)(key, jnp.float32(1.0), theta, 0.01)
        return jnp.sum(traj ** 2) + final
    theta = jnp.array([0.05, 0.2])
    _check(monkeypatch, tracejit.grad(loss), theta, tr.PRNGKey(5))
    g = tracejit.jit(tracejit.grad(loss))(theta, tr.PRNGKey(5))
    eps = 1e-3  # float32: central differences, a loose check that the gradient is the loss's
    for i in range(2):
        d = np.zeros(2, np.float32)
        d[i] = eps
        fd = (loss(theta + d, tr.PRNGKey(5)) - loss(theta - d, tr.PRNGKey(5))) / (2 * eps)
        np.testing.assert_allclose(float(g[i]), float(fd), rtol=2e-2)


def _counter(i, c):  # a fori_loop: a counter chain with no hash
    return c * 0.5 + i


def test_scans_left_alone(monkeypatch):
    key, x = tr.PRNGKey(0), jnp.float32(1.0)

    def split_only(key, x):  # nothing but the chain
        return lax.scan(lambda k, _: (tr.split(k)[0], None), key, None, length=5)[0]

    def one_carry(key, x):  # the key is the only carry: no second chain to part from
        return lax.scan(lambda k, _: (tr.split(k)[0], tr.normal(k)), key, None, length=5)

    def printing(key, x):
        def step(c, _):
            k, x = c
            k, s = tr.split(k)
            tracejit.debug.print("{}", x)
            return (k, x + tr.normal(s)), None
        return lax.scan(step, (key, x), None, length=3)[0]

    def too_big(key, x):  # more than MAX_STEP_BYTES read from the chain a step
        def step(c, _):
            k, x = c
            keys = tr.split(k, key_chains.MAX_STEP_BYTES // 8 + 1)  # (8 bytes a key)
            return (keys[0], x + jnp.sum(tr.normal(keys[-1], (2,)))), None
        return lax.scan(step, (key, x), None, length=3)

    for f, contractions in ((split_only, 0), (one_carry, 0), (printing, 3), (too_big, 3),
                            (lambda key, x: lax.fori_loop(0, 10, _counter, x), 0)):
        assert len(_scans(f, key, x)) <= 1, f
        _check(monkeypatch, f, key, x, contractions=contractions)


def test_long_scans_stay_whole_past_max_bytes(monkeypatch):
    steps = key_chains.MAX_BYTES // 16 + 1  # 16 bytes a step: the split's two keys
    f = _sde(tr, jnp, lax, steps, False)
    assert len(_scans(f, *SDE_ARGS)) == 1
    assert len(_scans(_sde(tr, jnp, lax, steps - 1, False), *SDE_ARGS)) == 2
