"""jax.debug: print, callback and breakpoint inside traced and compiled code. User-facing: each
stages one `debug_callback` equation (lax/callback.py) that the interpreter runs, or that native
code calls back into Python for, with the concrete values."""
from __future__ import annotations

import cmd
import inspect
import os
import string
import sys
import threading
import traceback
from typing import Any, Callable

import numpy as np

from .core.pytree import tree_flatten
from .core.trace import Tracer, get_aval
from .lax.callback import FlatCallback, debug_callback_p, debug_print_p

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "log", "print",
           "visualize_array_sharding", "visualize_sharding"]

_print = print  # (this module's `print` is jax.debug.print)


class DebugEffect:
    """The effect of a debug callback: it is kept even though it returns nothing."""
    __str__ = __repr__ = lambda self: "Debug"


class OrderedDebugEffect(DebugEffect):
    """A debug callback that runs in program order with the other ordered effects."""
    __str__ = __repr__ = lambda self: "OrderedDebug"


debug_effect, ordered_debug_effect = DebugEffect(), OrderedDebugEffect()


def _split_args(args: tuple, kwargs: dict) -> tuple:
    """(tree, array leaves, static leaves): leaves that are not arrays (strings, None, ...)
    stay Python values, put back at run time (JAX's rule)."""
    flat, in_tree = tree_flatten((args, kwargs))
    dyn, static = [], []
    for i, x in enumerate(flat):
        try:
            get_aval(x)
            dyn.append(x)
        except TypeError:
            static.append((i, x))
    return in_tree, dyn, tuple(static)


def _bind(fn: Callable, args: tuple, kwargs: dict, ordered: bool) -> None:
    in_tree, dyn, static = _split_args(args, kwargs)
    debug_callback_p.bind(*dyn, callback=FlatCallback(fn, in_tree, static),
                          effect=ordered_debug_effect if ordered else debug_effect,
                          partitioned=False)


def _now_or_later(name: str, run: Callable, first: Any, args: tuple, kwargs: dict
                  ) -> Callable | None:
    """JAX's one-call and two-call forms: `run(first, *args, **kwargs)` now when `first` is
    given, else `run` itself for the second call (which then takes every argument)."""
    if first is not None:
        run(first, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"{name} received unexpected arguments in the two-call form: "
                        f"args={args!r} kwargs={kwargs!r}")
    return run


def callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Call `callback(*args, **kwargs)` with concrete values wherever this runs: eagerly, under
    jit (native code calls back into Python), vmap (once per batch element), grad (on the
    primal values) and in every iteration of scan/while_loop. Its return value is ignored.
    `debug.callback(ordered=True)(fn, *args)` is the two-call form."""
    def _callback(fn: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                            f"object of type {type(fn)}")
        _bind(fn, c_args, c_kwargs, ordered)

    return _now_or_later("debug_callback", _callback, callback, args, kwargs)


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments at trace time (no value is formatted)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [a for i, a in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead "
                "should pass in a regular string.")


def print(fmt: str | None = None, *args: Any, ordered: bool = False,  # noqa: A001 - JAX's
          partitioned: bool = False, skip_format_check: bool = False, _use_logging: bool = False,
          **kwargs: Any) -> Callable[..., None] | None:
    """Print `fmt.format(*args, **kwargs)` with the concrete values when the program runs (not
    when it is traced), with NumPy's print options of the call site. Not an f-string: formatting
    is delayed. Without placeholders the arguments follow the text, space separated.
    `debug.print(ordered=True)(fmt, ...)` is the two-call form."""
    def _debug_print(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
        if not skip_format_check:
            _FormatChecker().format(fmt, *c_args, **c_kwargs)
        has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
        in_tree, dyn, static = _split_args(c_args, c_kwargs)
        debug_print_p.bind(*dyn, fmt=fmt, has_placeholders=has_placeholders, in_tree=in_tree,
                           logging_record=__name__ if _use_logging else None,
                           np_printoptions=tuple(np.get_printoptions().items()),
                           ordered=ordered, partitioned=partitioned, static_args=static)

    return _now_or_later("debug_print", _debug_print, fmt, args, kwargs)


def log(fmt: str | None = None, *args: Any, **kwargs: Any) -> Callable[..., None] | None:
    """`print` to the `tracejit.debug` logger (INFO) instead of stdout."""
    return print(fmt, *args, _use_logging=True, **kwargs)


# --- breakpoint -----------------------------------------------------------------------------

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_debug_lock = threading.Lock()


class DebuggerFrame:
    """A Python frame as the debugger shows it: locals (traced arrays replaced by their concrete
    values at run time), source and position."""

    def __init__(self, filename: str, locals: dict, source: list[str], lineno: int,
                 offset: int | None):
        self.filename, self.locals, self.source = filename, locals, source
        self.lineno, self.offset = lineno, offset

    @classmethod
    def from_frameinfo(cls, info: inspect.FrameInfo) -> DebuggerFrame:
        try:
            lines, start = inspect.getsourcelines(info.frame)
            source = "".join(lines).split("\n")
            offset = info.lineno - max(start, 1)
            if offset >= len(source):
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), source, info.lineno, offset)


class CliDebugger(cmd.Cmd):
    """JAX's text debugger (`jdb`): evaluate expressions on a frame's concrete values, walk the
    frames, list source; `c` continues the program, `q` exits it."""
    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames, self.frame_index = frames, 0
        self.intro = "Entering jdb:"

    def evaluate(self, expr: str) -> Any:
        return eval(expr, {}, dict(self.frames[self.frame_index].locals))

    def _error(self) -> None:
        msg = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
        _print("***", msg, file=self.stdout)

    def default(self, line):
        self.do_p(line)

    def do_p(self, arg):
        """p expression: evaluate and print the value of an expression"""
        try:
            _print(repr(self.evaluate(arg)), file=self.stdout)
        except Exception:
            self._error()

    def do_pp(self, arg):
        """pp expression: evaluate and pretty-print the value of an expression"""
        import pprint  # (here: ~1 ms of `import tracejit` otherwise)
        try:
            _print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
        except Exception:
            self._error()

    def print_context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        out = [f"> {frame.filename}({frame.lineno})"]
        for i, line in enumerate(frame.source):
            if frame.offset is not None and frame.offset - 1 - num_lines <= i <= \
                    frame.offset + num_lines:
                out.append(f"->  {line}" if i == frame.offset else f"    {line}")
        _print("\n".join(out), file=self.stdout)

    def do_up(self, arg):
        """u(p): move up a stack frame"""
        if self.frame_index == len(self.frames) - 1:
            _print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self.print_context()
    do_u = do_up

    def do_down(self, arg):
        """d(own): move down a stack frame"""
        if self.frame_index == 0:
            _print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self.print_context()
    do_d = do_down

    def do_list(self, arg):
        """l(ist): list source code around the current line"""
        self.print_context(num_lines=5)
    do_l = do_list

    def do_where(self, arg):
        """w(here): a stack trace, the most recent frame at the bottom"""
        out = ["Traceback:"]
        for frame in self.frames[::-1]:
            out.append(f'  File "{frame.filename}", line {frame.lineno}')
            out.append("    <no source>" if frame.offset is None else
                       f"    {frame.source[frame.offset].strip()}")
        _print("\n".join(out), file=self.stdout)
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ont(inue)): continue the program's execution"""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit): exit the program"""
        sys.exit(0)
    do_q = do_EOF = do_exit = do_quit

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                break
            except KeyboardInterrupt:
                _print("--KeyboardInterrupt--", file=self.stdout)


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
    """Enter the `jdb` debugger when the program reaches this point, with the concrete values of
    the traced arrays in the caller's frames (JAX's default CLI debugger: p, pp, u, d, l, w, c,
    q). Frames of tracejit itself are left out unless `filter_frames=False`. With `token`, the
    breakpoint runs once `token` is computed and returns it (keep using the result)."""
    if backend not in (None, "cli"):
        raise ValueError(f"Debugger backend {backend!r} is not available; use 'cli'.")
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = inspect.stack()[1:]
    if filter_frames:
        infos = [i for i in infos if not os.path.abspath(i.filename).startswith(_PACKAGE)]
    frames = [DebuggerFrame.from_frameinfo(i) for i in infos]
    if num_frames is not None:
        frames = frames[:num_frames]
    # traced arrays become the callback's operands; every other local stays as it is
    slots = [(f, name) for f in frames for name, v in f.locals.items() if isinstance(v, Tracer)]
    traced = [f.locals[name] for f, name in slots]

    def enter(*values):
        for (f, name), v in zip(slots, values):
            f.locals[name] = v
        with _debug_lock:
            CliDebugger(frames, **kwargs).run()

    if token is None:
        debug_callback_p.bind(*traced, callback=FlatCallback(enter, tree_flatten((traced, {}))[1]),
                              effect=ordered_debug_effect if ordered else debug_effect,
                              partitioned=False)
        return None
    from .callback import pure_callback

    def enter_then_return(tok, *values):
        enter(*values)
        return tok
    return pure_callback(enter_then_return, token, token, *traced)


# --- sharding --------------------------------------------------------------------------------

def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
    """Call `callback` with the sharding of each array in the pytree `value`: at once for
    arrays; for values being traced (inside jit) once, when the function is traced, with the
    layout its type carries over Explicit mesh axes (a NamedSharding), else the single-device
    sharding (JAX calls it at compile time with XLA's choice, which for a value laid out over
    Auto axes is that layout: not known here until the program is partitioned)."""
    from .core.devices import default_device
    from .core.sharding import SingleDeviceSharding
    for leaf in tree_flatten(value)[0]:
        if isinstance(leaf, Tracer):
            typed = get_aval(leaf)._sharding  # (None: no Explicit layout in the type)
            callback(typed if typed is not None else SingleDeviceSharding(default_device()))
        else:
            callback(leaf.sharding)


def _chunk_index(size: int, index: Any) -> int:
    if isinstance(index, int):
        return index
    if index.start is None and index.stop is None:
        return 0
    return index.start // (index.stop - index.start)


def _chunk_extent(size: int, index: Any) -> int:
    if isinstance(index, int):
        return 1
    return size if index.stop is None else index.stop - index.start


def visualize_sharding(shape, sharding: Any = None, *, use_color: bool = True, scale: float = 1.,
                       min_width: int = 9, max_width: int = 80, color_map: Any = None) -> None:
    """Draw which devices hold which block of an array of `shape` (1 or 2 dimensions) laid out
    by `sharding`, as JAX's table without colour (what it prints when stdout is no terminal):
    one cell per block, naming the devices that hold it. (A table wider than `max_width` is
    printed whole; JAX's rich console squeezes its columns.)"""
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    if sharding is None:
        from .core.devices import default_device
        from .core.sharding import SingleDeviceSharding
        sharding = SingleDeviceSharding(default_device())
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    kind = next(iter(sharding.device_set)).platform.upper()
    holders: dict = {}   # (row, column) of a block -> ids of the devices holding it
    sizes: dict = {}     # (row, column) -> (height or None for 1-D, width) as fractions
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        if len(shape) == 2:
            cell = tuple(_chunk_index(n, i) for n, i in zip(shape, index))
            sizes[cell] = (_chunk_extent(shape[0], index[0]) / shape[0],
                           _chunk_extent(shape[1], index[1]) / shape[1])
        else:
            cell = (0, _chunk_index(shape[0], index[0]))
            sizes[cell] = (None, _chunk_extent(shape[0], index[0]) / shape[0])
        holders.setdefault(cell, set()).add(device.id)
    rows = max(r for r, _ in holders) + 1
    cols = max(c for _, c in holders) + 1
    cells = {}  # (row, column) -> the cell's lines, padded as JAX pads them
    for (r, c), ids in holders.items():
        entry = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        height_frac, width_frac = sizes[r, c]
        width = min(max(int(width_frac * base_width * 2.5), min_width), max_width)
        height = 1 if height_frac is None else int(height_frac * base_height)
        left, extra = divmod(width - len(entry) - 2, 2)
        right = left + extra
        top, extra = divmod(height - 2, 2)
        bottom = top + extra
        left, right, top, bottom = (max(p, 0) for p in (left, right, top, bottom))
        inner = left + len(entry) + right
        cells[r, c] = ([" " * inner] * top + [" " * left + entry + " " * right] +
                       [" " * inner] * bottom)
    widths = [max(len(cells[r, c][0]) for r in range(rows)) for c in range(cols)]
    lines = ["┌" + "┬".join("─" * w for w in widths) + "┐"]
    for r in range(rows):
        height = max(len(cells[r, c]) for c in range(cols))
        for k in range(height):
            parts = []
            for c in range(cols):
                text = cells[r, c][k] if k < len(cells[r, c]) else ""
                pad = widths[c] - len(text)
                parts.append(" " * (pad // 2) + text + " " * (pad - pad // 2))
            lines.append("│" + "│".join(parts) + "│")
        if r < rows - 1:
            lines.append("├" + "┼".join("─" * w for w in widths) + "┤")
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    _print("\n".join(lines))


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """Draw which devices hold which block of `arr` (see `visualize_sharding`)."""
    inspect_array_sharding(
        arr, callback=lambda sharding: visualize_sharding(get_aval(arr).shape, sharding,
                                                          **kwargs))
