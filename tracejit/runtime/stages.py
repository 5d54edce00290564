"""JAX's AOT stages: `jit(f).trace(...)` -> Traced -> `.lower()` -> Lowered -> `.compile()` ->
Compiled, each printable, with cost and memory analyses of the compiled program."""
from __future__ import annotations

import enum
import math
from typing import Any, NamedTuple

from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.jaxpr import ClosedJaxpr, Jaxpr
from ..core.pytree import tree_flatten, tree_unflatten
from ..core.config import config
from ..core.errors import no_execution_error
from ..core.trace import get_aval
from .executable import Executable
from ..core.global_array import GlobalArray
from .jit import (call_across_processes, compile_entry, execute, spans_processes,
                  without_unused_args)
from .sharded import lay_out, same_layout
from ..core.array import Array
from ..core.devices import default_device
from ..core.sharding import Mesh, SingleDeviceSharding
from ..core.trace import user_source_info


class CompilerEffortLevel(enum.Enum):
    """JAX's effort levels for compiler_options (XLA's optimization_level and
    memory_fitting_level), by value or name: CompilerEffortLevel("O2"). tracejit's LLVM
    pipeline has one level (O3); the enum is there for code that names them."""
    UNKNOWN = 0
    O0 = 9
    O1 = 19
    O2 = 29
    O3 = 39

    @classmethod
    def _missing_(cls, value: object) -> CompilerEffortLevel | None:
        return cls.__members__.get(value) if isinstance(value, str) else None


# ExecutableBuildOptions' settable fields in jaxlib (JAX passes these names to it, the rest to
# XLA's DebugOptions, whose fields are all named xla_*)
_BUILD_OPTIONS = frozenset({
    "exec_time_optimization_effort", "memory_fitting_effort", "memory_fitting_level",
    "optimization_level", "allow_spmd_sharding_propagation_to_output",
    "allow_spmd_sharding_propagation_to_parameters", "use_shardy_partitioner",
    "use_spmd_partitioning", "use_auto_spmd_partitioning", "num_replicas", "num_partitions",
    "fdo_profile"})


def check_compiler_options(options: Any) -> None:
    """jit's `compiler_options` (and Lowered.compile's) are XLA's: none means anything to
    tracejit's LLVM pipeline, so they are accepted and ignored, as a program written for JAX
    passes them (`{"xla_cpu_enable_fast_math": False}` runs there). A name that is neither an
    XLA debug option (all named xla_*; which of those XLA knows is not known here, so a
    misspelt one passes) nor a build option is refused with XLA's error. None and {} pass."""
    if options is None:
        return
    from ..core.errors import JaxRuntimeError
    for name in dict(options):
        if not (isinstance(name, str) and (name.startswith("xla_") or name in _BUILD_OPTIONS)):
            raise JaxRuntimeError(f"INVALID_ARGUMENT: No such compile option: '{name}'")


class ArgInfo:
    """What a compiled function expects for one argument leaf."""
    __slots__ = ("_aval", "donated")

    def __init__(self, aval: ShapedArray, donated: bool):
        self._aval = aval
        self.donated = donated

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)

    def __eq__(self, other) -> bool:
        return isinstance(other, ArgInfo) and (self._aval, self.donated) == (other._aval,
                                                                             other.donated)

    def __hash__(self) -> int:
        return hash((self._aval, self.donated))

    def __repr__(self) -> str:
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


class CompiledMemoryStats(NamedTuple):
    generated_code_size_in_bytes: int
    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0


def _nbytes(aval: ShapedArray) -> int:
    return aval.size * aval.dtype.itemsize


