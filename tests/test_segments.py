"""A huge program's main function is emitted as a chain of segment functions
(codegen.Emitter.next_segment); here with segments of a few equations, so that small programs
cross many cuts: values against the unsplit program and the reference interpreter."""
import hashlib
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.backend import llvm_setup
from tracejit.backend.llvm import codegen, jit_engine
from tracejit.compiler.passes import optimize
from tracejit.core.jaxpr import ClosedJaxpr

SEGMENT = 8


def program(x, y, s):
    """~50 equations: a value and a scalar live across every cut, an output that is an input,
    a forwarded buffer (optimization_barrier) read on both sides of cuts, control flow."""
    a = x * 2.0
    for k in range(3):
        x = tnp.cumsum(tnp.sin(x) + k)[::-1]
        s = s * 1.5 + 1
    b, c = lax.optimization_barrier((x * 0.5, a))
    x = lax.fori_loop(0, 3, lambda i, v: v * 0.5 + a, x)
    for k in range(3):
        x = tnp.tanh(x) - tnp.mean(x) + s
    x = lax.cond(x.sum() > 0, lambda v: v * b, lambda v: v - b, x)
    x = lax.while_loop(lambda v: v[0] < 3, lambda v: (v[0] + 1, tnp.cos(v[1]) + c), (0, x))[1]
    for k in range(3):
        x = tnp.cumsum(x * b) / 100.0 + a
    return x, y, s, b


def _segments(f, *args) -> int:
    closed = tracejit.make_jaxpr(f)(*args)
    jaxpr, consts = optimize(closed.jaxpr, closed.consts)
    text = codegen.generate(ClosedJaxpr(jaxpr, consts), "entry").ir_text
    return text.count(f'define internal void @"{codegen.SEGMENT_PREFIX}')


@pytest.fixture
def inputs():
    return (np.linspace(-1, 1, 24, dtype=np.float32), np.arange(5, dtype=np.float32),
            np.float32(0.25))


def _split_and_whole(monkeypatch, f, args, **jit_args):
    whole = tracejit.jit(lambda *a: f(*a), **jit_args)(*map(tnp.asarray, args))
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    split = tracejit.jit(lambda *a: f(*a), **jit_args)(*map(tnp.asarray, args))
    return split, whole


def test_split_program_matches_whole_and_reference(monkeypatch, inputs):
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    assert _segments(program, *inputs) >= 4
    monkeypatch.undo()
    split, whole = _split_and_whole(monkeypatch, program, inputs)
    want = tracejit.jit(program, backend="interpret")(*inputs)
    for g, u, w in zip(split, whole, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(u))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def test_split_program_with_donation(monkeypatch, inputs):
    """The donated input's buffer is the output's across cuts (its pointer passed along)."""
    def f(x):
        out, _, _, _ = program(x, x, np.float32(0.5))
        return out
    x = inputs[0]
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    donated = tnp.asarray(x)
    address = donated.address
    got = tracejit.jit(f, donate_argnums=0)(donated)
    assert got.unsafe_buffer_pointer() == address and donated.is_deleted()
    monkeypatch.undo()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(tracejit.jit(f)(x)))
    np.testing.assert_allclose(np.asarray(got), np.asarray(
        tracejit.jit(f, backend="interpret")(x)), rtol=2e-5, atol=2e-5)


