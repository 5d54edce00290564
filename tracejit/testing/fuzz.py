"""The differential fuzzer (user-facing testing layer): seeded random programs over jax.numpy and
lax, written as Python source, run natively (`jit`), on the reference interpreter and, where it is
importable, with real JAX; any disagreement is written out as a runnable reproducer.

    python -m tracejit.testing.fuzz --n 1000 --seed 0 [--out DIR] [--no-jax]

A program is text (`def f(x0, x1, i): ...`), so the same reproducer runs under JAX
(`python repro.py`) and under tracejit (`python -m tracejit repro.py`).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import traceback
from types import SimpleNamespace
from typing import Callable

import numpy as np

from .. import lax as t_lax
from .. import numpy as t_jnp
from ..core.dtypes import load_ml_dtypes
from ..runtime.jit import jit as t_jit
from ..transforms.api import grad as t_grad
from ..transforms.api import vmap as t_vmap

bfloat16 = np.dtype(load_ml_dtypes().bfloat16)
FLOATS = ("float16", "bfloat16", "float32")
INTS = ("int8", "int32", "uint32")
# the program's main dtype; a few casts bring in others
FAMILIES = ("float32",) * 4 + ("float16", "bfloat16", "complex64") * 2 + INTS * 2 + ("bool",)
# all pairwise broadcastable (but (0, 4) with the (3, ...) ones: filtered)
SHAPES = [(), (4,), (1, 4), (3, 1), (3, 4), (2, 3, 4), (2, 1, 4), (0, 4)]
# tolerance of |native - reference| relative to max(1, the largest |reference| in the output)
TOLERANCE = {"float16": 2e-2, "bfloat16": 8e-2, "float32": 2e-4, "complex64": 2e-4}


# grad: of the sum of every floating output (plus 0 x the first argument, so there is one)
_WRAP = {"grad": "jax.grad(lambda *a: sum((jnp.sum(o.astype(jnp.float32)) for o in f(*a) "
                 "if jnp.issubdtype(o.dtype, jnp.floating)), jnp.sum(a[0]) * 0))",
         "vmap": "jax.vmap(f)"}


@dataclasses.dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: str
    exact: bool  # computed by ops every backend rounds the same way (so ties are ties)


@dataclasses.dataclass
class Program:
    """A generated program: its source, its arguments and the transformation applied to it."""
    seed: int
    source: str
    args: list[np.ndarray]
    transform: str = ""  # "", "grad" or "vmap"
    # the least precise float any value passed through (casts and cotangents carry its error)
    least_precise: str = "float32"

    def function(self, ns: SimpleNamespace) -> Callable:
        """The program built against one implementation's (jax, jnp, lax) namespace."""
        scope = {"jax": ns.jax, "jnp": ns.jnp, "lax": ns.lax, "np": np}
        exec(compile(self.source, f"<fuzz program {self.seed}>", "exec"), scope)
        f = scope["f"]
        scope["f"] = f
        return eval(_WRAP.get(self.transform, "f"), scope)

    def reproducer(self, detail: str = "") -> str:
        """A script that runs this program under `jax` (tracejit with `python -m tracejit`)."""
        args = ",\n    ".join(f"np.array({a.tolist()!r}, dtype=jnp.{a.dtype.name})"
                               + (f".reshape({a.shape})" if a.size == 0 else "")
                               for a in self.args)
        note = "".join(f"# {line}\n" for line in detail.splitlines())
        return (f"# tracejit fuzz program, seed {self.seed}\n{note}"
                "import numpy as np\nimport jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n"
                f"{self.source}\n\nargs = [\n    {args}]\n"
                f"print(jax.jit({_WRAP.get(self.transform, 'f')})(*args))\n")


