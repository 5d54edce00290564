"""Host callbacks (jax.debug, pure_callback, io_callback): each program runs with real JAX and
with tracejit, on the native backend (generated code calls back into Python) and on the
reference interpreter, and what it prints and returns must be the same."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import experimental as texp
from tracejit.backend.llvm import host_callback
from tracejit.compiler.passes import optimize

jax = pytest.importorskip("jax")
import jax.experimental as jexp  # noqa: E402
import jax.numpy as jnp  # noqa: E402

JAX = (jax, jnp, jexp)
OURS = (tracejit, tnp, texp)
BACKENDS = ["native", "interpret"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(prog, lib, capsys) -> str:
    """What `prog` prints (its stdout, then its result), with the callbacks all run."""
    capsys.readouterr()
    try:
        out = prog(*lib)
        lib[0].effects_barrier()
        if out is not None:
            print("=>", [np.asarray(o).tolist() for o in lib[0].tree_util.tree_leaves(out)])
    except Exception as e:  # the error's class and last line (JAX's names the callback's)
        print("raised", type(e).__name__, str(e).strip().splitlines()[-1])
    return capsys.readouterr().out


def assert_same_output(prog, backend, capsys, key=None):
    tracejit.config.update("tracejit_backend", backend)
    theirs, ours = run(prog, JAX, capsys), run(prog, OURS, capsys)
    if key is not None:
        theirs, ours = key(theirs), key(ours)
    assert ours == theirs


# --- debug.print / debug.callback under the transformations ----------------------------------

PRINTS = {}


def program(f):
    PRINTS[f.__name__] = f
    return f


@program
def jit_print(jax, jnp, exp):
    @jax.jit
    def f(x):
        jax.debug.print("x={x} doubled={}", x * 2, x=x)
        jax.debug.print("no placeholders:", x, 3)
        jax.debug.print("{:.3f} {y}", x[1], y=x.astype(jnp.int32))
        return x + 1
    return f(jnp.arange(3.))


@program
def eager_print(jax, jnp, exp):
    jax.debug.print("eager {} {}", jnp.arange(2), 1.5)


@program
def vmap_print(jax, jnp, exp):
    def f(x, y):
        jax.debug.print("x={} y={}", x, y)
        return x * y
    return jax.vmap(f, in_axes=(0, None))(jnp.arange(3.), 2.)


@program
def jit_of_vmap_print(jax, jnp, exp):
    def f(x):
        jax.debug.print("row {}", x)
        return x.sum()
    return jax.jit(jax.vmap(f))(jnp.arange(6.).reshape(3, 2))


@program
def vmap_in_axes_1(jax, jnp, exp):
    return jax.vmap(lambda x: jax.debug.print("col {}", x), in_axes=1)(
        jnp.arange(6).reshape(2, 3))


@program
def grad_prints_primals(jax, jnp, exp):
    def f(x):
        jax.debug.print("x={}", x)
        y = x * x + 1.0
        jax.debug.print("y={}", y)
        return y * x
    return jax.grad(f)(1.5), jax.jit(jax.grad(f))(0.5), jax.value_and_grad(f)(2.0)


@program
def jvp_print(jax, jnp, exp):
    def f(x):
        jax.debug.print("x={}", x)
        return x * x
    return jax.jvp(f, (2.,), (1.,))


@program
def scan_print(jax, jnp, exp):
    def body(c, x):
        jax.debug.print("c={} x={}", c, x)
        return c + x, c * x
    return jax.jit(lambda xs: jax.lax.scan(body, 0., xs))(jnp.arange(4.))


@program
def grad_of_scan_print(jax, jnp, exp):
    def f(x):
        def body(c, _):
            jax.debug.print("c={}", c)
            return c * c * 0.5 + 0.25, None
        return jax.lax.scan(body, x, None, length=3)[0]
    return jax.grad(f)(1.), jax.jit(jax.grad(f))(0.5)


@program
def while_print(jax, jnp, exp):
    def body(c):
        i, x = c
        jax.debug.print("i={i} x={x}", i=i, x=x)
        return i + 1, x * 2
    return jax.jit(lambda x: jax.lax.while_loop(lambda c: c[0] < 3, body, (0, x)))(1.)


@program
def fori_print(jax, jnp, exp):
    def f(x):
        def body(i, c):
            jax.debug.print("{} {}", i, c)
            return c + i
        return jax.lax.fori_loop(0, 3, body, x)
    return jax.jit(f)(1), f(1)


@program
def print_only_in_loop(jax, jnp, exp):
    # the loop's result is unused: the loop stays for its prints
    def f(x):
        jax.lax.fori_loop(0, 2, lambda i, c: (jax.debug.print("it {}", c), c + 1)[1], x)
        return x
    return jax.jit(f)(5)


@program
def cond_prints_taken_branch(jax, jnp, exp):
    def f(p, x):
        def t(x):
            jax.debug.print("true {}", x)
            return x + 1
        def e(x):
            jax.debug.print("false {}", x)
            return x - 1
        return jax.lax.cond(p, t, e, x)
    g = jax.jit(f)
    return g(True, 1.), g(False, 2.), f(True, 3.)


@program
def vmap_cond_batched_predicate(jax, jnp, exp):
    def f(x):
        return jax.lax.cond(x > 1, lambda x: (jax.debug.print("t {}", x), x)[1],
                            lambda x: (jax.debug.print("f {}", x), -x)[1], x)
    return jax.vmap(f)(jnp.arange(3.))


@program
def nested_jit_print(jax, jnp, exp):
    @jax.jit
    def inner(x):
        jax.debug.print("inner {}", x)
        return x * 2
    @jax.jit
    def outer(x):
        jax.debug.print("outer {}", x)
        return inner(x) + inner(x + 1)
    return outer(1.)


@program
def prints_are_not_merged_or_dropped(jax, jnp, exp):
    @jax.jit
    def f(x):
        y = x * 3
        jax.debug.print("y={}", y, ordered=True)
        jax.debug.print("y={}", y, ordered=True)
        jax.debug.print("const {}", 2.0, ordered=True)  # (unordered, XLA runs it first)
        return x
    return f(2.)


@program
def debug_callback_static_args(jax, jnp, exp):
    log = []
    @jax.jit
    def f(x):
        jax.debug.callback(lambda a, b, c=None: log.append((np.asarray(a).tolist(), b, c)), x,
                           "s", c=None)
        jax.debug.callback(ordered=True)(lambda a: log.append(np.asarray(a).tolist()), x * 2)
        return x
    f(jnp.ones(2))
    f(jnp.zeros(2))
    print(log)


@program
def print_formats_and_options(jax, jnp, exp):
    jax.jit(lambda x: jax.debug.print(ordered=True)("v {x:.2f}", x=x))(1.25)
    with np.printoptions(precision=2):
        f = jax.jit(lambda x: jax.debug.print("{}", x))
        f(jnp.array([1.23456, 2.5]))
    f(jnp.array([1.23456, 2.5]))  # the options of the trace
    jax.jit(lambda x, y, z: jax.debug.print("{} {} {} {}", "str", x, y, z))(
        jnp.arange(3), jnp.array([True, False]), jnp.float16(1.5))


@program
def print_argument_errors(jax, jnp, exp):
    for args, kwargs in (((1, 2), {}), ((), {"x": 1})):
        try:
            jax.debug.print("{}" if args else "x", *args, **kwargs)
        except ValueError as e:
            print(e)
    try:
        jax.debug.callback(3)
    except TypeError as e:
        print(e)


# custom rules, remat, jacobians, switch, other dtypes, donation
@program
def custom_vjp_bwd_print(jax, jnp, exp):
    @jax.custom_vjp
    def f(x):
        return x * 2

    def fwd(x):
        jax.debug.print("fwd {}", x)
        return x * 2, x

    def bwd(r, g):
        jax.debug.print("bwd {} {}", r, g)
        return (g * 2,)
    f.defvjp(fwd, bwd)
    return jax.grad(f)(3.), jax.jit(jax.grad(f))(4.)


@program
def custom_jvp_print(jax, jnp, exp):
    @jax.custom_jvp
    def f(x):
        jax.debug.print("primal {}", x)
        return x * 2

    @f.defjvp
    def f_jvp(p, t):
        jax.debug.print("jvp {} {}", p[0], t[0])
        return f(p[0]), t[0] * 2
    return jax.grad(f)(3.), f(1.), jax.jvp(f, (1.,), (2.,))


@program
def checkpoint_print(jax, jnp, exp):
    @jax.checkpoint
    def g(x):
        jax.debug.print("ck {}", x)
        return x * x
    return jax.grad(lambda x: g(x) * 2)(3.)


@program
def jacobians_print(jax, jnp, exp):
    def f(x):
        jax.debug.print("x {}", x)
        return x * x
    return (jax.vmap(jax.grad(f))(jnp.arange(2.)), jax.jacfwd(f)(jnp.arange(2.)),
            jax.jacrev(f)(jnp.arange(2.)))


@program
def switch_print(jax, jnp, exp):
    def branch(i):
        return lambda x: (jax.debug.print("b{}", i, ordered=True), x + i)[1]
    f = jax.jit(lambda i, x: jax.lax.switch(i, [branch(i) for i in range(3)], x))
    return f(0, 1.), f(2, 1.), f(5, 1.)


@program
def jvp_of_while_print(jax, jnp, exp):
    def f(x):
        return jax.lax.while_loop(lambda c: c < 10,
                                  lambda c: (jax.debug.print("c {}", c), c * 2)[1], x)
    return jax.jvp(f, (1.,), (1.,))


@program
def print_other_dtypes(jax, jnp, exp):
    jax.jit(lambda a, b, c: jax.debug.print("{} {} {}", a, b, c))(
        jnp.ones(2, jnp.bfloat16), jnp.array([1 + 2j], jnp.complex64), jnp.zeros((0, 3)))
    empty = jax.jit(lambda x: jax.pure_callback(lambda v: np.asarray(v) * 2, x, x))(
        jnp.zeros((0, 2)))
    flags = jax.jit(lambda x: jax.pure_callback(
        lambda v: np.asarray(v) > 1, jax.ShapeDtypeStruct((3,), jnp.bool_), x))(jnp.arange(3))
    return empty, flags


@program
def callback_on_a_donated_argument(jax, jnp, exp):
    def f(x):
        y = jax.pure_callback(lambda v: np.asarray(v) + 1, x, x)
        jax.debug.print("x {} y {}", x, y, ordered=True)
        return y * x
    return jax.jit(f, donate_argnums=0)(jnp.arange(3.))


@program
def control_flow_kept_only_for_its_prints(jax, jnp, exp):
    # no result of the cond, scan or while is used: each stays (without outputs) for its prints
    def f(p, x, xs):
        jax.lax.cond(p, lambda x: (jax.debug.print("t {}", x), x)[1],
                     lambda x: (jax.debug.print("f {}", x), -x)[1], x)
        jax.lax.scan(lambda c, x: (jax.debug.print("x {}", x, ordered=True), (c, x * 2))[1],
                     0., xs)
        jax.lax.while_loop(lambda c: c[0] < 2, lambda c: (
            jax.debug.print("c {}", c[1], ordered=True), (c[0] + 1, c[1] * 3))[1], (0, x))
        jax.lax.scan(lambda c, _: (jax.debug.print("it", ordered=True), (c, None))[1], x, None,
                     length=2)
        return x
    g = jax.jit(f)
    return g(True, 1., jnp.arange(3.)), g(False, 2., jnp.arange(2.))


@program
def while_cond_print(jax, jnp, exp):
    def cond(c):
        jax.debug.print("cond {}", c, ordered=True)
        return c < 3
    return jax.jit(lambda x: jax.lax.while_loop(cond, lambda c: c + 1, x))(0)


@program
def lax_map_io_callback(jax, jnp, exp):
    log = []

    def cb(v):
        log.append(float(v))
        return v * 2
    sd = jax.ShapeDtypeStruct((), jnp.float32)
    r = jax.jit(lambda xs: jax.lax.map(lambda x: exp.io_callback(cb, sd, x, ordered=True), xs))(
        jnp.arange(3.))
    print(log)
    return r


@program
def vmap_cond_unbatched_predicate(jax, jnp, exp):
    def f(p, x):
        return jax.lax.cond(p, lambda x: (jax.debug.print("t {}", x), x)[1],
                            lambda x: (jax.debug.print("f {}", x), -x)[1], x)
    return jax.vmap(f, in_axes=(None, 0))(True, jnp.arange(2.))


@program
def loop_invariant_print_runs_every_iteration(jax, jnp, exp):
    def f(x, n):
        def body(i, c):
            jax.debug.print("inv {}", x * 2, ordered=True)
            return c + x
        return jax.lax.fori_loop(0, n, body, 0.)
    return jax.jit(f)(1.5, 3)


@program
def scan_reverse_print(jax, jnp, exp):
    def body(c, x):
        jax.debug.print("x {}", x)
        return c + x, None
    return jax.lax.scan(body, 0., jnp.arange(3.), reverse=True)[0]


@program
def grad_of_cond_print(jax, jnp, exp):
    def f(x):
        return jax.lax.cond(x > 0, lambda x: (jax.debug.print("pos {}", x), x * x)[1],
                            lambda x: (jax.debug.print("neg {}", x), -x)[1], x)
    return jax.grad(f)(2.), jax.jit(jax.grad(f))(-1.)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PRINTS))
def test_prints_as_jax(name, backend, capsys):
    assert_same_output(PRINTS[name], backend, capsys)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_scan_prints_each_element_each_iteration(backend, capsys):
    """Unordered prints of one iteration may come in any order (XLA schedules JAX's in reverse):
    the same lines, iteration by iteration."""
    def prog(jax, jnp, exp):
        def f(x):
            def body(c, _):
                jax.debug.print("c={}", c)
                return c * 2 + 1, None
            return jax.lax.scan(body, x, None, length=3)[0]
        return jax.vmap(f)(jnp.arange(2.))

    def per_iteration(text):
        lines = text.splitlines()
        return [sorted(lines[i:i + 2]) for i in range(0, 6, 2)] + lines[6:]
    assert_same_output(prog, backend, capsys, key=per_iteration)


# --- pure_callback -------------------------------------------------------------------------

def pure_vmap_methods(jax, jnp, exp):
    def cb(x, y):
        print("called with", np.shape(x), np.shape(y), isinstance(x, jax.Array))
        return (np.asarray(x) + np.asarray(y)).astype(np.float32)
    outs = []
    for vm in ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
               "legacy_vectorized", None]:
        def fun(x, y):
            out = jax.ShapeDtypeStruct(jnp.broadcast_shapes(jnp.shape(x), jnp.shape(y)),
                                       jnp.result_type(x, y))
            return jax.pure_callback(cb, out, x, y, vmap_method=vm)
        print(vm)
        try:
            outs.append(jax.vmap(fun, in_axes=(0, None))(jnp.arange(4.), jnp.float32(1.)))
            outs.append(jax.jit(jax.vmap(fun, in_axes=(None, 0)))(jnp.float32(1.), jnp.arange(3.)))
            outs.append(jax.vmap(jax.vmap(fun))(jnp.ones((2, 3)), jnp.ones((2, 3))))
        except NotImplementedError as e:
            print(e)
    return outs


def pure_pytrees_and_dtypes(jax, jnp, exp):
    def cb(d, scale):
        return {"a": d["x"] * scale, "b": (np.asarray(d["x"]) * 2).astype(np.int32),
                "c": np.float64(1.5)}  # float64 is canonicalized to the float32 asked for
    def f(x):
        sd = {"a": jax.ShapeDtypeStruct((2,), jnp.float32),
              "b": jax.ShapeDtypeStruct((2,), jnp.int32),
              "c": jax.ShapeDtypeStruct((), jnp.float32)}
        r = jax.pure_callback(cb, sd, {"x": x}, scale=3.0)
        return r["a"] + 1, r["b"], r["c"]
    return jax.jit(f)(jnp.arange(2.)), f(jnp.arange(2.))


def pure_under_scan_and_cond(jax, jnp, exp):
    def f(xs):
        def body(c, x):
            y = jax.pure_callback(lambda a, b: np.float32(a * 10 + b),
                                  jax.ShapeDtypeStruct((), jnp.float32), c, x)
            return y, jax.lax.cond(x > 1, lambda v: jax.pure_callback(
                lambda a: np.float32(a + 100), jax.ShapeDtypeStruct((), jnp.float32), v),
                lambda v: v, y)
        return jax.lax.scan(body, 0., xs)
    return jax.jit(f)(jnp.arange(4.))


def pure_grad_error(jax, jnp, exp):
    return jax.grad(lambda x: jax.pure_callback(np.sin, x, x))(jnp.float32(1.))


def pure_custom_jvp(jax, jnp, exp):
    @jax.custom_jvp
    def f(x):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * t
    return (jax.grad(f)(jnp.float32(1.)), jax.jit(jax.grad(f))(jnp.float32(0.5)),
            jax.vmap(jax.grad(f))(jnp.arange(3.)))


def pure_unused_is_dropped(jax, jnp, exp):  # (native: the interpreter runs every equation)
    calls = []
    def cb(x):
        calls.append(1)
        return x
    @jax.jit
    def f(x):
        jax.pure_callback(cb, jax.ShapeDtypeStruct((), jnp.float32), x)
        return x + 1
    f(1.)
    print(len(calls))


def pure_bad_vmap_method(jax, jnp, exp):
    jax.pure_callback(np.sin, jax.ShapeDtypeStruct((), jnp.float32), 1., vmap_method="loop")


def pure_64_bit_result(jax, jnp, exp):
    # (a NumPy array: tracejit's ShapeDtypeStruct canonicalizes its dtype, JAX's does not)
    jax.pure_callback(np.sin, np.zeros((), np.float64), 1.)


def wrong_shape(jax, jnp, exp):
    return jax.jit(lambda x: jax.pure_callback(
        lambda x: np.zeros(3, np.float32), jax.ShapeDtypeStruct((2,), jnp.float32), x))(
        jnp.ones(2))


def wrong_dtype(jax, jnp, exp):
    return jax.jit(lambda x: jax.pure_callback(
        lambda x: np.zeros(2, np.int32), jax.ShapeDtypeStruct((2,), jnp.float32), x))(
        jnp.ones(2))


def wrong_count(jax, jnp, exp):
    return jax.jit(lambda x: jax.pure_callback(
        lambda x: (x, x), jax.ShapeDtypeStruct((2,), jnp.float32), x))(jnp.ones(2))


# --- io_callback ---------------------------------------------------------------------------

def io_ordered(jax, jnp, exp):
    log = []
    def cb(tag, x):
        log.append((tag, float(x)))
        return np.float32(x + len(log))
    sd = jax.ShapeDtypeStruct((), jnp.float32)
    @jax.jit
    def f(x):
        a = exp.io_callback(lambda x: cb("a", x), sd, x, ordered=True)
        b = exp.io_callback(lambda x: cb("b", x), sd, a, ordered=True)
        exp.io_callback(lambda x: cb("unused", x), sd, x, ordered=True)
        exp.io_callback(lambda x: cb("unused", x), sd, x, ordered=True)
        return a + b
    r = f(1.), f(2.)
    print(log)
    return r


def io_vmap_scan_and_errors(jax, jnp, exp):
    sd = jax.ShapeDtypeStruct((), jnp.float32)
    print(jax.vmap(lambda x: exp.io_callback(lambda v: (print("io", v), v * 2)[1], sd, x))(
        jnp.arange(3.)))
    log = []
    def f(xs):
        def body(c, x):
            exp.io_callback(lambda v: log.append(float(v)), None, x, ordered=True)
            return c, None
        return jax.lax.scan(body, 0., xs)[0]
    jax.jit(f)(jnp.arange(3.))
    print(log)
    for bad in (lambda: jax.vmap(lambda x: exp.io_callback(lambda v: v, sd, x, ordered=True))(
                    jnp.arange(3.)),
                lambda: jax.grad(lambda x: exp.io_callback(np.sin, sd, x))(1.)):
        try:
            bad()
        except ValueError as e:
            print(e)


def ordered_effects_under_vmap(jax, jnp, exp):
    jax.jit(jax.vmap(lambda x: jax.debug.print("o {}", x, ordered=True)))(jnp.arange(3.))
    jax.vmap(lambda x: jax.debug.callback(lambda v: print("cb", v), x, ordered=True))(
        jnp.arange(2.))


def pure_kwargs_and_in_axes(jax, jnp, exp):
    def cb(a, *, b):
        return a["u"] * b

    def cb2(x):
        print("shape", np.shape(x))
        return np.asarray(x) * 2
    f = jax.jit(lambda x: jax.pure_callback(cb, jax.ShapeDtypeStruct((2,), jnp.float32),
                                            {"u": x}, b=x))
    g = jax.vmap(lambda x: jax.pure_callback(cb2, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                             vmap_method="expand_dims"), in_axes=1)
    return f(jnp.arange(2.)), g(jnp.arange(6.).reshape(2, 3))


def eager_io_and_pure(jax, jnp, exp):
    sd = jax.ShapeDtypeStruct((2,), jnp.float32)
    print(exp.io_callback(lambda v: np.asarray(v) + 1, sd, jnp.ones(2)))
    return jax.pure_callback(lambda v: np.zeros(3, np.float32), sd, jnp.ones(2))


def docs_bessel_with_custom_jvp(jax, jnp, exp):
    """The external-callbacks guide's scipy.special.jv, differentiable through custom_jvp."""
    import scipy.special

    def jv(v, z):
        v, z = jnp.asarray(v), jnp.asarray(z)
        sd = jax.ShapeDtypeStruct(shape=jnp.broadcast_shapes(v.shape, z.shape), dtype=z.dtype)
        return jax.pure_callback(lambda v, z: scipy.special.jv(v, z).astype(z.dtype), sd, v, z,
                                 vmap_method="broadcast_all")
    jv = jax.custom_jvp(jv, nondiff_argnums=(0,))

    @jv.defjvp
    def _jv_jvp(v, primals, tangents):
        (z,), (z_dot,) = primals, tangents
        return jv(v, z), z_dot * 0.5 * (jv(v - 1, z) - jv(v + 1, z))
    z = jnp.arange(5.0)
    return (jax.jit(jv)(3, z), jax.grad(jv, argnums=1)(3, 2.0),
            jax.vmap(jax.grad(jv, argnums=1), in_axes=(None, 0))(3, z),
            jax.hessian(jv, argnums=1)(3, 2.0))


def docs_host_random(jax, jnp, exp):
    """The guide's io_callback example: host-side NumPy random numbers, under jit and vmap."""
    rng = np.random.default_rng(0)

    @jax.jit
    def numpy_random_like(x):
        return exp.io_callback(lambda x: rng.uniform(size=x.shape).astype(x.dtype), x, x)
    x = jnp.zeros(5)
    return numpy_random_like(x), jax.vmap(numpy_random_like)(x)


# --- exceptions ----------------------------------------------------------------------------

def raise_in_jit(jax, jnp, exp):
    def boom(x):
        raise KeyError("boom")
    return jax.jit(lambda x: (jax.debug.callback(boom, x), x + 1)[1])(1.)


def raise_eagerly(jax, jnp, exp):
    def boom(x):
        raise KeyError("boom")
    jax.debug.callback(boom, 1.)


CALLBACKS = [pure_vmap_methods, pure_pytrees_and_dtypes, pure_under_scan_and_cond, pure_grad_error,
             pure_custom_jvp, pure_bad_vmap_method, pure_64_bit_result, wrong_shape, wrong_dtype,
             wrong_count, io_ordered, io_vmap_scan_and_errors, raise_in_jit, raise_eagerly,
             ordered_effects_under_vmap, pure_kwargs_and_in_axes, eager_io_and_pure,
             docs_bessel_with_custom_jvp, docs_host_random]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("prog", CALLBACKS, ids=lambda f: f.__name__)
def test_callbacks_as_jax(prog, backend, capsys):
    assert_same_output(prog, backend, capsys)


def test_unused_pure_callback_is_dropped_as_jax(capsys):
    assert_same_output(pure_unused_is_dropped, "native", capsys)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exception_names_the_callbacks_error(backend):
    tracejit.config.update("tracejit_backend", backend)

    def boom(x):
        raise KeyError("boom")
    f = tracejit.jit(lambda x: (tracejit.debug.callback(boom, x), x + 1)[1])
    with pytest.raises(tracejit.errors.JaxRuntimeError,
                       match="CpuCallback error calling callback") as info:
        f(1.)
    assert isinstance(info.value.__cause__, KeyError)
    assert "KeyError: 'boom'" in str(info.value)
    # the failed call left nothing behind: the next call runs normally
    f2 = tracejit.jit(lambda x: tracejit.pure_callback(np.negative, x, x))
    assert float(f2(np.float32(2.))) == -2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_native_code_stops_at_the_failed_callback(backend):
    """The program returns at once: no later callback runs, and a loop whose condition reads a
    failed callback's (unwritten) result does not run on."""
    tracejit.config.update("tracejit_backend", backend)
    calls = []

    def step(i):
        calls.append(int(i))
        if i == 2:
            raise RuntimeError("stop")
        return np.int32(i + 1)

    def f(i):
        sd = tracejit.ShapeDtypeStruct((), np.int32)
        out = tracejit.lax.while_loop(
            lambda i: i < 1000, lambda i: texp.io_callback(step, sd, i, ordered=True), i)
        tracejit.debug.callback(lambda v: calls.append("after"), out)
        return out
    with pytest.raises(tracejit.errors.JaxRuntimeError, match="RuntimeError: stop"):
        tracejit.jit(f)(np.int32(0))
    assert calls == [0, 1, 2]


# --- native specifics: the callback table, the caches -----------------------------------------

def test_no_table_entries_leak_when_a_jitted_function_is_cleared():
    tracejit.config.update("tracejit_backend", "native")
    tracejit.clear_caches()  # (what earlier tests left; clear_caches below would drop it)
    gc.collect()
    before = len(host_callback.TABLE)

    def f(x):
        tracejit.debug.print("{}", x)
        return tracejit.pure_callback(np.sin, x, x)
    g = tracejit.jit(f)
    g(np.float32(1.))
    g(np.ones(3, np.float32))
    assert len(host_callback.TABLE) == before + 4
    g.clear_cache()
    gc.collect()
    assert len(host_callback.TABLE) == before
    h = tracejit.jit(f)
    h(np.float32(1.))
    del h
    tracejit.clear_caches()
    gc.collect()
    assert len(host_callback.TABLE) == before


def test_same_program_other_callbacks_share_code_but_not_ids(capsys):
    """Two functions differing only in their callbacks compile to one IR (the ids are run-time
    data), and each calls its own."""
    tracejit.config.update("tracejit_backend", "native")
    fa = tracejit.jit(lambda x: tracejit.debug.print("a {}", x))
    fb = tracejit.jit(lambda x: tracejit.debug.print("b {}", x))
    fa(1.)
    fb(2.)
    fa(3.)
    assert capsys.readouterr().out == "a 1.0\nb 2.0\na 3.0\n"
    ir_a = fa.lower(1.).compile().as_text("llvm")
    ir_b = fb.lower(1.).compile().as_text("llvm")
    assert ir_a == ir_b and "tracejit_host_callback" in ir_a


def test_disk_cache_replays_code_with_this_process_callbacks(tmp_path):
    """A second process loads the program's object code from the on-disk cache and it calls
    that process's callback (no stale id or address is baked into the cached code)."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import tracejit
        from tracejit.runtime import disk_cache
        tag = sys.argv[1]
        f = tracejit.jit(lambda x: tracejit.pure_callback(
            lambda v: np.asarray(v) * float(tag), x, x) + 1)
        tracejit.jit(lambda x: tracejit.debug.print(tag + " {}", x))(np.float32(2))
        print(float(f(np.float32(2))), dict(disk_cache.stats))
    """))
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    outs = [subprocess.run([sys.executable, str(script), tag], env=env, capture_output=True,
                           text=True, check=True).stdout for tag in ("3", "5")]
    assert outs[0].startswith("3 2.0\n7.0 ") and "'misses': 2" in outs[0]
    assert outs[1].startswith("5 2.0\n11.0 ") and "'hits': 2" in outs[1]


