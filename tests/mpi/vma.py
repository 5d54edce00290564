"""shard_map's check_vma=True (JAX's default) over a mesh axis spanning processes, run three ways
by tests/test_mpi.py: `mpi` (tracejit under `mpiexec -n 2`, two devices per process, 'data'
across the processes), `single` (tracejit, one process of four devices) and `jax` (real JAX, four
devices): the axes values vary over, gradients taken inside shard_map (an invariant input's is
summed over 'data': pvary's transpose), data-parallel training written as JAX's docs write it,
and JAX's errors (every rank records its own). Written for JAX: `python -m tracejit` runs it.

usage: python [-m tracejit] vma.py OUT {mpi,single,jax}   (writes OUT.<rank>.npz)
"""
import numpy as np

import jax

from harness import Run  # (tests/mpi/harness.py, beside this)

run = Run(jax)
results, save = run.results, run.save

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

devs = np.array(jax.devices()).reshape(2, 2)  # (processes, devices of each)
mesh2d = Mesh(devs, ("data", "model"))
mesh1d = Mesh(devs[:, 0], ("data",))  # one device per process
mesh_all = Mesh(devs.reshape(-1), ("data",))  # each process holds two of its positions
x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
w = np.linspace(-1, 1, 6, dtype=np.float32)


# --- the axes each value varies over ---------------------------------------------------------
types = []


def typed(a, v):
    seen = [a, v, a * v, lax.psum(a, "data"), lax.psum(a, ("data", "model")),
            lax.pcast(v, "data", to="varying"), lax.all_gather(a, "data"),
            lax.axis_index("data"), lax.psum_scatter(a, "data", scatter_dimension=0, tiled=True),
            lax.ppermute(a, "data", [(0, 1), (1, 0)]), lax.pmax(a, "data"), v + 1.0]
    types.extend(",".join(sorted(map(str, jax.typeof(s).mat.varying))) for s in seen)
    return lax.psum(a * v, ("data", "model"))


save("typed", jax.shard_map(typed, mesh=mesh2d, in_specs=(P("data", "model"), P("model")),
                            out_specs=P())(x, w))


def typed_all(a, v):
    seen = [a, v, a * v, lax.psum(a, "data"), lax.pcast(v, "data", to="varying"),
            lax.all_gather(a, "data"), lax.axis_index("data"),
            lax.ppermute(a, "data", [(0, 1), (1, 2), (2, 3), (3, 0)])]
    types.extend(",".join(sorted(map(str, jax.typeof(s).mat.varying))) for s in seen)
    return lax.psum(a * v, "data")


save("typed_all", jax.shard_map(typed_all, mesh=mesh_all, in_specs=(P("data"), P()),
                                out_specs=P())(x, w))


# under jit a result split over the processes comes back split (typed results leave untyped)
split = jax.jit(jax.shard_map(lambda a: (a * 2, lax.psum(a.sum(0), "data")), mesh=mesh2d,
                              in_specs=P("data", "model"), out_specs=(P("data", "model"),
                                                                      P("model"))))(x)
save("split", split)
if run.mode == "mpi":
    results["mpi/split_types"] = np.array([type(r).__name__ for r in split])


# --- gradients inside shard_map w.r.t. an invariant input: summed over every axis -------------
def inner(a, v):
    return jax.grad(lambda v: jnp.sum(jnp.sin(a * v)))(v)


for name, m, spec in (("grad_1d", mesh1d, P("data")), ("grad_2d", mesh2d, P(("data", "model"))),
                      ("grad_all", mesh_all, P("data"))):
    f = jax.shard_map(inner, mesh=m, in_specs=(spec, P()), out_specs=P())
    save(name, (f(x, w), jax.jit(f)(x, w)))


# through a jit traced outside shard_map (traced again inside, at the varying types) and a scan
# whose per-step outputs are invariant (their types come from the body, not its operands)
sin_of = jax.jit(lambda a, v: jnp.sin(a * v))
sin_of(x[:1], w)


def through_calls(a, v):
    g = jax.grad(lambda v: jnp.sum(sin_of(a, v)))(v)
    ys = lax.scan(lambda c, t: (c + t, v * t), a.sum(), jnp.arange(3.0))[1]
    return g, ys


save("grad_jit", jax.shard_map(through_calls, mesh=mesh1d, in_specs=(P("data"), P()),
                               out_specs=(P(), P()))(x, w))


# a psum inside the differentiated function: its transpose is pvary, so the result is the sum
# of the processes' gradients once (not once per process)
def psum_inner(a, v):
    return jax.grad(lambda v: lax.psum(jnp.sum(jnp.sin(a * v)), "data"))(v)


save("grad_psum", jax.shard_map(psum_inner, mesh=mesh1d, in_specs=(P("data"), P()),
                                out_specs=P())(x, w))
# check_vma=False keeps the per-process gradient (stacked here along 'data')
save("grad_unchecked", jax.shard_map(lambda a, v: inner(a, v)[None], mesh=mesh1d,
                                     in_specs=(P("data"), P()), out_specs=P("data"),
                                     check_vma=False)(x, w))
