import jax
import jax.numpy as jnp


@jax.jit(static_argnums=(1, 2))  # 指明第1和第2个参数（func_name, n）是静态的
def apply_activation(x, func_name, n=2):
    """应用一个可选的、可能带参数的激活函数。"""
    if func_name == "relu":
        return jax.nn.relu(x)
    elif func_name == "leaky_relu":
        return jax.nn.leaky_relu(x, negative_slope=0.01)
    elif func_name == "polynomial":
        # n次多项式激活，n是静态的，所以循环在编译时展开
        result = x
        for _ in range(n - 1):
            result = result * x
        return result
    else:
        raise ValueError(f"Unknown activation: {func_name}")


# 第一次调用：为 func_name="polynomial", n=3 编译一个版本
out1 = apply_activation(jnp.array([-2., 0., 2.]), "polynomial", 3)
# 第二次调用：为 func_name="leaky_relu" 编译另一个版本
out2 = apply_activation(jnp.array([-2., 0., 2.]), "leaky_relu")
# 第三次调用：使用已编译的 "polynomial" n=3 版本，无需重新编译
out3 = apply_activation(jnp.array([1., 2., 3.]), "polynomial", 3)
