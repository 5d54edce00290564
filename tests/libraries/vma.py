"""shard_map's varying-manual-axes types (check_vma=True, JAX's default) on a 2x2 mesh of 4 CPU
devices: which axes each value varies over (jax.typeof(x).mat.varying) after collectives,
pcast and mixed operations, gradients inside shard_map (pvary's transpose is psum), and the
errors for out_specs, loop carries and cond branches whose varying axes disagree (written for
real JAX)."""
import re
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("i", "j"))
x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
out = {}


def sm(f, i=P("i"), o=P("i"), **kw):
    return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)


types = []


def rec(name, v):
    types.append(name + ":" + ",".join(sorted(map(str, jax.typeof(v).mat.varying))))
    return v


def typed(a):
    rec("arg", a)
    rec("psum", lax.psum(a, "i"))
    rec("psum_both", lax.psum(lax.pcast(a, "j", to="varying"), ("i", "j")))
    rec("pcast_j", lax.pcast(a, "j", to="varying"))
    rec("pcast_both", lax.pcast(jnp.ones(2), ("i", "j"), to="varying"))
    rec("scaled", a * 2)
    rec("constant", jnp.ones(3))
    rec("mixed", a + jnp.ones(2))
    rec("all_gather", lax.all_gather(a, "i"))
    rec("all_gather_invarying", lax.all_gather(a, "i", to="invarying"))
    rec("axis_index", lax.axis_index("i"))
    rec("pmax", lax.pmax(a, "i"))
    rec("pmin_both", lax.pmin(a, ("i", "j")))
    rec("pmean_j", lax.pmean(a, "j"))
    rec("psum_scatter", lax.psum_scatter(a, "i", tiled=True))
    rec("ppermute", lax.ppermute(a, "i", [(0, 1), (1, 0)]))
    rec("all_to_all", lax.all_to_all(a, "i", 1, 1, tiled=True))
    rec("psum_of_invariant", lax.psum(jnp.ones(2), "i"))
    rec("jit", jax.jit(lambda b: b + 1)(a))
    rec("jit_psum", jax.jit(lambda b: lax.psum(b, "i"))(a))
    rec("sum", jnp.sum(a))
    rec("index", a[0])
    rec("matmul_invariant", jnp.ones(2) @ jnp.ones(2))
    rec("vmap_row", jax.vmap(lambda r: r * 2)(a))
    # a cond's outputs are typed as its branches', however its predicate varies
    rec("cond_varying_pred", lax.cond(a[0, 0] > 2, lambda: jnp.ones(2), lambda: jnp.zeros(2)))
    rec("cond_varying_pred_operand", lax.cond(a[0, 0] > 2, lambda b: b * 2, lambda b: b, a))
    rec("switch_varying_pred", lax.switch(a[0, 0].astype(int) % 3, [
        lambda: jnp.ones(2), lambda: jnp.zeros(2), lambda: jnp.full(2, 3.0)]))
    rec("select_varying_pred", jnp.where(a[0, 0] > 2, jnp.ones(2), 0.0))
    spread = lax.cond(a[0, 0] > 2, lambda: jnp.ones(2), lambda: jnp.zeros(2))
    rec("cond_varying_pred_then_add", spread + jnp.arange(2.0))
    rec("psum_of_cond_varying_pred", lax.psum(spread, "i"))
    rec("pmean_of_invariant", lax.pmean(jnp.ones(2), ("i", "j")))
    rec("scan_ys", lax.scan(lambda c, r: (c, r * 2), 0.0, a)[1])
    rec("while_varying_pred", lax.while_loop(lambda c: c[0] < a[0, 0], lambda c: (
        c[0] + 1, c[1] * 2), (0.0, jnp.ones(2)))[1])
    return a


sm(typed)(x)
out["types"] = np.array(types)

