"""JAX 0.12's names that JAX 0.10 lacks, outside lax's math (tests/test_lax_jax012.py): each
exists in tracejit and behaves as JAX 0.12 did when its outputs were recorded here (with
/work/main/.venv-jax312), or refuses with the reason where tracejit has no such thing."""
import importlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tracejit
from tracejit import lax
from tracejit.core.errors import JaxRuntimeError

# module -> names in JAX 0.12's dir() that 0.10's lacks and this file covers
JAX012 = {
    "lax": ["log2", "log2_p", "one_minus_square", "one_minus_square_p", "polynomial",
            "polynomial_p", "psum_scatter_start"],
    "scipy.special": ["erfcinv", "gammainccinv", "gammaincinv", "iv", "jn", "kn", "ndtri_exp",
                      "yn"],
    "sharding": ["UnreducedKind", "is_single_device_sharding", "no_collectives"],
    "export": ["symbolic_dim_bounds"],
    "ffi": ["abstract_token"],
    "profiler": ["ProfileData", "ProfileEvent", "ProfileLine", "ProfilePlane",
                 "export_profile_data"],
    "ad_checkpoint": ["checkpoint_name_fwd", "name_p"],
}


@pytest.mark.parametrize("module", sorted(JAX012))
def test_jax012_names_exist(module):
    ours = importlib.import_module(f"tracejit.{module}")
    assert [n for n in JAX012[module] if not hasattr(ours, n)] == []


def test_util_and_custom_transpose_are_not_public_in_jax012():
    # JAX 0.12 (recorded): hasattr(jax, "util") and hasattr(jax, "custom_transpose") are
    # False, and importing jax.util / jax.custom_transpose raises ModuleNotFoundError
    for name in ("util", "custom_transpose"):
        assert not hasattr(tracejit, name)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"tracejit.{name}")


def test_compiler_options_accepted_as_jax_accepts_xla_s():
    # JAX 0.10 (checked): {"xla_cpu_enable_fast_math": False}, {"xla_backend_optimization_level":
    # 0} and {"exec_time_optimization_effort": 0.5} run; a name XLA does not know raises
    # JaxRuntimeError "INVALID_ARGUMENT: No such compile option: '...'". None means anything to
    # LLVM: accepted and ignored; an xla_* name is taken as XLA's (a misspelt one passes here)
    for options in ({"xla_cpu_enable_fast_math": False}, {"xla_backend_optimization_level": 0},
                    {"exec_time_optimization_effort": 0.5}, {}, None):
        assert float(tracejit.jit(lambda x: x + 1, compiler_options=options)(1.0)) == 2.0
        assert float(tracejit.jit(lambda x: x + 1).lower(1.0).compile(options)(1.0)) == 2.0
    with pytest.raises(JaxRuntimeError, match="No such compile option: 'bogus_flag'"):
        tracejit.jit(lambda x: x + 1, compiler_options={"bogus_flag": True})
    with pytest.raises(JaxRuntimeError, match="No such compile option: 'fast_math'"):
        tracejit.jit(lambda x: x + 1).lower(1.0).compile({"fast_math": True})


def test_symbolic_dim_bounds():
    # JAX 0.12: (3, 3), (4, 4) for np.int32(4), (1, 1) for True, TypeError for 3.0
    from tracejit.export import symbolic_dim_bounds
    assert symbolic_dim_bounds(3) == (3, 3)
    assert symbolic_dim_bounds(np.int32(4)) == (4, 4)
    assert symbolic_dim_bounds(True) == (1, 1)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        symbolic_dim_bounds(3.0)


def test_abstract_token_refused_by_ffi_call():
    assert repr(tracejit.ffi.abstract_token) == "AbstractToken()"  # as JAX 0.12 prints it
    with pytest.raises(NotImplementedError, match="no token values"):
        tracejit.ffi.ffi_call("any_target", tracejit.ffi.abstract_token)


def test_checkpoint_name_fwd_names_the_forward_value():
    from tracejit.ad_checkpoint import checkpoint_name_fwd, name_p
    # JAX 0.12's jaxpr: mul a 2.0; name[name=n] b
    jaxpr = tracejit.make_jaxpr(lambda x: checkpoint_name_fwd(x * 2, "n"))(1.0)
    assert [e.primitive for e in jaxpr.jaxpr.eqns][-1] is name_p
    assert "name[name=n]" in str(jaxpr)
    assert tracejit.grad(lambda x: checkpoint_name_fwd(x * x, "n"))(3.0) == 6.0  # JAX 0.12
    # a policy saving by that name sees it, as checkpoint_name's
    policy = tracejit.checkpoint_policies.save_only_these_names("n")
    f = tracejit.checkpoint(lambda x: np.float32(2) * checkpoint_name_fwd(x * x, "n"),
                            policy=policy)
    assert tracejit.grad(f)(3.0) == 12.0