def test_effectful_equations_survive_the_passes():
    """DCE, CSE, folding and LICM keep every print: a print of a loop-invariant value stays in
    the loop, two identical prints stay two, a loop computing nothing used stays."""
    def f(x):
        def body(i, c):
            tracejit.debug.print("{}", x)
            tracejit.debug.print("{}", x)
            return c + 1
        tracejit.lax.fori_loop(0, 3, body, 0)
        tracejit.debug.print("{}", 2.0)
        return x
    closed = tracejit.make_jaxpr(f)(1.)
    jaxpr, _ = optimize(closed.jaxpr, closed.consts)

    def count(j):
        n = 0
        for eqn in j.eqns:
            n += eqn.primitive.name == "debug_print"
            for p in eqn.params.values():
                for sub in (p if isinstance(p, tuple) else (p,)):
                    if isinstance(sub, tracejit.core.jaxpr.ClosedJaxpr):
                        n += count(sub.jaxpr)
        return n
    assert count(jaxpr) == 3
    assert [e.primitive.name for e in jaxpr.eqns][-1] == "debug_print"


# --- host_call, breakpoint, sharding pictures ---------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_host_call_runs_a_function_on_the_host(backend):
    """lax.host_call: one pure_callback equation running `fn` (a primitive's impl rule) on
    concrete values inside jit, and per element under vmap."""
    tracejit.config.update("tracejit_backend", backend)
    avals = [tracejit.ShapedArray((3,), np.float32), tracejit.ShapedArray((), np.int32)]

    def impl(x):
        return np.cumsum(x), np.int32(np.argmax(x))
    f = tracejit.jit(lambda x: tracejit.lax.host_call(impl, avals, x * 2))
    x = np.array([1., 5., 2.], np.float32)
    got = f(x)
    np.testing.assert_array_equal(got[0], np.cumsum(x * 2))
    assert int(got[1]) == 1
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::-1].copy()
    batched = tracejit.vmap(lambda x: tracejit.lax.host_call(impl, avals, x))(xs)
    np.testing.assert_array_equal(batched[0], np.cumsum(xs, axis=1))
    np.testing.assert_array_equal(batched[1], [0, 0])
    assert [e.primitive.name for e in tracejit.make_jaxpr(
        lambda x: tracejit.lax.host_call(impl, avals, x))(x).eqns] == ["pure_callback"]