class _Generator:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.values: list[Value] = []
        self.lines: list[str] = []
        self.uses_while = False

    # -- helpers ------------------------------------------------------------------------------
    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def new(self, expr: str, shape, dtype: str, exact: bool) -> Value:
        v = Value(f"v{len(self.lines)}", tuple(shape), dtype, exact)
        self.lines.append(f"    {v.name} = {expr}")
        self.values.append(v)
        return v

    def pick(self, pred=lambda v: True) -> Value | None:
        ok = [v for v in self.values if pred(v)]
        return self.choice(ok) if ok else None

    def arg(self, shape, dtype: str) -> np.ndarray:
        rng = self.rng
        if dtype == "bool":
            return rng.random(shape) < 0.5
        if dtype == "int8":
            return rng.integers(-100, 100, shape).astype(np.int8)
        if dtype == "int32":
            return rng.integers(-50, 50, shape).astype(np.int32)
        if dtype == "uint32":
            big = rng.random(shape) < 0.2
            return np.where(big, rng.integers(2**31, 2**32, shape), rng.integers(0, 60, shape)
                            ).astype(np.uint32)
        x = rng.normal(size=shape) * 2
        if dtype == "complex64":
            return (x + 1j * rng.normal(size=shape) * 2).astype(np.complex64)
        return x.astype(bfloat16 if dtype == "bfloat16" else np.dtype(dtype))

    # -- op templates: each returns an expression in `a` or None when it does not apply -------
    def unary(self, a: str, dtype: str, exact: bool, keep_dtype: bool = False):
        """(expression, result dtype, exact) of a random unary op on `a`."""
        kind = "c" if dtype == "complex64" else "f" if dtype in FLOATS else (
            "b" if dtype == "bool" else "i")
        ops = {
            "f": [("jnp.sin({})", 0), ("jnp.cos({})", 0), ("jnp.tanh({})", 0),
                  ("jnp.exp(jnp.clip({}, -8, 8))", 0), ("jnp.log(jnp.abs({}) + 1)", 0),
                  ("jnp.sqrt(jnp.abs({}))", 0), ("jnp.abs({})", 1), ("-{}", 1),
                  ("jnp.square({})", 1), ("jnp.arctan({})", 0), ("jnp.log1p(jnp.abs({}))", 0),
                  ("jnp.tan(jnp.clip({}, -1.4, 1.4))", 0), ("jax.nn.relu({})", 1),
                  ("jax.nn.sigmoid({})", 0), ("lax.rsqrt(jnp.abs({}) + 1)", 0),
                  ("jnp.expm1(jnp.clip({}, -8, 8))", 0), ("{} * 3", 1), ("{} - 0.5", 1),
                  ("jnp.sinh(jnp.clip({}, -5, 5))", 0), ("jnp.arcsinh({})", 0)]
            + ([("jnp.floor({})", 1), ("jnp.round({})", 1), ("jnp.sign({})", 1),
                ("jnp.ceil({})", 1)] if exact else []),
            "c": [("jnp.sin({} * 0.5)", 0), ("jnp.exp({} * 0.25)", 0), ("jnp.conj({})", 1),
                  ("-{}", 1), ("{} * (1 - 2j)", 1), ("jnp.sqrt({})", 0), ("jnp.log({} + 3)", 0),
                  ("jnp.tanh({} * 0.3)", 0), ("{} * {}", 1)]
            + ([] if keep_dtype else [("jnp.abs({})", 0), ("jnp.real({})", 1),
                                      ("jnp.angle({})", 0)]),
            "i": [("-{}", 1), ("jnp.abs({})", 1), ("~{}", 1), ("jnp.sign({})", 1),
                  ("{} >> 2", 1), ("{} << 1", 1), ("{} * 3", 1), ("{} + 7", 1),
                  ("{} // 3", 1), ("{} % 5", 1), ("jnp.square({})", 1)],
            "b": [("~{}", 1), ("jnp.logical_not({})", 1)],
        }[kind]
        template, keeps_exact = self.choice(ops)
        expr = template.format(a, a) if template.count("{}") == 2 else template.format(a)
        out = dtype
        if kind == "c" and template in ("jnp.abs({})", "jnp.real({})", "jnp.angle({})"):
            out = "float32"
        return expr, out, exact and bool(keeps_exact)

    def binary(self, a: Value, b: Value):
        kind = "c" if a.dtype == "complex64" else "f" if a.dtype in FLOATS else (
            "b" if a.dtype == "bool" else "i")
        ops = {"f": ["{} + {}", "{} - {}", "{} * {}", "jnp.maximum({}, {})",
                     "jnp.minimum({}, {})", "{} / ({} ** 2 + 1)", "jnp.arctan2({}, {})",
                     "jnp.hypot({}, {})", "jnp.where({} > {}, 1.5, -2.0).astype({d})"],
               "c": ["{} + {}", "{} - {}", "{} * {}", "{} / ({} * {} + 2)"],
               "i": ["{} + {}", "{} - {}", "{} * {}", "{} & {}", "{} | {}", "{} ^ {}",
                     "jnp.maximum({}, {})", "jnp.minimum({}, {})", "{} // ({} | 1)",
                     "{} % ({} | 1)", "jnp.where({} < {}, 1, 0).astype({d})"],
               "b": ["{} & {}", "{} | {}", "{} ^ {}", "{} == {}"]}[kind]
        template = self.choice(ops)
        if "{} * {} + 2" in template:
            expr = template.format(a.name, b.name, b.name)
        else:
            expr = template.format(a.name, b.name, d=f"jnp.{a.dtype}")
        exact = a.exact and b.exact and not any(
            s in template for s in ("arctan2", "hypot", "/"))
        return expr, exact

    # -- statements -----------------------------------------------------------------------------
    def step(self, allow_while: bool):
        r = self.choice(["unary"] * 4 + ["binary"] * 4 + ["reduce"] * 2 + ["shape", "index",
                         "index", "cast", "dot", "where", "cond", "scan", "fori", "while",
                         "scalar"])
        getattr(self, "st_" + r)(allow_while)

    def st_unary(self, _):
        a = self.pick()
        expr, dtype, exact = self.unary(a.name, a.dtype, a.exact)
        self.new(expr, a.shape, dtype, exact)

    def st_binary(self, _):
        a = self.pick()
        b = self.pick(lambda v: v.dtype == a.dtype and _broadcastable(v.shape, a.shape))
        expr, exact = self.binary(a, b)
        self.new(expr, np.broadcast_shapes(a.shape, b.shape), a.dtype, exact)

    def st_scalar(self, _):
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return
        lit = {"c": "(0.5 - 1j)", "f": "2.5", "u": "3", "i": "3"}[np.dtype(
            "float32" if a.dtype == "bfloat16" else a.dtype).kind]
        op = self.choice(["+", "*", "-"])
        self.new(f"{a.name} {op} {lit}" if self.rng.random() < 0.5 else f"{lit} {op} {a.name}",
                 a.shape, a.dtype, a.exact and a.dtype != "float16" and a.dtype != "bfloat16")

    def st_reduce(self, _):
        a = self.pick(lambda v: len(v.shape) > 0)
        if a is None:
            return
        axis = int(self.rng.integers(len(a.shape)))
        empty = 0 in a.shape
        ops = ["jnp.sum", "jnp.cumsum"] + (["jnp.prod", "jnp.mean"] if a.dtype != "bool" else [])
        if a.dtype != "complex64" and not empty:
            ops += ["jnp.max", "jnp.min"] + (["jnp.argmax", "jnp.argmin"] if a.exact else [])
        if a.dtype == "bool":
            ops += ["jnp.any", "jnp.all"]
        op = self.choice(ops)
        if a.dtype == "bool" and op in ("jnp.sum", "jnp.cumsum"):
            dtype = "int32"
        elif op in ("jnp.argmax", "jnp.argmin"):
            dtype = "int32"
        elif op in ("jnp.sum", "jnp.prod", "jnp.cumsum") and a.dtype in ("int8",):
            dtype = "int32"
        elif op == "jnp.mean" and a.dtype in INTS:
            dtype = "float32"
        else:
            dtype = a.dtype
        shape = a.shape[:axis] + a.shape[axis + 1:] if op != "jnp.cumsum" else a.shape
        exact = a.exact and (dtype in INTS or dtype == "bool" or op in ("jnp.max", "jnp.min"))
        self.new(f"{op}({a.name}, axis={axis})", shape, dtype, exact)

    def st_shape(self, _):
        a = self.pick(lambda v: len(v.shape) > 0)
        if a is None:
            return
        s = a.shape
        options = [(f"{a.name}.reshape(-1)", (int(np.prod(s)),)),
                   (f"{a.name}.T", s[::-1]), (f"jnp.flip({a.name}, 0)", s),
                   (f"{a.name}[::-1]", s), (f"jnp.roll({a.name}, 1, axis=0)", s),
                   (f"jnp.expand_dims({a.name}, 0)", (1,) + s),
                   (f"jnp.concatenate([{a.name}, {a.name}], axis=0)", (2 * s[0],) + s[1:])]
        if s[0] > 1:
            options.append((f"{a.name}[1:]", (s[0] - 1,) + s[1:]))
        expr, shape = self.choice(options)
        self.new(expr, shape, a.dtype, a.exact)

    def st_index(self, _):
        a = self.pick(lambda v: len(v.shape) > 0 and v.shape[0] > 0)
        if a is None:
            return
        s = a.shape
        idx = [int(k) for k in self.rng.integers(-6, 7, int(self.rng.integers(1, 4)))]
        scalar = self.pick(lambda v: v.shape == () and v.dtype == a.dtype)
        options = [(f"{a.name}[i]", s[1:]), (f"{a.name}[jnp.array({idx})]", (len(idx),) + s[1:]),
                   (f"jnp.take({a.name}, i, axis=0)", s[1:]),
                   (f"{a.name}.at[i].add({a.name}[0])", s),
                   (f"{a.name}.at[jnp.array({idx})].get(mode='fill', fill_value=0)",
                    (len(idx),) + s[1:]),
                   (f"{a.name}.at[i].set({a.name}[-1])", s)]
        if scalar is not None:
            options.append((f"{a.name}.at[i].set({scalar.name})", s))
        if s[0] >= 2:
            options.append((f"lax.dynamic_slice_in_dim({a.name}, i, 2, axis=0)", (2,) + s[1:]))
            options.append((f"lax.dynamic_update_slice_in_dim({a.name}, {a.name}[:1], i, 0)", s))
        expr, shape = self.choice(options)
        # take's default mode fills out-of-range rows with NaN (floats) or the dtype's minimum
        self.new(expr, shape, a.dtype, a.exact)

    def st_cast(self, _):
        a = self.pick()
        if a.dtype in FLOATS:
            target = self.choice(FLOATS + ("int32", "int8"))
        elif a.dtype == "complex64":
            target = "complex64"
        elif a.dtype == "bool":
            target = self.choice(INTS + ("float32",))
        else:
            target = self.choice(INTS + ("float32", "bool"))
        src = a.name
        if a.dtype in FLOATS and target in INTS:
            if not a.exact:
                return
            src = f"jnp.clip(jnp.nan_to_num({a.name}), -100, 100)"
        # casts of inexact values to narrower floats round differently near halfway points
        exact = a.exact and (target in FLOATS or a.dtype not in FLOATS)
        self.new(f"{src}.astype(jnp.{target})", a.shape, target, exact)

    def st_dot(self, _):
        a = self.pick(lambda v: len(v.shape) >= 2 and v.dtype != "bool")
        if a is None:
            return
        b = self.pick(lambda v: len(v.shape) >= 2 and v.dtype == a.dtype
                      and v.shape[-1] == a.shape[-1]
                      and _broadcastable(v.shape[:-2], a.shape[:-2]))
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-2])
        self.new(f"{a.name} @ jnp.swapaxes({b.name}, -1, -2)", shape, a.dtype,
                 a.exact and b.exact and a.dtype in INTS)

    def st_where(self, _):
        a = self.pick()
        c = self.pick(lambda v: v.dtype not in ("complex64",) and v.exact
                      and _broadcastable(v.shape, a.shape))
        if c is None:
            return
        b = self.pick(lambda v: v.dtype == a.dtype and _broadcastable(v.shape, a.shape)
                      and _broadcastable(v.shape, c.shape))
        if b is None:
            return
        cond = c.name if c.dtype == "bool" else f"{c.name} > 0"
        shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
        self.new(f"jnp.where({cond}, {a.name}, {b.name})", shape, a.dtype, a.exact and b.exact)

    def st_cond(self, _):
        a = self.pick()
        p = self.pick(lambda v: v.exact and v.dtype not in ("complex64", "bool"))
        if p is None:
            return
        e1, d1, x1 = self.unary("u", a.dtype, a.exact, keep_dtype=True)
        e2, d2, x2 = self.unary("u", a.dtype, a.exact, keep_dtype=True)
        if d1 != a.dtype or d2 != a.dtype:
            return
        self.new(f"lax.cond(jnp.sum({p.name}) > 0, lambda u: {e1}, lambda u: {e2}, {a.name})",
                 a.shape, a.dtype, x1 and x2)

    def st_scan(self, _):
        xs = self.pick(lambda v: len(v.shape) > 0 and 0 < v.shape[0] <= 4 and v.dtype != "bool")
        if xs is None:
            return
        carry = Value("c", xs.shape[1:], xs.dtype, xs.exact)
        body, exact = self.binary(carry, Value("x", xs.shape[1:], xs.dtype, xs.exact))
        out, dtype, x2 = self.unary("c", xs.dtype, xs.exact, keep_dtype=True)
        which = int(self.rng.integers(2))
        self.new(f"lax.scan(lambda c, x: ({body}, {out}), {xs.name}[0], {xs.name})[{which}]",
                 xs.shape[1:] if which == 0 else xs.shape, xs.dtype,
                 exact and x2 and dtype == xs.dtype)

    def st_fori(self, allow_while):
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return
        e, dtype, exact = self.unary("c", a.dtype, a.exact, keep_dtype=True)
        if dtype != a.dtype:
            return
        if a.dtype in FLOATS or a.dtype == "complex64":
            e = f"jnp.tanh({e})" if a.dtype != "complex64" else f"({e}) * 0.5"
            exact = False
        n = int(self.rng.integers(0, 5))
        upper = "jnp.clip(i, 0, 5)" if allow_while and self.rng.random() < 0.3 else str(n)
        self.uses_while |= upper != str(n)
        self.new(f"lax.fori_loop(0, {upper}, lambda k, c: {e}, {a.name})", a.shape, a.dtype,
                 exact)

    def st_while(self, allow_while):
        if not allow_while:
            return
        a = self.pick(lambda v: v.dtype in FLOATS and v.exact)
        if a is not None and self.rng.random() < 0.5:  # a data-dependent trip count
            self.uses_while = True
            self.new(f"lax.while_loop(lambda s: (s[0] < 12) & (jnp.max(jnp.abs(s[1])) < 50), "
                     f"lambda s: (s[0] + 1, s[1] * 2 + 1), (0, {a.name}))[1]",
                     a.shape, a.dtype, True)
            return
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return
        e, dtype, exact = self.unary("s[1]", a.dtype, a.exact, keep_dtype=True)
        if dtype != a.dtype:
            return
        if a.dtype in FLOATS:
            e, exact = f"jnp.tanh({e})", False
        n = int(self.rng.integers(0, 5))
        self.uses_while = True
        self.new(f"lax.while_loop(lambda s: s[0] < {n}, lambda s: (s[0] + 1, {e}), "
                 f"(0, {a.name}))[1]", a.shape, a.dtype, exact)


