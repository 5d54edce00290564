import jax.numpy as jnp
from jax import lax


# 使用 lax.scan 实现一个定制的迭代求解器（例如求解隐式方程）
def fixed_point_iteration(initial_guess, coeff, num_iters):
    """使用扫描求解 x = cos(coeff * x) 的定点迭代"""
    def body_fun(carry, _):
        x = carry
        next_x = jnp.cos(coeff * x)
        return next_x, None  # 携带状态，输出（None表示不保留输出）

    final_x, _ = lax.scan(body_fun, initial_guess, xs=None, length=num_iters)
    return final_x  # 编译为一个高效的循环内核