def cost_analysis(jaxpr: Jaxpr) -> dict[str, float]:
    """A static cost model: flops (one per element per arithmetic op, 2·M·N·K per dot),
    transcendentals, and bytes accessed (operands read + results written per equation)."""
    flops = transcendentals = bytes_accessed = 0.0
    for eqn in jaxpr.eqns:
        out_elems = sum(v.aval.size for v in eqn.outvars)
        name = eqn.primitive.name
        if name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            k = math.prod(eqn.invars[0].aval.shape[d] for d in lc)
            flops += 2.0 * out_elems * k
        elif eqn.primitive.transcendental:
            transcendentals += out_elems
            flops += out_elems
        elif name.startswith("reduce_"):
            flops += sum(v.aval.size for v in eqn.invars)
        else:
            flops += out_elems
        for sub in eqn.params.values():
            for j in (sub if isinstance(sub, tuple) else (sub,)):
                if isinstance(j, (ClosedJaxpr, Jaxpr)):
                    inner = cost_analysis(j.jaxpr if isinstance(j, ClosedJaxpr) else j)
                    trips = eqn.params.get("length", 1)
                    flops += trips * inner["flops"]
                    transcendentals += trips * inner["transcendentals"]
        bytes_accessed += sum(_nbytes(v.aval) for v in eqn.invars) + \
            sum(_nbytes(v.aval) for v in eqn.outvars)
    return {"flops": flops, "transcendentals": transcendentals,
            "bytes accessed": bytes_accessed}


class _Stage:
    """What every stage knows: the jitted function and its traced signature, and the device
    the arguments it was traced for bind it to (None: none; laid out over a mesh: the
    signature's own layout)."""

    def __init__(self, jitted, entry, device: Any = None):
        self._jitted = jitted
        self._entry = entry
        self._device = device

    @property
    def out_info(self):
        return tree_unflatten(self._entry.out_tree,
                              [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                               for a in self._entry.closed.out_avals])

    @property
    def args_info(self):
        infos = [ArgInfo(a, d) for a, d in zip(self._entry.in_avals, self._entry.donated)]
        return tree_unflatten(self._entry.in_tree, infos)

    @property
    def in_avals(self):
        """The arguments' types, as the (args, kwargs) tree (JAX's `Stage.in_avals`)."""
        return tree_unflatten(self._entry.in_tree, list(self._entry.in_avals))

    def cost_analysis(self) -> dict[str, float]:
        return cost_analysis(self._entry.closed.jaxpr)


class Traced(_Stage):
    @property
    def jaxpr(self) -> ClosedJaxpr:
        return self._entry.closed

    @property
    def fun_name(self) -> str:
        return self._jitted.fun_name

    def lower(self, **_) -> Lowered:
        return Lowered(self._jitted, self._entry, self._device)


class Lowered(_Stage):
    def as_text(self, dialect: str | None = None, **_) -> str:
        closed = self._entry.closed
        if not self._jitted.keep_unused:  # the program compile() builds: what it reads
            closed, _ = without_unused_args(closed)
        avals_in = ", ".join(a.str_short() for a in closed.in_avals)
        avals_out = ", ".join(a.str_short() for a in closed.out_avals)
        return (f"module @jit_{self._jitted.fun_name}  // ({avals_in}) -> ({avals_out})\n"
                f"{closed.jaxpr}\n")

    def compile(self, compiler_options: Any = None) -> Compiled:
        check_compiler_options(compiler_options)
        executable = compile_entry(self._entry, self._jitted.backend, self._jitted.keep_unused,
                                   self._jitted.split_outputs, self._jitted.fun_name)
        return Compiled(self._jitted, self._entry, executable, self._device)


