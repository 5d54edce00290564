"""The native executable: compiles a closed jaxpr through the LLVM backend and calls its entry
point with ctypes (which releases the GIL during the call). `__call__` is the dispatch fast path
of every jitted call: what can be worked out once (output recipes, pointer packers, constants'
addresses, the donation plan) is, so a call is a handful of allocations and one ctypes call."""
from __future__ import annotations

import ctypes
import functools
import hashlib
import struct
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ..backend.llvm import codegen, host_callback
from ..backend.llvm import jit_engine, lone_product
from ..compiler.fusion import element_op, fused_p, is_reduction
from ..compiler.passes import optimize
from ..compiler.rows import row_map_p
from ..core.array import Array
from ..core.config import config
from ..core.errors import check_fits
from ..core.jaxpr import ClosedJaxpr
from ..core.monitoring import (BACKEND_COMPILE_EVENT, CODEGEN_EVENT, JAXPR_TO_MLIR_MODULE_EVENT,
                               OPTIMIZE_EVENT, log_elapsed_time)
from ..lax.callback import callback_error
from . import disk_cache, kernel_cache, tiering
from .buffers import MIN_BYTES, SLAB_MAX_BYTES, Slab, address_of, pool, sole_owner
from .executable import Executable
from .interrupts import NativeSigint, deliver_interrupt, run_interruptibly

_PLACEHOLDER = "tracejit_entry"
_compile_lock = threading.Lock()
# The pointer arrays go in as packed `bytes` (ctypes passes a pointer to their data; the entry
# only reads them): packing is several times cheaper than filling a ctypes array.
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_U8 = np.dtype(np.uint8)
# the address of a fresh writable array (ndarray.ctypes.data costs several times more)
_addressof = ctypes.addressof
_from_buffer = ctypes.c_char.from_buffer
_memmove = ctypes.memmove
# a Python scalar argument's buffer, by the dtype its aval gives it: a ctypes object, made and
# its address read in ~0.12 us (np.array's, through `_from_buffer`: ~0.5 us). The C cast
# rounds a double to float as NumPy does; an int is in its type's range (jit's key checked it)
_SCALAR_CTYPES = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
                  np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
                  np.dtype(np.bool_): ctypes.c_bool}


class _Program(kernel_cache.Optimised):
    """A compiled program: its optimised IR (`module`, for as_text), its machine code, the
    entry point, and the libraries of the outlined kernels it calls (kernel_cache.py).
    Executables hold it; when the last one goes, so does the machine code. Code from O0's
    code generation (tiered compiles) is replaced by O3's (`_finish`, on tiering's thread);
    the O0 code stays `retired` here while the program lives: a call may be running it."""
    __slots__ = ("code", "entry", "kernels", "symbol", "final", "retired", "__weakref__")

    def __init__(self, optimised_ir: str | None, code: jit_engine.Code, symbol: str,
                 kernels: list, ir_text: str, final: bool):
        super().__init__(optimised_ir, ir_text)
        self.code, self.entry, self.kernels = code, _ENTRY(code.address(symbol)), kernels
        self.symbol, self.final = symbol, final
        self.retired: list[jit_engine.Code] = []


class _FirstCall:
    """A tiered program's entry until its first call returns: then its final code is begun
    (tiering.release), not beside that call; later calls call the entry itself, as before."""
    __slots__ = ("program", "entry")

    def __init__(self, program: _Program, entry):
        self.program, self.entry = weakref.ref(program), entry  # (no cycle: freed when dropped)

    def __call__(self, ins, out_ptrs, ws_address) -> None:
        try:
            self.entry(ins, out_ptrs, ws_address)
        finally:
            program = self.program()
            if program is not None:
                with _swap_lock:
                    if program.entry is self:
                        program.entry = self.entry
                tiering.release(program)


_swap_lock = threading.Lock()  # (a program's entry: its first call's end, its final code)


