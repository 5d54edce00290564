import jax
import jax.numpy as jnp


@jax.jit
def unstable_shape_func(x):
    # 假设x是一个向量，我们想保留大于0.5的元素
    # 错误！输出形状依赖于x的运行时值，编译时未知。
    return x[x > 0.5]  # 这将引发ConcretizationTypeError


# 正确做法：使用固定大小的输出或 mask 操作
@jax.jit
def stable_shape_func(x, threshold=0.5):
    mask = x > threshold
    # 使用掩码进行后续计算，输出形状与输入x一致
    return jnp.where(mask, x, 0.0)
