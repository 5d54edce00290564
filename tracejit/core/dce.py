"""Dead-code elimination's walk over a jaxpr, shared by the transformations (which prune the
bodies they build) and the compiler's pass pipeline (compiler/passes.py).

The walk keeps an equation when one of its outputs is used or it has effects (a host callback,
or a body holding one: `has_effects`). A
primitive with bodies may declare a rule, `Primitive.dce(eqn, used_outputs)`, returning the
equation that computes only the used outputs (control flow drops carries, branch outputs and
operands nothing needs); other equations keep their signature and get their bodies pruned.
`drop_unread` is the one walk that drops effectful equations: those a rewrite left unread.
"""
from __future__ import annotations

import collections
from typing import Sequence

from .jaxpr import ClosedJaxpr, Eqn, Jaxpr, Var, has_effects, map_subjaxprs


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drop equations none of whose outputs are used, and inside control flow the outputs, loop
    carries and body inputs nothing needs."""
    return dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))[0]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool]) -> tuple[Jaxpr, set[Var]]:
    """The jaxpr computing only the used outputs (binders kept), and its live vars."""
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if isinstance(v, Var)}
    kept: list[Eqn] = []
    for eqn in reversed(jaxpr.eqns):
        used = [v in live for v in eqn.outvars]
        if not any(used) and not has_effects(eqn):
            continue
        rule = eqn.primitive.dce
        eqn = rule(eqn, used) if rule else map_subjaxprs(eqn, _dce_body, {})
        kept.append(eqn)
        live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept, jaxpr.debug_info), live


def dce_closed(closed: ClosedJaxpr, used_outputs: Sequence[bool]
               ) -> tuple[ClosedJaxpr, list[bool]]:
    """A body computing only the used outputs, without unused consts; which invars it reads."""
    j, live = dce_jaxpr(closed.jaxpr, used_outputs)
    keep = [v in live for v in j.constvars]
    j = Jaxpr([v for v, k in zip(j.constvars, keep) if k], j.invars, j.outvars, j.eqns,
              j.debug_info)
    return (ClosedJaxpr(j, [c for c, k in zip(closed.consts, keep) if k]),
            [v in live for v in j.invars])


def drop_unread(eqns: Sequence[Eqn], outvars: Sequence, replaced: Sequence) -> list[Eqn]:
    """`eqns` without those that made only the `replaced` values, now unread (the outputs a
    rewrite replaced), and what only they read — effects included: the Allgathers of blocks
    split over processes that jit returns as blocks (core/global_array.py `split_outputs`,
    compiler/split_results.py), which every process drops alike as every process rewrites
    its program alike. The equations left read what they read."""
    made = {v: e for e in eqns for v in e.outvars}
    readers = collections.Counter(v for e in eqns for v in e.invars if isinstance(v, Var))
    readers.update(v for v in outvars if isinstance(v, Var))
    dropped: set = set()
    todo = [v for v in replaced if readers[v] == 0]
    while todo:
        e = made.get(todo.pop())
        if e is None or id(e) in dropped or any(readers[v] for v in e.outvars):
            continue
        dropped.add(id(e))
        for v in e.invars:
            if isinstance(v, Var):
                readers[v] -= 1
                if readers[v] == 0:
                    todo.append(v)
    return [e for e in eqns if id(e) not in dropped]


def _dce_body(closed: ClosedJaxpr) -> ClosedJaxpr:
    return ClosedJaxpr(dce(closed.jaxpr), closed.consts)


def compress(items: Sequence, keep: Sequence[bool]) -> list:
    return [x for x, k in zip(items, keep) if k]


def keep_invars(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """`closed` with only the kept binders (the others must be unread)."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, compress(j.invars, keep), j.outvars, j.eqns,
                             j.debug_info), closed.consts)


def keep_outvars(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """`closed` computing only the kept outputs."""
    j = closed.jaxpr
    return ClosedJaxpr(dce(Jaxpr(j.constvars, j.invars, compress(j.outvars, keep), j.eqns,
                                 j.debug_info)), closed.consts)
