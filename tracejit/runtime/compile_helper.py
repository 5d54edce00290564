"""Beside tiering.py: a program's final code made in a helper process (this file, run as a script:
it imports llvmlite alone, and backend/llvm_setup.py by path) -- O3's code generation of its
optimised IR (`object_code`), and, where its first tier skipped it, O3's optimisation first
(`optimised_code`) -- so that the final code of one program is made on the other core while
this process compiles the next without waiting for llvmlite's one process-wide lock (each LLVM
call holds it: a program's O3 optimisation and code generation on tiering's thread, 5-300 ms,
held up a new program's whole compile behind it). The helper returns the object code (and the
optimised IR), which this process loads as it loads the disk cache's (jit_engine.load_object).

The same optimised IR and object code as in this process: the helper optimises with
llvm_setup.optimize (jit_engine.optimize is that function), given the text's inlined lines and
this process's huge-function limit, for its host only where that is this process's (the pass
builder's target machine is the host's); it parses the text as jit_engine.parse does and
generates it with a target machine made as llvm_setup.create_target_machine(3) makes it; a
target machine's own emission gives MCJIT's bytes (tests/test_compile_helper.py compares them).
Where the helper cannot start, dies, refuses, or answers anything but well-formed object code
(object_code.check), the caller optimises and generates the code in this process as before
(None; `stats` counts it), and where it failed the process stops using the helper.

One helper per process, started by the first request (never by a forked child of this process:
the child closes the parent's pipes and starts one of its own if it asks). It exits when its
input closes: this process's exit (`close`, or the kernel closing the pipe on any death) or
fork-child's close. It ignores SIGINT: a Ctrl-C meant for the user's program reaches the whole
process group, and the program may go on."""
from __future__ import annotations

import collections
import os
import select
import struct
import subprocess
import sys
import threading

_LENGTH = struct.Struct("<Q")
_CODE, _OPTIMISE = b"c", b"o"  # a request's first byte: object_code's, optimised_code's
_LINES = struct.Struct("<QQ")  # (an _OPTIMISE request's: its text_lines, HUGE_FUNCTION_LINES)
_OK, _ERROR = b"o", b"e"
_MAX_REPLY = 1 << 30  # (bounds what a garbled length would have this process read)

# requests: sent to the helper; objects: object code it returned (optimised: with the optimised
# IR it made of it); fallbacks: requests made in this process instead (no helper, it failed, or
# it refused); starts: helpers started
stats: collections.Counter[str] = collections.Counter()

_lock = threading.Lock()  # one request at a time (tiering's one thread, a `wait`'s caller)
_process: subprocess.Popen | None = None
_failed = False  # the helper could not start, or died: this process generates in place
_no_start = False  # (the exit: a helper not yet running is not started)


def object_code(optimised_ir: str, target: tuple[str, str, str, str]) -> bytes | None:
    """The object code O3's code generation makes of `optimised_ir` (a module as
    jit_engine.optimize printed it) for `target` = (triple, data layout, CPU name, features),
    from the helper process; None where the caller must generate it itself."""
    with _lock:
        payload = _request(_CODE + optimised_ir.encode(), target)
        return payload if payload is not None and _checked(payload) else None


def optimised_code(ir_text: str, text_lines: int,
                   target: tuple[str, str, str, str]) -> tuple[str, bytes] | None:
    """(optimised IR, object code) of the module `ir_text`, from the helper process: the text
    llvm_setup.optimize leaves of it (`text_lines`: jit_engine.inlined_lines of it), printed,
    and O3's code generation of that text, as `object_code`; None where the caller must make
    both itself (where the helper's host is not `target`'s, its optimisation could differ)."""
    from ..backend import llvm_setup
    request = _OPTIMISE + _LINES.pack(text_lines, llvm_setup.HUGE_FUNCTION_LINES) + \
        ir_text.encode()
    with _lock:
        payload = _request(request, target)
        if payload is None:
            return None
        size = _LENGTH.unpack_from(payload)[0] if len(payload) >= _LENGTH.size else -1
        text, obj = payload[_LENGTH.size:_LENGTH.size + size], payload[_LENGTH.size + size:]
        if len(text) != size:
            _fail()
            return None
        if not _checked(obj):
            return None
        try:
            text = text.decode()
        except UnicodeDecodeError:
            _fail()
            return None
        stats["optimised"] += 1
        return text, obj


def _request(request: bytes, target: tuple[str, str, str, str]) -> bytes | None:
    """(Under `_lock`.) The helper's answer to `request` (started if need be), or None: no
    helper (it failed before, or it would be started at the exit), it failed now (this process
    uses none from now on), or it refused the request (its LLVM's error, which the caller's
    own compile will give again)."""
    if _failed or (_no_start and _process is None):
        stats["fallbacks"] += 1
        return None
    try:
        helper = _process or _start(target)
        _send(helper.stdin, request)
        status = _read(helper.stdout, 1)
        size = _LENGTH.unpack(_read(helper.stdout, _LENGTH.size))[0]
        if size > _MAX_REPLY:
            raise ValueError("a garbled reply")
        payload = _read(helper.stdout, size)
    except (OSError, EOFError, ValueError):
        _fail()
        return None
    stats["requests"] += 1
    if status != _OK:
        stats["fallbacks"] += 1
        return None
    return payload