# values
out["psum_of_invariant"] = sm(lambda a: lax.psum(jnp.ones(2), "i"), o=P())(x)
out["all_gather_invarying"] = sm(lambda a: lax.all_gather(a, "i", to="invarying"), o=P())(x)
out["mixed"] = sm(lambda a: a * jnp.arange(2.0) + lax.axis_index("j"), o=P("i", "j"))(x)
out["scan_pcast_carry"] = sm(lambda a: lax.scan(
    lambda c, _: (c + a, None), lax.pcast(jnp.zeros((2, 2)), "i", to="varying"), None,
    length=3)[0])(x)
out["scan_unchecked"] = sm(lambda a: lax.scan(lambda c, _: (c + a, None), jnp.zeros((2, 2)),
                                              None, length=3)[0], check_vma=False)(x)
# a predicate varying over "i", branches that do not: the output is invariant (device 0's)
v3 = w[0]
out["cond_varying_pred"] = sm(lambda a, v: lax.cond(a[0, 0] > 2, lambda v: v * 2,
                                                    lambda v: v + 1, v), i=(P("i"), P()),
                              o=P())(x - 1, v3)
out["switch_varying_pred"] = sm(lambda a, v: lax.switch(a[0, 0].astype(int), [
    lambda v: v * 2, lambda v: v + 1, lambda v: -v], v), i=(P("i"), P()), o=P())(x[::-1] - 5, v3)
out["grad_cond_varying_pred"] = sm(lambda a, v: jax.grad(lambda v: lax.cond(
    a[0, 0] > 2, lambda v: jnp.sum(v * 2), lambda v: jnp.sum(v * v), v))(v),
    i=(P("i"), P()), o=P())(x, v3)
out["cond_varying_pred_jit"] = jax.jit(sm(lambda a, v: lax.cond(
    a[0, 0] > 2, lambda v: jnp.sin(v), lambda v: jnp.cos(v), v) + lax.psum(a[0, 0], "i"),
    i=(P("i"), P()), o=P()))(x, v3)
# ... yet each device holds its own branch's value: out_specs P("i") shows them all (also
# after arithmetic, inside scan/fori/jit, differentiated, and without check_vma); a psum sums
# the devices' own values
def on_pred(f, o=P("i"), **kw):
    return sm(f, i=(P("i"), P()), o=o, **kw)(x - 1, v3)


def varying_cond(a, v):
    return lax.cond(a[0, 0] > 2, lambda v: v * 2, lambda v: v + 1, v)


out["cond_each_device"] = on_pred(varying_cond)
out["switch_each_device"] = on_pred(lambda a, v: lax.switch(
    jnp.clip(a[0, 0].astype(int) // 2, 0, 2), [lambda: jnp.ones(2), lambda: jnp.zeros(2),
                                                lambda: jnp.full(2, 3.0)]))
out["cond_each_device_then_ops"] = on_pred(lambda a, v: jnp.sin(varying_cond(a, v)) * v + 1)
out["psum_of_cond_each_device"] = on_pred(lambda a, v: lax.psum(varying_cond(a, v), "i"), P())
out["cond_each_device_in_scan"] = on_pred(lambda a, v: sum(lax.scan(
    lambda c, _: (varying_cond(a, c), varying_cond(a, c) * 3), v, None, length=2)[1]))
out["cond_each_device_in_fori"] = on_pred(lambda a, v: lax.fori_loop(
    0, 3, lambda k, c: varying_cond(a, c) - k, v))
out["cond_each_device_in_jit"] = jax.jit(lambda a, v: on_pred(
    lambda a, v: jax.jit(varying_cond)(a, v)))(x, v3)
out["grad_cond_each_device"] = on_pred(lambda a, v: jax.grad(lambda v: lax.cond(
    a[0, 0] > 2, lambda v: jnp.sum(v * 2), lambda v: jnp.sum(v * v), v))(v))
out["cond_each_device_unchecked"] = on_pred(varying_cond, check_vma=False)
out["cond_each_device_unchecked_p"] = on_pred(varying_cond, P(), check_vma=False)
# (a predicate varying over both axes: typed invariant over both, so out_specs P() is allowed)
both_pred = sm(lambda a, v: lax.cond(a[0, 0] % 3 > 1, lambda v: v * 2, lambda v: v + 1, v)[None],
               i=(P("i", "j"), P()), o=P(("i", "j")))
