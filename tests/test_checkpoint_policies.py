"""checkpoint policies against real JAX: what reverse mode saves (print_saved_residuals, line
for line, sources and columns included) for each of jax.checkpoint_policies, checkpoint_name;
gradients with every policy equal those without checkpoint; the backward pass recomputes what
is not saved; prevent_cse and static_argnums."""
import jax
import jax.ad_checkpoint as jac
import jax.numpy as jnp
import numpy as np
import pytest

import tracejit as tj
import tracejit.ad_checkpoint as tac
import tracejit.numpy as tnp

APIS = {"ours": (tj, tnp, tj.lax, tac), "jax": (jax, jnp, jax.lax, jac)}


def _layer(m, lax, ac, W, x, name):
    y = m.dot(W, x)
    z = ac.checkpoint_name(m.sin(y), name)
    return m.tanh(z) * 2.0


def _network(api):
    _, m, lax, ac = api

    def f(W1, W2, Wb, x):
        x = _layer(m, lax, ac, W1, x, "a")
        x = _layer(m, lax, ac, W2, x, "b")
        xb = lax.dot_general(Wb, lax.broadcast(x, (2,)), (((2,), (1,)), ((0,), (0,))))  # batched
        return m.sum(ac.checkpoint_name(m.cos(xb), "c") ** 2)
    return f


def _args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) * 0.5
            for s in ((5, 4), (6, 5), (2, 3, 6), (4,))]


POLICIES = {
    "none": lambda cp: None,
    "everything_saveable": lambda cp: cp.everything_saveable,
    "nothing_saveable": lambda cp: cp.nothing_saveable,
    "dots_saveable": lambda cp: cp.dots_saveable,
    "checkpoint_dots": lambda cp: cp.checkpoint_dots,
    "dots_with_no_batch_dims_saveable": lambda cp: cp.dots_with_no_batch_dims_saveable,
    "checkpoint_dots_with_no_batch_dims": lambda cp: cp.checkpoint_dots_with_no_batch_dims,
    "save_only_these_names": lambda cp: cp.save_only_these_names("a", "c"),
    "save_any_names_but_these": lambda cp: cp.save_any_names_but_these("a"),
    "save_anything_except_these_names": lambda cp: cp.save_anything_except_these_names("b"),
    "save_from_both_policies": lambda cp: cp.save_from_both_policies(
        cp.save_only_these_names("b"), cp.dots_with_no_batch_dims_saveable),
    "offload_dot_with_no_batch_dims": lambda cp: cp.offload_dot_with_no_batch_dims(
        "device", "pinned_host"),
    "save_and_offload_only_these_names": lambda cp: cp.save_and_offload_only_these_names(
        names_which_can_be_saved=["a"], names_which_can_be_offloaded=["c"],
        offload_src="device", offload_dst="pinned_host"),
}


def _checkpointed(api, policy_name):
    f = _network(api)
    policy = POLICIES[policy_name](api[0].checkpoint_policies)
    return api[0].checkpoint(f, policy=policy)


def _printed(api, fun, args, capsys) -> list[str]:
    capsys.readouterr()
    api[3].print_saved_residuals(fun, *args)
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_saved_residuals_are_jaxs(policy, capsys):
    args = _args()
    ours = _printed(APIS["ours"], _checkpointed(APIS["ours"], policy), args, capsys)
    theirs = _printed(APIS["jax"], _checkpointed(APIS["jax"], policy), args, capsys)
    assert len(ours) >= 4  # the arguments at least
    if "offload" in policy:
        # JAX moves an offloaded value to host memory (a device_put it names as the source);
        # with one CPU memory it is simply saved: the same values, of the same types
        theirs = [line.replace("<host>", "") for line in theirs]
        assert [line.split()[0] for line in ours] == [line.split()[0] for line in theirs]
        kept = [line for line in theirs if "device_put" not in line]
        assert len(kept) < len(theirs) and [line for line in ours if line in kept] == kept
    else:
        assert ours == theirs


