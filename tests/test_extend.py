"""jax.extend and jax.interpreters: primitives defined by user code, their rule tables, the
tracing entry points and the internals libraries import, each against real JAX."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax as tlax
from tracejit.core.primitive import registry
from tracejit.extend import core as tcore
from tracejit.interpreters import ad as tad
from tracejit.interpreters import batching as tbatching
from tracejit.interpreters import mlir as tmlir
from tracejit.interpreters import partial_eval as tpe

jax = pytest.importorskip("jax")
import jax.extend.core as jcore  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.interpreters import ad as jad  # noqa: E402
from jax.interpreters import batching as jbatching  # noqa: E402
from jax.interpreters import mlir as jmlir  # noqa: E402
from jax.interpreters import partial_eval as jpe  # noqa: E402

TRACEJIT = (tracejit, tnp, tlax, tcore, tad, tbatching, tmlir)
JAX = (jax, jnp, jax.lax, jcore, jad, jbatching, jmlir)


def _sincos_prim(lib, name="sincos_scaled"):
    """A multiple-results primitive (sin(x) * s, cos(x) * s) with a JVP from defjvp-style rules,
    a vectorized batching rule and a lower_fun lowering, defined through `lib`'s API."""
    jx, np_, _, core, ad, batching, mlir = lib
    p = core.Primitive(name)
    p.multiple_results = True
    p.def_impl(lambda x, *, s: [np.sin(x) * s, np.cos(x) * s])
    p.def_abstract_eval(lambda a, *, s: [jx.core.ShapedArray(a.shape, a.dtype)] * 2)
    mlir.register_lowering(p, mlir.lower_fun(
        lambda x, *, s: [np_.sin(x) * s, np_.cos(x) * s], multiple_results=True))

    def jvp(primals, tangents, *, s):
        (x,), (t,) = primals, tangents
        sin_s, cos_s = p.bind(x, s=s)
        if type(t) is ad.Zero:
            return [sin_s, cos_s], [ad.Zero(t.aval)] * 2
        return [sin_s, cos_s], [cos_s * t, -sin_s * t]
    ad.primitive_jvps[p] = jvp

    def batch(vals, dims, *, s):
        return p.bind(*vals, s=s), [dims[0]] * 2
    batching.primitive_batchers[p] = batch
    return p


def _scale_prim(lib, name="scale"):
    """A linear primitive (x * c for a static c) through ad.deflinear2 and
    batching.defvectorized."""
    _, np_, _, core, ad, batching, mlir = lib
    p = core.Primitive(name)
    p.def_impl(lambda x, *, c: np.multiply(x, c))
    p.def_abstract_eval(lambda a, *, c: a)
    mlir.register_lowering(p, mlir.lower_fun(lambda x, *, c: x * c, multiple_results=False))
    ad.deflinear2(p, lambda ct, x, *, c: [p.bind(ct, c=c)])
    batching.defvectorized(p)
    return p


def _programs(lib):
    jx, np_, lax = lib[:3]
    sc, scale = _sincos_prim(lib), _scale_prim(lib)

    def f(x):
        a, b = sc.bind(x, s=2.0)
        return np_.sum(scale.bind(a * b, c=3.0))

    def body(carry, x):
        a, b = sc.bind(x, s=0.5)
        return carry + scale.bind(a, c=2.0), b

    xs = np_.linspace(-1.0, 1.0, 6, dtype=np_.float32).reshape(2, 3)
    return {
        "eager": f(xs[0]),
        "jit": jx.jit(f)(xs[0]),
        "grad": jx.grad(f)(xs[0]),
        "jit_grad": jx.jit(jx.grad(f))(xs[0]),
        "vmap": jx.vmap(f)(xs),
        "jit_vmap_grad": jx.jit(jx.vmap(jx.grad(f)))(xs),
        "jvp": jx.jvp(f, (xs[0],), (np_.ones(3, np_.float32),))[1],
        "scan_jit": jx.jit(lambda xs: lax.scan(body, np_.zeros(3, np_.float32), xs))(xs),
    }