BREAKPOINT = """
import sys
if sys.argv[1] == "jax":
    import jax, jax.numpy as jnp
else:
    import tracejit as jax, tracejit.numpy as jnp

@jax.jit
def f(x):
    y = x * 2
    label = "here"
    jax.debug.breakpoint()
    return y + 1

def outer(x):
    return jax.vmap(f)(x)

print(f(jnp.arange(3.)))
print(outer(jnp.arange(2.)))
"""


def test_breakpoint_is_jaxs_jdb_on_concrete_values(tmp_path):
    script = tmp_path / "bp.py"
    script.write_text(BREAKPOINT)
    commands = "p y\np label\np y.sum()\npp y.shape\nw\nl\nu\nd\nc\np y\nc\np y\nc\n"

    def session(lib):
        env = dict(os.environ, PYTHONPATH=ROOT)
        done = subprocess.run([sys.executable, str(script), lib], input=commands, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout
    ours = session("tracejit")
    assert ours == session("jax")
    assert "Array([0., 2., 4.], dtype=float32)" in ours and "'here'" in ours
    # `q` exits the program, as the docs say (JAX 0.10 raises a JaxRuntimeError instead)
    done = subprocess.run([sys.executable, str(script), "tracejit"], input="q\n",
                          env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Entering jdb:\n(jdb) ", "")


def test_visualize_array_sharding_as_jax(capsys):
    for shape in [(8,), (4, 4), (4, 16), (16, 4), (3, 5)]:
        jax.debug.visualize_array_sharding(jnp.ones(shape))
        theirs = capsys.readouterr().out
        tracejit.debug.visualize_array_sharding(tnp.ones(shape))
        assert capsys.readouterr().out == theirs


def test_io_callback_and_effects_barrier_are_where_jax_has_them():
    assert tracejit.experimental.io_callback is tracejit.callback.io_callback
    assert tracejit.effects_barrier() is None and tracejit.pure_callback.__doc__


def test_failed_call_deletes_a_donated_argument():
    """The program stopped part way: a donated argument it may have begun to overwrite reads as
    deleted, never as half-updated values."""
    tracejit.config.update("tracejit_backend", "native")

    def boom(v):
        raise ValueError("no")

    def f(x):
        y = x * 2
        tracejit.debug.callback(boom, y)
        return y
    x = tnp.arange(4.)
    with pytest.raises(tracejit.errors.JaxRuntimeError, match="ValueError: no"):
        tracejit.jit(f, donate_argnums=0)(x)
    assert x.is_deleted()


def test_callbacks_from_threads_and_from_inside_callbacks():
    """Several threads run programs with callbacks at once (ctypes takes the GIL for each), and
    a callback may itself call (and compile) jitted programs with callbacks."""
    import threading
    tracejit.config.update("tracejit_backend", "native")
    inner = tracejit.jit(lambda v: tracejit.pure_callback(lambda a: np.asarray(a) * 10, v, v))

    def cb(v):
        return np.asarray(inner(np.asarray(v))) + 1
    f = tracejit.jit(lambda x: tracejit.pure_callback(cb, x, x) * 2)
    errors, results = [], {}

    def work(k):
        try:
            results[k] = [float(f(np.float32(k + i))) for i in range(20)]
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {k: [((k + i) * 10 + 1) * 2.0 for i in range(20)] for k in range(4)}


def test_jaxprs_of_debug_print_are_jaxs():
    """debug.print stages one `debug_print` equation with JAX's params (no binders: it has no
    results), and make_jaxpr prints it as JAX does."""
    def f(x, y):
        jax_or_ours.debug.print("x={x}", x=x)
        jax_or_ours.debug.print("{} {}", y, "s", ordered=True)
    texts = []
    for jax_or_ours in (jax, tracejit):
        texts.append(str(jax_or_ours.make_jaxpr(f)(1., 2)))
    assert texts[1] == texts[0]


def test_a_primitive_without_a_lowering_runs_its_impl_from_native_code(monkeypatch):
    """host_callback.lower_with_impl: an equation of the primitive itself (as in the jaxpr JAX
    prints) compiled to a call of its impl rule, inside a native loop."""
    from tracejit.backend.llvm.rules import STRUCTURAL
    from tracejit.core import primitive
    monkeypatch.setattr(primitive, "registry", dict(primitive.registry))
    prim = primitive.Primitive("host_impl_cumsum", multiple_results=True)
    prim.def_abstract_eval(lambda x, *, scale: [x, tracejit.ShapedArray((), np.int32)])
    prim.def_impl(lambda x, *, scale: (np.cumsum(x) * scale, np.int32(np.argmax(x))))
    monkeypatch.setitem(STRUCTURAL, prim, None)  # (so the entry goes when the test ends)
    host_callback.lower_with_impl(prim)

    def f(xs):
        def body(c, x):
            total, arg = prim.bind(x + c, scale=2.0)
            return total[-1], arg
        return tracejit.lax.scan(body, np.float32(0), xs)
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    tracejit.config.update("tracejit_backend", "native")
    native = tracejit.jit(f)(xs)
    tracejit.config.update("tracejit_backend", "interpret")
    reference = tracejit.jit(f)(xs)
    c, expect = 0.0, []
    for x in xs:
        c = float(np.cumsum(x + c)[-1] * 2)
        expect.append(c)
    for got in (native, reference):
        assert float(got[0]) == expect[-1]
        np.testing.assert_array_equal(got[1], [1, 1, 1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_64_bit_values_with_x64(x64, backend, capsys):
    def prog(jax, jnp, exp):
        f = jax.jit(lambda x, i: (jax.debug.print("{} {}", x, i),
                                  jax.pure_callback(lambda v: np.asarray(v) * 2, x, x))[1])
        print(f(jnp.arange(3.), jnp.int64(2**40)))
        return jax.jit(lambda x: jax.pure_callback(
            lambda v: np.float32(1), jax.ShapeDtypeStruct((), jnp.float64), x))(1.)
    assert_same_output(prog, backend, capsys)