def _broadcastable(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def generate(seed: int, n_ops: int | None = None) -> Program:
    """A random program: 1-3 array arguments of one dtype family plus an int32 index `i` (often
    out of range) and 3-10 statements, returning every value it computed."""
    g = _Generator(seed)
    rng = g.rng
    family = g.choice(FAMILIES)
    transform = ""
    if family == "float32":
        transform = g.choice(["", "", "grad", "vmap"])
    elif rng.random() < 0.2:
        transform = "vmap"
    shapes = [g.choice(SHAPES[:-1] if transform == "grad" else SHAPES)
              for _ in range(int(rng.integers(1, 4)))]
    shapes = [s for s in shapes if _broadcastable(s, shapes[0])]
    params, args = [], []
    for k, s in enumerate(shapes):
        params.append(Value(f"x{k}", s, family, True))
        args.append(g.arg(s, family))
    batch = 2 if transform == "vmap" else None
    index = np.int32(rng.integers(-7, 8))
    g.values = list(params)
    for _ in range(int(n_ops or rng.integers(3, 11))):
        g.step(allow_while=transform != "grad")
    names = ", ".join([p.name for p in params] + ["i"])
    outs = "".join(f"{v.name}, " for v in g.values[len(params):])
    source = f"def f({names}):\n" + "\n".join(g.lines) + f"\n    return ({outs})\n"
    args.append(index)
    if batch:  # every argument gets a leading batch axis of differing slices
        args = [np.stack([a, _perturb(g, a)]) for a in args]
    least = "float32"
    for name in ("float16", "bfloat16"):
        if any(v.dtype == name for v in g.values):
            least = name
    return Program(seed, source, args, transform, least)


def _perturb(g: _Generator, a: np.ndarray) -> np.ndarray:
    if a.dtype == np.int32 and a.shape == ():
        return np.int32(g.rng.integers(-7, 8))
    return g.arg(a.shape, a.dtype.name if a.dtype != bfloat16 else "bfloat16")


# -- running and comparing -----------------------------------------------------------------------
def tracejit_namespace() -> SimpleNamespace:
    """tracejit's (jax, jnp, lax) for the programs' source."""
    return SimpleNamespace(jax=SimpleNamespace(grad=t_grad, vmap=t_vmap, jit=t_jit,
                                               nn=_nn()), jnp=t_jnp, lax=t_lax)


def _nn():
    from .. import nn
    return nn


def jax_namespace() -> SimpleNamespace | None:
    """Real JAX's namespace, or None when it is not importable (or `jax` is tracejit)."""
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except ImportError:
        return None
    if "tracejit" in getattr(jax, "__file__", "") or not hasattr(jax, "grad"):
        return None
    return SimpleNamespace(jax=jax, jnp=jnp, lax=lax)


def _run(program: Program, ns: SimpleNamespace, **jit_kw):
    try:
        out = ns.jax.jit(program.function(ns), **jit_kw)(*program.args)
        return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))], None
    except Exception as e:  # noqa: BLE001  (an error is an outcome to compare)
        return None, e


