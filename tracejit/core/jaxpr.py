"""The IR: Var, Literal, Eqn, Jaxpr, ClosedJaxpr — with JAX's printed form and a type checker.

Vars compare by identity; names exist only when printing. IR is immutable by convention: passes
build new Jaxprs.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from .avals import ShapedArray


class SourceInfo(NamedTuple):
    filename: str
    lineno: int
    function: str
    code: Any = None  # the frame's code object and instruction offset: the column and the
    lasti: int = -1   # qualified name are read from them only when printed (tracing is hot)

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"

    def summary(self) -> str:
        """JAX's form, with the column: 'file:line:column (qualified function name)'."""
        if self.code is None:
            return f"{self.filename}:{self.lineno} ({self.function})"
        pos = next(itertools.islice(self.code.co_positions(), self.lasti // 2, None), None)
        col = "" if pos is None or pos[2] is None else f":{pos[2]}"
        return f"{self.filename}:{self.lineno}{col} ({self.code.co_qualname})"


class Var:
    __slots__ = ("aval", "_id", "notes")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self._id = next(Var._counter)
        # what shard_map staged by jit noted of this value (core/global_array.py), or None:
        # held by the Var itself, notes live exactly as long as the program it is part of
        self.notes: Any = None

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()}#{self._id})"


class Literal:
    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = np.asarray(val, dtype=aval.dtype)
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val.item()!r}:{self.aval.str_short()})"

    def pretty(self) -> str:
        v = self.val.item()
        if isinstance(v, float):
            text = repr(v) if np.isfinite(v) else {np.inf: "inf", -np.inf: "-inf"}.get(v, "nan")
        else:
            text = repr(v)
        return f"{text}:{self.aval.str_short()}"


class Eqn:
    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive, invars: list, outvars: list[Var], params: dict,
                 source_info: SourceInfo | None = None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info

    def replace(self, **kw) -> Eqn:
        fields = {s: getattr(self, s) for s in Eqn.__slots__}
        fields.update(kw)
        return Eqn(**fields)

    def __repr__(self) -> str:
        return pp_eqn(self, _Namer())


class Jaxpr:
    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info")

    def __init__(self, constvars: list[Var], invars: list[Var], outvars: list, eqns: list[Eqn],
                 debug_info: Any = None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self) -> str:
        return pp_jaxpr(self, _Namer(), indent=0)

    __repr__ = __str__

    def pretty_print(self, **_) -> str:
        return str(self)


class ClosedJaxpr:
    """A jaxpr with its constants bound (consts are concrete arrays, or outer tracers)."""
    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts: list):
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self) -> str:
        return str(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **_) -> str:
        return str(self)

    # params holding a ClosedJaxpr must stay hashable (jit caches key on params)
    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other


def runs_jaxpr(params: dict) -> bool:
    """Whether a primitive's params hold a jaxpr it runs (jit, control flow)."""
    return any(isinstance(v, (ClosedJaxpr, Jaxpr)) or
               (isinstance(v, tuple) and v and isinstance(v[0], (ClosedJaxpr, Jaxpr)))
               for v in params.values())


def has_subjaxprs(eqn: Eqn) -> bool:
    return bool(eqn.params) and any(
        isinstance(x, ClosedJaxpr) for value in eqn.params.values()
        for x in (value if isinstance(value, tuple) else (value,)))


def has_effects(eqn: Eqn) -> bool:
    """Whether running `eqn` does something besides computing its results: its primitive is
    effectful, or an equation in one of its bodies (at any depth) is."""
    stack = [eqn]
    while stack:
        e = stack.pop()
        if e.primitive.effectful or (e.primitive.effectful_if is not None
                                     and e.primitive.effectful_if(e.params)):
            return True
        for value in e.params.values():
            for x in (value if isinstance(value, tuple) else (value,)):
                if isinstance(x, ClosedJaxpr):
                    stack.extend(x.jaxpr.eqns)
    return False


def map_subjaxprs(eqn: Eqn, f: Callable[[ClosedJaxpr], ClosedJaxpr], memo: dict) -> Eqn:
    """`eqn` with `f` applied to each sub-jaxpr of its params, once per distinct ClosedJaxpr:
    eqns that shared a body still share its rewrite (CSE compares bodies by identity)."""
    def apply(closed: ClosedJaxpr) -> ClosedJaxpr:
        hit = memo.get(closed)
        if hit is None:
            hit = memo[closed] = f(closed)
        return hit

    if not has_subjaxprs(eqn):
        return eqn
    params = {}
    for k, value in eqn.params.items():
        if isinstance(value, ClosedJaxpr):
            value = apply(value)
        elif isinstance(value, tuple) and value and all(isinstance(x, ClosedJaxpr) for x in value):
            value = tuple(apply(x) for x in value)
        params[k] = value
    return eqn.replace(params=params)


