"""Reverse mode, second half: transposition of linear jaxprs.

`backward_pass` first evaluates the equations that read no linear input (residual work, e.g. a
rematerialised forward pass), then walks the linear equations backwards, handing each output
cotangent to the primitive's transpose rule and summing the cotangents of every variable.
"""
from __future__ import annotations

from typing import Any, Sequence

from .global_array import any_noted, note_cotangent
from .jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from .jaxpr_util import literal_value, trace_closed
from .primitive import Primitive, primitive_transposes
from .rules import UndefinedPrimal, Zero, add_tangents, instantiate, is_undefined


def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any]) -> list:
    """Cotangents of jaxpr's linear inputs (those given as UndefinedPrimal; Zero where none
    flows) from cotangents of its outputs (Zero allowed). Non-linear inputs get None."""
    env: dict[Var, Any] = {}
    linear: set[Var] = set()

    def read(v):
        return literal_value(v) if isinstance(v, Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            linear.add(v)
        else:
            env[v] = a
    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(v in linear for v in eqn.invars if not isinstance(v, Literal)):
            linear_eqns.append(eqn)
            linear.update(v for v in eqn.outvars)
            continue
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        for v, out in zip(eqn.outvars, outs if eqn.primitive.multiple_results else (outs,)):
            env[v] = out

    cts: dict[Var, Any] = {}

    def accumulate(v, ct):
        if isinstance(v, Literal) or v not in linear or ct is None or type(ct) is Zero:
            return
        cts[v] = add_tangents(cts[v], ct) if v in cts else ct

    for v, ct in zip(jaxpr.outvars, cts_out):
        accumulate(v, ct)
    notes = any_noted()  # (shard_map staged under jit: its cotangents' reports follow it)
    for eqn in reversed(linear_eqns):
        ct_out = [cts.pop(v, Zero(v.aval)) for v in eqn.outvars]
        if notes:
            for v, ct in zip(eqn.outvars, ct_out):
                note_cotangent(v, ct)
        if all(type(ct) is Zero for ct in ct_out):
            continue
        args_in = [UndefinedPrimal(v.aval)
                   if not isinstance(v, Literal) and v in linear else read(v)
                   for v in eqn.invars]
        rule = transpose_rule(eqn.primitive)
        ct_in = rule(ct_out if eqn.primitive.multiple_results else ct_out[0], *args_in,
                     **eqn.params)
        for v, ct in zip(eqn.invars, ct_in):
            accumulate(v, ct)
    if notes:
        for v in jaxpr.invars:
            if v in cts:
                note_cotangent(v, cts[v])
    return [cts.get(v, Zero(v.aval)) if is_undefined(a) else None
            for v, a in zip(jaxpr.invars, args)]


def transpose_rule(primitive: Primitive):
    rule = primitive.transpose or primitive_transposes.get(primitive)  # (see primitive.py)
    if rule is None:
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{primitive.name}' not implemented")
    return rule


def transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool], ct_nonzero: Sequence[bool]
                    ) -> ClosedJaxpr:
    """The jaxpr (non-linear inputs..., nonzero output cotangents...) -> cotangents of the
    linear inputs (instantiated) of closed."""
    avals = closed.in_avals
    res_avals = [a for a, lin in zip(avals, linear) if not lin]
    ct_avals = [a for a, nz in zip(closed.out_avals, ct_nonzero) if nz]

    def fun(*args):
        res, cts = iter(args[:len(res_avals)]), iter(args[len(res_avals):])
        ins = [UndefinedPrimal(a) if lin else next(res) for a, lin in zip(avals, linear)]
        cts_out = [next(cts) if nz else Zero(a) for a, nz in zip(closed.out_avals, ct_nonzero)]
        cts_in = backward_pass(closed.jaxpr, closed.consts, ins, cts_out)
        return [instantiate(ct) for ct, lin in zip(cts_in, linear) if lin]

    return trace_closed(fun, res_avals + ct_avals)


def call_transpose(primitive: Primitive, name_param: str | None = None):
    """The transpose rule of a call primitive (params `jaxpr`, ...): a call of the transposed
    jaxpr on the non-linear arguments and the nonzero cotangents."""
    def rule(cts, *args, jaxpr: ClosedJaxpr, **params):
        linear = [is_undefined(a) for a in args]
        ct_nz = [type(ct) is not Zero for ct in cts]
        t_jaxpr = transpose_jaxpr(jaxpr, linear, ct_nz)
        if name_param is not None:
            params = dict(params, **{name_param: f"transpose({params[name_param]})"})
        outs = iter(primitive.bind(*[a for a in args if not is_undefined(a)],
                                   *[ct for ct in cts if type(ct) is not Zero],
                                   jaxpr=t_jaxpr, **params))
        return [next(outs) if lin else None for lin in linear]
    return rule
