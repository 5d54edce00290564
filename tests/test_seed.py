"""Every example of the user's brief (../shared/seed) runs with its imports pointed at tracejit
and gives JAX's results; where JAX rejects the code (the SDE solver as written), tracejit raises
JAX's error naming the argument and the fix."""
import os

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

import tracejit  # noqa: E402
from examples.seed import run  # noqa: E402
from tracejit import errors  # noqa: E402

jax = pytest.importorskip("jax")


def test_softmax_lower_and_compile(capsys):
    ns = run("01_softmax_lower.py")
    printed = capsys.readouterr().out
    assert "编译后的中间表示" in printed and "exp" in printed
    compiled = ns["jitted_softmax_lower"].compile()
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    theirs = run("01_softmax_lower.py", backend="jax")["naive_softmax"](x)
    np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(theirs), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ns["key"]),
                                  np.asarray(jax.random.PRNGKey(1765591200071 % 2 ** 32)))


def test_static_shapes():
    ns = run("02_static_shapes.py")
    x = np.array([0.1, 0.7, 0.4, 0.9], np.float32)
    with pytest.raises(errors.NonConcreteBooleanIndexError):  # JAX raises the same class
        ns["unstable_shape_func"](x)
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        run("02_static_shapes.py", backend="jax")["unstable_shape_func"](x)
    ours = ns["stable_shape_func"](x)
    theirs = run("02_static_shapes.py", backend="jax")["stable_shape_func"](x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert ours.dtype == theirs.dtype


@pytest.mark.parametrize("selector", [1.0, -1.0])
def test_cond_selects_integrator(selector):
    ns, js = run("03_cond_integrators.py"), run("03_cond_integrators.py", backend="jax")
    state = (np.float32(1.0), np.float32(0.5))
    ours = tracejit.jit(ns["dynamics_step"])(state, 0.1, selector)
    theirs = jax.jit(js["dynamics_step"])(state, 0.1, selector)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_fixed_point_scan():
    ns, js = run("04_fixed_point_scan.py"), run("04_fixed_point_scan.py", backend="jax")
    ours = tracejit.jit(ns["fixed_point_iteration"], static_argnums=2)(0.5, 0.9, 200)
    theirs = jax.jit(js["fixed_point_iteration"], static_argnums=2)(0.5, 0.9, 200)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    assert abs(float(ours) - np.cos(0.9 * float(ours))) < 1e-5  # it is a fixed point


def test_static_argnums_activation():
    ns, js = run("05_static_argnums.py"), run("05_static_argnums.py", backend="jax")
    for k in ("out1", "out2", "out3"):
        np.testing.assert_allclose(np.asarray(ns[k]), np.asarray(js[k]), rtol=1e-6)
        assert ns[k].dtype == js[k].dtype
    assert ns["apply_activation"]._cache_size() == 2  # out3 reused out1's compilation


def test_sde_as_written_raises_jax_error_naming_steps():
    with pytest.raises(errors.ConcretizationTypeError) as e:
        run("07_sde_solver.py")
    msg = str(e.value)
    assert "steps" in msg and "static_argnames" in msg and "jnp.arange" in msg
    with pytest.raises(jax.errors.ConcretizationTypeError):
        run("07_sde_solver.py", backend="jax")


def _static_steps(src: str) -> str:
    return src.replace("static_argnames=('adaptive', )", "static_argnames=('adaptive', 'steps')")


def test_sde_with_static_steps_matches_jax():
    ns = run("07_sde_solver.py", edit=_static_steps)
    js = run("07_sde_solver.py", backend="jax", edit=_static_steps)
    for name in ("final_nonadaptive", "final_adaptive"):
        np.testing.assert_allclose(float(ns[name]), float(js[name]), rtol=1e-5)
    for name in ("traj_nonadaptive", "traj_adaptive"):
        assert ns[name].shape == js[name].shape == (1001,)
        np.testing.assert_allclose(np.asarray(ns[name]), np.asarray(js[name]), rtol=1e-5)