# --- renaming ------------------------------------------------------------------------------
# Equations copied into another program (a call's body inlined, an invariant hoisted out of a
# loop, a kernel's body) bind fresh variables: a Var is bound once in a whole program, nested
# jaxprs included (passes and codegen key their maps on Vars).

def copy_eqns(eqns: Iterable[Eqn], env: dict[Var, Any], out: list[Eqn]) -> None:
    """Append to `out` copies of `eqns` that read each operand through `env` (a var it does not
    map reads as itself) and bind fresh variables, which `env` then maps the originals to."""
    for eqn in eqns:
        outvars = [Var(v.aval) for v in eqn.outvars]
        out.append(eqn.replace(invars=[v if isinstance(v, Literal) else env.get(v, v)
                                       for v in eqn.invars], outvars=outvars))
        env.update(zip(eqn.outvars, outvars))


def inline_into(out: list[Eqn], jaxpr: Jaxpr, args: Sequence) -> list:
    """Append `jaxpr`'s equations to `out` on fresh variables, its constvars then invars bound
    to `args` (atoms of the program `out` belongs to); returns the atoms of its results."""
    env: dict[Var, Any] = dict(zip(itertools.chain(jaxpr.constvars, jaxpr.invars), args))
    copy_eqns(jaxpr.eqns, env, out)
    return [v if isinstance(v, Literal) else env.get(v, v) for v in jaxpr.outvars]


def inline_equations(jaxpr: Jaxpr, consts: list,
                     expand: Callable[[Eqn], Eqn | tuple[Jaxpr, list]]) -> tuple[Jaxpr, list]:
    """`jaxpr` with each equation replaced by what `expand` gives for it (the equation on the
    rebuilt program's operands): an equation to keep, or a (jaxpr, consts) computing its
    results, inlined in its place, whose consts become constvars of the result."""
    constvars, consts = list(jaxpr.constvars), list(consts)
    eqns: list[Eqn] = []
    rename: dict[Var, Any] = {}

    def read(v):
        return v if isinstance(v, Literal) else rename.get(v, v)

    for eqn in jaxpr.eqns:
        eqn = eqn.replace(invars=[read(v) for v in eqn.invars])
        got = expand(eqn)
        if isinstance(got, Eqn):
            eqns.append(got)
            continue
        inner, inner_consts = got
        fresh = [Var(v.aval) for v in inner.constvars]
        constvars += fresh
        consts += inner_consts
        rename.update(zip(eqn.outvars, inline_into(eqns, inner, fresh + list(eqn.invars))))
    outvars = [read(v) for v in jaxpr.outvars]
    return Jaxpr(constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info), consts