def _finish(program: _Program) -> None:
    """O3's code for a program compiled tiered, and for the kernels it calls: each kernel
    library's bound first (Library.finish), so the program's final code links to theirs. Code
    generation runs outside the compile lock (the caller's next compile waits for LLVM's own
    lock only, one module's code generation at most)."""
    for lib in program.kernels:
        lib.finish(_compile_lock)
    if not program.final:
        optimised_ir, code = disk_cache.finish(program.ir_text, program._optimised_ir)
        entry = _ENTRY(code.address(program.symbol))
        with _swap_lock:
            program.retired.append(program.code)
            program.code, program.entry, program.final = code, entry, True
            program._optimised_ir = optimised_ir


def _orphan(program: _Program):
    """What the thread does for a program dropped before its turn: with the disk cache on, store
    the final code of its modules still at O0 (as an untiered compile would have); else nothing.
    Holds their texts only, so the program and its code go when dropped."""
    if disk_cache.cache_dir() is None:
        return None
    texts = [(m.ir_text, m._optimised_ir) for m in (program, *program.kernels) if not m.final]
    return lambda: [disk_cache.finish(*t) for t in texts]


# IR text -> the program compiled from it, while some executable still holds it
_compiled: weakref.WeakValueDictionary[str, _Program] = weakref.WeakValueDictionary()


def _compile_cached(ir_text: str, name: str, kernels: dict[str, str],
                    tiered: bool = False, unoptimised: bool = False) -> _Program:
    """Identical programs (same IR) share machine code while both are alive: LLVM's O3 is most
    of compile time. So do identical outlined kernels of different programs (`kernels`, by
    symbol: their IR), compiled and bound before the program that calls them is loaded.
    `tiered`: code generation at O0 first where exact, O3's made after (runtime/tiering.py);
    `unoptimised`: of IR that O3 has not optimised either, where exact."""
    hit = _compiled.get(ir_text)
    if hit is not None:
        return hit
    # The on-disk cache's object code defines the entry by name, so the name is a function of
    # the program, the same in every process; one thread compiles a program at a time.
    def work() -> _Program:
        with _compile_lock:
            hit = _compiled.get(ir_text)
            if hit is None:
                entry = f"{name}_{hashlib.sha256(ir_text.encode()).hexdigest()[:20]}"
                libraries = kernel_cache.link(kernels, tiered, unoptimised)
                named = ir_text.replace(f'@"{_PLACEHOLDER}"', f'@"{entry}"')
                optimised_ir, code, final = disk_cache.compile_ir(named, tiered,
                                                                 unoptimised)
                hit = _compiled[ir_text] = _Program(optimised_ir, code, entry, libraries,
                                                    named, final)
                if not (final and all(lib.final for lib in libraries)) and \
                        config.tracejit_second_tier:
                    hit.entry = _FirstCall(hit, hit.entry)
                    tiering.submit(hit, _finish, _orphan(hit), held=True)
            return hit
    # LLVM holds the thread it runs on for seconds on a large program: not the main one
    return run_interruptibly(work)


def _lone_lanes() -> int | None:
    """The vector width of our gemm's routine here (None: the host has none)."""
    from ..backend.llvm import gemm
    return gemm.host_lanes()


class _LoneProgram(codegen.Program):
    """A lone product's Program (lone_product.py): no workspace, no aliases, no callbacks; it
    polls (Ctrl-C) where tiled, as linalg's code for it does. Its IR, the entry's, is built
    only where read (as_text): a library cache hit builds none."""

    def __init__(self, params: np.ndarray):
        self.name, self.kernels, self.workspace_bytes = _PLACEHOLDER, {}, 0
        self.aliases, self.callbacks = {}, []
        self.polls = bool(params[lone_product.TILES] > 1)

    @property
    def ir_text(self) -> str:
        return lone_product.ir_text(_lone_lanes())


class _LoneEntry(_Program):
    """The compiled entry every lone product's executable calls: final code (no tiers), kept
    for the process; its module is parsed from the entry's IR where read (as_text)."""
    __slots__ = ()

    @property
    def module(self):
        if self._module is None:
            self._module = jit_engine.parse(lone_product.ir_text(_lone_lanes()))
        return self._module