out["cond_each_device_both_axes"] = both_pred(x.reshape(2, 4), v3)
out["cond_both_axes_out_p"] = sm(lambda a, v: lax.cond(a[0, 0] % 3 > 1, lambda v: v * 2,
                                                       lambda v: v + 1, v),
                                 i=(P("i", "j"), P()), o=P())(x.reshape(2, 4), v3)
out["select_each_device"] = on_pred(lambda a, v: jnp.where(a[0, 0] > 2, v * 2, v + 1))
# psum/pmean of an invariant value: x times the axes' size, x
out["pmean_of_invariant"] = on_pred(lambda a, v: lax.pmean(v * 3, ("i", "j")), P())
out["psum_of_invariant_both"] = on_pred(lambda a, v: lax.psum(v * 3, ("i", "j")), P())
out["grad_pmean_of_invariant"] = on_pred(lambda a, v: jax.grad(
    lambda v: jnp.sum(lax.pmean(v * 3, "i") ** 2))(v), P())
# a reduce with a computation of its own folds each device's block (its carry typed varying);
# a pure_callback without vmap_method is called once per device with its block
out["reduce_custom"] = sm(lambda a: lax.reduce(a, np.float32(0), lambda c, b: c + b * 2,
                                               (1,)))(x)
out["callback_each_device"] = sm(lambda a: jax.pure_callback(
    lambda b: np.asarray(b) * 2 + np.asarray(b).sum(), jax.ShapeDtypeStruct(a.shape, a.dtype),
    a))(x)
out["callback_each_device_jit"] = jax.jit(sm(lambda a: jax.pure_callback(
    lambda b: np.asarray(b)[::-1].copy(), jax.ShapeDtypeStruct(a.shape, a.dtype), a)))(x)
# gradients: psum's transpose is pvary, pvary's (explicit or implicit) is psum
out["grad_psum_inside"] = sm(lambda a: jax.grad(lambda b: jnp.sum(lax.psum(b, "i")))(a))(x)
out["grad_psum_inside_unchecked"] = sm(lambda a: jax.grad(lambda b: jnp.sum(
    lax.psum(b, "i")))(a), check_vma=False)(x)
out["grad_pcast"] = sm(lambda a, v: jax.grad(lambda v: jnp.sum(
    lax.pcast(v, "i", to="varying")))(v), i=(P("i"), P()), o=P())(x, w[:, 0])
out["grad_psum_of_invariant"] = sm(lambda a, v: jax.grad(lambda v: jnp.sum(
    lax.psum(v, "i")))(v), i=(P("i"), P()), o=P())(x, w[:, 0])
out["grad_invariant_param"] = sm(lambda a, v: jax.grad(lambda v: jnp.sum(a * v))(v),
                                 i=(P("i"), P()), o=P())(x, w[:, 0])
out["grad_matmul_param"] = sm(lambda a, v: lax.pmean(jax.grad(
    lambda v: jnp.sum(jnp.tanh(a @ v)))(v), "i"), i=(P("i"), P()), o=P())(x, w)
out["grad_all_gather"] = sm(lambda a: jax.grad(lambda b: jnp.sum(
    lax.all_gather(b, "i") ** 2 * jnp.arange(2.0)[:, None, None]))(a))(x)
out["grad_all_gather_invarying"] = sm(lambda a: jax.grad(lambda b: jnp.sum(
    lax.all_gather(b, "i", to="invarying") ** 2 * jnp.arange(2.0)[:, None, None]))(a))(x)
out["grad_outside"] = jax.grad(lambda v: sm(lambda a, v: lax.psum(jnp.sum(a * v), "i"),
                                            i=(P("i"), P()), o=P())(x, v))(w[:, 0])