def compare_all(got: list, want: list, least_precise: str | None = None) -> str | None:
    """compare() output by output; floats of gradients at `least_precise`'s tolerance."""
    if len(got) != len(want):
        return f"{len(got)} outputs != {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        diff = compare(g, w, least_precise)
        if diff:
            return f"output {k}: {diff}"
    return None


def compare(got: np.ndarray, want: np.ndarray, least_precise: str | None = None
            ) -> str | None:
    """None when `got` matches `want` (dtype, shape, NaN/Inf positions, values within the dtype's
    tolerance scaled by the output's magnitude), else what differs."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    name = "bfloat16" if want.dtype == bfloat16 else want.dtype.name
    tol = max(TOLERANCE.get(name, 0), TOLERANCE.get(least_precise, 0))
    if name not in TOLERANCE:
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:3].tolist()
            return f"values differ at {bad}: {got[tuple(np.array(bad).T)]} vs " \
                   f"{want[tuple(np.array(bad).T)]}"
        return None
    g = got.astype(np.complex128 if name == "complex64" else np.float64)
    w = want.astype(g.dtype)
    for part in ((lambda z: z.real, lambda z: z.imag) if name == "complex64" else (lambda z: z,)):
        gp, wp = part(g), part(w)
        if not np.array_equal(np.isnan(gp), np.isnan(wp)):
            return f"NaN positions differ: {gp} vs {wp}"
        finite = np.isfinite(wp)
        if not np.array_equal(gp[~finite & ~np.isnan(wp)], wp[~finite & ~np.isnan(wp)]):
            return f"Inf positions differ: {gp} vs {wp}"
        if finite.any():
            scale = max(1.0, float(np.max(np.abs(wp[finite]))))
            err = np.abs(gp[finite] - wp[finite])
            if not np.all(err <= tol * scale):
                return f"max error {err.max():.3g} > {tol} x {scale:.3g}: " \
                       f"{gp} vs {wp}"
    return None


def _xla_overflow_fold(program: Program, jax_ns: SimpleNamespace, native: list,
                       expected: list, least: str | None) -> bool:
    """True when JAX's compiled result differs from ours only in integer outputs and JAX run op
    by op (no XLA fusion) gives exactly ours: XLA's algebraic simplifier assumes integer
    arithmetic does not overflow (it folds `abs(x * x)` to `x * x`, wrong for int8 x = 9), a
    quirk of compiled JAX, not a semantics to follow (seed 50112)."""
    for g, w in zip(native, expected):
        if compare(g, w, least) and not np.issubdtype(w.dtype, np.integer):
            return False  # a float or bool output differs too: a real mismatch
    with jax_ns.jax.disable_jit():
        eager, err = _run(program, jax_ns)
    return err is None and compare_all(native, eager, least) is None


@dataclasses.dataclass
class Outcome:
    kind: str  # "ok", "rejected" (every implementation raised), "mismatch" or "crash"
    detail: str = ""


def check(program: Program, jax_ns: SimpleNamespace | None = None) -> Outcome:
    """Run `program` natively, on the interpreter and (given its namespace) with JAX."""
    ns = tracejit_namespace()
    # a float32 value computed from float16/bfloat16 ones (a cast, a gradient) carries their
    # rounding: every output is held to the tolerance of the least precise float in the program
    least = program.least_precise
    native, n_err = _run(program, ns, backend="native")
    ref, r_err = _run(program, ns, backend="interpret")
    if n_err is not None and r_err is None:
        return Outcome("crash", "native raised: " + "".join(
            traceback.format_exception_only(type(n_err), n_err)).strip())
    if r_err is not None and n_err is None:
        return Outcome("mismatch", f"interpreter raised {type(r_err).__name__}: {r_err}")
    if n_err is None:
        diff = compare_all(native, ref, least)
        if diff:
            return Outcome("mismatch", "native vs interpreter: " + diff)
    if jax_ns is not None:
        expected, j_err = _run(program, jax_ns)
        if (j_err is None) != (n_err is None):
            what = f"{type(n_err).__name__}: {n_err}" if n_err else f"JAX raised " \
                f"{type(j_err).__name__}: {j_err}"
            return Outcome("mismatch", "vs JAX: " + what.splitlines()[0])
        if j_err is None:
            diff = compare_all(native, expected, least)
            if diff and _xla_overflow_fold(program, jax_ns, native, expected, least):
                diff = None
            if diff:
                return Outcome("mismatch", "native vs JAX: " + diff)
    return Outcome("ok" if n_err is None else "rejected",
                   "" if n_err is None else f"{type(n_err).__name__}: {n_err}")


@dataclasses.dataclass
class Report:
    programs: int = 0
    ok: int = 0
    rejected: int = 0
    mismatches: list = dataclasses.field(default_factory=list)  # (seed, detail)
    crashes: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    with_jax: bool = False

    def __str__(self):
        against = "native, interpreter and JAX" if self.with_jax else "native vs interpreter"
        lines = [f"programs run: {self.programs} ({self.seconds:.1f} s, {against})",
                 f"agreed: {self.ok}, rejected by all: {self.rejected}",
                 f"mismatches: {len(self.mismatches)}", f"crashes: {len(self.crashes)}"]
        lines += [f"  seed {s}: {d.splitlines()[0][:300]}" for s, d in
                  self.mismatches + self.crashes]
        return "\n".join(lines)


def fuzz(n: int, seed: int = 0, out: str | None = None, with_jax: bool = True,
         log: Callable[[str], None] | None = None) -> Report:
    """Run programs seed, seed+1, ..., seed+n-1; reproducers of failures go to `out`."""
    jax_ns = jax_namespace() if with_jax else None
    report = Report(with_jax=jax_ns is not None)
    start = time.time()
    if out:
        os.makedirs(out, exist_ok=True)
    for s in range(seed, seed + n):
        program = generate(s)
        if out:  # a process-killing crash leaves this program behind
            _write(os.path.join(out, "last_program.py"), program.reproducer("running"))
        outcome = check(program, jax_ns)
        report.programs += 1
        if outcome.kind == "ok":
            report.ok += 1
        elif outcome.kind == "rejected":
            report.rejected += 1
        else:
            (report.crashes if outcome.kind == "crash" else report.mismatches).append(
                (s, outcome.detail))
            if out:
                _write(os.path.join(out, f"{outcome.kind}_{s}.py"),
                       program.reproducer(outcome.detail))
            if log:
                log(f"seed {s}: {outcome.kind}: {outcome.detail.splitlines()[0][:200]}")
        if log and report.programs % 100 == 0:
            log(f"{report.programs} programs, {len(report.mismatches)} mismatches, "
                f"{len(report.crashes)} crashes, {time.time() - start:.0f} s")
    report.seconds = time.time() - start
    if out:
        os.remove(os.path.join(out, "last_program.py"))
    return report


def _write(path: str, text: str):
    with open(path, "w") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> int:
    """The soak command; exits 1 when any program mismatched or crashed."""
    p = argparse.ArgumentParser(prog="python -m tracejit.testing.fuzz", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000, help="programs to run")
    p.add_argument("--seed", type=int, default=0, help="the first program's seed")
    p.add_argument("--out", default="fuzz-failures", help="folder for reproducers")
    p.add_argument("--no-jax", action="store_true", help="skip the comparison with real JAX")
    a = p.parse_args(argv)
    report = fuzz(a.n, a.seed, a.out, not a.no_jax, log=lambda m: print(m, flush=True))
    print(report)
    return 1 if report.mismatches or report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
