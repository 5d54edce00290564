"""Donation planning: which donated inputs' memory the program's outputs may be written into.
codegen's `generate` runs `plan_aliases` before emitting; it reads only the (fused) jaxpr, never
the emitted code."""
from __future__ import annotations

from typing import Sequence

from ...compiler.fusion import def_use, fused_p, fusible, is_elementwise
from ...core.jaxpr import Eqn, Jaxpr, Var
from .rules import FORWARDING, IN_PLACE, STRUCTURAL


def _fresh_results(eqn) -> bool:
    """The rule's results are always fresh memory (see rules.FORWARDING)."""
    return eqn.primitive in STRUCTURAL and eqn.primitive not in FORWARDING


def _in_place_operand(eqn, j: int) -> int | None:
    """The operand whose buffer result j may overwrite (declared with the lowering, in
    rules.IN_PLACE)."""
    rule = IN_PLACE.get(eqn.primitive)
    return None if rule is None else rule(eqn, j)


def _keeps_order(eqn: Eqn) -> bool:
    """A reshape that keeps the row-major order (no `dimensions`), or a squeeze: element k of
    its result is element k of its operand, at the same offset in memory."""
    return eqn.primitive.name == "squeeze" or (eqn.primitive.name == "reshape"
                                               and eqn.params.get("dimensions") is None)


def _elementwise_reads(eqn: Eqn) -> list[tuple[Var, bool]] | None:
    """For an equation lowered as one elementwise loop nest (an elementwise op or index map, or
    a `fused` kernel with such a root): each operand it reads, and whether every read is at the
    element being written (at its offset in memory: through reshapes that keep the order too).
    None for any other equation."""
    if fusible(eqn):
        same = is_elementwise(eqn) or _keeps_order(eqn)
        return [(v, same) for v in eqn.invars if isinstance(v, Var)]
    if eqn.primitive is not fused_p or len(eqn.outvars) != 1:
        # (a kernel of several results stores each in turn: a later one's reads may come after
        # an earlier one's write at the element)
        return None
    body = eqn.params["body"].jaxpr
    if not fusible(body.eqns[-1]):  # a reduction root
        return None
    outer = dict(zip(body.invars, eqn.invars))
    producer = {v: e for e in body.eqns for v in e.outvars}
    reads, stack = [], [(body.eqns[-1], True)]  # (eqn of the body, same index as the output)
    seen = set()  # a value read twice in the kernel (compiler.fusion) is walked once
    while stack:
        e, same_index = stack.pop()
        same_index = same_index and (is_elementwise(e) or _keeps_order(e))
        for v in e.invars:
            if v in producer:
                if (v, same_index) not in seen:
                    seen.add((v, same_index))
                    stack.append((producer[v], same_index))
            elif isinstance(v, Var):
                reads.append((outer[v], same_index))
    return reads


def plan_aliases(jaxpr: Jaxpr, candidates: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Of the donated (output index, invar index) pairs, those whose output can be written into
    the input's memory: output index -> invar index. A pair qualifies when every read of the
    input (or of a value sharing its buffer) happens before the output's writer runs, or inside
    it at the very element being written (an elementwise kernel, an in-place update or loop
    carry). Other pairs get fresh outputs. Rank-0 inputs are loaded into registers on entry."""
    if not candidates:
        return {}
    eqns, n = jaxpr.eqns, len(jaxpr.eqns)
    producer, users = def_use(eqns)
    out_positions: dict[Var, list[int]] = {}
    for j, v in enumerate(jaxpr.outvars):
        if isinstance(v, Var):
            out_positions.setdefault(v, []).append(j)

    def written_directly(v) -> bool:  # emit_jaxpr computes it straight into its destination
        return v in producer and len(out_positions.get(v, ())) == 1

    def read_points(v) -> list[int]:
        """Where v's memory is read: eqn indices, or n + j for the copy into output j."""
        points = list(users.get(v, ()))
        if not written_directly(v):
            points += [n + j for j in out_positions.get(v, ())]
        return points

    def sharing(x) -> set[Var]:
        """x and the values that may be x's buffer handed on."""
        share = {x}
        for e in eqns:
            if not fusible(e) and not _fresh_results(e) and \
                    any(isinstance(v, Var) and v in share for v in e.invars):
                share.update(e.outvars)
        return share

    def reads_in_place(eqn, o, x, share: set[Var]) -> bool:
        """Eqn (which writes o into x's buffer) reads x only at the element it writes."""
        reads = _elementwise_reads(eqn)
        if reads is not None:
            return all(same_index and v is x for v, same_index in reads if v in share)
        pos = _in_place_operand(eqn, eqn.outvars.index(o))
        return pos is not None and eqn.invars[pos] is x and not any(
            isinstance(v, Var) and v in share for i, v in enumerate(eqn.invars) if i != pos)

    safe: dict[int, int] = {}
    for j, i in candidates:
        x, o = jaxpr.invars[i], jaxpr.outvars[j]
        if x.aval.ndim == 0 or o is x:
            safe[j] = i
            continue
        share = sharing(x)
        reads = [p for v in share for p in read_points(v)]
        if isinstance(o, Var) and o in share:
            continue
        if not (isinstance(o, Var) and written_directly(o)):
            ok = all(p < n + j for p in reads)  # copied in after every equation, in order
        else:
            k = producer[o]
            ok = all(p <= k for p in reads) and \
                (k not in reads or reads_in_place(eqns[k], o, x, share))
        if ok:
            safe[j] = i
    return safe


def in_place_temporaries(jaxpr: Jaxpr, aliases: dict[int, int]) -> dict[Var, int]:
    """Temporaries to compute straight into an output's buffer (var -> output index): an
    operand that the output's equation writes over -- by an in-place rule (rules.IN_PLACE: a
    scatter's zeros, a dynamic_update_slice's array, a loop's initial carry) or as an
    elementwise kernel reading it only at the element it writes (in memory: through reshapes
    too) -- where that output's buffer is its own (not a donated input's: `aliases`), the
    output is returned once, and the operand is a value made here of the output's size and
    dtype that no other equation reads. The equation then updates it where it lies, where a
    rule copied it out of the workspace first (an embedding table's gradient, a scatter-add into
    50,000 x 128 zeros: the zeros, a 25.6 MB copy, the adds). Through chains of such
    equations."""
    producer, users = def_use(jaxpr.eqns)
    outs = list(jaxpr.outvars)
    target = {v: j for j, v in enumerate(outs)
              if j not in aliases and isinstance(v, Var) and v in producer and outs.count(v) == 1}
    placed: dict[Var, int] = {}
    for k in range(len(jaxpr.eqns) - 1, -1, -1):
        eqn = jaxpr.eqns[k]
        for r, o in enumerate(eqn.outvars):
            if o not in target:
                continue
            pos = _in_place_operand(eqn, r)
            if pos is not None:
                candidates = [eqn.invars[pos]] if eqn.invars.count(eqn.invars[pos]) == 1 else []
            else:
                reads = _elementwise_reads(eqn) or []
                candidates = [v for v, _ in reads if all(same for u, same in reads if u is v)]
            for q in candidates:
                if (isinstance(q, Var) and q in producer and q not in outs and q not in target
                        and set(users[q]) == {k} and q.aval.size == o.aval.size
                        and q.aval.dtype == o.aval.dtype):
                    target[q] = placed[q] = target[o]
                    break
    return placed