def test_user_primitives_match_jax():
    ours, theirs = _programs(TRACEJIT), _programs(JAX)
    for key in theirs:
        for g, e in zip(tracejit.tree_util.tree_leaves(ours[key]),
                        jax.tree_util.tree_leaves(theirs[key])):
            assert g.shape == e.shape and g.dtype == e.dtype, key
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-6, atol=1e-6,
                                       err_msg=key)


def test_user_primitive_gradient_against_finite_differences():
    tracejit.config.update("jax_enable_x64", True)
    sc = _sincos_prim(TRACEJIT, "sincos64")

    def f(x):
        a, b = sc.bind(x, s=1.5)
        return tnp.sum(a * a * b)

    x = np.array([0.3, -1.2, 2.0])
    g = np.asarray(tracejit.jit(tracejit.grad(f))(x))
    eps = 1e-6
    fd = [(float(f(x + eps * e)) - float(f(x - eps * e))) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_rule_tables_are_dicts_keyed_by_primitive():
    p = _scale_prim(TRACEJIT, "scale_tables")
    for table in (tad.primitive_jvps, tad.primitive_transposes, tbatching.primitive_batchers,
                  tmlir.lowerings):
        assert type(table) is dict and p in table
    assert registry.get("scale_tables") is not p  # user primitives stay out of the registry
    twin = tcore.Primitive("scale_tables")  # as in JAX, names need not be unique
    assert twin is not p and twin not in tad.primitive_jvps
    assert repr(p) == "scale_tables" == repr(jcore.Primitive("scale_tables"))


def test_axis_primitive_batchers_get_the_axis_size():
    seen = []
    p = tcore.Primitive("sum_axis_rule")
    p.def_impl(lambda x: np.sum(x, keepdims=True))
    p.def_abstract_eval(lambda a: a.update(shape=(1,)))

    def rule(axis_size, axis_name, main_type, vals, dims):
        seen.append(axis_size)
        (x,), (d,) = vals, dims
        return tnp.sum(x, axis=1 - d, keepdims=True), d
    tbatching.axis_primitive_batchers[p] = rule
    out = tracejit.vmap(p.bind)(tnp.ones((4, 3)))
    assert seen == [4] and out.shape == (4, 1)
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 1), 3.0))


def _impl_only(lib, name):
    core = lib[3]
    p = core.Primitive(name)
    p.def_impl(lambda x: np.add(x, 1.0))
    p.def_abstract_eval(lambda a: a)
    return p


