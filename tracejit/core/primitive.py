"""Primitive: one operation with all its rules registered together, and the registry of them.

Rules: abstract eval (avals -> avals, required), impl (NumPy reference, required), jvp,
transpose, batch (vmap) and DCE. Beside the rules a primitive *declares* what the compiler may
do with it — its fusion class, whether it is transcendental (cost model), the algebra the
simplifier uses, whether it has effects — and every table the compiler and backend consult is
derived from those declarations (the backend's lowerings are keyed by the primitive object, in
backend/llvm).
"""
from __future__ import annotations

from typing import Any, Callable

from .avals import ShapedArray
from .jaxpr import runs_jaxpr
from .trace import bind

registry: dict[str, Primitive] = {}

RULES = ("abstract_eval", "impl", "jvp", "transpose", "batch", "dce")

# Rules registered JAX's way (jax.interpreters.ad / batching / mlir), keyed by primitive: code
# written for JAX defines its own primitives (jax.extend.core.Primitive) and registers their
# rules here. The transformations consult these for a primitive without a rule of its own.
primitive_jvps: dict[Primitive, Callable] = {}
primitive_transposes: dict[Primitive, Callable] = {}
primitive_batchers: dict[Primitive, Callable] = {}
# lowerings of user primitives: a TracedLowering is traced and inlined before compilation
lowerings: dict[Primitive, Any] = {}


class TracedLowering:
    """A lowering given as a traceable function (JAX's `mlir.lower_fun`): the compiler inlines
    the jaxpr of `fun(*operands, **params)` in place of the primitive's equation."""

    def __init__(self, fun: Callable, multiple_results: bool):
        self.fun = fun
        self.multiple_results = multiple_results

    def __repr__(self) -> str:
        name = getattr(self.fun, "__name__", type(self.fun).__name__)
        return f"lower_fun({name}, multiple_results={self.multiple_results})"

# fusion classes: what a fusing compiler may do with an equation of the primitive
ELEMENTWISE = "elementwise"  # out[i] = f(operands[i]): computed inside a consumer's loop nest
INDEX_MAP = "index_map"      # out[i] = operand[g(i)]: fused as index arithmetic
REDUCTION = "reduction"      # a loop nest's root: reads fused operands, writes a smaller result


class Primitive:
    multiple_results = False

    def __init__(self, name: str, *, multiple_results: bool = False, fusion: str | None = None,
                 transcendental: bool = False, iterative: bool = False,
                 registered: bool = True):
        self.name = name
        self.multiple_results = multiple_results
        # declarations (see the module docstring); `cheap`: an index map worth recomputing in
        # every consumer (broadcast, iota) rather than materialising once
        self.fusion = fusion
        self.transcendental = transcendental
        self.cheap = False
        # an ELEMENTWISE op whose every element runs a loop until it converges (tens of steps
        # of divisions: the incomplete gamma and beta functions), ~100x a cheap op's time: the
        # cost models weigh its elements so (the backend's parallel_loops.work, the first
        # tier's runtime/tiering.run_ops)
        self.iterative = iterative
        # algebra for the simplifier: operand position -> the constants c with op(x, c) == x
        # bit for bit (for an integer x, for a float x); `involution`: op(op(x)) == x
        self.identities: dict[int, tuple[Any, Any]] = {}
        self.involution = False
        # a REDUCTION that folds with an associative operator (not argmax/argmin): one row of
        # it may be reduced on its own
        self.monoid = False
        # has an effect beyond its results (a host callback that prints or does I/O): the
        # compiler never drops, merges, folds, hoists or reorders its equations
        self.effectful = False
        # effectful for some params only (params -> bool; ffi_call with has_side_effect=True)
        self.effectful_if: Callable[[dict], bool] | None = None
        # each equation calls code outside tracejit (ffi_call's handler): as in XLA, the
        # compiler never runs one at compile time (folding), merges two equal ones (CSE) or
        # moves one out of its loop
        self.foreign = False
        # its abstract eval sets the outputs' varying manual axes itself (collectives, pvary);
        # otherwise they are the union of the operands' (JAX's standard vma rule)
        self.own_vma = False
        # how the printer shows the params (params -> the params to print, in order); None:
        # all of them, sorted by name
        self.pp_params: Callable[[dict], dict] | None = None
        # composite(*operands, **params): the primitive as lax operations, which the compiler
        # traces at an equation's types and inlines in its place before anything else
        # (compiler/lowerings.py), so they fuse with the program around them and the backend
        # needs no rule of its own (rng_bit_generator: XLA expands its RngBitGenerator so too)
        self.composite: Callable | None = None
        self._abstract_eval: Callable | None = None
        self.impl: Callable | None = None
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        # call and control-flow primitives split their primal and tangent work themselves
        self.linearize: Callable | None = None
        # dce(eqn, used_outputs) -> the equation computing only the used outputs (primitives
        # with sub-jaxprs drop carries, branch outputs and operands nothing needs)
        self.dce: Callable | None = None
        self.not_differentiable = False
        # user primitives (registered=False) stay out of the registry: names need not be unique
        # among them, and their rules live in the JAX-style tables above
        if not registered:
            return
        if name in registry:
            raise ValueError(f"primitive {name!r} registered twice")
        registry[name] = self

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any):
        return bind(self, *args, **params)

    def abstract_eval(self, *avals: ShapedArray, **params: Any) -> list[ShapedArray]:
        out = self._abstract_eval(*avals, **params)
        out = list(out) if self.multiple_results else [out]
        vma = [a.vma for a in avals if getattr(a, "vma", None)]
        # (JAX's standard rule: the operands' varying axes; a primitive running a jaxpr (jit,
        # control flow) has its outputs' types from the jaxpr, traced at the operands' types)
        if vma and not self.own_vma and not runs_jaxpr(params):
            union = frozenset().union(*vma)
            out = [o.update(vma=union) if isinstance(o, ShapedArray) else o for o in out]
        return out

    def has_rule(self, rule: str) -> bool:
        if rule == "abstract_eval":
            return self._abstract_eval is not None
        if rule == "jvp":
            return self.jvp is not None or self.not_differentiable
        return getattr(self, rule) is not None

    def def_abstract_eval(self, f: Callable) -> Callable:
        self._abstract_eval = f
        return f

    def def_impl(self, f: Callable) -> Callable:
        self.impl = f
        return f

    def def_jvp(self, f: Callable) -> Callable:
        self.jvp = f
        return f

    def def_transpose(self, f: Callable) -> Callable:
        self.transpose = f
        return f

    def def_batch(self, f: Callable) -> Callable:
        self.batch = f
        return f

    def def_linearize(self, f: Callable) -> Callable:
        self.linearize = f
        return f

    def def_dce(self, f: Callable) -> Callable:
        self.dce = f
        return f

    def def_composite(self, f: Callable) -> Callable:
        self.composite = f
        return f

    def def_not_differentiable(self) -> None:
        self.not_differentiable = True
