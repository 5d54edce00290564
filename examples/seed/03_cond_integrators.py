from jax import lax


# 一个“非典型”示例：在物理模拟中根据系统能量选择积分器
def dynamics_step(state, dt, method_selector):
    """
    state: 系统状态 (位置, 动量)
    dt: 时间步长
    method_selector: 一个标量，>0 使用辛欧拉，<=0 使用蛙跳
    """
    # lax.cond 接收：谓词，真分支函数，假分支函数，操作数
    return lax.cond(
        method_selector > 0,
        symplectic_euler_step,  # 这两个函数都必须是可jit的
        leapfrog_step,
        state, dt  # 传递给分支函数的参数
    )


def symplectic_euler_step(state, dt):
    q, p = state
    # ... 实现辛欧拉更新 (the article leaves the bodies out; a harmonic oscillator here)
    new_p = p - dt * q
    new_q = q + dt * new_p
    return new_q, new_p


def leapfrog_step(state, dt):
    q, p = state
    # ... 实现蛙跳更新
    p_half = p - 0.5 * dt * q
    new_q = q + dt * p_half
    new_p = p_half - 0.5 * dt * new_q
    return new_q, new_p
# 编译时，两个分支的代码都会被编译进计算图。