def renamed(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` on fresh variables throughout, binders included: a copy that may stand in the
    same program as the original."""
    env: dict[Var, Any] = {v: Var(v.aval) for v in itertools.chain(jaxpr.constvars,
                                                                    jaxpr.invars)}
    eqns: list[Eqn] = []
    copy_eqns(jaxpr.eqns, env, eqns)
    return Jaxpr([env[v] for v in jaxpr.constvars], [env[v] for v in jaxpr.invars],
                 [v if isinstance(v, Literal) else env.get(v, v) for v in jaxpr.outvars], eqns,
                 jaxpr.debug_info)


# --- printing ------------------------------------------------------------------------------

class _Namer:
    def __init__(self):
        self.names: dict[Var, str] = {}

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return v.pretty()
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _name(len(self.names))
        return name


def _name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = letters[r] + s
    return s


def _binder(v, namer: _Namer, used: set | None = None) -> str:
    """`a:f32[3]`; an equation's output nothing reads prints as `_` (JAX's form)."""
    name = "_" if used is not None and v not in used else namer(v)
    return f"{name}:{v.aval.str_short()}"


class Scoped:
    """A param holding a jaxpr printed with its own variable names (a call's body, as JAX
    prints `jit`'s)."""
    __slots__ = ("jaxpr",)

    def __init__(self, jaxpr: Jaxpr | ClosedJaxpr):
        self.jaxpr = jaxpr


_WIDTH = 80


def pp_jaxpr(jaxpr: Jaxpr, namer: _Namer, indent: int) -> str:
    """JAX's layout: on one line when it fits, else eqns at indent+4 and `in` at indent+2."""
    pad = " " * indent
    consts = " ".join(_binder(v, namer) for v in jaxpr.constvars)
    ins = " ".join(_binder(v, namer) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {ins}. let"
    used = {v for e in jaxpr.eqns for v in e.invars if isinstance(v, Var)}
    used.update(v for v in jaxpr.outvars if isinstance(v, Var))
    body = [pp_eqn(e, namer, indent + 4, used) for e in jaxpr.eqns]
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    outs = f"({outs}{',' if len(jaxpr.outvars) == 1 else ''})"
    flat = [line.lstrip() for line in body]
    one_line = " ".join([head] + flat + [f"in {outs} }}"])
    if not body or (all("\n" not in line for line in body) and indent + len(one_line) <= _WIDTH):
        return one_line
    return "\n".join([head] + body + [f"{pad}  in {outs} }}"])


def _pp_param(value, namer: _Namer, indent: int) -> str:
    if isinstance(value, Scoped):
        return _pp_param(value.jaxpr, _Namer(), indent)
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        j = value.jaxpr if isinstance(value, ClosedJaxpr) else value
        return pp_jaxpr(j, namer, indent)
    if isinstance(value, tuple) and value and all(isinstance(x, (Jaxpr, ClosedJaxpr))
                                                  for x in value):
        pad = " " * (indent + 2)
        inner = "\n".join(pad + _pp_param(x, namer, indent + 2) for x in value)
        return f"(\n{inner}\n{' ' * indent})"
    if isinstance(value, np.dtype):
        return value.name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


def pp_eqn(eqn: Eqn, namer: _Namer, indent: int = 0, used: set | None = None) -> str:
    pad = " " * indent
    ins = " ".join(namer(v) for v in eqn.invars)
    outs = " ".join(_binder(v, namer, used) for v in eqn.outvars)
    outs = f"{outs} = " if eqn.outvars else ""  # (an effect with no results: no binders)
    params = ""
    shown = eqn.params if eqn.primitive.pp_params is None else eqn.primitive.pp_params(eqn.params)
    pairs = shown.items() if eqn.primitive.pp_params is not None else sorted(shown.items())
    if shown:
        items = [f"{k}={_pp_param(v, namer, indent + 2)}" for k, v in pairs]
        params = "[" + " ".join(items) + "]"
        one_line = f"{pad}{outs}{eqn.primitive.name}{params} {ins}".rstrip()
        if any("\n" in it for it in items) or len(one_line) > _WIDTH:
            params = "[\n" + "\n".join(" " * (indent + 2) + it for it in items) + f"\n{pad}]"
    text = f"{pad}{outs}{eqn.primitive.name}{params} {ins}"
    # JAX keeps the space after the params of an equation without operands (iota, axis_index)
    return text if params and not ins else text.rstrip()


# --- checking ------------------------------------------------------------------------------

class JaxprTypeError(TypeError):
    pass


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Every var defined once before use; each eqn's outputs are what its abstract eval says."""
    defined: set[Var] = set()

    def define(v: Var, where: str) -> None:
        if not isinstance(v, Var):
            raise JaxprTypeError(f"{where}: binder {v!r} is not a Var")
        if v in defined:
            raise JaxprTypeError(f"{where}: variable {v!r} defined twice")
        defined.add(v)

    def read(v, where: str) -> None:
        if isinstance(v, Literal):
            return
        if not isinstance(v, Var) or v not in defined:
            raise JaxprTypeError(f"{where}: variable {v!r} used before definition")

    for v in itertools.chain(jaxpr.constvars, jaxpr.invars):
        define(v, "binders")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"eqn {i} ({eqn.primitive.name})"
        for v in eqn.invars:
            read(v, where)
        for value in eqn.params.values():
            for sub in (value if isinstance(value, tuple) else (value,)):
                if isinstance(sub, ClosedJaxpr):
                    check_jaxpr(sub.jaxpr)
                elif isinstance(sub, Jaxpr):
                    check_jaxpr(sub)
        expected = eqn.primitive.abstract_eval(*[v.aval for v in eqn.invars], **eqn.params)
        if len(expected) != len(eqn.outvars):
            raise JaxprTypeError(f"{where}: {len(eqn.outvars)} outputs, rule gives {len(expected)}")
        for v, aval in zip(eqn.outvars, expected):
            if not _same_type(v.aval, aval):
                raise JaxprTypeError(f"{where}: output typed {v.aval.str_short()}, "
                                     f"rule gives {aval.str_short()}")
            define(v, where)
    for v in jaxpr.outvars:
        read(v, "outvars")
