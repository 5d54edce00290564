"""shard_map's varying-manual-axes types (check_vma=True) against real JAX on a 2x2 mesh of 4 CPU
devices (tests/libraries/vma.py run with both): the axes each value varies over, values and
gradients (pvary <-> psum transposes), JAX's errors; and what stays untyped outside shard_map."""
import re

import numpy as np
import pytest

import tracejit as tj
from tests.libraries import run_both

VALUES = ["psum_of_invariant", "all_gather_invarying", "mixed", "scan_pcast_carry",
          "scan_unchecked", "grad_psum_inside", "grad_psum_inside_unchecked", "grad_pcast",
          "grad_psum_of_invariant", "grad_invariant_param", "grad_matmul_param",
          "grad_all_gather", "grad_all_gather_invarying", "grad_outside", "dp_w", "dp_b",
          "cond_varying_pred", "switch_varying_pred", "grad_cond_varying_pred",
          "cond_varying_pred_jit", "cond_each_device", "switch_each_device",
          "cond_each_device_then_ops", "psum_of_cond_each_device", "cond_each_device_in_scan",
          "cond_each_device_in_fori", "cond_each_device_in_jit", "grad_cond_each_device",
          "cond_each_device_unchecked", "cond_each_device_unchecked_p", "select_each_device",
          "cond_each_device_both_axes", "cond_both_axes_out_p",
          "pmean_of_invariant", "psum_of_invariant_both", "grad_pmean_of_invariant",
          "reduce_custom", "callback_each_device", "callback_each_device_jit"]
ERRORS = ["out_varying", "out_varying_j", "out_all_gather", "out_two", "psum_mixed",
          "pcast_twice", "pcast_to", "scan_carry", "scan_tuple_carry", "scan_xs",
          "while_carry", "fori_carry", "cond_branches",
          "select_varying_pred", "cond_varying_operand"]
# JAX's text, then where the call is and what to do (tracejit's own paragraph)
EXPLAINED_ERRORS = ["pbroadcast_invariant", "pbroadcast_other_axis", "pbroadcast_pytree"]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("vma", tmp_path_factory.mktemp("vma"))


def test_each_value_varies_over_jaxs_axes(both):
    ours, theirs = both
    assert list(ours["types"]) == list(theirs["types"])


@pytest.mark.parametrize("case", VALUES)
def test_values_and_gradients_match_jax(both, case):
    ours, theirs = both
    a, b = ours[case], theirs[case]
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _without_sets(text: str) -> str:
    # a Python set in JAX's text prints in the order of its process's string hashes
    return re.sub(r"\{'[^}]*\}", "{...}", text)


@pytest.mark.parametrize("case", ERRORS)
def test_errors_are_jaxs(both, case):
    ours, theirs = both
    theirs, ours = str(theirs["error_" + case]), str(ours["error_" + case])
    assert theirs != "no error"
    assert _without_sets(ours) == _without_sets(theirs)


@pytest.mark.parametrize("case", EXPLAINED_ERRORS)
def test_errors_are_jaxs_and_say_where_and_why(both, case):
    ours, theirs = both
    theirs, ours = str(theirs["error_" + case]), str(ours["error_" + case])
    assert theirs.startswith("ValueError: Collective ppermute must be applied to a "
                             "device-varying")
    assert ours.startswith(theirs + "\n\n"), ours
    # (the user's file:line, recorded as SOURCE, and the fix)
    assert "lax.pbroadcast at SOURCE" in ours and "pcast(x, 'i', to='varying')" in ours, ours


def test_types_outside_shard_map_carry_no_axes():
    mesh = tj.sharding.Mesh(np.array(tj.devices()[:1]), ("i",))
    seen = []

    def f(a):
        seen.append(tj.typeof(a).vma)
        return a
    tj.vmap(f, axis_name="i")(np.ones((2, 3)))
    tj.shard_map(f, mesh=mesh, in_specs=tj.P("i"), out_specs=tj.P("i"), check_vma=False)(
        np.ones((2, 3)))
    tj.shard_map(f, mesh=mesh, in_specs=tj.P("i"), out_specs=tj.P("i"))(np.ones((2, 3)))
    assert seen == [frozenset(), frozenset(), frozenset({"i"})]
    # a concrete result never says it varies
    out = tj.shard_map(lambda a: a * 2, mesh=mesh, in_specs=tj.P("i"), out_specs=tj.P("i"))(
        np.ones(2))
    assert tj.typeof(out).vma == frozenset()