def test_saved_residuals_without_checkpoint_are_jaxs(capsys):
    args = _args()
    ours = _printed(APIS["ours"], _network(APIS["ours"]), args, capsys)
    theirs = _printed(APIS["jax"], _network(APIS["jax"]), args, capsys)
    # (JAX's top-level linearization also keeps Python scalars a `mul` by a constant reads
    # as residuals, "from a literal"; ours folds them into the backward pass as constants)
    assert ours == [line for line in theirs if not line.endswith("from a literal")]
    assert any("output of sin from" in line and "test_checkpoint_policies.py" in line
               for line in ours)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_gradients_with_each_policy_equal_those_without_checkpoint(policy):
    args = _args()
    plain = tj.grad(_network(APIS["ours"]), argnums=(0, 1, 2, 3))(*args)
    g = tj.grad(_checkpointed(APIS["ours"], policy), argnums=(0, 1, 2, 3))
    theirs = jax.grad(_checkpointed(APIS["jax"], policy), argnums=(0, 1, 2, 3))(*args)
    for got in (g(*args), tj.jit(g)(*args)):
        for a, b, c in zip(got, plain, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(a, c, rtol=2e-5, atol=1e-6)


def _backward_sines(closed) -> tuple[int, int]:
    """(sines in the checkpoint call of the backward pass, sines outside it)."""
    inner = sum(e.primitive.name == "sin" for e in closed.eqns
                if e.primitive.name == "checkpoint" for e in e.params["jaxpr"].eqns)
    outer = sum(e.primitive.name == "sin" for e in closed.eqns)
    return inner, outer


def test_the_backward_pass_recomputes_only_what_is_not_saved():
    """Named sines saved: none recomputed; nothing saved: both recomputed (the forward pass
    computes them once either way)."""
    def f(m, ac, x):
        a = ac.checkpoint_name(m.sin(x), "a")
        b = ac.checkpoint_name(m.sin(a * 3.0), "b")
        return m.sum(b * a)
    x = np.linspace(0.1, 1.0, 3, dtype=np.float32)
    counts = {}
    for name, policy in (("names", tj.checkpoint_policies.save_only_these_names("a", "b")),
                         ("nothing", tj.checkpoint_policies.nothing_saveable),
                         ("one", tj.checkpoint_policies.save_only_these_names("a"))):
        g = tj.grad(tj.checkpoint(lambda x: f(tnp, tac, x), policy=policy))
        counts[name] = _backward_sines(tj.make_jaxpr(g)(x))
    assert counts == {"names": (0, 2), "nothing": (2, 2), "one": (1, 2)}


def test_checkpoint_name_is_jaxs_identity_everywhere():
    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    for api in APIS.values():
        assert str(api[0].make_jaxpr(lambda v: api[3].checkpoint_name(v, "h"))(x)).count(
            "name[name=h]") == 1
    f_ours = lambda v: tnp.sum(tac.checkpoint_name({"p": v * 2.0}, "h")["p"] ** 2)  # noqa: E731
    f_jax = lambda v: jnp.sum(jac.checkpoint_name({"p": v * 2.0}, "h")["p"] ** 2)  # noqa: E731
    for transform in (lambda api, f: api.jit(f), lambda api, f: api.grad(f),
                      lambda api, f: api.jit(api.grad(f)), lambda api, f: api.vmap(api.grad(f))):
        np.testing.assert_allclose(transform(tj, f_ours)(x), transform(jax, f_jax)(x),
                                   rtol=1e-6)
    y = tj.jit(lambda v: tac.checkpoint_name(v.astype(tnp.int32), "i"))(x * 3)
    np.testing.assert_array_equal(y, (x * 3).astype(np.int32))


def test_prevent_cse_and_static_argnums():
    def f(m, x, n):
        for _ in range(n):  # Python control flow on the static argument
            x = m.sin(x)
        return x
    x = np.float32(0.7)
    for prevent_cse in (True, False):
        ours = tj.checkpoint(lambda x, n: f(tnp, x, n), static_argnums=(1,),
                             prevent_cse=prevent_cse)
        theirs = jax.checkpoint(lambda x, n: f(jnp, x, n), static_argnums=(1,),
                                prevent_cse=prevent_cse)
        for n in (1, 3):
            np.testing.assert_allclose(tj.grad(ours)(x, n), jax.grad(theirs)(x, n), rtol=1e-6)
            np.testing.assert_allclose(tj.jit(tj.grad(ours), static_argnums=1)(x, n),
                                       jax.grad(theirs)(x, n), rtol=1e-6)
        eqn = next(e for e in tj.make_jaxpr(tj.grad(ours), static_argnums=1)(x, 2).eqns
                   if e.primitive.name == "checkpoint")
        assert eqn.params["prevent_cse"] is prevent_cse


def test_policy_answers_and_errors():
    cp = tj.checkpoint_policies
    assert tac.Saveable is not tac.Recompute
    assert tac.Offloadable("device", "pinned_host") == ("device", "pinned_host")
    with pytest.raises(ValueError, match="should not intersect"):
        cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                             names_which_can_be_offloaded=["a"],
                                             offload_src="device", offload_dst="pinned_host")
    both = cp.save_from_both_policies(cp.offload_dot_with_no_batch_dims("d", "h"),
                                      cp.nothing_saveable)
    with pytest.raises(ValueError, match="should be a boolean"):
        tj.grad(tj.checkpoint(lambda x: tnp.sin(tnp.dot(x, x)), policy=both))(np.ones(3))
    bad = tj.checkpoint(lambda x: tnp.sin(tnp.sin(x)), policy=lambda *_, **__: "yes")
    with pytest.raises(TypeError, match="must return a bool"):
        tj.grad(bad)(1.0)
    assert sorted(vars(cp)) == sorted(vars(jax.checkpoint_policies))


@pytest.mark.parametrize("policy", ["dots_saveable", "everything_saveable", "nothing_saveable",
                                    "save_only_these_names"])
def test_policies_compose_with_second_order_vmap_and_jit(policy):
    def build(api):
        _, m, _, ac = api

        def f(x):
            w = m.ones((3, 3)) * 0.3
            z = ac.checkpoint_name(m.cos(m.sin(m.dot(w, x))), "a")
            return m.sum(m.tanh(m.dot(w, z)) ** 2)
        return api[0].checkpoint(f, policy=POLICIES[policy](api[0].checkpoint_policies))
    x = np.linspace(0.1, 0.9, 3).astype(np.float32)
    transforms = [lambda a, g: a.grad(lambda v: a.grad(g)(v).sum()), lambda a, g: a.hessian(g),
                  lambda a, g: a.vmap(a.grad(g)), lambda a, g: a.jit(a.grad(g))]
    for k, t in enumerate(transforms):
        arg = np.stack([x, 2 * x]) if k == 2 else x
        ours = t(tj, build(APIS["ours"]))(arg)
        theirs = t(jax, build(APIS["jax"]))(arg)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
