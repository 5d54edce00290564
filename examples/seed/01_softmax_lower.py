import jax
import jax.numpy as jnp
import numpy as np

# 设置随机种子以确保复现性，对应您提供的种子 1765591200071
key = jax.random.PRNGKey(1765591200071 % 2**32)  # JAX的key是32位整数


def naive_softmax(x):
    """一个朴素的、数值不稳定的Softmax实现，用于演示追踪。"""
    exp_x = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return exp_x / jnp.sum(exp_x, axis=-1, keepdims=True)


# 首次调用：触发追踪和编译
x_abstract = jax.ShapeDtypeStruct((3, 5), dtype=jnp.float32)
jitted_softmax_lower = jax.jit(naive_softmax).lower(x_abstract)
print("编译后的中间表示（IR）：")
print(jitted_softmax_lower.compile().as_text()[:500])  # 打印前500字符
