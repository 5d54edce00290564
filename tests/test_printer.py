"""backend/llvm/printer.py: the IR text codegen hands LLVM is llvmlite's own `str(module)`, byte
for byte (oracle: llvmlite's printer), for every module the programs below generate (entries,
outlined kernels, segments) and for hand-built instructions in the forms the fast path
formats itself (flags, metadata, alignments, attributes, an instruction printed and changed)."""
import numpy as np
import pytest
from llvmlite import ir

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax, random
from tracejit.backend.llvm import codegen, printer

F32, I32, I64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)


def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _scan(x):
    return lax.scan(lambda c, v: (c * 0.5 + jnp.sin(v), c), x[0], x)[1]


def _while(x):
    return lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, jnp.tanh(s[1]) * 2), (0, x))


def _mixed(x):  # enough equations for outlined kernels
    for _ in range(12):
        x = jnp.tanh(jnp.sin(jnp.cumsum(x))[::-1])
        x = x - jnp.mean(x)
    return x


PROGRAMS = [
    ("softmax", _softmax, lambda: np.linspace(-2, 2, 96, dtype=np.float32).reshape(8, 12)),
    ("scan", _scan, lambda: np.linspace(0, 1, 40, dtype=np.float32).reshape(10, 4)),
    ("while", _while, lambda: np.linspace(0, 1, 7, dtype=np.float32)),
    ("mixed", _mixed, lambda: np.linspace(0, 1, 300, dtype=np.float32)),
    ("cond int", lambda x: lax.cond(x.sum() > 3, lambda v: v * 2, lambda v: v // 3, x),
     lambda: np.arange(12, dtype=np.int32)),
    ("normal", lambda k: random.normal(k, (1000,)), lambda: random.PRNGKey(0)),
    ("complex", lambda x: jnp.fft.fft(x * (1 + 2j)), lambda: np.ones(16, np.float32)),
    ("sort", lambda x: jnp.sort(x) + jnp.argmax(x), lambda: np.arange(9.0, dtype=np.float32)),
]


@pytest.mark.parametrize("name,fn,arg", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_programs_print_as_llvmlite_does(name, fn, arg, monkeypatch):
    texts = []
    module_text = printer.module_text

    def both(module):
        ours = module_text(module)  # first: llvmlite's printer caches instructions' text
        texts.append((ours, str(module)))
        return ours
    monkeypatch.setattr(printer, "module_text", both)
    codegen.forget_emitted_kernels()  # (kernels emitted by earlier tests are not printed)
    jax.clear_caches()
    jax.block_until_ready(jax.jit(fn)(arg()))
    assert texts
    for ours, theirs in texts:
        assert ours == theirs


def _hand_built() -> ir.Module:
    m = ir.Module(name="hand")
    callee = ir.Function(m, ir.FunctionType(F32, [F32, F32]), name="f")
    varargs = ir.Function(m, ir.FunctionType(I32, [I32], var_arg=True), name="g")
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [F32.as_pointer(), I64]), name='q"x')
    fn.attributes.add("noinline")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop body", "done"))
    b = ir.IRBuilder(entry)
    slot = b.alloca(F32, size=ir.Constant(I64, 4), name="slot")
    slot.align = 16
    x = b.load(fn.args[0], name="x", align=4)
    b.store(x, slot, align=8)
    y = b.fadd(x, x, flags=("contract", "nnan"))
    z = b.call(callee, [x, y], fastmath=("fast",), tail=True, attrs=("nounwind",))
    b.call(callee, [z, y], arg_attrs={0: ("noundef",)})
    b.call(varargs, [I32(1), I32(2)], cconv="fastcc")
    b.fcmp_ordered("<", x, z, flags=("nnan",))
    c = b.icmp_signed("<", fn.args[1], I64(3))
    s = b.select(c, x, z, flags=("nnan",))
    v = b.insert_element(ir.Constant(ir.VectorType(F32, 4), None), s, I32(0))
    b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, 2), [0, 3]))
    b.extract_element(v, I32(1))
    b.bitcast(slot, I32.as_pointer())
    b.gep(fn.args[0], [I64(2)], inbounds=True)
    b.gep(fn.args[0], [I64(1)])
    printed = b.add(fn.args[1], I64(1))
    str(printed)
    printed.flags.append("nsw")  # changed after llvmlite cached its text: that text is printed
    branch = b.cbranch(c, loop, done)
    branch.set_weights([3, 1])
    b.position_at_end(loop)
    phi = b.phi(F32, name="acc")
    phi.add_incoming(x, entry)
    phi.add_incoming(phi, loop)
    load = b.load(slot)
    load.set_metadata("nontemporal", m.add_metadata([I32(1)]))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return m


def test_hand_built_module_prints_as_llvmlite_does():
    ours = printer.module_text(_hand_built())
    assert ours == str(_hand_built())
    assert 'define void @"q\\22x"' in ours and "!prof" in ours