def test_unreduced_kind_and_no_collectives():
    from tracejit.sharding import ForbiddenCollectiveError, UnreducedKind, no_collectives
    assert [(k.name, k.value) for k in UnreducedKind] == [("sum", 1), ("max", 2), ("min", 3)]
    assert no_collectives.value == frozenset()
    with no_collectives({"x"}):
        assert no_collectives.value == frozenset({"x"})
    assert no_collectives.value == frozenset()
    with pytest.raises(TypeError, match="Expected axis name"):
        no_collectives(["x"])
    # reshard that moves or drops a forbidden Explicit axis needs a collective: refused
    P = tracejit.sharding.PartitionSpec
    mesh = tracejit.sharding.Mesh(np.array(tracejit.devices()[:1]).reshape(1, 1), ("x", "y"),
                                  axis_types=(tracejit.sharding.AxisType.Explicit,) * 2)
    x = tracejit.device_put(np.ones((2, 2), np.float32), tracejit.sharding.NamedSharding(
        mesh, P("x", None)))
    with tracejit.sharding.set_mesh(mesh):
        with no_collectives({"x"}):
            with pytest.raises(ForbiddenCollectiveError, match="changes the sharded dimension"):
                tracejit.sharding.reshard(x, P(None, "x"))
            with pytest.raises(ForbiddenCollectiveError, match="loses sharding axis 'x'"):
                tracejit.sharding.reshard(x, P(None, None))
            tracejit.sharding.reshard(x, P("x", "y"))  # x stays where it was: no collective
        tracejit.sharding.reshard(x, P(None, "x"))


def test_profile_data_views_refuse_with_the_reason():
    for name in ("ProfileData", "ProfileEvent", "ProfileLine", "ProfilePlane"):
        with pytest.raises(NotImplementedError, match="no XSpace"):
            getattr(tracejit.profiler, name)()
    with pytest.raises(NotImplementedError, match="no XSpace"):
        tracejit.profiler.ProfileData.from_file("x.xplane.pb")
    with pytest.raises(NotImplementedError, match="no XSpace"):
        tracejit.profiler.export_profile_data(None, "/tmp")


def test_psum_scatter_start_done_is_psum_scatter():
    x = np.arange(32, dtype=np.float32).reshape(4, 4, 2)

    def start_done(x):
        fut = lax.psum_scatter_start(x, "i", tiled=True)
        assert fut.shape == (1, 2) and fut.dtype == np.float32
        return fut.done()

    out = tracejit.jit(tracejit.vmap(start_done, axis_name="i"))(x)
    # JAX 0.12: shard_map over 4 devices of x.reshape(16, 2), psum_scatter_start(x, "i",
    # tiled=True).done(), out_specs P("i") (JAX refuses it under vmap: no batching rule)
    np.testing.assert_array_equal(out.reshape(4, 2), [[48, 52], [56, 60], [64, 68], [72, 76]])
    np.testing.assert_array_equal(out, tracejit.vmap(
        lambda x: lax.psum_scatter(x, "i", tiled=True), axis_name="i")(x))
    with pytest.raises(NotImplementedError):  # as JAX 0.12: untiled has no async form
        tracejit.vmap(lambda x: lax.psum_scatter_start(x, "i"), axis_name="i")(x)


def test_inspect_array_sharding_reports_the_traced_values_layout():
    # an array: its own sharding, at once; traced with no layout: the one device's sharding
    got = []
    x = np.ones(4, np.float32)
    tracejit.debug.inspect_array_sharding(tracejit.numpy.asarray(x), callback=got.append)
    tracejit.jit(lambda x: (tracejit.debug.inspect_array_sharding(x, callback=got.append),
                            x * 2)[1])(x)
    assert [type(s).__name__ for s in got] == ["SingleDeviceSharding"] * 2
    # laid out over an Explicit axis of 4 devices (a fresh process: the device count is set
    # before first use): the NamedSharding its type carries, spec P('x', None) (JAX 0.12 calls
    # it at compile time with NamedSharding(Mesh('x': 4), P('x',)), the same layout)
    code = """if True:
        import tracejit
        tracejit.config.update("jax_num_cpu_devices", 4)
        import numpy as np
        P = tracejit.sharding.PartitionSpec
        mesh = tracejit.make_mesh((4,), ("x",), axis_types=(tracejit.sharding.AxisType.Explicit,))
        x = tracejit.device_put(np.ones((8, 2), np.float32),
                                tracejit.sharding.NamedSharding(mesh, P("x")))
        got = []
        tracejit.jit(lambda x: (tracejit.debug.inspect_array_sharding(x, callback=got.append),
                                x * 2)[1])(x)
        (s,) = got
        print(type(s).__name__, s.spec, s.mesh.shape_tuple)
    """
    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "NamedSharding P('x', None) (('x', 4),)"