# a data-parallel step: gradients of replicated parameters are summed over the devices
def loss(p, xs):
    return jnp.mean(jnp.tanh(xs @ p["w"] + p["b"]) ** 2)


def step(p, xs):
    g = lax.pmean(jax.grad(loss)(p, xs), ("i", "j"))
    return jax.tree.map(lambda a, b: a - 0.1 * b, p, g)


params = {"w": w, "b": np.zeros(3, np.float32)}
xb = np.linspace(-2, 2, 32, dtype=np.float32).reshape(16, 2)
new = jax.jit(sm(step, i=(P(), P(("i", "j"))), o=P()))(params, xb)
out["dp_w"], out["dp_b"] = new["w"], new["b"]

errors = {
    "out_varying": lambda: sm(lambda a: a, o=P())(x),
    "out_varying_j": lambda: sm(lambda a: lax.pcast(a, "j", to="varying"))(x),
    "out_all_gather": lambda: sm(lambda a: lax.all_gather(a, "i"), o=P())(x),
    "out_two": lambda: sm(lambda a: (a, a * 2), o=(P(), P("i")))(x),
    "psum_mixed": lambda: sm(lambda a: lax.psum(a, ("i", "j")), o=P())(x),
    "pcast_twice": lambda: sm(lambda a: lax.pcast(a, "i", to="varying"))(x),
    "pcast_to": lambda: sm(lambda a: lax.pcast(a, "i", to="invarying"))(x),
    "scan_carry": lambda: sm(lambda a: lax.scan(lambda c, _: (c + a, None), jnp.zeros((2, 2)),
                                                None, length=3)[0])(x),
    "scan_tuple_carry": lambda: sm(lambda a: lax.scan(
        lambda c, _: ((c[0], c[1] + a), None), (1.0, jnp.zeros((2, 2))), None,
        length=3)[0][1])(x),
    "scan_xs": lambda: sm(lambda a: lax.scan(lambda c, r: (c + r, c), jnp.zeros(2), a)[1])(x),
    "while_carry": lambda: sm(lambda a: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + a), (0, jnp.zeros((2, 2))))[1])(x),
    "fori_carry": lambda: sm(lambda a: lax.fori_loop(0, 3, lambda i, c: c + a,
                                                     jnp.zeros((2, 2))))(x),
    "select_varying_pred": lambda: sm(lambda a, v: jnp.where(a[0, 0] > 2, v * 2, v),
                                      i=(P("i"), P()), o=P())(x, w[0]),
    "cond_varying_operand": lambda: sm(lambda a, v: lax.cond(
        a[0, 0] > 2, lambda v: v * 2, lambda v: v + a[0, 0], v), i=(P("i"), P()), o=P())(
        x, w[0]),
    "cond_branches": lambda: sm(lambda a: lax.cond(True, lambda: a,
                                                   lambda: jnp.zeros((2, 2))))(x),
    # pbroadcast gets no implicit pvary (the other collectives do): an operand invariant over
    # the axis, or varying over another axis only, is refused, under jit too
    "pbroadcast_invariant": lambda: sm(lambda a: lax.pbroadcast(a, "i", 1), i=P(), o=P())(x),
    "pbroadcast_other_axis": lambda: jax.jit(sm(lambda a: lax.pbroadcast(a, "i", 0),
                                                i=P(None, "j"), o=P(None, "j")))(x),
    "pbroadcast_pytree": lambda: jax.jit(sm(lambda a, v: lax.pbroadcast((a, v), "i", 1),
                                            i=(P("i"), P()), o=(P("i"), P())))(x, w),
}
for name, bad in errors.items():
    try:
        bad()
        out["error_" + name] = np.array("no error")
    except Exception as e:  # noqa: BLE001  (the class and text are what is compared)
        text = re.sub(r"the function '[^']*'", "the function F", str(e))
        text = re.sub(r" at \S+:\d+", " at SOURCE", text)
        out["error_" + name] = np.array(type(e).__name__ + ": " + text)

np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