# grad of a function calling shard_map (check_vma=True): the whole batch's gradient
outer = jax.grad(lambda v: jax.shard_map(lambda a, v: lax.psum(jnp.sum(jnp.sin(a * v)), "data"),
                                         mesh=mesh1d, in_specs=(P("data"), P()),
                                         out_specs=P())(x, v))
save("grad_outer", (outer(w), jax.jit(outer)(w)))


# a cond on a predicate varying over 'data' whose branches return invariant values: typed
# invariant, yet each position holds its own branch's value; psum/pmean of an invariant value
# (x times the size, x: no MPI call)
def own_branch(a, v):
    out = lax.cond(a[0, 0] > 1, lambda v: v * 2, lambda v: v + 1, v)
    types.append(",".join(sorted(map(str, jax.typeof(out).mat.varying))))
    return out[None], lax.pmean(v * 3, "data"), lax.psum(v * 3, "data")


for name, m in (("own_branch_1d", mesh1d), ("own_branch_all", mesh_all)):
    f = jax.shard_map(own_branch, mesh=m, in_specs=(P("data"), P()),
                      out_specs=(P("data"), P(), P()))
    save(name, jax.jit(f)(x, w))


# --- JAX's errors, raised on every rank (then the collectives below still meet); under
# jit, where JAX 0.10 names the function (outside it: its wrapper, '_rem_singleton') ------------
def error(name, run, paragraphs=None):
    """(paragraphs: how many of the message's, where tracejit adds its own after JAX's)"""
    try:
        run()
        results[f"error/{name}"] = np.array("no error")
    except Exception as e:  # noqa: BLE001  (the text is compared with JAX's)
        text = "\n\n".join(str(e).split("\n\n")[:paragraphs])
        results[f"error/{name}"] = np.array(f"{type(e).__name__}: {text}")


def doubled(a):
    return a * 2


def gathered(a):
    return lax.all_gather(a, "data")


error("out_varying", lambda: jax.jit(jax.shard_map(doubled, mesh=mesh1d, in_specs=P("data"),
                                                   out_specs=P()))(x))
error("out_varying_all", lambda: jax.jit(jax.shard_map(doubled, mesh=mesh_all,
                                                       in_specs=P("data"), out_specs=P()))(x))
error("out_gathered", lambda: jax.jit(jax.shard_map(gathered, mesh=mesh2d,
                                                    in_specs=P("data"), out_specs=P()))(x))


def carry(a):
    return lax.scan(lambda c, _: (c + a.sum(), None), jnp.float32(0.0), length=2)[0]


error("scan_carry", lambda: jax.shard_map(carry, mesh=mesh1d, in_specs=P("data"),
                                          out_specs=P())(x))
# pbroadcast of a value invariant over the process axis (no implicit pvary before it). (The
# axis named by a tuple: JAX's pbroadcast checks a string name letter by letter, a NameError)
error("pbroadcast_invariant", lambda: jax.jit(jax.shard_map(
    lambda a: lax.pbroadcast(a, ("data",), 1), mesh=mesh1d, in_specs=P(), out_specs=P()))(x),
    paragraphs=1)
error("pbroadcast_invariant_all", lambda: jax.shard_map(
    lambda a: lax.pbroadcast(a, ("data",), 3), mesh=mesh_all, in_specs=P(), out_specs=P())(x),
    paragraphs=1)


# --- data-parallel training as JAX's docs write it: the loss averaged with pmean, grad inside
# shard_map, no psum of the gradient; the parameters of one process on the whole batch ---------
DATA = np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32)
TARGET = np.sin(DATA.sum(1, keepdims=True)).astype(np.float32)


def loss(params, a, y):
    h = jnp.tanh(a @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def step(params, a, y):
    g = jax.grad(lambda p: lax.pmean(loss(p, a, y), "data"))(params)
    return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)


rng = np.random.default_rng(1)
init = {"w1": rng.normal(size=(6, 8)).astype(np.float32) * 0.5, "b1": np.zeros(8, np.float32),
        "w2": rng.normal(size=(8, 1)).astype(np.float32) * 0.5, "b2": np.zeros(1, np.float32)}
train = jax.jit(jax.shard_map(step, mesh=mesh1d, in_specs=(P(), P("data"), P("data")),
                              out_specs=P()))
whole_batch = jax.jit(lambda p: jax.tree_util.tree_map(
    lambda q, d: q - 0.1 * d, p, jax.grad(loss)(p, DATA, TARGET)))
params, oracle = init, init
for _ in range(5):
    params, oracle = train(params, DATA, TARGET), whole_batch(oracle)
save("dp", params)
save("dp_whole_batch", oracle)

results["types"] = np.array(types)
if run.mode == "mpi":  # (one collective, the psum of the varying value; none for the invariant's)
    results["mpi/allreduces"] = np.array(str(jax.make_jaxpr(jax.shard_map(
        lambda a, v: own_branch(a, v) + (lax.psum(a, "data"),), mesh=mesh1d,
        in_specs=(P("data"), P()), out_specs=(P("data"), P(), P(), P())))(
        x, w)).count("mpi_allreduce"))
run.finish()
