"""The primitive registry: every primitive has the rules and declarations its family needs, and
the tables the compiler and backend consult agree with those declarations."""
import re

import pytest

import tracejit  # noqa: F401  (registers every primitive)
from tracejit.backend.llvm import complex_ops, scalar_ops
from tracejit.backend.llvm import math as native_math
from tracejit.backend.llvm.codegen import has_lowering
from tracejit.backend.llvm.rules import (ELEMENT_TUPLES, FORWARDING, IN_PLACE, INDEX_MAPS,
                                         STRUCTURAL)
from tracejit.core.axis_env import NamedAxisPrimitive
from tracejit.core.primitive import ELEMENTWISE, INDEX_MAP, REDUCTION, registry

REQUIRED = ("abstract_eval", "impl")
# no operand to batch (iota), or only ever transposed, never batched (custom_lin)
NO_BATCH = {"iota", "iota_2x32_shape", "custom_lin"}
# made by compiler passes after every transformation has run: they need no transform rules
COMPILER_MADE = {"row_map", "fused"}
PRIMS = sorted(registry.values(), key=lambda p: p.name)
# collectives over named axes: the batch trace mapping the axis computes them as ordinary
# operations (lax/parallel.py), so none reaches the compiler
NAMED_AXIS = {p.name for p in PRIMS if isinstance(p, NamedAxisPrimitive)}


def test_collectives_are_the_named_axis_primitives():
    # (mpi_lanes_sendrecv, mpi_lanes_bcast: a ppermute's or pbroadcast's positions in one
    # process, stacked by the batch trace of those lanes for one MPI call, lax/processes.py)
    assert NAMED_AXIS == {"psum", "pmax", "pmin", "all_gather", "reduce_scatter", "ppermute",
                          "pbroadcast", "all_to_all", "axis_index", "pvary",
                          "mpi_lanes_sendrecv", "mpi_lanes_bcast"}


def test_registry_is_populated():
    for name in ("add", "exp", "reduce_sum", "broadcast_in_dim", "convert_element_type", "jit",
                 "threefry2x32", "row_map"):
        assert name in registry


@pytest.mark.parametrize("prim", PRIMS, ids=lambda p: p.name)
def test_every_primitive_has_its_rules(prim):
    missing = [r for r in REQUIRED if not prim.has_rule(r)]
    # `jit` compiles natively by default, with no fallback: a primitive without a lowering
    # would fail at a user's call (a composite's equations become those of the operations
    # computing it before the backend sees them: compiler/lowerings.py)
    if not has_lowering(prim) and prim.composite is None and prim.name not in NAMED_AXIS:
        missing.append("native lowering")
    if prim.name in COMPILER_MADE:
        pass
    elif not prim.has_rule("jvp"):
        missing.append("jvp (or def_not_differentiable)")
    if not prim.has_rule("batch") and prim.name not in NO_BATCH | COMPILER_MADE:
        missing.append("batch")
    assert not missing, f"{prim.name} lacks: {missing}"


@pytest.mark.parametrize("prim", PRIMS, ids=lambda p: p.name)
def test_fusion_class_matches_the_lowering(prim):
    """The fusion class a primitive declares is the lowering the backend has for it: the
    compiler fuses what the backend can compute element by element, and nothing else."""
    scalar = prim in scalar_ops.EMITTERS or prim in complex_ops.EMITTERS
    if prim in ELEMENT_TUPLES:  # several results at one element (the PRNG's hash, counters)
        assert prim.multiple_results and prim.fusion in (ELEMENTWISE, INDEX_MAP), prim
        assert not scalar and prim not in INDEX_MAPS and prim in STRUCTURAL, prim
    else:
        assert (prim.fusion == ELEMENTWISE) == scalar, prim
        assert (prim.fusion == INDEX_MAP) == (prim in INDEX_MAPS), prim
    if prim.fusion == REDUCTION:
        assert prim in STRUCTURAL, prim
    if prim.monoid:
        assert prim.fusion == REDUCTION, prim
    if prim.cheap:
        assert prim.fusion == INDEX_MAP, prim
    if prim.identities or prim.involution:  # the simplifier's rules need fusible operands
        assert prim.fusion in (ELEMENTWISE, INDEX_MAP), prim


def test_aliasing_classes_name_structural_rules():
    assert FORWARDING <= STRUCTURAL.keys()
    assert IN_PLACE.keys() <= STRUCTURAL.keys()


def test_math_polynomials_are_transcendental():
    """Every function with a row in math.py's ulp table that is a primitive counts as a
    transcendental in cost_analysis (the hand-kept list this replaced had drifted)."""
    rows = re.findall(r"^ {4}(\w+) +[\d.-]+ +[\d.-]+", native_math.__doc__, re.MULTILINE)
    assert len(rows) > 20
    prims = [registry[n] for n in rows if n in registry]
    assert len(prims) > 20
    assert [p.name for p in prims if not p.transcendental] == []
    assert not registry["add"].transcendental and registry["sqrt"].fusion == ELEMENTWISE


def test_linear_primitives_have_transpose_rules():
    linear = ("add", "sub", "mul", "div", "neg", "reduce_sum", "broadcast_in_dim", "reshape",
              "transpose", "squeeze", "rev", "concatenate", "pad", "slice", "cumsum",
              "select_n", "convert_element_type", "dot_general", "real", "imag", "complex",
              "conj", "jit", "cond", "scan", "checkpoint", "custom_lin", "dynamic_slice",
              "dynamic_update_slice", "gather", "scatter-add")
    assert [n for n in linear if registry[n].transpose is None] == []



def test_control_flow_primitives_have_dce_rules():
    """Control flow drops carries, branch outputs and operands nothing needs: each declares
    its DCE rule (the generic walk only prunes inside bodies)."""
    for name in ("cond", "while", "scan", "jit"):
        assert registry[name].dce is not None, name


@pytest.mark.parametrize("prim", [p for p in PRIMS if p.composite is not None],
                         ids=lambda p: p.name)
def test_a_composite_has_no_backend_rule(prim):
    """A composite is compiled one way only: as the operations it expands into."""
    assert not has_lowering(prim), prim