def _checked(obj: bytes) -> bool:
    """(Under `_lock`.) Whether the helper's `obj` is well-formed ELF (before the linker sees
    it); if not, this process uses no helper from now on."""
    from .object_code import BadObject, check  # (not at the top: the helper runs this file)
    try:
        check(obj, ())
    except BadObject:
        _fail()
        return False
    stats["objects"] += 1
    return True


def _fail() -> None:
    """(Under `_lock`.) The helper failed: ended, and none used from now on."""
    global _failed
    _failed = True
    _stop()
    stats["fallbacks"] += 1


def _start(target: tuple[str, str, str, str]) -> subprocess.Popen:
    global _process
    import llvmlite

    from ..backend import llvm_setup
    # -P: this file's folder is not put on the helper's path (it imports llvmlite alone), and
    # the folder this process's llvmlite came from is put first
    found = os.path.dirname(os.path.dirname(os.path.abspath(llvmlite.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [found, *filter(None, [os.environ.get("PYTHONPATH")])]))
    _process = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__),
                                 os.path.abspath(llvm_setup.__file__)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, close_fds=True, env=env)
    stats["starts"] += 1
    _send(_process.stdin, "\0".join(target).encode())
    # the same llvmlite and LLVM, or not the same object code; a helper not up in a minute (a
    # start that hangs) would hold tiering's thread, and every `wait`, for ever
    if not select.select([_process.stdout], [], [], 60)[0]:
        raise ValueError("the compile helper did not start")
    if _read(_process.stdout, _LENGTH.unpack(_read(_process.stdout, _LENGTH.size))[0]) \
            != _versions().encode():
        raise ValueError("the compile helper runs another llvmlite or LLVM")
    return _process


def _versions() -> str:
    import llvmlite
    import llvmlite.binding as llvm
    return f"{llvmlite.__version__}\0{'.'.join(map(str, llvm.llvm_version_info))}"


def _send(stream, data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("the compile helper closed its output")
    return data


def _stop() -> None:
    """(Under `_lock`.) End the helper: its input closed, it exits; killed if it does not."""
    global _process
    helper, _process = _process, None
    if helper is None:
        return
    for stream in (helper.stdin, helper.stdout):
        try:
            stream.close()
        except OSError:
            pass
    try:
        helper.wait(timeout=2)  # (idle at the exit: it ends at once)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


def start_none() -> None:
    """Start no helper from now on (the interpreter's exit, before tiering finishes what is
    pending: a helper's start, ~70 ms of CPU, would cost a short script more than the code
    generation left); one already running still serves."""
    global _no_start
    _no_start = True


def close() -> None:
    """End the helper (the interpreter's exit, after tiering's last work); later requests get
    None."""
    global _failed
    with _lock:
        _failed = True
        _stop()


def after_fork_child() -> None:
    """In a forked child: let go of the parent's helper without touching it (its pipes are
    closed here, so the helper still sees its input close when the parent exits); the child
    starts its own on its first request."""
    global _process, _lock
    _lock = threading.Lock()
    helper, _process = _process, None
    if helper is not None:
        # (nothing is buffered: a fork waits for tiering's request in hand, tiering._busy)
        for stream in (helper.stdin, helper.stdout):
            try:
                stream.close()
            except OSError:
                pass
        helper.returncode = 0  # (not the child's to wait for or reap)


# --- the helper ----------------------------------------------------------------------------

def _serve(setup_path: str) -> None:
    import importlib.util
    import signal

    import llvmlite.binding as llvm
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # backend/llvm_setup.py, by path: llvmlite alone, without the tracejit package's import
    spec = importlib.util.spec_from_file_location("tracejit_llvm_setup", setup_path)
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    try:
        header = _read(stdin, _LENGTH.unpack(_read(stdin, _LENGTH.size))[0])
    except EOFError:
        return
    triple, data_layout, cpu, features = header.decode().split("\0")
    _send(stdout, _versions().encode())
    setup.init_native()
    target = llvm.Target.from_triple(triple)
    # optimise only for the caller's own host: llvm_setup.parse and the pass builder's target
    # machine are this process's host's (the same machine: the same, short of a test's change)
    optimises = (llvm.get_process_triple(), str(setup.pipeline_target_machine().target_data),
                 *setup.host_cpu()) == (triple, data_layout, cpu, features)
    while True:
        try:
            request = _read(stdin, _LENGTH.unpack(_read(stdin, _LENGTH.size))[0])
        except EOFError:
            return
        try:
            kind, text = request[:1], request[1:]
            optimised = b""
            if kind == _OPTIMISE:
                if not optimises:
                    raise ValueError("another host")
                text_lines, huge_lines = _LINES.unpack_from(text)
                # as disk_cache.optimised_text
                optimised = str(setup.optimize(setup.parse(text[_LINES.size:].decode()),
                                               text_lines, huge_lines)).encode()
                text = optimised
            elif kind != _CODE:
                raise ValueError(f"a request of kind {kind!r}")
            # as jit_engine.parse and llvm_setup.create_target_machine(3) (a machine per
            # module, as each engine there has its own)
            module = llvm.parse_assembly(text.decode())
            module.triple = triple
            module.data_layout = data_layout
            module.verify()
            machine = target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)
            obj = machine.emit_object(module)
            status = _OK
            payload = _LENGTH.pack(len(optimised)) + optimised + obj if kind == _OPTIMISE \
                else obj
        except Exception as err:  # noqa: BLE001  (reported; the caller makes it itself)
            status, payload = _ERROR, repr(err).encode()
        stdout.write(status)
        _send(stdout, payload)


if __name__ == "__main__":
    _serve(sys.argv[1])
