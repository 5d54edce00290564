"""core/jaxpr.py's renaming helpers (copy_eqns, inline_into, renamed), which the passes that copy
equations into another program share: the copies compute what the originals did (the reference
interpreter on both), bind no variable twice (the jaxpr checker) and share none with the
original."""
import numpy as np

import tracejit
import tracejit.numpy as jnp
from tracejit.core.interpret import eval_jaxpr
from tracejit.core.jaxpr import Jaxpr, Literal, Var, check_jaxpr, copy_eqns, inline_into, renamed

W = np.linspace(-1.0, 2.0, 3, dtype=np.float32)   # a closed-over constant: a constvar
X = np.array([0.5, -2.0, 3.0], np.float32)


def _f(x):
    y = jnp.sin(x) * W + x
    return y * y, 2.0 * x, x   # a value read twice; an input returned as it is


def _binders(jaxpr: Jaxpr) -> set:
    return {*jaxpr.constvars, *jaxpr.invars, *(v for e in jaxpr.eqns for v in e.outvars)}


def test_renamed_is_the_same_program_on_variables_of_its_own():
    closed = tracejit.make_jaxpr(_f)(X)
    j = closed.jaxpr
    assert j.constvars  # (W is one: the constvars are renamed too)
    r = renamed(j)
    check_jaxpr(r)
    assert not _binders(r) & _binders(j)
    assert not {v for e in r.eqns for v in e.invars if isinstance(v, Var)} - _binders(r)
    assert str(r) == str(j)  # printed names follow the order of binding: the same text
    for want, got in zip(eval_jaxpr(j, closed.consts, X), eval_jaxpr(r, closed.consts, X)):
        np.testing.assert_array_equal(got, want)


def test_inline_into_twice_in_one_program():
    """f's body inlined twice into one program, the second reading the first's results:
    check_jaxpr would reject a variable bound twice."""
    closed = tracejit.make_jaxpr(lambda x: _f(x)[0])(X)
    j = closed.jaxpr
    consts = [Var(v.aval) for v in j.constvars]
    (x,) = [Var(v.aval) for v in j.invars]
    eqns: list = []
    (once,) = inline_into(eqns, j, consts + [x])
    (twice,) = inline_into(eqns, j, consts + [once])
    program = Jaxpr(consts, [x], [once, twice], eqns)
    check_jaxpr(program)
    assert not _binders(program) & _binders(j)
    want_once = eval_jaxpr(j, closed.consts, X)[0]
    want_twice = eval_jaxpr(j, closed.consts, want_once)[0]
    got_once, got_twice = eval_jaxpr(program, closed.consts, X)
    np.testing.assert_array_equal(got_once, want_once)
    np.testing.assert_array_equal(got_twice, want_twice)


def test_inline_into_returns_inputs_and_literals_as_bound():
    """A result that is an input is the atom bound to it; a literal result stays itself."""
    j = tracejit.make_jaxpr(_f)(X).jaxpr
    lit = Literal(1.0, j.outvars[0].aval)
    j = Jaxpr(j.constvars, j.invars, [j.outvars[2], lit], j.eqns)
    args = [Var(v.aval) for v in j.constvars + j.invars]
    out: list = []
    assert inline_into(out, j, args) == [args[-1], lit]
    assert len(out) == len(j.eqns)


def test_copy_eqns_reads_unmapped_vars_as_themselves():
    """Only what `env` maps is substituted (a hoisted equation reads outer values directly);
    `env` then maps each copied result."""
    j = tracejit.make_jaxpr(lambda x: jnp.cos(x) + x)(X).jaxpr
    (x,) = j.invars
    x2 = Var(x.aval)
    env = {}
    out: list = []
    copy_eqns(j.eqns, env, out)
    assert out[0].invars == [x]      # not in env: itself
    env = {x: x2}
    out = []
    copy_eqns(j.eqns, env, out)
    assert out[0].invars == [x2] and x2 in out[1].invars
    for e, copy in zip(j.eqns, out):
        assert [env[v] for v in e.outvars] == copy.outvars
        assert not set(copy.outvars) & set(e.outvars)