def test_pcast_outside_check_vma_is_the_identity():
    mesh = tj.sharding.Mesh(np.array(tj.devices()[:1]), ("i",))
    out = tj.shard_map(lambda a: tj.lax.pcast(a, "i", to="varying"), mesh=mesh,
                       in_specs=tj.P(), out_specs=tj.P(), check_vma=False)(np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), np.arange(3.0))


def test_a_jit_traced_outside_is_traced_again_inside_with_its_pvarys():
    # the same avals, but inside check_vma=True the invariant w is pvaried: its gradient is
    # summed over the shards (JAX: x's two shards, [0, 1] + [2, 3])
    mesh = tj.sharding.AbstractMesh((2,), ("d",))
    f = tj.jit(lambda a, w: a * w)
    x, w = np.arange(4.0, dtype=np.float32), np.ones(2, np.float32)
    f(x[:2], w)
    g = tj.shard_map(lambda a, w: tj.grad(lambda w: tj.numpy.sum(f(a, w)))(w), mesh=mesh,
                     in_specs=(tj.P("d"), tj.P()), out_specs=tj.P())
    np.testing.assert_array_equal(np.asarray(g(x, w)), [2.0, 4.0])


def _forwarding_program(identity):
    def f(x):
        a = identity(tj.numpy.sin(x) + 1)  # a temporary, forwarded: two names, one buffer
        c = tj.numpy.cumsum(tj.numpy.cos(x) * 3)  # a temporary made after the first name died
        return tj.numpy.cumsum(a) + c[::-1], identity(x)
    return f


def _expected(x):
    return np.cumsum(np.sin(x) + 1) + np.cumsum(np.cos(x) * 3)[::-1]


@pytest.mark.parametrize("name", ["mpi_pvary", "mpi_shared", "optimization_barrier"])
def test_identities_forward_their_buffer_and_keep_it_while_it_is_live(name):
    # the boundary identities of shard_map over processes compile to no copy and no call back
    # into Python; the forwarded buffer is not reused while the second name is live
    from tracejit.lax import processes
    prim = {"mpi_pvary": processes.pvary_p, "mpi_shared": processes.shared_p}.get(name)
    identity = (lambda v: tj.lax.optimization_barrier((v,))[0]) if prim is None else \
        (lambda v: prim.bind(v, ranks=(0, 1), axis_name="p",
                             **({"vma": False} if prim is processes.pvary_p else {})))
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    f = tj.jit(_forwarding_program(identity))
    total, same = f(x)
    np.testing.assert_allclose(np.asarray(total), _expected(x), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(same), x)
    compiled = f.lower(x).compile()
    assert not compiled._executable.program.callbacks  # (before: a host call per identity)
    kernels = [line for line in compiled.as_text().splitlines() if line.startswith("// kernel")]
    assert [k.split(": ")[1] for k in kernels] == ["sin -> add", "cos -> mul", "rev -> add"]


def test_a_pvaried_operand_of_a_product_is_not_copied_per_device():
    # the data-parallel step's invariant weights meet the varying batch in a matmul: one
    # product of the stacked rows with the weights, no broadcast kernel copying them per lane
    mesh = tj.sharding.Mesh(np.array(tj.devices()[:1]), ("i",))

    def step(w, xs):
        g = tj.grad(lambda w: tj.numpy.sum(tj.numpy.tanh(xs @ w) ** 2))(w)
        return w - 0.1 * tj.lax.pmean(g, "i")
    f = tj.jit(tj.shard_map(step, mesh=mesh, in_specs=(tj.P(), tj.P("i")), out_specs=tj.P()))
    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    xs = np.linspace(-2, 2, 16, dtype=np.float32).reshape(8, 2)
    text = f.lower(w, xs).compile().as_text()
    assert "// kernel" in text and not any(
        line.endswith(": broadcast_in_dim") for line in text.splitlines())
    y = np.tanh(xs @ w)
    np.testing.assert_allclose(np.asarray(f(w, xs)), w - 0.1 * xs.T @ (2 * y * (1 - y * y)),
                               rtol=1e-5, atol=1e-6)


