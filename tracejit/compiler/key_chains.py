"""Key-chain fission, a jaxpr pass after the simplifying passes and before element loops and
fusion (compiler/passes.optimize): a scan that splits a PRNG key every step runs as two scans,
the key chain alone, then the rest of the body.

`key, subkey = random.split(key)` in a scan body makes the next key from the last through
threefry's 20 dependent rounds (~45 cycles), and whatever the step draws from `subkey` (a
normal: a second hash, then erf_inv, ~180 cycles of latency) waits for it. The out-of-order
core holds about one step of such a body, so the steps barely overlap: the SDE row's
1,000 steps cost ~66 ns each, not the ~14 of the key chain plus the draw's throughput. Here
the carries whose next values need only themselves (with consts and xs) — the key — and the
equations computing those values form the first scan, which stacks what the rest of the body
reads of them (the split keys: 16 bytes a step); the second scan runs the rest with those as
xs, so each step's draw is ready to start as soon as the step is. Each value goes through the
same operations as before: results are bit-identical.

Only chains holding a threefry hash are split off (a counter carried beside other work, as in
every `fori_loop`, would only gain a second loop), only where the stacked values stay small
(MAX_STEP_BYTES a step, MAX_BYTES in all), and never around effects (a print keeps its place
among the steps)."""
from __future__ import annotations

from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Var, has_effects, map_subjaxprs, renamed
from ..lax.control_flow import scan_p
from ..lax.random_bits import threefry2x32_p

MAX_STEP_BYTES = 256       # stacked values a step (keys are 8 or 16 bytes)
MAX_BYTES = 16 << 20       # stacked values in all: beyond, the second scan's memory traffic
                           # (and the workspace) would grow past the caches


def split_key_chains(jaxpr: Jaxpr) -> Jaxpr:
    """Every scan (at any depth) whose body carries a key chain, as two scans."""
    return _split(jaxpr, {})


def _split(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    eqns: list[Eqn] = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(eqn, lambda c: ClosedJaxpr(_split(c.jaxpr, memo), c.consts), memo)
        eqns.extend(_fission(eqn) if eqn.primitive is scan_p else (eqn,))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)


def _chain(body: Jaxpr, nc: int, nk: int) -> set[int]:
    """The carries (indices) of a proper subset closed under 'its next value reads': the union
    of every carry's closure that is not all of them, else the smallest closure."""
    deps: dict[Var, frozenset[int]] = {v: frozenset((k,))
                                       for k, v in enumerate(body.invars[nc:nc + nk])}
    for e in body.eqns:
        d = frozenset().union(*(deps.get(v, ()) for v in e.invars if isinstance(v, Var)))
        for v in e.outvars:
            deps[v] = d
    reads = [deps.get(v, frozenset()) if isinstance(v, Var) else frozenset()
             for v in body.outvars[:nk]]
    closures = []
    for k in range(nk):
        seen, todo = {k}, [k]
        while todo:
            for m in reads[todo.pop()] - seen:
                seen.add(m)
                todo.append(m)
        if len(seen) < nk:
            closures.append(seen)
    if not closures:
        return set()
    union = set().union(*closures)
    return union if len(union) < nk else min(closures, key=len)


def _fission(eqn: Eqn) -> tuple[Eqn, ...]:
    p = eqn.params
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    closed: ClosedJaxpr = p["jaxpr"]
    body = closed.jaxpr
    if nk < 2 or has_effects(eqn):
        return (eqn,)
    chain = _chain(body, nc, nk)
    if not chain:
        return (eqn,)
    # the first scan's equations: those the chain's next values need
    needed = {body.outvars[k] for k in chain if isinstance(body.outvars[k], Var)}
    first: list[Eqn] = []
    for e in reversed(body.eqns):
        if any(v in needed for v in e.outvars):
            first.append(e)
            needed.update(v for v in e.invars if isinstance(v, Var))
    first.reverse()
    in_first = {id(e) for e in first}
    rest = [e for e in body.eqns if id(e) not in in_first]
    if not rest or not any(e.primitive is threefry2x32_p for e in first):
        return (eqn,)
    # what the second scan reads of the first's values: stacked by the first, its xs
    carry_in = body.invars[nc:nc + nk]
    made = {carry_in[k] for k in chain} | {v for e in first for v in e.outvars}
    others = [k for k in range(nk) if k not in chain]
    ys = body.outvars[nk:]
    late_ys = [i for i, v in enumerate(ys) if not (isinstance(v, Var) and v in made)]
    reads = [v for e in rest for v in e.invars] + [body.outvars[k] for k in others] + \
        [ys[i] for i in late_ys]
    passed = list(dict.fromkeys(v for v in reads if isinstance(v, Var) and v in made))
    step_bytes = sum(v.aval.size * v.aval.dtype.itemsize for v in passed)
    if step_bytes > MAX_STEP_BYTES or step_bytes * length > MAX_BYTES:
        return (eqn,)
    consts, xs = body.invars[:nc], body.invars[nc + nk:]
    outer_consts, outer_xs = eqn.invars[:nc], eqn.invars[nc + nk:]
    chain_ks = sorted(chain)
    early_ys = [i for i in range(len(ys)) if i not in late_ys]
    stacked = [Var(v.aval.update(shape=(length,) + v.aval.shape)) for v in passed]
    keys = Jaxpr(body.constvars, consts + [carry_in[k] for k in chain_ks] + xs,
                 [body.outvars[k] for k in chain_ks] + passed + [ys[i] for i in early_ys],
                 first, body.debug_info)
    first_eqn = eqn.replace(
        invars=outer_consts + [eqn.invars[nc + k] for k in chain_ks] + outer_xs,
        outvars=[eqn.outvars[k] for k in chain_ks] + stacked +
        [eqn.outvars[nk + i] for i in early_ys],
        params={**p, "jaxpr": ClosedJaxpr(keys, closed.consts), "num_carry": len(chain_ks)})
    # the second body: its own vars (the first keeps the originals)
    draws = renamed(Jaxpr(body.constvars, consts + [carry_in[k] for k in others] + xs + passed,
                          [body.outvars[k] for k in others] + [ys[i] for i in late_ys], rest,
                          body.debug_info))
    second_eqn = eqn.replace(
        invars=outer_consts + [eqn.invars[nc + k] for k in others] + outer_xs + stacked,
        outvars=[eqn.outvars[k] for k in others] + [eqn.outvars[nk + i] for i in late_ys],
        params={**p, "jaxpr": ClosedJaxpr(draws, closed.consts), "num_carry": len(others)})
    return first_eqn, second_eqn