def test_live_scalar_temporaries_and_many_live_values(monkeypatch):
    """Rank-0 temporaries live in the entry frame's stack slots, read segments later; twenty
    arrays stay live across every cut."""
    def f(x):
        parts = [x * k for k in range(20)]
        t = x.sum()
        for _ in range(12):
            x = tnp.cumsum(x)[::-1] / 10.0 + t
        return x + sum(parts), t
    x = np.linspace(0, 1, 16, dtype=np.float32)
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    assert _segments(f, x) >= 3
    monkeypatch.undo()
    split, whole = _split_and_whole(monkeypatch, f, (x,))
    want = tracejit.jit(f, backend="interpret")(x)
    for g, u, w in zip(split, whole, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(u))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def test_ctrl_c_in_a_later_segment(monkeypatch):
    """An interrupted loop's `ret void` returns through every segment before it; the function
    stays usable."""
    import os
    import signal
    import threading
    import time

    def f(x, n):
        for _ in range(6):
            x = tnp.cumsum(x)[::-1] / 10.0
        t = lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 1.0000001 + 1e-7),
                           (0, x.sum()))[1]
        for _ in range(6):
            x = tnp.cumsum(x)[::-1] / 10.0 + t
        return x
    x = np.linspace(0, 1, 16, dtype=np.float32)
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    assert _segments(f, x, np.int32(1)) >= 2
    g = tracejit.jit(f)
    g(x, np.int32(1))
    sent = []

    def fire():
        time.sleep(0.3)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=fire, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        g(x, np.int32(2 ** 31 - 1))
        time.sleep(5)  # (not reached when the call was interrupted)
    assert time.monotonic() - sent[0] < 0.5
    np.testing.assert_allclose(np.asarray(g(x, np.int32(5))), np.asarray(
        tracejit.jit(f, backend="interpret")(x, np.int32(5))), rtol=2e-5, atol=2e-5)


def test_host_callbacks_in_several_segments(monkeypatch):
    """Each segment reloads the callback ids from the inputs array it is passed."""
    seen = []

    def f(x):
        for k in range(4):
            for _ in range(4):
                x = tnp.cumsum(x)[::-1] / 10.0
            tracejit.debug.callback(lambda v, k=k: seen.append((k, float(v))), x.sum())
        return x
    x = np.linspace(0, 1, 16, dtype=np.float32)
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    assert _segments(f, x) >= 2
    got = tracejit.jit(f)(x)
    want = tracejit.jit(f, backend="interpret")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)
    native, reference = seen[:4], seen[4:]
    assert [k for k, _ in native] == [0, 1, 2, 3] == [k for k, _ in reference]
    np.testing.assert_allclose([v for _, v in native], [v for _, v in reference], rtol=2e-5)


def _definitions(text: str) -> dict[str, str]:
    """Each defined function's name -> its parameter list, as printed."""
    return {m[1]: m[2]
            for m in re.finditer(r'^define [^@]*@"?([\w.]+)"?\((.*)\)', text, re.MULTILINE)}


def test_pointers_known_non_null_are_marked_and_change_no_code(monkeypatch, inputs):
    """The entry's input and output arrays, and its workspace where it has one, are `nonnull`
    (runtime/native.py never passes null for them), and so are the segments' copies of them
    (their first two parameters); the other parameters, which may be null, are not. The
    machine code is that of the same IR without the marks (they only spare LLVM's InstCombine
    its walks over those pointers' uses)."""
    monkeypatch.setattr(codegen, "SEGMENT_EQNS", SEGMENT)
    closed = tracejit.make_jaxpr(program)(*inputs)
    jaxpr, consts = optimize(closed.jaxpr, closed.consts)
    prog = codegen.generate(ClosedJaxpr(jaxpr, consts), "entry")
    assert prog.workspace_bytes > 0
    defs = _definitions(prog.ir_text)
    assert defs["entry"].count(" nonnull ") == 3, defs["entry"]
    segments = [p for name, p in defs.items() if name.startswith(codegen.SEGMENT_PREFIX)]
    assert len(segments) >= 4
    for params in segments:
        first, second, *rest = params.split(", ")
        assert " nonnull " in first and " nonnull " in second, params
        assert not any(" nonnull " in p for p in rest), params
    assert all(" nonnull " not in p for name, p in defs.items()
               if name != "entry" and not name.startswith(codegen.SEGMENT_PREFIX))

    def machine_code(text: str) -> str:
        module = jit_engine.optimize(jit_engine.parse(text))
        return hashlib.sha256(
            llvm_setup.pipeline_target_machine().emit_object(module)).hexdigest()
    assert machine_code(prog.ir_text) == machine_code(prog.ir_text.replace(" nonnull ", " "))

    # no workspace: the third pointer is null at run time and stays unmarked
    closed = tracejit.make_jaxpr(lambda x: x + 1)(inputs[0])
    bare = codegen.generate(closed, "entry")
    assert bare.workspace_bytes == 0
    first, second, third = _definitions(bare.ir_text)["entry"].split(", ")
    assert " nonnull " in first and " nonnull " in second and " nonnull " not in third
