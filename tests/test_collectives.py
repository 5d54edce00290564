"""Collectives over named axes (lax.psum & co.) under vmap(axis_name=...), pmap, jit, grad and
control flow, compared with real JAX; staging with make_jaxpr(axis_env=...); JAX's errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp

XS = np.arange(6.0, dtype=np.float32).reshape(3, 2)
PERM = [(0, 1), (1, 2), (2, 0)]


def _v(j, f):
    return j.vmap(f, axis_name="i")


CASES = {
    "psum": lambda j, m: _v(j, lambda x: j.lax.psum(x, "i"))(XS),
    "psum_of_a_constant": lambda j, m: _v(j, lambda x: j.lax.psum(1, "i"))(XS),
    "psum_of_bools": lambda j, m: _v(j, lambda x: j.lax.psum(x > 2, "i"))(XS),
    "psum_pytree": lambda j, m: _v(j, lambda x: j.lax.psum({"a": x, "b": (2 * x,)}, "i"))(XS),
    "pmean": lambda j, m: _v(j, lambda x: j.lax.pmean(x, "i"))(XS),
    "pmax": lambda j, m: _v(j, lambda x: j.lax.pmax(x, "i"))(XS),
    "pmin_int": lambda j, m: _v(j, lambda x: j.lax.pmin(x.astype(m.int32), "i"))(XS),
    "all_gather": lambda j, m: _v(j, lambda x: j.lax.all_gather(x, "i"))(XS),
    "all_gather_axis1": lambda j, m: _v(j, lambda x: j.lax.all_gather(x, "i", axis=1))(XS),
    "all_gather_tiled": lambda j, m: _v(j, lambda x: j.lax.all_gather(x, "i", tiled=True))(XS),
    "axis_index": lambda j, m: _v(j, lambda x: j.lax.axis_index("i"))(XS),
    "axis_size": lambda j, m: _v(j, lambda x: x * j.lax.axis_size("i"))(XS),
    "ppermute": lambda j, m: _v(j, lambda x: j.lax.ppermute(x, "i", PERM))(XS),
    "pshuffle": lambda j, m: _v(j, lambda x: j.lax.pshuffle(x, "i", [2, 0, 1]))(XS),
    "psum_scatter": lambda j, m: _v(j, lambda x: j.lax.psum_scatter(m.arange(3.0) * x[0],
                                                                    "i"))(XS),
    "psum_scatter_tiled": lambda j, m: _v(j, lambda x: j.lax.psum_scatter(
        m.outer(m.arange(6.0), x), "i", tiled=True))(XS),
    "all_to_all": lambda j, m: _v(j, lambda x: j.lax.all_to_all(m.outer(m.arange(3.0), x), "i",
                                                                0, 1))(XS),
    "all_to_all_1_0": lambda j, m: _v(j, lambda x: j.lax.all_to_all(m.outer(x, m.arange(3.0)),
                                                                    "i", 1, 0))(XS),
    "all_to_all_tiled": lambda j, m: _v(j, lambda x: j.lax.all_to_all(
        m.outer(m.arange(6.0), x), "i", 0, 1, tiled=True))(XS),
    "pswapaxes": lambda j, m: _v(j, lambda x: j.lax.pswapaxes(m.outer(m.arange(3.0), x), "i",
                                                              0))(XS),
    "two_names": lambda j, m: j.vmap(j.vmap(lambda x: j.lax.psum(x, ("i", "j")), axis_name="j"),
                                     axis_name="i")(XS),
    "outer_name": lambda j, m: j.vmap(j.vmap(lambda x: j.lax.psum(x, "i"), axis_name="j"),
                                      axis_name="i")(XS),
    "inner_gather": lambda j, m: j.vmap(j.vmap(lambda x: j.lax.all_gather(x, "j"),
                                               axis_name="j"), axis_name="i")(XS),
    "index_two_names": lambda j, m: j.vmap(j.vmap(lambda x: j.lax.axis_index(("i", "j")),
                                                  axis_name="j"), axis_name="i")(XS),
    "in_axes_1": lambda j, m: j.vmap(lambda x: j.lax.psum(x, "i"), in_axes=1,
                                     axis_name="i")(XS),
    # staged: jit inside and outside the map, control flow bodies
    "jit_inside": lambda j, m: _v(j, lambda x: j.jit(lambda y: j.lax.psum(y, "i"))(x))(XS),
    "jit_outside": lambda j, m: j.jit(_v(j, lambda x: j.lax.psum(x, "i")
                                         + j.lax.axis_index("i")))(XS),
    "axis_index_in_jit": lambda j, m: _v(j, lambda x: j.jit(
        lambda y: y + j.lax.axis_index("i"))(x))(XS),
    "fori_loop": lambda j, m: _v(j, lambda x: j.lax.fori_loop(
        0, 2, lambda k, c: j.lax.psum(c, "i"), x))(XS),
    "cond": lambda j, m: _v(j, lambda x: j.lax.cond(x[0] > 1, lambda y: j.lax.psum(y, "i"),
                                                    lambda y: y, x))(XS),
    "scan": lambda j, m: _v(j, lambda x: j.lax.scan(lambda c, _: (j.lax.pmean(c, "i") + 1, c),
                                                    x, None, length=2)[0])(XS),
    "pmap": lambda j, m: j.pmap(lambda x: j.lax.psum(x, "i") + j.lax.axis_index("i"),
                                axis_name="i")(XS[:1]),
    # differentiation: psum's transpose is a psum, all_gather's a psum_scatter, ppermute's the
    # inverse permutation
    "grad_psum": lambda j, m: j.vmap(j.grad(lambda x: j.lax.psum(x * x, "i").sum()),
                                     axis_name="i")(XS),
    "grad_all_gather": lambda j, m: j.vmap(j.grad(lambda x: (
        j.lax.all_gather(x, "i") * m.arange(3.0)[:, None]).sum()), axis_name="i")(XS),
    "grad_ppermute": lambda j, m: j.vmap(j.grad(lambda x: (
        j.lax.ppermute(x, "i", PERM) * m.arange(2.0)).sum()), axis_name="i")(XS),
    "grad_psum_scatter": lambda j, m: j.vmap(j.grad(lambda x: j.lax.psum_scatter(
        m.outer(m.arange(3.0), x), "i").sum()), axis_name="i")(XS),
    "jit_grad_pmean": lambda j, m: j.jit(j.vmap(j.grad(lambda x: m.sum(
        m.sin(j.lax.pmean(x, "i")) * x)), axis_name="i"))(XS),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_collective_matches_jax(case):
    theirs = CASES[case](jax, jnp)
    ours = CASES[case](tj, tnp)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.asarray(a).shape == np.asarray(b).shape
        assert np.asarray(a).dtype == np.asarray(b).dtype
        # (atol: values of order 1-30 built by float32 sums; cancellation leaves an ulp of
        # the terms, not of the result)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def test_a_data_parallel_step_equals_the_full_batch_step():
    """The data-parallel pattern: per-shard gradients averaged with pmean equal the gradient
    of the whole batch."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = rng.normal(size=(8, 3)).astype(np.float32)

    def loss(w, x, y):
        return tnp.mean((tnp.tanh(x @ w) - y) ** 2)

    def step(w, x, y):
        return tj.lax.pmean(tj.grad(loss)(w, x, y), "batch")

    shards = tj.vmap(step, in_axes=(None, 0, 0), axis_name="batch")(
        w, x.reshape(4, 2, 4), y.reshape(4, 2, 3))
    full = tj.grad(loss)(w, x, y)
    np.testing.assert_allclose(np.asarray(shards[0]), np.asarray(full), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(shards[3]), np.asarray(full), rtol=1e-5, atol=1e-7)


