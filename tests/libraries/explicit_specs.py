"""How JAX writes the replicated spec of a result computed under jax.set_mesh over Explicit
axes from values nobody laid out: `P()` where every typing rule on the way kept the spec of the
operands (unary elementwise operations, transpose, reshape, reductions, dot_general, slices,
sort, control flow whose body keeps it), `P(None, None)` where one wrote an entry per dimension
(binary operations, broadcast_in_dim, iota, concatenate, gather, ...). Records, per operation
under jit (and a few eager ones), the number of entries in the result's spec (written for real
JAX)."""
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.special  # noqa: E402,F401
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import AxisType, Mesh  # noqa: E402

explicit = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Explicit,))
x = np.arange(8.0, dtype=np.float32).reshape(2, 4) / 4
out = {}

OPS = {
    "neg": lambda a: -a, "sin": jnp.sin, "exp": jnp.exp, "abs": jnp.abs, "sqrt": jnp.sqrt,
    "log1p": jnp.log1p, "tanh": jnp.tanh, "logistic": jax.nn.sigmoid, "floor": jnp.floor,
    "sign": jnp.sign, "isnan": jnp.isnan, "isinf": jnp.isinf, "isfinite": jnp.isfinite,
    "astype_int": lambda a: a.astype(jnp.int32), "astype_f16": lambda a: a.astype(jnp.float16),
    "square": jnp.square, "pow2": lambda a: a ** 2, "integer_pow3": lambda a: lax.integer_pow(a, 3),
    "reciprocal": jnp.reciprocal, "erf": jax.scipy.special.erf,
    "erfinv": jax.scipy.special.erfinv, "gammaln": jax.scipy.special.gammaln, "round": jnp.round,
    "ceil": jnp.ceil, "trunc": jnp.trunc, "tan": jnp.tan, "arcsin": jnp.arcsin, "sinh": jnp.sinh,
    "expm1": jnp.expm1, "rsqrt": lax.rsqrt, "cbrt": jnp.cbrt, "real": jnp.real, "conj": jnp.conj,
    "not_int": lambda a: ~a.astype(jnp.int32), "clz": lambda a: lax.clz(a.astype(jnp.int32)),
    "bitcast": lambda a: lax.bitcast_convert_type(a, jnp.int32),
    "reduce_precision": lambda a: lax.reduce_precision(a, 5, 10),
    "add_self": lambda a: a + a, "mul_const": lambda a: a * 2, "max_0": lambda a: jnp.maximum(a, 0),
    "relu": jax.nn.relu, "gelu": jax.nn.gelu, "where": lambda a: jnp.where(a > 1, a, 0.0),
    "select": lambda a: lax.select(a > 1, a, a), "clip": lambda a: jnp.clip(a, 0, 1),
    "atan2": lambda a: jnp.arctan2(a, a), "nextafter": lambda a: jnp.nextafter(a, 0.0),
    "logical_not": lambda a: ~(a > 1), "any1": lambda a: (a > 1).any(1),
    "transpose": lambda a: a.T, "transpose_3d": lambda a: a.reshape(2, 2, 2).transpose(2, 0, 1),
    "reshape_flat": lambda a: a.reshape(8), "reshape_4x2": lambda a: a.reshape(4, 2),
    "ravel": jnp.ravel, "expand_dims": lambda a: a[None], "squeeze": lambda a: a[None].squeeze(0),
    "sum1": lambda a: a.sum(1), "sum_keepdims": lambda a: a.sum(1, keepdims=True),
    "max1": lambda a: a.max(1), "prod0": lambda a: a.prod(0), "mean1": lambda a: a.mean(1),
    "argmax1": lambda a: a.argmax(1), "sum_int": lambda a: a.astype(jnp.int32).sum(1),
    "cumsum1": lambda a: jnp.cumsum(a, 1), "cumsum0": lambda a: jnp.cumsum(a, 0),
    "dot": lambda a: a @ a.T, "dot_vector": lambda a: a @ jnp.ones(4),
    "einsum": lambda a: jnp.einsum("ij,kj->ik", a, a), "row_dot": lambda a: a[0] @ a.T,
    "outer": lambda a: jnp.outer(a[0], a[1]), "slice": lambda a: a[:, 1:3],
    "index_row": lambda a: a[0], "index_column": lambda a: a[:, 1], "reverse": lambda a: a[:, ::-1],
    "flip": lambda a: jnp.flip(a, 1),
    "dynamic_slice": lambda a: lax.dynamic_slice(a, (0, 1), (2, 2)),
    "gather": lambda a: a[jnp.array([1, 0])], "concatenate": lambda a: jnp.concatenate([a, a]),
    "stack": lambda a: jnp.stack([a, a]), "pad": lambda a: jnp.pad(a, 1),
    "split": lambda a: jnp.split(a, 2, 1)[0], "roll": lambda a: jnp.roll(a, 1, 1),
    "sort": lambda a: jnp.sort(a, 1), "argsort": lambda a: jnp.argsort(a, 1),
    "top_k": lambda a: lax.top_k(a, 2)[0], "broadcast_to": lambda a: jnp.broadcast_to(a, (3, 2, 4)),
    "tile": lambda a: jnp.tile(a, 2), "copy": jnp.copy, "stop_gradient": lax.stop_gradient,
    "identity": lambda a: a,
    "sin_sin": lambda a: jnp.sin(jnp.sin(a)), "exp_plus_1": lambda a: jnp.exp(a) + 1,
    "softmax": jax.nn.softmax, "logsumexp": jax.scipy.special.logsumexp,
    "zeros_like": jnp.zeros_like, "full_like": lambda a: jnp.full_like(a, 3.0),
    "ones": lambda a: jnp.ones((2, 3)), "arange": lambda a: jnp.arange(5.0),
    "scatter_add": lambda a: a.at[0].add(1.0), "triu": jnp.triu,
    "inner_jit": jax.jit(jnp.sin), "checkpoint": jax.checkpoint(jnp.sin),
    "vmap_reverse": jax.vmap(lambda r: r[::-1]),
    "cond_sin_cos": lambda a: lax.cond(True, jnp.sin, jnp.cos, a),
    "cond_first_branch_binary": lambda a: lax.cond(True, jnp.sin, lambda v: v * 2, a),
    "switch_first_branch_unary": lambda a: lax.switch(1, [jnp.sin, lambda v: v * 2], a),
    "fori_sin": lambda a: lax.fori_loop(0, 3, lambda k, c: jnp.sin(c), a),
    "while_sin": lambda a: lax.while_loop(lambda c: c[0, 0] > 5, jnp.sin, a),
    "while_add": lambda a: lax.while_loop(lambda c: c[0, 0] < 5, lambda c: c + 1, a),
    "scan_ys_sin": lambda a: lax.scan(lambda c, r: (c, jnp.sin(r)), 0.0, a)[1],
    "scan_ys_times2": lambda a: lax.scan(lambda c, r: (c + r, r * 2), jnp.zeros(4), a)[1],
    "scan_carry_add": lambda a: lax.scan(lambda c, r: (c + 1, r), a, jnp.arange(3))[0],
    "grad": jax.grad(lambda a: jnp.sin(a).sum()),
    "two_outputs": lambda a: jnp.sin(a) + jnp.cos(a).sum(),
}
EAGER = {
    "eager_sin": lambda: jnp.sin(x), "eager_neg": lambda: jnp.negative(x),
    "eager_mul": lambda: jnp.multiply(x, 2), "eager_sum1": lambda: jnp.sum(x, 1),
    "eager_dot": lambda: jnp.dot(x, x.T), "eager_sin_of_asarray": lambda: jnp.sin(jnp.asarray(x)),
    "eager_sin_of_jit": lambda: jnp.sin(jax.jit(jnp.sin)(x)),
    "eager_vmap_sin": lambda: jax.vmap(jnp.sin)(x),
    "eager_transpose": lambda: jnp.transpose(x), "asarray": lambda: jnp.asarray(x),
    "jit_of_asarray": lambda: jax.jit(jnp.sin)(jnp.asarray(x)),
    "jit_numpy_and_asarray": lambda: jax.jit(lambda a, b: a @ b.T)(x, jnp.asarray(x)),
    "jit_closure": lambda: jax.jit(lambda: jnp.sin(x))(),
}
with jax.set_mesh(explicit):
    for name, f in OPS.items():
        r = jax.jit(f)(x)
        out[name] = np.array([len(r.sharding.spec), r.ndim])
    for name, f in EAGER.items():
        r = f()
        out[name] = np.array([len(r.sharding.spec), r.ndim])

np.savez(sys.argv[1], **out)