def test_process_axis_types_and_transposes():
    """Across processes (lax/processes.py, no MPI call made here): typed (check_vma=True) the
    MPI pvary makes a value vary over the process axis and transposes to one Allreduce, psum's
    Allreduce makes it invariant and transposes to pvary — one Allreduce in the backward pass,
    as psum <-> pvary in one process; untyped, psum's transpose is psum (JAX's check_vma=False):
    two. mpi_vma only retypes, and its transpose retypes back."""
    from tracejit.lax.processes import allreduce_p, pvary_p, vma_p

    def backward(vma):
        def f(w):
            v = pvary_p.bind(w, ranks=(0, 1), axis_name="d", vma=vma)
            return tj.numpy.sum(allreduce_p.bind(v * 3.0, op="sum", ranks=(0, 1),
                                                 axis_name="d", vma=vma))
        eqns = tj.make_jaxpr(tj.grad(f))(np.ones(3, np.float32)).jaxpr.eqns
        forward = eqns[:3]
        assert [e.outvars[0].aval.vma for e in forward] == \
            ([{"d"}, {"d"}, set()] if vma else [set()] * 3)
        return [e.primitive.name for e in eqns[4:]]
    assert backward(True) == ["broadcast_in_dim", "mpi_pvary", "mul", "mpi_allreduce"]
    assert backward(False) == ["broadcast_in_dim", "mpi_allreduce", "mul", "mpi_allreduce"]
    x = np.arange(2.0, dtype=np.float32)
    typed = tj.make_jaxpr(lambda a: vma_p.bind(a, add=("d",), remove=()))(x).jaxpr
    assert typed.outvars[0].aval.vma == {"d"}
    ct = tj.linear_transpose(lambda a: vma_p.bind(a, add=("d",), remove=()), x)(x + 1)
    np.testing.assert_array_equal(np.asarray(ct[0]), x + 1)
    # compiled, the retyping is free (forwarded): the value is the operand's
    out = tj.jit(lambda a: vma_p.bind(a * 2, add=("d",), remove=()) + 1)(x)
    np.testing.assert_array_equal(np.asarray(out), x * 2 + 1)
    assert tj.typeof(out).vma == frozenset()


def test_psum_and_pmean_of_an_invariant_value_compile_to_no_sum():
    # JAX's rule for an operand every device holds: psum is x times the axis size, pmean x —
    # no lanes materialised (a broadcast) and summed again, as the implicit pvary did
    mesh = tj.sharding.AbstractMesh((4,), ("i",))

    def f(w, xs):
        return tj.lax.pmean(w * 3, "i"), tj.lax.psum(w * 3, "i"), tj.lax.psum(xs, "i")
    g = tj.jit(tj.shard_map(f, mesh=mesh, in_specs=(tj.P(), tj.P("i")), out_specs=tj.P()))
    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    xs = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    ops = [line.split(": ")[1] for line in g.lower(w, xs).compile().as_text().splitlines()
           if line.startswith("// kernel")]
    assert not any("broadcast_in_dim" in k for k in ops)
    assert sum(k.count("reduce_sum") for k in ops) == 1  # (the varying xs's psum only)
    mean, total, summed = g(w, xs)
    np.testing.assert_allclose(np.asarray(mean), w * 3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(total), w * 12, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(summed), xs.sum(0, keepdims=True))


def _psum_formula(a, axis_name, s):
    """pbroadcast as JAX's documentation writes it: the source's value summed over the axis."""
    lax, jnp = tj.lax, tj.numpy
    return lax.psum(jnp.where(lax.axis_index(axis_name) == s, a, jnp.zeros_like(a)), axis_name)


_X = np.linspace(-2, 2, 24, dtype=np.float32).reshape(8, 3)  # (the pbroadcast tests' operands)
_W = np.cos(np.arange(24.0, dtype=np.float32)).reshape(8, 3)


