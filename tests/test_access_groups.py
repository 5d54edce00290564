"""Element loops whose accesses LLVM is told are parallel (backend/llvm/access_groups.py,
Emitter.loop(parallel=True)): which loops say so, that the module LLVM gets is valid, and that
the programs where a loop's operand shares memory with its destination (donated inputs, loop
carries, in-place row rescaling) still give NumPy's values."""
import re

import llvmlite.ir as ir
import numpy as np

import tracejit
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.backend.llvm import access_groups, jit_engine


def _ir(f, *args) -> str:
    return tracejit.jit(f).lower(*args).compile()._executable.program.ir_text


def _body_accesses(text: str, block: str) -> list[str]:
    body = text[text.index(f"\n{block}:\n"):]
    body = body[:body.index("\n", body.index(" br "))]
    return [line for line in body.splitlines() if " load " in line or "store " in line]


def test_an_element_loop_says_its_accesses_are_parallel():
    x = np.linspace(-3, 3, 5000, dtype=np.float32)
    text = _ir(lambda x, y: tnp.exp(x) * y + x, x, x[::-1].copy())
    (group,) = re.findall(r"^(!\d+) = distinct !\{\}$", text, re.MULTILINE)
    assert re.search(rf'^!\d+ = !{{ !"llvm.loop.parallel_accesses", {group} }}$', text,
                     re.MULTILINE)
    accesses = _body_accesses(text, "d0.body")
    assert sum("store " in a for a in accesses) == 1 and len(accesses) >= 3
    assert all(f"!llvm.access.group {group}" in a for a in accesses)


def test_reductions_and_cold_loops_say_nothing():
    """A reduction's loop carries its accumulator from turn to turn, and a loop LLVM is told
    not to vectorise needs no such word."""
    x = np.linspace(-3, 3, 5000, dtype=np.float32)
    assert "parallel_accesses" not in _ir(lambda x: tnp.cumsum(x), x)
    assert "parallel_accesses" not in _ir(lambda x: tnp.sum(x * x), x)
    assert "parallel_accesses" not in _ir(lambda x: tnp.exp(x) + 1, x[:100])  # (cold: scalar)


def _loop_module(store_to_slot: bool) -> tuple[ir.Module, ir.Block]:
    """`for i < n: out[i] = in[i] + 1` (out a stack slot's array when store_to_slot)."""
    module = ir.Module(name="m")
    f32p = ir.FloatType().as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32p, f32p]), name="f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slot = b.bitcast(b.alloca(ir.ArrayType(ir.FloatType(), 64)), f32p)
    head, body, done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(ir.IntType(64))
    i.add_incoming(ir.Constant(ir.IntType(64), 0), fn.entry_basic_block)
    b.cbranch(b.icmp_signed("<", i, ir.Constant(ir.IntType(64), 64)), body, done)
    b.position_at_end(body)
    v = b.fadd(b.load(b.gep(fn.args[0], [i])), ir.Constant(ir.FloatType(), 1.0))
    b.store(v, b.gep(slot if store_to_slot else fn.args[1], [i]))
    i.add_incoming(b.add(i, ir.Constant(ir.IntType(64), 1)), body)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return module, body


def test_tag_puts_the_accesses_in_one_distinct_group_that_llvm_accepts():
    module, body = _loop_module(store_to_slot=False)
    group = access_groups.tag(body)
    assert group is not None
    text = str(module)
    assert f"{group.get_reference()} = distinct !{{}}" in text
    assert text.count(f"!llvm.access.group {group.get_reference()}") == 2
    jit_engine.parse(text)  # (verified)


def test_tag_leaves_a_loop_storing_to_a_stack_slot_alone():
    module, body = _loop_module(store_to_slot=True)
    assert access_groups.tag(body) is None
    assert "access.group" not in str(module)


def test_a_donated_input_updated_in_place_as_a_fresh_output():
    """The same bits written into the donated input's memory as into a fresh output, and
    NumPy's values within exp's error."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_007).astype(np.float32)

    def f(x):
        return tnp.exp(x) * 0.5 + x
    fresh = np.asarray(tracejit.jit(f)(x))
    compiled = tracejit.jit(f, donate_argnums=0).lower(x).compile()
    assert compiled._executable.program.aliases == {0: 0}  # (written into the input)
    donated = tracejit.device_put(x)
    in_place = np.asarray(tracejit.jit(f, donate_argnums=0)(donated))
    assert donated.is_deleted()
    assert in_place.tobytes() == fresh.tobytes()
    np.testing.assert_allclose(in_place, np.exp(x) * np.float32(0.5) + x, rtol=1e-6, atol=1e-6)
    # a shifted read of the donated input: not written in place, the input's old values read
    g = tracejit.jit(lambda x: x * 2.0 + tnp.roll(x, 1), donate_argnums=0)
    assert g.lower(x).compile()._executable.program.aliases == {}
    shifted = np.asarray(g(tracejit.device_put(x)))
    np.testing.assert_array_equal(shifted, x * 2 + np.roll(x, 1))


def test_loop_carries_and_row_kernels_as_the_interpreter():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(4096).astype(np.float32)
    rows = rng.standard_normal((64, 1000)).astype(np.float32)

    def scan(x):  # carries double-buffered, a roll read each step
        return lax.scan(lambda c, _: (tnp.roll(c, 1) * 0.5 + c * c, c[0]), x, None, length=9)

    def newton(a):
        return lax.while_loop(lambda s: s[1] < 12,
                              lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1), (a, 0))[0]
    for f, arg in ((scan, x), (newton, np.abs(x) + 1), (tracejit.nn.softmax, rows),
                   (tracejit.nn.log_softmax, rows)):
        got = tracejit.jit(f)(arg)
        want = tracejit.jit(f, backend="interpret")(arg)
        for g, w in zip(tracejit.tree_util.tree_leaves(got),
                        tracejit.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)