@functools.cache
def _lone_compiled() -> _LoneEntry:
    lanes = _lone_lanes()
    entry = _LoneEntry.__new__(_LoneEntry)
    kernel_cache.Optimised.__init__(entry, None, "")
    entry.code, entry.entry = None, _ENTRY(lone_product.address(lanes))
    entry.kernels, entry.symbol, entry.final, entry.retired = [], lone_product.symbol(lanes), \
        True, []
    return entry


def _fresh(shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> tuple:
    """(value, address, pool) of a new output buffer; large ones come from the pool."""
    if nbytes >= MIN_BYTES:
        return (*pool.empty(shape, dtype, nbytes), pool)
    value = np.empty(shape, dtype)
    return value, address_of(value) if nbytes else 0, None


def _frozen_empty(shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, int]:
    """(a new read-only buffer, its address): a native program writes it through the address,
    so it is frozen before the call."""
    value = np.empty(shape, dtype)
    address = _addressof(_from_buffer(value))
    value.setflags(write=False)
    return value, address


def _addressable(dtype: np.dtype) -> bool:
    """Whether the cheap address (`ctypes.c_char.from_buffer`) works for buffers of `dtype`:
    ml_dtypes' are outside the buffer protocol."""
    try:
        _addressof(_from_buffer(np.empty(1, dtype)))
    except (ValueError, TypeError):
        return False
    return True


class NativeExecutable(Executable):
    backend = "native"

    def __init__(self, closed: ClosedJaxpr, name: str = "jit_fn",
                 donated: Sequence[tuple[int, int]] = (), fun_name: str = "jit_fn"):
        super().__init__(closed)
        # JAX's compile events, with tracejit's two stages inside its jaxpr -> MLIR one
        with log_elapsed_time(JAXPR_TO_MLIR_MODULE_EVENT, fun_name):
            with log_elapsed_time(OPTIMIZE_EVENT, fun_name):
                jaxpr, consts = optimize(closed.jaxpr, closed.consts)
            # (one product on our gemm: the runtime's entry for it, no code to generate)
            self._params = lone_product.params(jaxpr, donated) if _lone_lanes() else None
            with log_elapsed_time(CODEGEN_EVENT, fun_name):
                self.program = codegen.generate(ClosedJaxpr(jaxpr, consts), _PLACEHOLDER,
                                                donated) if self._params is None else \
                    _LoneProgram(self._params)
        self.jaxpr = jaxpr
        self._consts = [np.ascontiguousarray(np.asarray(c)) for c in consts]
        if self._params is not None:
            with log_elapsed_time(BACKEND_COMPILE_EVENT, fun_name):  # (the event, as JAX's)
                self._compiled = _lone_compiled()
        else:
            lines = self.program.ir_text.count("\n") + sum(
                t.count("\n") for t in self.program.kernels.values())
            unoptimised = config.tracejit_tiered_compile and \
                tiering.unoptimised_pays(jaxpr, lines)
            tiered = unoptimised or (config.tracejit_tiered_compile and
                                     tiering.o0_pays(jaxpr, lines))
            with log_elapsed_time(BACKEND_COMPILE_EVENT, fun_name):
                self._compiled = _compile_cached(self.program.ir_text, name,
                                                 self.program.kernels, tiered, unoptimised)
        self._const_addresses = tuple(c.ctypes.data for c in self._consts)
        self._callbacks = bool(self.program.callbacks)
        if self._callbacks:
            # the ids live as long as this executable (and so its code's callers): registered
            # now, dropped when it is collected (a cleared jit cache leaves no entry behind)
            # (an ffi_call's record is made here too: its handler's instantiate stage runs)
            self._callback_ids, ids = host_callback.bind(self.program.callbacks)
            if ids:
                weakref.finalize(self, host_callback.TABLE.unregister, ids)
        # after the inputs: the callback slots' address (codegen.Program)
        self._tail = (self._callback_ids.ctypes.data,) if self._callbacks else ()
        # fresh pointer arrays per call (calls may run concurrently): consts and inputs (and
        # callback ids), outputs
        nins = len(self._consts) + len(jaxpr.invars) + len(self._tail)
        self._pack_inputs = struct.Struct(f"{nins}P").pack
        self._pack_outputs = struct.Struct(f"{len(self.out_avals)}P").pack
        self._recipes = [(a.shape, a.dtype, a.size * a.dtype.itemsize) for a in self.out_avals]
        self._aliases = sorted(self.program.aliases.items())  # (output index, input index)
        self._workspace_bytes = self.program.workspace_bytes
        self._params_address = None if self._params is None else self._params.ctypes.data
        # (before anything is allocated: JAX's out-of-memory error)
        check_fits([r[2] for r in self._recipes] + [self._workspace_bytes])

    def __call__(self, leaves: Sequence[Any]) -> list[Array]:
        addresses, keep = self._addresses(leaves)  # (keep: NumPy copies held through the call)
        if self._aliases:
            outs = self._donated_outputs(leaves, addresses)
        else:
            outs = [_fresh(*r) for r in self._recipes]
        ins = self._pack_inputs(*self._const_addresses, *addresses, *self._tail)
        out_ptrs = self._pack_outputs(*[o[1] for o in outs])
        nws = self._workspace_bytes
        # (a lone product's entry reads its parameters where a workspace would go)
        ws, ws_address = pool.aligned((nws,), _U8, nws) if nws else (None, self._params_address)
        if self.program.polls:  # a loop may run long: Ctrl-C stops it (runtime/interrupts.py)
            with NativeSigint() as sigint:
                self._compiled.entry(ins, out_ptrs, ws_address)
            if sigint.interrupted:
                for out in outs:  # a donated input the program had begun to overwrite is gone
                    if type(out[0]) is Array:
                        out[0]._take_buffer()
                if self._callbacks:  # (a callback's error there too: not the next call's)
                    host_callback.take_error()
                deliver_interrupt()
        else:
            self._compiled.entry(ins, out_ptrs, ws_address)
        if nws:
            pool.give_back(ws, ws_address)
        del keep  # (held through the call)
        if self._callbacks:
            exc = host_callback.take_error()
            if exc is not None:
                for out in outs:  # a donated input the program had begun to overwrite is gone
                    if type(out[0]) is Array:
                        out[0]._take_buffer()
                if not isinstance(exc, Exception):  # exit and Ctrl-C stay what they are
                    raise exc
                raise callback_error(exc) from exc
        results = []
        for out, aval in zip(outs, self.out_avals):
            if type(out[0]) is Array:  # a donated input: its buffer now holds this output
                out = out[0]._take_buffer()
            out[0].setflags(write=False)
            results.append(Array(out[0], aval, out[1], out[2]))
        return results

    def runners(self, single: bool) -> tuple[Callable[[Sequence[Any]], Any],
                                             Callable[[Sequence[Any]], Any]]:
        """`__call__` specialised for jit's dispatch fast path (its result: the only output
        itself if `single`), for Array arguments and for arguments among which NumPy arrays or
        Python scalars are (`_convert`'s, without the ~0.8 us of the AttributeError that
        finds them). For a program without callbacks, polling loops or a workspace whose
        outputs are below the pool's sizes, a call is the arguments' addresses, a buffer per
        output (from its `Slab` up to SLAB_MAX_BYTES, else a frozen np.empty), the native call
        and the Arrays: ~1.3 us less than `__call__` for `x + 1` (no `_fresh` tuples,
        np.empty, address look-up, setflags or general branches); with donated pairs
        (`_aliased_runner`) ~1 us less. Anything else is `__call__`."""
        call = self.__call__
        recipes = self._recipes
        lean = recipes and not (self._callbacks or self._workspace_bytes or self.program.polls
                                or self._params is not None) and all(
            0 < r[2] < MIN_BYTES and _addressable(r[1]) for r in recipes)
        if not lean:
            run = (lambda leaves: call(leaves)[0]) if single else call
            return run, run
        program, pack_in, pack_out = self._compiled, self._pack_inputs, self._pack_outputs
        consts, convert = self._const_addresses, self._convert
        takes = [Slab(*r).take if r[2] <= SLAB_MAX_BYTES else
                 functools.partial(_frozen_empty, r[0], r[1]) for r in recipes]
        if self._aliases:
            runs = (self._aliased_runner(takes, self._addresses),
                    self._aliased_runner(takes, convert))
            return tuple((lambda leaves, run=run: run(leaves)[0]) for run in runs) if single \
                else runs
        # (`keep`: the NumPy copies made for a call, held through it; `gather`: a closure's
        # constant, `_addresses` or, for arguments known to hold host values, `_convert`)
        if single and recipes[0][2] > SLAB_MAX_BYTES:
            aval, = self.out_avals
            take, = takes

            def fresh_runner(gather: Callable) -> Callable[[Sequence[Any]], Array]:
                def run_fresh(leaves: Sequence[Any]) -> Array:
                    addresses, keep = gather(leaves)
                    out, address = take()
                    program.entry(pack_in(*consts, *addresses), pack_out(address), None)
                    del keep
                    return Array(out, aval, address)
                return run_fresh
            return fresh_runner(self._addresses), fresh_runner(convert)
        if single:  # (one small output: its slab's list popped here, no calls)
            aval, = self.out_avals
            slab = takes[0].__self__
            free, refill = slab._free, slab.refill

            def one_runner(gather: Callable) -> Callable[[Sequence[Any]], Array]:
                def run_one(leaves: Sequence[Any]) -> Array:
                    addresses, keep = gather(leaves)
                    try:
                        out, address = free.pop()
                    except IndexError:
                        out, address = refill()
                    program.entry(pack_in(*consts, *addresses), pack_out(address), None)
                    del keep
                    return Array(out, aval, address)
                return run_one
            return one_runner(self._addresses), one_runner(convert)
        avals = self.out_avals

        def many_runner(gather: Callable) -> Callable[[Sequence[Any]], list[Array]]:
            def run(leaves: Sequence[Any]) -> list[Array]:
                addresses, keep = gather(leaves)
                outs, out_addresses = zip(*[take() for take in takes])
                program.entry(pack_in(*consts, *addresses), pack_out(*out_addresses), None)
                del keep
                return list(map(Array, outs, avals, out_addresses))
            return run
        return many_runner(self._addresses), many_runner(convert)

    def _aliased_runner(self, takes: list[Callable], gather: Callable
                        ) -> Callable[[Sequence[Any]], list[Array]]:
        """`runners`' call of a program with donated pairs (small outputs, none of `__call__`'s
        other steps), as `_donated_outputs` does it: an aliased output is written into its
        donated Array's buffer where that Array is the buffer's only user (taken from it
        before the call: with no callback or polling loop, nothing fails after the call
        begins), else into a fresh buffer of its own holding a copy of the argument (not a
        slab's, which no later donation could take: a chain of calls donating their results
        then copies once)."""
        program, pack_in, pack_out = self._compiled, self._pack_inputs, self._pack_outputs
        consts, avals = self._const_addresses, self.out_avals
        # per output: its donated argument's index (None: none) and its byte count
        pairs = dict(self._aliases)
        plan = [(take, None, 0) if j not in pairs else
                (functools.partial(_frozen_empty, recipe[0], recipe[1]), pairs[j], recipe[2])
                for j, (take, recipe) in enumerate(zip(takes, self._recipes))]

        def run(leaves: Sequence[Any]) -> list[Array]:
            addresses, keep = gather(leaves)
            outs = []
            for take, i, nbytes in plan:
                if i is not None:
                    x = leaves[i]
                    if type(x) is Array and sole_owner(x) is not None:
                        value, address, owner_pool = x._take_buffer()
                        value.setflags(write=False)
                        outs.append((value, address, owner_pool))
                        continue
                    value, address = take()
                    _memmove(address, addresses[i], nbytes)
                    addresses[i] = address
                    outs.append((value, address, None))
                    continue
                outs.append((*take(), None))
            program.entry(pack_in(*consts, *addresses), pack_out(*[o[1] for o in outs]), None)
            del keep
            return [Array(value, aval, address, owner_pool)
                    for (value, address, owner_pool), aval in zip(outs, avals)]
        return run

    def _addresses(self, leaves: Sequence[Any]) -> tuple[list[int], list[np.ndarray] | None]:
        """The arguments' addresses, and the NumPy copies made for them (None: none), which
        must outlive the call."""
        try:
            return [x._address or x.address for x in leaves], None
        except AttributeError:  # NumPy arrays or Python scalars among the arguments
            return self._convert(leaves)

    def _convert(self, leaves: Sequence[Any]) -> tuple[list[int], list[np.ndarray]]:
        addresses, keep = [], []
        for x, aval in zip(leaves, self.in_avals):
            t = type(x)
            if t is Array:
                addresses.append(x.address)
                continue
            if t is float or t is int or t is bool:  # (a Python scalar: the SDE rows' dt)
                scalar = _SCALAR_CTYPES.get(aval.dtype)
                if scalar is not None:
                    a = scalar(x)
                    address = _addressof(a)
                else:
                    a = np.array(x, aval.dtype)  # fresh and writable: its address cheaply
                    try:
                        address = _addressof(_from_buffer(a))
                    except ValueError:  # ml_dtypes' bfloat16 is outside the buffer protocol
                        address = a.ctypes.data
            else:
                a = np.ascontiguousarray(x, dtype=aval.dtype)
                try:  # (the cheap way where it is writable: ctypes.data costs ~0.5 us more)
                    address = _addressof(_from_buffer(a))
                except (TypeError, ValueError):  # read-only, bfloat16, or no bytes
                    address = a.ctypes.data
            keep.append(a)
            addresses.append(address)
        return addresses, keep

    def _donated_outputs(self, leaves: Sequence[Any], addresses: list[int]) -> list:
        """Outputs for a call with aliased pairs: a donated Array that is the only user of its
        buffer stands for its output (its buffer is taken after the call); otherwise (a NumPy
        argument, a buffer that a view or another Array shares) a private copy of the argument
        is both the input and the output."""
        outs: list[tuple | None] = [None] * len(self._recipes)
        for j, i in self._aliases:
            x = leaves[i]
            if type(x) is Array and sole_owner(x) is not None:
                outs[j] = (x, addresses[i], None)
                continue
            outs[j] = out = _fresh(*self._recipes[j])
            np.copyto(out[0], np.asarray(x), casting="unsafe")
            addresses[i] = out[1]
        return [o if o is not None else _fresh(*r) for o, r in zip(outs, self._recipes)]

    def alias_bytes(self) -> int:
        return sum(self._recipes[j][2] for j, _ in self._aliases)

    def temp_bytes(self) -> int:
        return self.program.workspace_bytes

    def as_text(self, dialect: str | None = None) -> str:
        if dialect in ("llvm", "llvm-ir"):  # the program, then the kernels' modules it calls
            return "\n".join([str(self._compiled.module)] + [str(lib.module)
                                                    for lib in self._compiled.kernels])
        if dialect == "asm":
            machine = jit_engine.create_target_machine()
            return "\n".join(machine.emit_assembly(m) for m in
                             [self._compiled.module] +
                             [lib.module for lib in self._compiled.kernels])
        kernels = _kernels(self.jaxpr)
        lines = [f"// tracejit native executable: {len(kernels)} fused kernels at top level, "
                 f"workspace {self.program.workspace_bytes} bytes", str(self.jaxpr)]
        for k, names in enumerate(kernels):
            lines.append(f"// kernel {k}: " + " -> ".join(names))
        return "\n".join(lines)


def _kernels(jaxpr) -> list[list[str]]:
    """The loop nests of the top level that fusion formed, as the primitive names they run:
    `fused` and `row_map` equations (by their bodies) and lone elementwise ops (threefry2x32
    too), index maps and reductions."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is fused_p or eqn.primitive is row_map_p:
            names = ["row_map"] if eqn.primitive is row_map_p else []
            for e in eqn.params["body"].jaxpr.eqns:
                inner = e.params["body"].jaxpr.eqns if e.primitive is fused_p else [e]
                names += [x.primitive.name for x in inner]
            out.append(names)
        elif element_op(eqn) or is_reduction(eqn):
            out.append([eqn.primitive.name])
    return out
