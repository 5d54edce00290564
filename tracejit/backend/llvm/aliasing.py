"""Donation planning: which donated inputs' memory the program's outputs may be written into.
codegen's `generate` runs `plan_aliases` before emitting; it reads only the jaxpr and its fusion
plan, never the emitted code."""
from __future__ import annotations

from typing import Sequence

from ...compiler.fusion import def_use, fusible, is_elementwise, plan_fusion
from ...core.jaxpr import Jaxpr, Var
from .rules import FORWARDING, IN_PLACE, STRUCTURAL


def _fresh_results(eqn) -> bool:
    """The rule's results are always fresh memory (see rules.FORWARDING)."""
    return eqn.primitive in STRUCTURAL and eqn.primitive not in FORWARDING


def _in_place_operand(eqn, j: int) -> int | None:
    """The operand whose buffer result j may overwrite (declared with the lowering, in
    rules.IN_PLACE)."""
    rule = IN_PLACE.get(eqn.primitive)
    return None if rule is None else rule(eqn, j)


def plan_aliases(jaxpr: Jaxpr, candidates: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Of the donated (output index, invar index) pairs, those whose output can be written into
    the input's memory: output index -> invar index. A pair qualifies when every read of the
    input (or of a value sharing its buffer) happens before the output's writer runs, or inside
    it at the very element being written (an elementwise kernel, an in-place update or loop
    carry). Other pairs get fresh outputs. Rank-0 inputs are loaded into registers on entry."""
    if not candidates:
        return {}
    eqns, n = jaxpr.eqns, len(jaxpr.eqns)
    plan = plan_fusion(jaxpr)
    producer, users = def_use(eqns)
    out_positions: dict[int, list[int]] = {}
    for j, v in enumerate(jaxpr.outvars):
        if isinstance(v, Var):
            out_positions.setdefault(id(v), []).append(j)

    def written_directly(v) -> bool:  # emit_jaxpr computes it straight into its destination
        return id(v) in producer and len(out_positions.get(id(v), ())) == 1

    def read_points(v) -> list[int]:
        """Where v's memory is read: eqn indices, or n + j for the copy into output j."""
        points, stack = [], [v]
        while stack:
            u = stack.pop()
            for k in users.get(id(u), ()):
                lazy = eqns[k].outvars and id(eqns[k].outvars[0]) in plan.lazy
                if lazy:  # read wherever the fused value is finally computed
                    stack.append(eqns[k].outvars[0])
                else:
                    points.append(k)
            if not written_directly(u):
                points += [n + j for j in out_positions.get(id(u), ())]
        return points

    def sharing(x) -> dict[int, Var]:
        """x and the values that may be x's buffer handed on."""
        share = {id(x): x}
        for e in eqns:
            if not fusible(e) and not _fresh_results(e) and \
                    any(isinstance(v, Var) and id(v) in share for v in e.invars):
                share.update((id(v), v) for v in e.outvars)
        return share

    def reads_in_place(eqn, o, x, share: dict[int, Var]) -> bool:
        """Eqn (which writes o into x's buffer) reads x only at the element it writes."""
        if not fusible(eqn):
            pos = _in_place_operand(eqn, eqn.outvars.index(o))
            return pos is not None and eqn.invars[pos] is x and not any(
                isinstance(v, Var) and (id(v) in share or id(v) in plan.lazy)
                for i, v in enumerate(eqn.invars) if i != pos)
        stack = [(eqn, True)]  # (eqn of the fused tree, same index as the output so far)
        while stack:
            e, same_index = stack.pop()
            same_index = same_index and is_elementwise(e)
            for v in e.invars:
                if not isinstance(v, Var):
                    continue
                if id(v) in share:
                    if not (same_index and v is x):
                        return False
                elif id(v) in plan.lazy:
                    stack.append((eqns[producer[id(v)]], same_index))
        return True

    safe: dict[int, int] = {}
    for j, i in candidates:
        x, o = jaxpr.invars[i], jaxpr.outvars[j]
        if x.aval.ndim == 0 or o is x:
            safe[j] = i
            continue
        share = sharing(x)
        reads = [p for v in share.values() for p in read_points(v)]
        if isinstance(o, Var) and id(o) in share:
            continue
        if not (isinstance(o, Var) and written_directly(o)):
            ok = all(p < n + j for p in reads)  # copied in after every equation, in order
        else:
            k = producer[id(o)]
            ok = id(o) not in plan.lazy and all(p <= k for p in reads) and \
                (k not in reads or reads_in_place(eqns[k], o, x, share))
        if ok:
            safe[j] = i
    return safe