STAGED = {
    "psum": lambda j, x: j.lax.psum(x, "i"),
    "psum_pytree": lambda j, x: j.lax.psum((x, 2 * x), "i"),
    "pmax": lambda j, x: j.lax.pmax(x, "i"),
    "axis_index": lambda j, x: j.lax.axis_index("i"),
    "all_gather": lambda j, x: j.lax.all_gather(x, "i", axis=1, tiled=True),
    "ppermute": lambda j, x: j.lax.ppermute(x, "i", [(0, 1)]),
    "psum_scatter": lambda j, x: j.lax.psum_scatter(x, "i"),
}


@pytest.mark.parametrize("case", sorted(STAGED))
def test_staged_with_axis_env_prints_as_jax(case):
    def jaxpr(j):
        return str(j.make_jaxpr(lambda x: STAGED[case](j, x), axis_env=[("i", 3)])(
            np.ones((3, 2), np.float32)))
    assert jaxpr(tj) == jaxpr(jax)


ERRORS = {
    "unbound_eager": (lambda j: j.lax.psum(1.0, "i"), NameError, "unbound axis name: i"),
    "unbound_in_vmap": (lambda j: j.vmap(lambda x: j.lax.psum(x, "j"), axis_name="i")(XS),
                        NameError, "unbound axis name: j"),
    "ppermute_duplicate": (lambda j: j.pmap(lambda x: j.lax.ppermute(
        x, "i", [(0, 0), (0, 0)]), axis_name="i")(XS[:1]), ValueError, "unique"),
    "pshuffle_not_a_permutation": (lambda j: j.vmap(lambda x: j.lax.pshuffle(
        x, "i", [0, 0, 1]), axis_name="i")(XS), ValueError, "permutation"),
    "pmax_grad": (lambda j: j.vmap(j.grad(lambda x: j.lax.pmax(x, "i").sum()),
                                   axis_name="i")(XS), NotImplementedError,
                  "Differentiation rule for 'pmax' not implemented"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_as_jax(case):
    fn, kind, words = ERRORS[case]
    for j in (jax, tj):
        with pytest.raises(kind, match=words):
            fn(j)


def _devices_in_subprocess(code: str, **env) -> str:
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": root, **env}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize("how", ["config", "env", "xla_flags"])
def test_the_number_of_cpu_devices_is_configured_as_jax_reads_it(how):
    code = ("import tracejit as jax\n"
            + ("jax.config.update('jax_num_cpu_devices', 3)\n" if how == "config" else "")
            + "print([d.id for d in jax.devices()], jax.device_count())\n"
            "try:\n    jax.config.update('jax_num_cpu_devices', 2)\n"
            "except RuntimeError as e:\n    print('frozen' if 'before backends' in str(e) "
            "else e)\n")
    env = {"config": {}, "env": {"TRACEJIT_NUM_CPU_DEVICES": "3"},
           "xla_flags": {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}}[how]
    assert _devices_in_subprocess(code, **env).splitlines() == ["[0, 1, 2] 3", "frozen"]