@pytest.mark.parametrize("check_vma", [True, False])
@pytest.mark.parametrize("source", [0, 1, 3])
def test_pbroadcast_gradients_are_the_psum_formulas(source, check_vma):
    """pbroadcast's gradient, inside shard_map and outside, equals that of the psum JAX's
    documentation equates it with and the closed form (float64). Typed invariant, the result
    was pvaried where it met the varying w, and that pvary's transpose summed the cotangent
    over the axis a second time: inside shard_map, 4 times the gradient (issue 14)."""
    mesh = tj.sharding.AbstractMesh((4,), ("i",))
    lax, jnp = tj.lax, tj.numpy
    formula, x, w = _psum_formula, _X, _W
    blocks, ws = x.reshape(4, 2, 3).astype(np.float64), w.reshape(4, 2, 3).astype(np.float64)
    for broadcast in (lax.pbroadcast, formula):
        def position(a, v, broadcast=broadcast):
            return jnp.sum(jnp.sin(broadcast(a, "i", source)) * v)
        inner = tj.jit(tj.shard_map(lambda a, v: tj.grad(position)(a, v), mesh=mesh,
                                    in_specs=(tj.P("i"), tj.P("i")), out_specs=tj.P("i"),
                                    check_vma=check_vma))(x, w)
        # outside: position p's loss weighted p + 1, summed over the positions
        losses = tj.shard_map(lambda a, v: position(a, v)[None] * (lax.axis_index("i") + 1.0),
                              mesh=mesh, in_specs=(tj.P("i"), tj.P("i")), out_specs=tj.P("i"),
                              check_vma=check_vma)
        outer = tj.jit(tj.grad(lambda a: jnp.sum(losses(a, w))))(x)
        for got, weights in ((inner, np.ones(4)), (outer, np.arange(1.0, 5.0))):
            want = np.zeros_like(blocks)
            want[source] = np.cos(blocks[source]) * np.tensordot(weights, ws, 1)
            np.testing.assert_allclose(np.asarray(got), want.reshape(x.shape), rtol=1e-5,
                                       atol=1e-6, err_msg=broadcast.__name__)


@pytest.mark.parametrize("check_vma", [True, False])
@pytest.mark.parametrize("axes,source", [(("i", "j"), 1), (("j", "i"), 1), (("i", "j"), 3)])
def test_pbroadcast_over_several_axes_is_the_psum_formula(axes, source, check_vma):
    """pbroadcast over two mesh axes (the source numbered as axis_index numbers the positions,
    the first axis major): values and gradients inside shard_map equal those of the psum JAX's
    documentation equates it with (it raised NotImplementedError; JAX's CPU backend has no
    lowering for it, tests/libraries/type_strings.py records the formula's values)."""
    mesh = tj.sharding.AbstractMesh((2, 2), ("i", "j"))
    lax, jnp = tj.lax, tj.numpy
    formula, x, w = _psum_formula, _X, _W
    got = []
    for broadcast in (lax.pbroadcast, formula):
        def position(a, v, broadcast=broadcast):
            return jnp.sum(jnp.sin(broadcast(a, axes, source)) * v)
        spec = tj.P(("i", "j"))
        got.append([np.asarray(tj.jit(tj.shard_map(
            f, mesh=mesh, in_specs=(spec, spec), out_specs=spec, check_vma=check_vma))(x, w))
            for f in (lambda a, v, broadcast=broadcast: broadcast(a, axes, source) * v,
                      lambda a, v, position=position: tj.grad(position)(a, v))])
    for ours, want in zip(*got):
        np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-6)
    assert np.count_nonzero(got[0][1]) == 6  # (only the source's block has a gradient)


def test_pbroadcast_of_an_invariant_value_without_the_types():
    """Only check_vma=True refuses pbroadcast's invariant operand (test above): untyped, and
    under vmap's named axis, every lane gets the value it already held, as in JAX."""
    mesh = tj.sharding.AbstractMesh((4,), ("i",))
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    out = tj.shard_map(lambda a: tj.lax.pbroadcast(a, "i", 2), mesh=mesh, in_specs=tj.P(),
                       out_specs=tj.P(), check_vma=False)(x)
    np.testing.assert_array_equal(np.asarray(out), x)
    lanes = tj.vmap(lambda a: tj.lax.pbroadcast(a, "i", 2), axis_name="i", in_axes=None,
                    axis_size=4)(x)
    np.testing.assert_array_equal(np.asarray(lanes), np.broadcast_to(x, (4, 6)))
