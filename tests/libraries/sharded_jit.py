"""jit of programs whose arguments are sharded over 4 CPU devices (jax_num_cpu_devices): the
results and the shardings jit reports for them (sharding propagation) — elementwise, shape ops,
reductions, data-parallel MLP, model-parallel matmul, a data-parallel grad step,
in_shardings, with_sharding_constraint, reshard, meshes from make_mesh (written for real JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("x", "y"))
line = Mesh(np.array(jax.devices()), ("b",))
explicit = jax.make_mesh((2, 2), ("x", "y"))
out = {}


def put(a, m, *spec):
    return jax.device_put(np.asarray(a, np.float32), NamedSharding(m, P(*spec)))


def record(name, result):
    out[name] = np.asarray(result)
    s = result.sharding
    out[name + ".sharding"] = np.array(f"{type(s).__name__} {getattr(s, 'spec', '')}")


x = put(np.arange(32.0).reshape(4, 8) / 8, mesh, "x", "y")
w = put(np.linspace(-1, 1, 24).reshape(8, 3), mesh, "y", None)
record("elementwise", jax.jit(lambda a: jnp.sin(a) * 2 + 1)(x))
record("broadcast_operand", jax.jit(lambda a: a * jnp.arange(8.0))(x))
record("sum_all", jax.jit(jnp.sum)(x))
record("sum_rows", jax.jit(lambda a: a.sum(1))(x))
record("max_cols", jax.jit(lambda a: a.max(0))(x))
record("mean_then_scale", jax.jit(lambda a: a / a.mean())(x))
record("argmax", jax.jit(lambda a: jnp.argmax(a, 1))(x))
record("transpose", jax.jit(lambda a: a.T)(x))
record("reshape_split", jax.jit(lambda a: a.reshape(4, 2, 4))(x))
record("reshape_merge", jax.jit(lambda a: a.reshape(32))(x))
record("broadcast_new_dim", jax.jit(lambda a: jnp.broadcast_to(a[None], (3, 4, 8)))(x))
record("model_parallel_matmul", jax.jit(lambda a, b: a @ b)(x, w))
record("unsharded_argument", jax.jit(lambda a, b: a + b)(x, np.ones((4, 8), np.float32)))
record("identity", jax.jit(lambda a: a)(x))
record("cumsum_split_dim", jax.jit(lambda a: jnp.cumsum(a, 0))(x))
record("cumsum_whole_dim", jax.jit(lambda a: jnp.cumsum(a, 1))(put(x, mesh, "x")))
record("sort_rows", jax.jit(lambda a: jnp.sort(jnp.sin(7 * a), 1))(x))
record("slice_stride", jax.jit(lambda a: a[::2])(x))
record("slice_uneven", jax.jit(lambda a: a[1:4, 2:6])(x))
record("slice_keeping_split", jax.jit(lambda a: a[:, 2:7:2] * 2)(put(x, mesh, "x")))
record("pad", jax.jit(lambda a: jnp.pad(a, ((1, 1), (0, 0))))(x))
record("concatenate", jax.jit(lambda a: jnp.concatenate([a, a * 2], 1))(x))
record("dynamic_slice", jax.jit(lambda a: jax.lax.dynamic_slice(a, (2, 0), (2, 8)))(x))
record("index", jax.jit(lambda a: a[3])(x))
record("top_k", jax.jit(lambda a: jax.lax.top_k(jnp.cos(5 * a), 2)[0])(x))

# more propagation through ops on arguments split over one axis (rows, or columns)
rows = put(np.arange(32.0).reshape(8, 4), line, "b")
cols = put(np.arange(32.0).reshape(8, 4), line, None, "b")
record("rows_slice_columns", jax.jit(lambda a: a[:, 1:3] + a[:, :2])(rows))
for name, fn, arg in [("rows_astype", lambda a: a.astype(jnp.int32), rows),
                      ("rows_plus_scalar", lambda a: a + jnp.float32(3), rows),
                      ("rows_prod_split", lambda a: a.prod(0), rows),
                      ("rows_any_split", lambda a: (a > 3).any(0), rows),
                      ("rows_logsumexp", lambda a: jax.nn.logsumexp(a, 1), rows),
                      ("cols_sum_split", lambda a: a.sum(1), cols),
                      ("cols_mean_kept", lambda a: a.mean(0), cols),
                      ("cols_transpose", lambda a: a.T, cols),
                      ("cols_flatten", lambda a: a.reshape(-1), cols)]:
    record(name, jax.jit(fn)(arg))

# data-parallel MLP: the batch split over 'b', weights replicated
xb = put(np.linspace(-2, 2, 48).reshape(8, 6), line, "b", None)
yb = put(np.linspace(0, 1, 16).reshape(8, 2), line, "b", None)
params = {"w1": put(np.linspace(-1, 1, 30).reshape(6, 5), line),
          "w2": put(np.linspace(1, -1, 10).reshape(5, 2), line)}


def mlp(p, a):
    return jax.nn.relu(a @ p["w1"]) @ p["w2"]


def loss(p, a, y):
    return jnp.mean((mlp(p, a) - y) ** 2)


record("data_parallel_mlp", jax.jit(mlp)(params, xb))
grads = jax.jit(jax.grad(loss))(params, xb, yb)
record("grad_w1", grads["w1"])
record("grad_w2", grads["w2"])
step = jax.jit(lambda p, a, y: jax.tree.map(lambda v, g: v - 0.1 * g, p, jax.grad(loss)(p, a, y)))
new = step(params, xb, yb)
record("step_w1", new["w1"])
record("remat_grad_w1", jax.jit(jax.grad(jax.checkpoint(loss)))(params, xb, yb)["w1"])

# an embedding lookup on batch-split tokens, its gradient, a column selection
emb = put(np.linspace(-1, 1, 30).reshape(10, 3), line)
tokens = jax.device_put(np.arange(16).reshape(8, 2) * 3 % 10, NamedSharding(line, P("b", None)))
record("embedding_lookup", jax.jit(lambda e, t: e[t])(emb, tokens))
record("embedding_grad", jax.jit(jax.grad(lambda e, t: jnp.sum(jnp.tanh(e[t]) ** 2)))(emb, tokens))
record("select_columns", jax.jit(lambda a: a[:, jnp.array([1, 3])])(xb))

# a data-parallel convolution (NHWC images split over the batch) and its kernel gradient
images = put(np.linspace(-1, 1, 8 * 5 * 5 * 2).reshape(8, 5, 5, 2), line, "b")
kernel = put(np.linspace(1, -1, 3 * 3 * 2 * 4).reshape(3, 3, 2, 4), line)


def conv(k, im):
    return jax.lax.conv_general_dilated(im, k, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


record("conv", jax.jit(conv)(kernel, images))
record("conv_kernel_grad", jax.jit(jax.grad(lambda k, im: jnp.sum(jnp.tanh(conv(k, im)))))(
    kernel, images))

# random numbers from batch-split keys (threefry is elementwise)
keys = jax.device_put(jax.random.split(jax.random.key(1), 4), NamedSharding(line, P("b")))
record("random_from_split_keys", jax.jit(jax.vmap(lambda k: jax.random.normal(k, (2,))))(keys))

# in_shardings place plain arrays
f = jax.jit(lambda a: a * 3, in_shardings=NamedSharding(line, P(None, "b")))
record("in_shardings", f(np.arange(16.0, dtype=np.float32).reshape(4, 4)))

# with_sharding_constraint (Auto axes) inside jit: the value resharded there
auto = NamedSharding(line, P(None, "b"))
xc = put(np.linspace(-2, 2, 32).reshape(8, 4), line, "b", None)
record("constraint", jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, auto) + 1)(xc))
record("constraint_unsharded_argument", jax.jit(
    lambda a: jax.lax.with_sharding_constraint(a * 2, NamedSharding(line, P("b"))))(
        np.ones((4, 2), np.float32)))
record("constraint_eager", jax.lax.with_sharding_constraint(np.ones((4, 2), np.float32),
                                                            NamedSharding(line, P("b"))))
record("constraint_grad", jax.jit(jax.grad(lambda a: jnp.sum(
    jax.lax.with_sharding_constraint(jnp.sin(a), auto) ** 2)))(xc))

# make_mesh: Explicit axes, the layout part of each result's type
ex = put(np.arange(32.0).reshape(4, 8) / 8, explicit, "x")
record("explicit_elementwise", jax.jit(lambda a: a * 2)(ex))
record("explicit_sum", jax.jit(lambda a: a.sum(0))(ex))
record("explicit_transpose", jax.jit(lambda a: a.T)(ex))
record("explicit_sum_rows", jax.jit(lambda a: a.sum(1))(put(x, explicit, "x", "y")))
with jax.set_mesh(explicit):
    record("reshard_eager", jax.sharding.reshard(ex, P(None, "y")))
    record("reshard_in_jit", jax.jit(lambda a: jax.sharding.reshard(a * 2, P("y", None)))(ex))
    out["abstract_mesh"] = np.array(str(jax.sharding.get_abstract_mesh()))
    with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((4,), ("z",))):
        out["use_abstract_mesh"] = np.array(str(jax.sharding.get_abstract_mesh()))
    out["after_use_abstract_mesh"] = np.array(str(jax.sharding.get_abstract_mesh()))

# control flow has no propagation rule: its operands are gathered (the numbers only are
# compared: JAX keeps the loop carry split)
out["fori_loop_values"] = np.asarray(jax.jit(lambda a: jax.lax.fori_loop(
    0, 3, lambda i, c: jnp.cos(c) * 1.5 + a, a))(x))
record("fori_loop", jax.jit(lambda a: jax.lax.fori_loop(
    0, 3, lambda i, c: jnp.cos(c) * 1.5 + a, a))(x))
record("while_loop", jax.jit(lambda a: jax.lax.while_loop(
    lambda c: c[1] < 3, lambda c: (jnp.sin(c[0]) + a, c[1] + 1), (a, 0))[0])(x))
record("cond", jax.jit(lambda a: jax.lax.cond(a[0, 0] > 0, lambda b: b * 2, jnp.sin, a))(x))
record("scan_carry", jax.jit(lambda a: jax.lax.scan(
    lambda c, r: (c * 0.5 + r, c.sum()), a[0], a)[0])(put(x, mesh, None, "y")))

# shard_map under jit: its results are laid out as out_specs say (also through a nested jit)
xs = np.arange(32.0, dtype=np.float32).reshape(4, 8) / 8
sm = jax.shard_map(lambda a, b: (a * b, jax.lax.psum(a.sum(0), "x")), mesh=mesh,
                   in_specs=(P("x", "y"), P()), out_specs=(P("x", "y"), P("y")))
sm_out = jax.jit(sm)(xs, np.float32(3))
record("shard_map_jit_split", sm_out[0])
record("shard_map_jit_replicated", sm_out[1])
record("shard_map_jit_nested", jax.jit(lambda a: jax.jit(sm)(a, np.float32(2))[0])(xs))
record("shard_map_jit_line", jax.jit(jax.shard_map(lambda a: a + 1, mesh=line, in_specs=P("b"),
                                                   out_specs=P("b")))(xs))
# ... and the operations after it keep, drop or permute its layout (GSPMD's propagation)
sm3 = jax.shard_map(lambda a: a * 3, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
sm_rows = jax.shard_map(lambda a: jax.lax.psum(a, "y"), mesh=mesh, in_specs=P("x", "y"),
                        out_specs=P("x", None))
sm_cases = {
    "sm_then_scale": lambda a: sm3(a) * 2,
    "sm_then_sin_plus_argument": lambda a: jnp.sin(sm3(a)) + a,
    "sm_then_row_broadcast": lambda a: sm3(a) + jnp.arange(8.0),
    "sm_then_astype": lambda a: sm3(a).astype(jnp.int32),
    "sm_then_sum_all": lambda a: sm3(a).sum(),
    "sm_then_sum_split_rows": lambda a: sm3(a).sum(0),
    "sm_then_max_cols": lambda a: sm3(a).max(1),
    "sm_rows_then_sum_rows": lambda a: sm_rows(a).sum(0),
    "sm_then_transpose": lambda a: sm3(a).T,
    "sm_rows_then_transpose": lambda a: sm_rows(a).T,
    "sm_then_reshape_merge": lambda a: sm3(a).reshape(32),
    "sm_then_new_dim": lambda a: jnp.broadcast_to(sm3(a)[None], (3, 4, 8)),
    "sm_then_matmul": lambda a: sm3(a) @ jnp.ones((8, 3)),
    "sm_then_softmax": lambda a: jax.nn.softmax(sm3(a), axis=1),
    "sm_line_then_sum_split": lambda a: jax.shard_map(
        lambda b: b + 1, mesh=line, in_specs=P("b"), out_specs=P("b"))(a).sum(0),
    "sm_nested_then_scale": lambda a: jax.jit(lambda b: sm3(b) * 2)(a) + 1,
}
for name, fn in sm_cases.items():
    record(name, jax.jit(fn)(xs))
record("sm_rows_direct", jax.jit(sm_rows)(xs))
record("sm_then_constant", jax.jit(lambda a: (sm3(a), jnp.ones(3)))(xs)[1])
# the in_specs' layout carried back to the jit's argument, then forward to what it makes
sm_t = jax.shard_map(lambda a: a * 3, mesh=mesh, in_specs=P("y", "x"), out_specs=P("y", "x"))
record("sm_argument_scaled", jax.jit(lambda a: (sm3(a), 5.0 * a))(xs)[1])
record("sm_argument_returned", jax.jit(lambda a: (sm3(a), a))(xs)[1])
record("sm_argument_summed", jax.jit(lambda a: (sm3(a), a.sum(0)))(xs)[1])
record("sm_argument_through_sin", jax.jit(lambda a: (sm3(jnp.sin(a) * 2), a * 2))(xs)[1])
record("sm_argument_through_transpose", jax.jit(lambda a: (sm_t(a.T), a * 2))(xs)[1])
record("sm_sum_plus_argument", jax.jit(lambda a: sm3(a).sum() + a)(xs))
# ... and under differentiation inside the jit
record("sm_grad", jax.jit(jax.grad(lambda a: jnp.sin(sm3(a * 2)).sum()))(xs))
sm_value, sm_grad = jax.jit(jax.value_and_grad(lambda a: (sm3(a) ** 2).sum()))(xs)
record("sm_value_and_grad_value", sm_value)
record("sm_value_and_grad_grad", sm_grad)
record("sm_jvp", jax.jit(lambda a: jax.jvp(sm3, (a,), (a,))[1])(xs))
record("sm_vjp", jax.jit(lambda a: jax.vjp(sm_t, a)[1](a)[0])(xs.T.copy()))
# ... and under vmap inside the jit (the batch dimension unsplit)
stacked = np.stack([xs, xs + 1, xs * 2])
record("sm_vmap", jax.jit(jax.vmap(lambda a: sm3(a) * 2))(stacked))
record("sm_vmap_axis1", jax.jit(jax.vmap(lambda a: sm3(a) * 2, in_axes=1, out_axes=1))(
    stacked.transpose(1, 0, 2).copy()))
record("sm_vmap_out_last", jax.jit(jax.vmap(lambda a: sm3(a) * 2, out_axes=2))(stacked))
record("sm_vmap_grad", jax.jit(jax.vmap(jax.grad(lambda a: (sm3(a) ** 2).sum())))(stacked))
# ... and inside a call the jit keeps (checkpoint)
record("sm_remat", jax.jit(jax.checkpoint(lambda a: sm3(a) * 2))(xs))
record("sm_other_argument", jax.jit(lambda a, b: (sm3(a), b * 2))(xs, xs)[1])
# ... shard_map inside scan / fori / while / cond bodies, and scans over its results: the
# layouts carried through the control flow (a carry keeps its layout, stacked outputs get a
# leading unsplit dimension, cond's branches agree)
sm_psum_y = jax.shard_map(lambda a: jax.lax.psum(a, "y"), mesh=mesh, in_specs=P("x", "y"),
                          out_specs=P("x", None))
ones3 = jnp.ones((3, 4, 8))
control_cases = {
    "scan_body_sm_carry": lambda a: jax.lax.scan(
        lambda c, _: (sm3(c) * 0.5, None), a, None, length=3)[0],
    "scan_body_sm_ys": lambda a: jax.lax.scan(lambda c, _: (c, sm3(c)), a, None, length=3)[1],
    "scan_body_sm_reduced_ys": lambda a: jax.lax.scan(
        lambda c, _: (sm3(c) * 0.5, sm3(c).sum(0)), a, None, length=3)[1],
    "fori_body_sm": lambda a: jax.lax.fori_loop(0, 3, lambda i, c: sm3(c) * 0.5, a),
    "while_body_sm": lambda a: jax.lax.while_loop(
        lambda c: c[1] < 3, lambda c: (sm3(c[0]), c[1] + 1), (a, 0))[0],
    "cond_sm_both_branches": lambda a: jax.lax.cond(a[0, 0] > 0, sm3, lambda b: sm3(b) + 1, a),
    "cond_sm_one_branch": lambda a: jax.lax.cond(a[0, 1] > 0, sm3, lambda b: b * 2, a),
    "scan_over_sm_ys": lambda a: jax.lax.scan(
        lambda c, r: (c + r, r * 2), jnp.zeros(8), sm3(a))[1],
    "scan_over_sm_carry": lambda a: jax.lax.scan(
        lambda c, r: (c + r, r * 2), jnp.zeros(8), sm3(a))[0],
    "scan_carry_from_sm": lambda a: jax.lax.scan(
        lambda c, r: (c * 0.5 + r, c.sum()), sm3(a), ones3)[0],
    "scan_carry_from_sm_ys": lambda a: jax.lax.scan(
        lambda c, r: (c * 0.5 + r, c), sm3(a), ones3)[1],
    "scan_over_sm_rows_ys": lambda a: jax.lax.scan(
        lambda c, r: (c, jnp.sin(r)), 0.0, sm_psum_y(a))[1],
    "scan_over_sm_transposed": lambda a: jax.lax.scan(
        lambda c, r: (c + r, r * 2), jnp.zeros(4), sm3(a).T)[1],
}
for name, fn in control_cases.items():
    record(name, jax.jit(fn)(xs))
# ... and differentiated (inside the jit): the body re-evaluated by jvp and partial
# evaluation keeps its shard_map results' layouts (the gradient reports the in_specs')
scan_sm_loss = lambda a: (jax.lax.scan(lambda c, _: (jnp.sin(sm3(c)) * 0.3, None), a, None,
                                       length=3)[0] ** 2).sum()
record("grad_scan_body_sm", jax.jit(jax.grad(scan_sm_loss))(xs))
scan_sm_value, scan_sm_grad = jax.jit(jax.value_and_grad(scan_sm_loss))(xs)
record("value_and_grad_scan_body_sm_value", scan_sm_value)
record("value_and_grad_scan_body_sm_grad", scan_sm_grad)
record("grad_fori_body_sm", jax.jit(jax.grad(lambda a: jax.lax.fori_loop(
    0, 3, lambda i, c: sm3(c) * 0.5, a).sum()))(xs))
record("grad_cond_sm", jax.jit(jax.grad(lambda a: jax.lax.cond(
    a[0, 0] > 0, sm3, lambda b: sm3(b) + 1, a).sum()))(xs))
# ... and on arguments laid out by device_put (the loop runs gathered, cut back after)
record("scan_over_split_rows", jax.jit(lambda a: jax.lax.scan(
    lambda c, r: (c * 0.5 + r, c), jnp.zeros(4), a)[1])(rows))
record("scan_over_split_cols", jax.jit(lambda a: jax.lax.scan(
    lambda c, r: (jnp.cos(c) + r, c * r), jnp.zeros(4), a)[0])(cols))
record("cond_split_rows", jax.jit(lambda a: jax.lax.cond(
    a.sum() > 0, lambda b: b[::-1] * 2, lambda b: jnp.zeros_like(b), a))(rows))

# ... nested, switched, vmapped and differentiated control flow, scatter inside a loop
grid_xs = put(xs, mesh, "x", "y")
more_control = {
    "nested_scan": (lambda a: jax.lax.scan(lambda c, r: (jax.lax.scan(
        lambda c2, r2: (c2 + r2, c2 * 2), c, r[None].repeat(2, 0))[0], c.sum()), a, ones3)[0],
        grid_xs),
    "switch_three_branches": (lambda a: jax.lax.switch(
        jnp.int32(a[0, 0] > 0) + 1, [lambda b: b, lambda b: b * 2, jnp.sin], a), grid_xs),
    "vmap_scan": (lambda a: jax.vmap(
        lambda r: jax.lax.scan(lambda c, v: (c + v, c), 0.0, r)[1])(a), rows),
    "while_carry_from_sum": (lambda a: jax.lax.while_loop(
        lambda c: c[1] < 4, lambda c: (c[0] + a.sum(0), c[1] + 1), (jnp.zeros(4), 0))[0], rows),
    "fori_sm_scatter": (lambda a: jax.lax.fori_loop(
        0, 2, lambda i, c: sm3(c).at[i].set(1.0), a), xs),
    "scatter_grad": (jax.grad(lambda a: (a.at[jnp.array([1, 5])].set(2.0) ** 2).sum()), rows),
    "cond_sm_scan": (lambda a: jax.lax.cond(a[0, 0] >= 0, lambda b: jax.lax.scan(
        lambda c, r: (c + r, r), jnp.zeros(8), sm3(b))[1], lambda b: b, a), xs),
}
for name, (fn, arg) in more_control.items():
    record(name, jax.jit(fn)(arg))

# scatter (x.at[...]), dynamic_update_slice and gathers along unsplit axes on split arrays
idx = jnp.array([1, 5])
grid = put(np.arange(32.0).reshape(4, 8), mesh, "x", "y")
indexing_cases = {
    "at_set_rows": (lambda a: a.at[idx].set(7.0), rows),
    "at_set_one": (lambda a: a.at[3].set(7.0), rows),
    "at_add_rows": (lambda a: a.at[jnp.array([1, 5, 1])].add(1.0), rows),
    "at_set_column": (lambda a: a.at[:, 1].set(7.0), rows),
    "at_set_2d": (lambda a: a.at[1:3, 2].set(7.0), grid),
    "at_set_2d_rows": (lambda a: a.at[idx % 4].set(jnp.arange(8.0)), grid),
    "at_multiply_columns": (lambda a: a.at[:, jnp.array([0, 2])].multiply(2.0), rows),
    "at_max_rows": (lambda a: a.at[idx].max(20.0), rows),
    "dus_rows": (lambda a: jax.lax.dynamic_update_slice(a, jnp.ones((2, 4)), (2, 0)), rows),
    "dus_columns": (lambda a: jax.lax.dynamic_update_slice(a, jnp.ones((8, 2)), (0, 1)), rows),
    "take_split_axis": (lambda a: jnp.take(a, idx, axis=0), rows),
    "take_unsplit_axis": (lambda a: jnp.take(a, jnp.array([0, 3]), axis=1), rows),
    "take_along_unsplit_axis": (lambda a: jnp.take_along_axis(
        a, jnp.zeros((8, 2), jnp.int32) + jnp.array([0, 3]), axis=1), rows),
    "take_along_split_axis": (lambda a: jnp.take_along_axis(
        a, jnp.zeros((2, 4), jnp.int32) + 1, axis=0), rows),
    "sort_by_argsort": (lambda a: jnp.take_along_axis(
        a, jnp.argsort(jnp.sin(a), axis=1), axis=1), rows),
    "index_2d_columns": (lambda a: a[:, jnp.array([1, 3])], grid),
}
for name, (fn, arg) in indexing_cases.items():
    record(name, jax.jit(fn)(arg))
# eager operations on split arrays (JAX runs each as a jit of the one operation) and grad of a
# jit called outside any jit
for name, fn, arg in [("eager_sin", lambda a: jnp.sin(a) * 2, x),
                      ("eager_plus_numpy", lambda a: a + np.ones((4, 8), np.float32), x),
                      ("eager_sum_rows", lambda a: a.sum(1), x),
                      ("eager_sum_all", jnp.sum, x),
                      ("eager_transpose", lambda a: a.T, x),
                      ("eager_matmul", lambda a: a @ w, x),
                      ("eager_reshape", lambda a: a.reshape(32), rows),
                      ("eager_index", lambda a: a[1:3], rows),
                      ("eager_sort", lambda a: jnp.sort(a, 1), rows),
                      ("eager_cumsum", lambda a: jnp.cumsum(a, 0), rows),
                      ("eager_astype", lambda a: a.astype(jnp.int32), cols),
                      ("grad_of_jit", jax.grad(jax.jit(lambda a: jnp.sum(jnp.sin(a) * a))), x),
                      ("value_of_jit_grad", lambda a: jax.value_and_grad(
                          jax.jit(lambda b: jnp.sum(b * b)))(a)[1], rows)]:
    record(name, fn(arg))
record("out_shardings_unsharded_argument", jax.jit(
    lambda a: a * 2, out_shardings=NamedSharding(mesh, P(None, "y")))(xs))
out["aot_compiled"] = np.array(str(jax.jit(lambda a: a.sum(1)).lower(x).compile()(x).sharding))

# JAX's errors: uneven split, in_shardings against the argument's own, two meshes
def double(a):
    return a * 2


def add(a, b):
    return a + b


first_two = Mesh(np.array(jax.devices()[:2]), ("b",))
errors = {
    "uneven": lambda: jax.jit(double, in_shardings=NamedSharding(line, P("b")))(
        np.ones(6, np.float32)),
    "conflicting_in_shardings": lambda: jax.jit(double, in_shardings=NamedSharding(
        line, P("b")))(put(np.ones(8), line)),
    "two_meshes": lambda: jax.jit(add)(put(np.ones(8), line, "b"),
                                       put(np.ones(8), first_two, "b")),
}
for name, fn in errors.items():
    try:
        fn()
        out["error_" + name] = np.array("no error")
    except ValueError as e:
        out["error_" + name] = np.array(f"{type(e).__name__}: {e}")

np.savez(sys.argv[1], **out)