class Compiled(_Stage):
    def __init__(self, jitted, entry, executable: Executable, device: Any = None):
        super().__init__(jitted, entry, device)
        self._executable = executable
        # what its results are committed to where no mesh lays them out (JAX's compiled
        # program keeps the placement it was lowered for)
        self._committed = [SingleDeviceSharding(device)] * len(entry.closed.out_avals) \
            if device is not None and entry.laid_out is None else None
        # where an argument not laid out over a mesh must be, if committed
        self._default = SingleDeviceSharding(device if device is not None else
                                             default_device())

    def as_text(self, dialect: str | None = None) -> str:
        return self._executable.as_text() if dialect is None else \
            self._executable.as_text(dialect=dialect)

    def memory_analysis(self) -> CompiledMemoryStats:
        jaxpr = self._entry.closed.jaxpr
        arg_bytes = sum(_nbytes(a) for a in self._entry.in_avals)
        out_bytes = sum(_nbytes(v.aval) for v in jaxpr.outvars)
        temp = self._executable.temp_bytes()
        return CompiledMemoryStats(generated_code_size_in_bytes=0,
                                   argument_size_in_bytes=arg_bytes,
                                   output_size_in_bytes=out_bytes,
                                   alias_size_in_bytes=self._executable.alias_bytes(),
                                   temp_size_in_bytes=temp)

    def __call__(self, *args, **kwargs):
        entry = self._entry
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != entry.in_tree:
            raise TypeError(
                "Function compiled with input pytree does not match the input pytree it was "
                f"called with: compiled for {entry.in_tree}, called with {in_tree}. Call the "
                "compiled function with the non-static arguments only, structured as at "
                "lowering.")
        mismatches = []
        for name, want, x in zip(entry.arg_names, entry.in_avals, leaves):
            got = x.aval if isinstance(x, GlobalArray) else get_aval(x)
            if got.shape != want.shape or got.dtype != want.dtype:
                mismatches.append(f"Argument '{name}' compiled with {want.dtype.name}"
                                  f"{list(want.shape)} and called with {got.dtype.name}"
                                  f"{list(got.shape)}")
        if mismatches:
            raise TypeError("Argument types differ from the types for which this computation "
                            "was compiled. The mismatches are:\n" + "\n".join(mismatches))
        if spans_processes(args, kwargs, self._jitted.in_shardings):
            # (each process runs its block of the partitioned program, as jit's call does:
            # this executable is the whole program, for arrays this process holds whole)
            return call_across_processes(self._jitted, args, kwargs)
        if config.read("jax_no_execution"):
            raise no_execution_error(f"jit({self._jitted.fun_name})")
        if any(getattr(x, "_sharding", None) is not None for x in leaves):
            self._check_shardings(leaves)
        outs = execute(entry, self._executable, leaves)
        if entry.mark is not None:  # (laid out over a mesh, or split over processes: as jit)
            outs = entry.mark(outs, leaves)
        if self._committed is not None:
            outs = lay_out(outs, self._committed, leaves)
        return tree_unflatten(entry.out_tree, outs)

    def _check_shardings(self, leaves: list) -> None:
        """JAX's error for an argument placed otherwise than the program was compiled for: a
        committed array (put on a device or laid out over a mesh) must be laid out as the
        argument lowered was, over the same devices in the same order (an uncommitted one is
        moved). Where lowering left an argument's layout to the partitioner (an unplaced one in
        a program laid out over a mesh), any is taken."""
        entry = self._entry
        required = entry.laid_out
        default = self._default
        errors = []
        for i in self._jitted._reads(entry):
            x = leaves[i]
            own = x._sharding if type(x) is Array else None
            want = default if required is None else required[i]
            if own is None or want is None or own is want or own == want or \
                    _equivalent(own, want, x.ndim):
                continue
            shape = f"{x.dtype.name}[{','.join(map(str, x.shape))}]"
            errors.append(f"Argument {entry.arg_names[i]} with shape {shape}:\n"
                          f"  Passed sharding: {own}\n  Required sharding: {want}")
        if errors:
            count = f"the {len(errors)} mismatches" if len(errors) < 5 else \
                f"5 mismatches out of {len(errors)}"
            where = user_source_info()
            at = f" at {where}" if where is not None else ""
            raise ValueError(
                "Computation was compiled for input shardings that disagree with the shardings "
                f"of arguments passed to it. Here are {count}:\n" + "\n".join(errors[:5]) +
                f"\n\nThe compiled `{self._jitted.fun_name}` called{at} runs on the devices "
                "and layouts its arguments had when it was lowered; an argument committed "
                "elsewhere (`jax.device_put(x, device)`, or laid out over a mesh) is not moved. "
                "Lower it again for these arguments (or call the jitted function itself, which "
                "compiles for each layout), or put the argument where the program expects it "
                "(`jax.device_put(x, sharding)`).")


def _equivalent(a: Any, b: Any, ndim: int) -> bool:
    """JAX's `Sharding.is_equivalent_to`: the same devices in the same order, laid out alike."""
    return _device_ids(a) == _device_ids(b) and same_layout(a, b, ndim)


def _device_ids(s: Any) -> list:
    if type(s) is SingleDeviceSharding:
        return [s._device.id]
    return [d.id for d in s.mesh.devices.flat] if isinstance(s.mesh, Mesh) else []
