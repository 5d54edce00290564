"""The process-wide cache of outlined kernels' machine code, beneath native.py: codegen puts each
outlined kernel in a module of its own named by a hash of its IR (codegen.kernel_module); a
program's kernels that no live program has compiled yet are linked into one module, compiled
(or loaded from the on-disk cache, keyed by that module's IR like any program) and bound by
name before the program itself is loaded, so a kernel is compiled by LLVM once per process while
some program calls it or it is among the RECENT libraries last compiled or used (a jit of a
lambda made and dropped in a loop leaves no program behind). Programs hold their kernels' code;
when the last one goes and the library has left the recent ones (or clear_caches empties them),
so does the code, and a later program compiles the kernel again."""
from __future__ import annotations

import collections
import threading
import weakref

from ..backend.llvm import jit_engine
from . import disk_cache

# compiled: kernels whose machine code LLVM generated; loaded: read from the on-disk cache;
# reused: found compiled in this process (a program linking to another program's kernel)
stats: collections.Counter[str] = collections.Counter()


class Optimised:
    """Compiled code's optimised IR: kept as text, parsed into `module` when first read (only
    as_text reads it; parsing it on every compile cost ~1 ms of each first call). None while
    a first tier's code runs from IR that O3 has not optimised yet (disk_cache.compile_ir)."""
    __slots__ = ("_module", "_optimised_ir", "ir_text")

    def __init__(self, optimised_ir: str | None, ir_text: str):
        self._optimised_ir, self._module, self.ir_text = optimised_ir, None, ir_text

    @property
    def module(self):
        """The optimised module (parsing canonicalises attributes: reads as a cache hit's);
        O3's optimisation made here if the final code's has not been yet (the same text)."""
        if self._module is None:
            if self._optimised_ir is None:
                self._optimised_ir = disk_cache.optimised_text(self.ir_text)
            self._module = jit_engine.parse(self._optimised_ir)
        return self._module


class Library(Optimised):
    """The machine code of kernels compiled together, with their optimised module (as_text).
    Code generated at O0 (disk_cache.compile_ir's `tiered`) is `final` once `finish` has put
    O3's code in its place; the O0 code stays `retired` here while the library lives: a
    program linked to it may be running it."""
    __slots__ = ("code", "symbols", "final", "retired", "__weakref__")

    def __init__(self, optimised_ir: str | None, code: jit_engine.Code, symbols: list[str],
                 ir_text: str, final: bool):
        super().__init__(optimised_ir, ir_text)
        self.code, self.symbols, self.final = code, symbols, final
        self.retired: list[jit_engine.Code] = []

    def finish(self, lock) -> None:
        """Generate the final code (outside `lock`: the caller's compile lock), then bind the
        symbols to it under `lock`: programs compiled from then on link to it."""
        if self.final:
            return
        self._optimised_ir, code = disk_cache.finish(self.ir_text, self._optimised_ir)
        with lock:
            jit_engine.bind(code, self.symbols)
            self.retired.append(self.code)
            self.code, self.final = code, True


# symbol -> the live library defining it (and bound to its name)
_live: weakref.WeakValueDictionary[str, Library] = weakref.WeakValueDictionary()
# the libraries last compiled or used, most recent last, kept alive without a program
RECENT = 64
_recent: collections.OrderedDict[int, Library] = collections.OrderedDict()
_recent_lock = threading.Lock()  # (clear_caches may run while another thread compiles)


def clear() -> None:
    """Let go of the recent libraries (clear_caches): each is freed with its last program."""
    with _recent_lock:
        _recent.clear()


def _used(lib: Library) -> None:
    with _recent_lock:
        _recent[id(lib)] = lib
        _recent.move_to_end(id(lib))
        while len(_recent) > RECENT:
            _recent.popitem(last=False)


def link(kernels: dict[str, str], tiered: bool = False, unoptimised: bool = False
         ) -> list[Library]:
    """The libraries defining `kernels` (symbol -> module IR, as codegen.Program has them),
    compiling those no live library defines (`tiered`, `unoptimised`: see
    disk_cache.compile_ir); every
    symbol is bound when this returns. The caller holds them as long as its code may call them,
    and serialises calls (native.py's compile lock): a name is rebound only when no live code
    may link to its earlier binding (code already linked keeps its addresses: Library.finish
    rebinds a live library's names, its O0 code kept while the library lives)."""
    found: dict[int, Library] = {}
    missing = []
    for symbol in kernels:
        lib = _live.get(symbol)
        if lib is None:
            missing.append(symbol)
        else:
            found[id(lib)] = lib
            stats["reused"] += 1
    if missing:
        hits = disk_cache.stats["hits"]
        ir_text = jit_engine.link_text([kernels[s] for s in sorted(missing)])
        optimised_ir, code, final = disk_cache.compile_ir(ir_text, tiered, unoptimised)
        stats["loaded" if disk_cache.stats["hits"] > hits else "compiled"] += len(missing)
        jit_engine.bind(code, missing)
        lib = Library(optimised_ir, code, missing, ir_text, final)
        for symbol in missing:
            _live[symbol] = lib
        found[id(lib)] = lib
    for lib in found.values():
        _used(lib)
    return list(found.values())
