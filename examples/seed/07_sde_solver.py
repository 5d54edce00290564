import jax
import jax.numpy as jnp
from jax import random, lax
import matplotlib.pyplot as plt


# 定义SDE的漂移项和扩散项 (几何布朗运动)
def drift(x, theta):
    return theta[0] * x  # mu * x


def diffusion(x, theta):
    return theta[1] * x  # sigma * x


@jax.jit(static_argnames=('adaptive', ))
def solve_sde_euler_maruyama(key, x0, theta, dt, steps, adaptive=False):
    """
    使用Euler-Maruyama方法求解SDE。
    若adaptive=True，则使用一个简化的误差估计器来动态拒绝/接受步长。
    注意：为简化，此处的‘自适应’逻辑在编译时确定分支，并非真正的运行时自适应。
    """
    def step(carry, t):
        key, x, dt_current = carry
        key, subkey = random.split(key)
        dw = random.normal(subkey) * jnp.sqrt(dt_current)
        dx = drift(x, theta) * dt_current + diffusion(x, theta) * dw
        x_new = x + dx
        # 一个虚构的“误差估计”（仅用于演示控制流）
        if adaptive:
            # 在adaptive分支下，我们模拟一个检查：如果误差过大，则回退到更小的步长
            # 由于jit的静态性，这个‘if’实际上在编译时根据`adaptive`的值被确定。
            # 这里我们只是简单地将步长减半作为一个示例操作。
            dt_next = lax.cond(jnp.abs(dx/x) > 0.1,  # 假想的条件
                               lambda d: d * 0.5,  # 真分支：步长减半
                               lambda d: d,  # 假分支：保持步长
                               dt_current)
        else:
            dt_next = dt_current
        return (key, x_new, dt_next), x_new

    # 使用scan进行循环
    (_, final_x, _), trajectory = lax.scan(step, (key, x0, dt), xs=jnp.arange(steps))
    return jnp.concatenate([x0[jnp.newaxis], trajectory]), final_x


# 生成数据并运行
key = random.PRNGKey(42)
theta = jnp.array([0.05, 0.2])  # mu, sigma
x0 = jnp.array(1.0)
dt = 0.01
steps = 1000

# 编译并运行非自适应版本
traj_nonadaptive, final_nonadaptive = solve_sde_euler_maruyama(key, x0, theta, dt, steps,
                                                               adaptive=False)
print(f"非自适应版本最终值: {final_nonadaptive}")

# 编译并运行自适应版本（会触发一次新的编译）
key, subkey = random.split(key)
traj_adaptive, final_adaptive = solve_sde_euler_maruyama(subkey, x0, theta, dt, steps,
                                                         adaptive=True)
print(f"自适应版本最终值: {final_adaptive}")

# 可视化（可选）
plt.figure(figsize=(10, 5))
plt.plot(traj_nonadaptive, label='Non-adaptive', alpha=0.7)
plt.plot(traj_adaptive, label='Adaptive (Static Branch)', alpha=0.7, linestyle='--')
plt.xlabel('Time Step')
plt.ylabel('X(t)')
plt.title('JIT-compiled SDE Simulation with Static Adaptive Branching')
plt.legend()
plt.grid(True)
plt.show()
