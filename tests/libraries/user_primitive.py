"""A user-defined primitive as JAX's "How JAX primitives work" defines multiply_add: impl and
abstract eval through jax.extend.core.Primitive, a JVP, a transpose and a batching rule in the
jax.interpreters tables, and a jit lowering from mlir.lower_fun (written for real JAX)."""
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jax.extend import core
from jax.interpreters import ad, batching, mlir

multiply_add_p = core.Primitive("multiply_add")


def multiply_add_prim(x, y, z):
    return multiply_add_p.bind(x, y, z)


def multiply_add_impl(x, y, z):
    return np.add(np.multiply(x, y), z)


def multiply_add_abstract_eval(xs, ys, zs):
    assert xs.shape == ys.shape == zs.shape
    return jax.core.ShapedArray(xs.shape, xs.dtype)


multiply_add_p.def_impl(multiply_add_impl)
multiply_add_p.def_abstract_eval(multiply_add_abstract_eval)
mlir.register_lowering(multiply_add_p,
                       mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))


def multiply_add_value_and_jvp(arg_values, arg_tangents):
    x, y, z = arg_values
    xt, yt, zt = arg_tangents
    primal_out = multiply_add_prim(x, y, z)

    def make_zero(tan):
        return jnp.zeros_like(x) if type(tan) is ad.Zero else tan

    output_tangent = multiply_add_prim(make_zero(xt), y,
                                       multiply_add_prim(x, make_zero(yt), make_zero(zt)))
    return primal_out, output_tangent


def multiply_add_transpose(ct, x, y, z):
    if not ad.is_undefined_primal(x):
        assert ad.is_undefined_primal(y)
        ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else \
            multiply_add_prim(x, ct, jnp.zeros_like(x))
        return None, ct_y, ct
    ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else \
        multiply_add_prim(ct, y, jnp.zeros_like(y))
    return ct_x, None, ct


def multiply_add_batch(vector_arg_values, batch_axes):
    if batch_axes[0] == batch_axes[1] == batch_axes[2]:
        return multiply_add_prim(*vector_arg_values), batch_axes[0]
    # mixed batch axes (an unbatched cotangent under vmap of grad): all batched first
    size = next(v.shape[d] for v, d in zip(vector_arg_values, batch_axes) if d is not None)
    moved = [batching.bdim_at_front(v, d, size) for v, d in zip(vector_arg_values, batch_axes)]
    return multiply_add_prim(*moved), 0


ad.primitive_jvps[multiply_add_p] = multiply_add_value_and_jvp
ad.primitive_transposes[multiply_add_p] = multiply_add_transpose
batching.primitive_batchers[multiply_add_p] = multiply_add_batch


def square_add_prim(a, b):
    return multiply_add_prim(a, a, b)


x = jnp.array([2.0, -1.0, 0.5], jnp.float32)
y = jnp.array([10.0, 3.0, -4.0], jnp.float32)
xs = jnp.arange(12.0, dtype=jnp.float32).reshape(4, 3)
out = {
    "eager": square_add_prim(x, y),
    "jit": jax.jit(square_add_prim)(x, y),
    "jvp": jnp.stack(jax.jvp(square_add_prim, (x, y), (jnp.ones(3), jnp.ones(3)))),
    "grad": jax.grad(lambda a, b: jnp.sum(square_add_prim(a, b)), argnums=(0, 1))(x, y),
    "jit_grad": jax.jit(jax.grad(lambda a, b: jnp.sum(square_add_prim(a, b) ** 2)))(x, y),
    "jvp_of_grad": jax.jvp(jax.grad(lambda a: jnp.sum(square_add_prim(a, y))), (x,),
                           (jnp.ones(3),))[1],
    "vmap": jax.vmap(square_add_prim)(xs, xs + 1.0),
    "jit_vmap": jax.jit(jax.vmap(square_add_prim, in_axes=(1, 1)))(xs, xs * 2.0),
    "vmap_grad": jax.vmap(jax.grad(lambda a, b: jnp.sum(square_add_prim(a, b))))(xs, xs),
}
flat = jax.tree_util.tree_flatten_with_path(out)[0]
np.savez(sys.argv[1], **{jax.tree_util.keystr(path): np.asarray(v) for path, v in flat})