def test_impl_only_primitive_runs_its_impl_eagerly_and_under_jit():
    """JAX refuses such a primitive under jit (no MLIR lowering); tracejit's native code calls
    its impl rule on the host, inside loops too."""
    p = _impl_only(TRACEJIT, "plus_one_impl_only")
    np.testing.assert_array_equal(np.asarray(p.bind(tnp.arange(3.0))), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(_impl_only(JAX, "plus_one").bind(jnp.arange(3.0))),
                                  [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(tracejit.jit(p.bind)(tnp.arange(3.0))),
                                  [1.0, 2.0, 3.0])
    looped = tracejit.jit(lambda x: tracejit.lax.fori_loop(0, 3, lambda i, c: p.bind(c), x))
    np.testing.assert_array_equal(np.asarray(looped(tnp.arange(3.0))), [3.0, 4.0, 5.0])
    # the reference interpreter runs the impl rule
    tracejit.config.update("tracejit_backend", "interpret")
    np.testing.assert_array_equal(np.asarray(tracejit.jit(p.bind)(tnp.arange(3.0))),
                                  [1.0, 2.0, 3.0])


def test_mlir_lowering_rule_is_refused_with_the_fix():
    p = _impl_only(TRACEJIT, "plus_one_mlir")
    tmlir.register_lowering(p, lambda ctx, x: x)  # an MLIR rule: tracejit cannot run it
    tmlir.register_lowering(p, lambda ctx, x: x, platform="cuda")  # never this device's
    with pytest.raises(NotImplementedError, match="MLIR lowering rule.*lower_fun"):
        tracejit.jit(p.bind)(tnp.arange(3.0))


def test_lowering_disagreeing_with_abstract_eval_is_a_type_error():
    p = _impl_only(TRACEJIT, "plus_one_bad_lowering")
    tmlir.register_lowering(p, tmlir.lower_fun(lambda x: x[:2], multiple_results=False))
    with pytest.raises(TypeError, match="plus_one_bad_lowering.*abstract evaluation"):
        tracejit.jit(p.bind)(tnp.arange(3.0))


def test_effectful_abstract_eval():
    p = tcore.Primitive("effect_free")
    p.def_impl(lambda x: x)
    p.def_effectful_abstract_eval(lambda a: (a, tcore.no_effects))
    assert tracejit.make_jaxpr(p.bind)(1.0).eqns[0].primitive is p
    q = tcore.Primitive("with_effect")
    q.def_impl(lambda x: x)
    q.def_effectful_abstract_eval(lambda a: (a, {tcore.Effect()}))
    with pytest.raises(NotImplementedError, match="with_effect"):
        tracejit.make_jaxpr(q.bind)(1.0)


def test_make_jaxpr_shows_the_user_primitive():
    ours = str(tracejit.make_jaxpr(lambda x: _scale_prim(TRACEJIT, "scale_pp").bind(x, c=2.0))(
        tnp.ones(3)))
    theirs = str(jax.make_jaxpr(lambda x: _scale_prim(JAX, "scale_pp").bind(x, c=2.0))(
        jnp.ones(3)))
    assert ours == theirs


def test_trace_to_jaxpr_nounits_splits_known_from_unknown():
    from jax._src import api_util
    from jax.extend import linear_util as jlu

    def f(a, b):
        return [a * 2.0, b + a, jnp.sin(a)]
    pvals = [jpe.PartialVal.known(np.float32(3.0)),
             jpe.PartialVal.unknown(jax.core.ShapedArray((2,), np.float32))]
    wrapped = jlu.wrap_init(f, debug_info=api_util.debug_info("test", f, (1, 2), {}))
    _, theirs, _ = jpe.trace_to_jaxpr_nounits(wrapped, pvals)

    def g(a, b):
        return [a * 2.0, b + a, tnp.sin(a)]
    from tracejit.extend import linear_util as tlu
    jaxpr, ours, consts = tpe.trace_to_jaxpr_nounits(
        tlu.wrap_init(g), [tpe.PartialVal.known(np.float32(3.0)),
                           tpe.PartialVal.unknown(tracejit.ShapedArray((2,), np.float32))])
    assert [p.is_known() for p in ours] == [p.is_known() for p in theirs] == [True, False, True]
    for o, t in zip(ours, theirs):
        if t.is_known():
            np.testing.assert_allclose(np.asarray(o.get_known()), np.asarray(t.get_known()),
                                       rtol=1e-6)
        else:
            assert o.get_aval().shape == t.get_aval().shape == (2,)
            assert o.get_aval().dtype == t.get_aval().dtype
    assert len(jaxpr.outvars) == 1 and len(jaxpr.invars) == 1
    from tracejit.core.jaxpr_util import eval_jaxpr_bind
    np.testing.assert_allclose(np.asarray(eval_jaxpr_bind(jaxpr, consts, tnp.ones(2))[0]),
                               [4.0, 4.0])


def test_trace_to_jaxpr_dynamic():
    from tracejit.extend import linear_util as tlu
    jaxpr, out_avals, consts = tpe.trace_to_jaxpr_dynamic(
        tlu.wrap_init(lambda x, *, k: [x * k, tnp.sum(x)], {"k": 3.0}),
        [tracejit.ShapedArray((4,), np.float32)])
    assert [str(a) for a in out_avals] == ["float32[4]", "float32[]"]  # (JAX's str)
    assert len(jaxpr.eqns) == 2 and consts == []


def test_mapped_and_unmapped_avals_as_jax():
    for size, axis, shape in [(3, 0, (3, 2)), (2, 1, (4, 2, 5)), (5, None, (2,))]:
        ours = tcore.mapped_aval(size, axis, tracejit.ShapedArray(shape, np.float32))
        theirs = jcore.mapped_aval(size, axis, jax.core.ShapedArray(shape, np.float32))
        assert ours.shape == theirs.shape
        ours = tcore.unmapped_aval(size, axis, tracejit.ShapedArray(shape, np.float32))
        theirs = jcore.unmapped_aval(size, axis, jax.core.ShapedArray(shape, np.float32))
        assert ours.shape == theirs.shape
    assert tcore.primal_dtype_to_tangent_dtype(np.int32) == \
        jcore.primal_dtype_to_tangent_dtype(np.int32)
    assert tcore.primal_dtype_to_tangent_dtype(np.float32) == np.float32


def _trace_states(lib):
    jx, core = lib[0], lib[3]
    outside = core.get_opaque_trace_state()
    seen = []

    def f(x):
        seen.append(core.get_opaque_trace_state())
        seen.append(core.get_opaque_trace_state())
        return x
    jx.jit(f)(1.0)
    jx.grad(f)(1.0)
    return [outside == core.get_opaque_trace_state(), seen[0] == seen[1], outside == seen[0],
            seen[0] == seen[2], seen[2] == seen[3], outside == seen[2]]


def test_opaque_trace_state_tells_traces_apart_as_jax():
    assert _trace_states(TRACEJIT) == _trace_states(JAX)


def test_source_info_skips_registered_library_paths(tmp_path):
    from tracejit.core import traceback_util
    from tracejit.extend import source_info_util
    lib = tmp_path / "fake_library.py"
    lib.write_text("def where(f):\n    return f()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import fake_library
        assert source_info_util.current().function == "test_source_info_skips_registered_" \
                                                      "library_paths"
        assert fake_library.where(source_info_util.current).filename == str(lib)
        traceback_util.register_exclusion(str(tmp_path))
        try:
            here = fake_library.where(source_info_util.current)
            assert here.filename == __file__ and "source_info" in here.function
            assert traceback_util.include_filename(__file__)
            assert not traceback_util.include_filename(str(lib))
        finally:
            traceback_util._exclude_paths.remove(str(tmp_path))
    finally:
        sys.path.remove(str(tmp_path))


def test_include_filename_follows_the_exclusions(tmp_path):
    """The answers kept per file name (staging asks for every frame) change with the list."""
    from tracejit.core import traceback_util
    lib = str(tmp_path / "lib.py")
    assert traceback_util.include_filename(lib) and traceback_util.include_filename(lib)
    traceback_util.register_exclusion(str(tmp_path))
    try:
        assert not traceback_util.include_filename(lib)
        assert traceback_util.include_filename(__file__)
    finally:
        traceback_util._exclude_paths.remove(str(tmp_path))
    assert traceback_util.include_filename(lib)


def test_pmap_on_the_single_device():
    xs = tnp.arange(6.0).reshape(1, 6)
    np.testing.assert_array_equal(np.asarray(tracejit.pmap(lambda x: x * 2)(xs)),
                                  np.asarray(jax.pmap(lambda x: x * 2)(jnp.arange(6.0).reshape(
                                      1, 6))))
    with pytest.raises(ValueError, match="requires 2 logical devices.*only 1"):
        tracejit.pmap(lambda x: x * 2)(tnp.ones((2, 3)))


def test_jax_internal_modules_libraries_import(tmp_path):
    # under the alias, the internals equinox and flax import are tracejit modules; others are
    # missing (libraries import those only inside try/except ImportError)
    program = textwrap.dedent("""
        import jax._src.traceback_util as tb, jax._src.dtypes as dt, jax._src.core as core
        from jax._src.tree_util import _registry
        import tracejit
        assert tb is tracejit.core.traceback_util and core is tracejit.core
        assert dt.TypePromotionError is tracejit.dtypes.TypePromotionError
        assert tuple in _registry and tb.api_boundary(len)([1]) == 1
        try:
            from jax._src.literals import LiteralArray
        except ImportError:
            print("ok")
        import jax.extend.core, jax.interpreters.ad
        assert jax.interpreters.ad.primitive_jvps is tracejit.core.primitive.primitive_jvps
        assert jax.lax.stop_gradient_p is tracejit.lax.stop_gradient_p
    """)
    script = tmp_path / "internals.py"
    script.write_text(program)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tracejit.__file__)))
    done = subprocess.run([sys.executable, "-m", "tracejit", str(script)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_jaxpr_helpers_as_jax():
    def f(a, b, c):
        return a * 2, b + 1, a * c
    ours = tracejit.make_jaxpr(f)(1.0, 2.0, 3.0).jaxpr
    theirs = jax.make_jaxpr(f)(1.0, 2.0, 3.0).jaxpr
    for used, inst in [([True, False, False], False), ([False, True, True], [True, False, False]),
                       (False, False)]:
        new, kept = tpe.dce_jaxpr(ours, used, inst)
        new_theirs, kept_theirs = jpe.dce_jaxpr(theirs, used, inst)
        assert kept == kept_theirs
        assert (len(new.invars), len(new.outvars), len(new.eqns)) == \
            (len(new_theirs.invars), len(new_theirs.outvars), len(new_theirs.eqns))
    for x in (1.0, np.ones(2), "a", object()):
        assert tcore.valid_jaxtype(x) == jcore.valid_jaxtype(x)
    assert tcore.concrete_or_error(int, 3.0) == jcore.concrete_or_error(int, 3.0) == 3
    with pytest.raises(tracejit.errors.ConcretizationTypeError, match="while testing"):
        tracejit.jit(lambda x: tcore.concrete_or_error(None, x, "while testing"))(1.0)
    eqn = tcore.new_jaxpr_eqn(ours.invars[:1], [tcore.Var(ours.invars[0].aval)], tlax.neg_p, {},
                              tcore.no_effects)
    assert eqn.primitive is tlax.neg_p and eqn.invars == ours.invars[:1]


def _times_iota(lib):
    jx, np_, lax, core, _, _, mlir = lib
    p = core.Primitive("times_iota")
    p.def_impl(lambda x: np.multiply(x, np.arange(1.0, 4.0, dtype=np.float32)))
    p.def_abstract_eval(lambda a: a)
    # the lowering closes over an array: it becomes a const of the body it is inlined into
    mlir.register_lowering(p, mlir.lower_fun(
        lambda x: x * np_.asarray(np.arange(1.0, 4.0, dtype=np.float32)),
        multiple_results=False))

    def body(c, x):
        return c + p.bind(x), p.bind(c)
    xs = np_.arange(12.0, dtype=np_.float32).reshape(4, 3)
    scanned = jx.jit(lambda xs: lax.scan(body, np_.ones(3, np_.float32), xs))(xs)
    cond = jx.jit(lambda x: lax.cond(x[0] > 0, p.bind, lambda y: -y, x))
    return [*scanned, cond(np_.ones(3)), cond(-np_.ones(3))]


def test_lowering_consts_inside_control_flow_bodies():
    for g, e in zip(_times_iota(TRACEJIT), _times_iota(JAX)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_call_primitives_evaluate_differentiate_batch_and_compile_their_jaxpr():
    """jax.extend.core.primitives: closed_call_p / call_p run the jaxpr they are given (numpyro
    keys rules by them); jit_p is the jit call."""
    from tracejit.extend.core.primitives import call_p, closed_call_p, jit_p
    assert jit_p is tracejit.lax.call.pjit_p
    closed = tracejit.make_jaxpr(lambda x, y: [tnp.sin(x) * y])(1.0, 2.0)
    for prim, jaxpr in ((closed_call_p, closed), (call_p, closed.jaxpr)):
        def f(x, y, prim=prim, jaxpr=jaxpr):
            return prim.bind(x, y, call_jaxpr=jaxpr)[0]
        for g in (f, tracejit.jit(f)):
            np.testing.assert_allclose(g(1.0, 2.0), np.sin(1.0) * 2, rtol=1e-6)
        np.testing.assert_allclose(tracejit.grad(f)(1.0, 2.0), np.cos(1.0) * 2, rtol=1e-6)
        xs = np.arange(3.0, dtype=np.float32)
        np.testing.assert_allclose(tracejit.vmap(f)(xs, xs), np.sin(xs) * xs, rtol=1e-6)
