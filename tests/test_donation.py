"""Buffer donation: `jit(f, donate_argnums=...)` writes outputs into donated inputs' buffers.
runtime.jit matches donated arguments to outputs as JAX does; codegen.plan_aliases keeps a pair
only where the program reads the input before (or at the element of) each write, and gives the
others fresh outputs. Oracles: the same program run without donation (bit for bit), buffer
addresses for the aliasing itself, and real JAX for deletion, warnings and errors."""
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit import lax
from tracejit.runtime import buffers

RNG = np.random.default_rng(0)
IDX = np.array([[1], [3], [1]], np.int32)  # scatter indices, one repeated


def _scatter_add(x):
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    return lax.scatter_add(x, IDX, tnp.ones((3, x.shape[1]), x.dtype), dn)


def _scan_carry(length):
    def f(x):
        c, _ = lax.scan(lambda c, r: (c * 0.5 + r.sum(), c.sum()), x,
                        np.arange(length * 2, dtype=np.float32).reshape(length, 2))
        return c
    return f


def _unit_batched_square(r):
    """r @ r^T of a [1, 1, n, n] operand: a product that reads a reshaped operand as it is
    (codegen's reshape is then a view of the operand's buffer, no copy)."""
    return lax.dot_general(r, r, (((3,), (3,)), ((0, 1), (0, 1))))


def _reshaped_first(x):
    r = x.reshape(1, 1, *x.shape)
    return x + 1.0, _unit_batched_square(r)


# programs whose output should be written into the donated input's buffer
ALIASED = {
    "add": lambda x: x + 1,
    "elementwise chain": lambda x: tnp.tanh(x) * 2.0 - x * x,
    "reduction first": lambda x: x - x.sum(),
    "column means first": lambda x: x - x.mean(axis=0),
    "fori carry": lambda x: lax.fori_loop(0, 5, lambda i, c: c * 0.5 + 1.0, x),
    "while carry": lambda x: lax.while_loop(lambda c: c[0, 0] < 100.0, lambda c: c * 2.0 + 1.0,
                                            tnp.abs(x)),
    "scan carry, even length": _scan_carry(4),
    "scan carry, odd length": _scan_carry(3),
    "update slice": lambda x: x.at[1].set(7.0),
    "update from own slice": lambda x: x.at[0].set(x[1] * 2.0),
    "scatter-add": _scatter_add,
    "identity": lambda x: x,
}

# programs that read the donated input after (or elsewhere than) writing the output's elements
UNSAFE = {
    "reverse": lambda x: x[::-1] + 1,
    "reverse of elementwise": lambda x: (x + 1)[::-1],
    "transpose": lambda x: x.T * 2.0,
    "plus own reverse": lambda x: x + x[::-1],
    "plus own first row": lambda x: x + x[0],
    "cumsum": lambda x: tnp.cumsum(x, axis=0),
    "sort": lambda x: tnp.sort(x, axis=0),
    "matmul by itself": lambda x: x @ x,
    "rolled": lambda x: tnp.roll(x, 1, axis=1) - x,
    "loop reading the input": lambda x: lax.fori_loop(0, 3, lambda i, c: c * 0.5 + x, x),
    "scan over own rows": lambda x: lax.scan(lambda c, r: (c + r, r * c), x[0], x)[1],
    "input read by a later output": lambda x: (x + 1, x * 2.0),
    "input returned after": lambda x: (x * 3.0, x),
    "reduction after": lambda x: (x * 3.0, x.sum(axis=1)),
    # a view of the input (a reshape) read by a product after the output's write
    "reshaped first, read after": _reshaped_first,
}

SHAPES = [(8, 8), (128, 256)]  # below and above the buffer pool's size threshold


def _native_run(f, data, donate: bool):
    x = tnp.asarray(data)
    address = x.address
    out = tracejit.jit(f, backend="native", donate_argnums=0 if donate else ())(x)
    return out, x, address


def _assert_bitwise_equal(got, want):
    got_l, want_l = tracejit.tree_util.tree_leaves(got), tracejit.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", list(ALIASED))
def test_output_is_written_into_the_donated_buffer(name, shape):
    f = ALIASED[name]
    data = RNG.standard_normal(shape).astype(np.float32)
    want, _, _ = _native_run(f, data, donate=False)
    out, x, address = _native_run(f, data, donate=True)
    _assert_bitwise_equal(out, want)
    assert out.unsafe_buffer_pointer() == address  # the output lives in the donated memory
    assert x.is_deleted()
    np.testing.assert_allclose(np.asarray(out),  # and the native run agrees with the reference
                               np.asarray(tracejit.jit(f, backend="interpret")(data)),
                               rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", list(UNSAFE))
def test_unsafe_patterns_compute_the_same_values(name, shape):
    f = UNSAFE[name]
    shape = (shape[0], shape[0])  # square: transposes and x @ x keep the shape
    data = RNG.standard_normal(shape).astype(np.float32)
    want, _, _ = _native_run(f, data, donate=False)
    out, x, _ = _native_run(f, data, donate=True)
    _assert_bitwise_equal(out, want)
    assert x.is_deleted()  # JAX consumes a donation that matches an output, aliased or not


def _updated_while_viewed(x):
    t = x * 2.0
    r = t.reshape(1, 1, *x.shape)
    return t.at[0].set(0.0), _unit_batched_square(r)


def _view_in_loop_body(x):
    def body(i, c):
        return c * 0.5 + _unit_batched_square(c.reshape(1, 1, *c.shape))[0, 0] * 1e-3
    return lax.fori_loop(0, 3, body, x)


@pytest.mark.parametrize("f", [_reshaped_first, _updated_while_viewed, _view_in_loop_body])
def test_reshape_views_keep_values(f):
    """A reshape read by a product is a view of its operand's buffer (codegen `_view`): the
    buffer is neither updated in place nor given to a donated output while the view is read."""
    data = RNG.standard_normal((64, 64)).astype(np.float32)
    assert "reshape[dimensions=None" in tracejit.jit(f).lower(data).compile().as_text()
    want = tracejit.jit(f, backend="interpret")(data)
    for donate in (False, True):
        out, _, _ = _native_run(f, data, donate)
        for g, w in zip(tracejit.tree_util.tree_leaves(out), tracejit.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-5)


def test_rank0_and_pytree_arguments_alias():
    f = tracejit.jit(lambda s, p: (s * 3.0 + 1.0, {k: v - s * v for k, v in p.items()}),
                     backend="native", donate_argnums=(0, 1))
    s = tnp.asarray(np.float32(0.5))
    p = {"a": tnp.asarray(RNG.standard_normal(5).astype(np.float32)),
         "b": tnp.asarray(RNG.standard_normal((2, 3)).astype(np.float32))}
    want = tracejit.jit(f.fun, backend="native")(s, p)
    addresses = (s.address, p["a"].address, p["b"].address)
    got = f(s, p)
    _assert_bitwise_equal(got, want)
    assert (got[0].address, got[1]["a"].address, got[1]["b"].address) == addresses


def test_donation_by_name_and_next_to_static_arguments():
    def f(n, x, y):
        return x * n + y

    data = RNG.standard_normal((4, 5)).astype(np.float32)
    by_num = tracejit.jit(f, backend="native", static_argnums=0, donate_argnums=1)
    by_name = tracejit.jit(f, backend="native", static_argnums=0, donate_argnames="x")
    for call in [lambda x, y: by_num(3, x, y), lambda x, y: by_name(3, y=y, x=x)]:
        x, y = tnp.asarray(data), tnp.asarray(data)
        address = x.address
        out = call(x, y)
        np.testing.assert_array_equal(np.asarray(out), data * np.float32(3) + data)
        assert out.address == address and x.is_deleted() and not y.is_deleted()


def _loss(p, x, y):
    return tnp.mean((tnp.tanh(x @ p["w"]) * p["s"] + p["b"] - y) ** 2)


def _sgd_step(p, x, y):
    g = tracejit.grad(_loss)(p, x, y)
    return tracejit.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)


def test_training_loop_updates_parameters_in_place():
    x = RNG.standard_normal((128, 300)).astype(np.float32)
    y = RNG.standard_normal(128).astype(np.float32)
    p0 = {"w": RNG.standard_normal(300).astype(np.float32) * 0.1, "s": np.float32(1.0),
          "b": np.float32(0.0)}
    donating = tracejit.jit(_sgd_step, backend="native", donate_argnums=0)
    plain = tracejit.jit(_sgd_step, backend="native")
    p = {k: tnp.asarray(v) for k, v in p0.items()}
    q = {k: tnp.asarray(v) for k, v in p0.items()}
    addresses = {k: v.address for k, v in p.items()}
    for _ in range(6):
        old = p
        p, q = donating(p, x, y), plain(q, x, y)
        _assert_bitwise_equal(p, q)
        assert all(v.is_deleted() for v in old.values())
        assert {k: v.address for k, v in p.items()} == addresses
    lowered = donating.lower({k: tnp.asarray(v) for k, v in p0.items()}, x, y)
    assert lowered.compile().memory_analysis().alias_size_in_bytes == 300 * 4 + 4 + 4


def test_pool_never_hands_out_memory_an_output_owns():
    n = 1 << 15  # 128 KiB of float32: pooled
    f = tracejit.jit(lambda x: x * 2.0, backend="native", donate_argnums=0)
    g = tracejit.jit(lambda x: x + 1.0, backend="native")
    x = tnp.asarray(np.ones(n, np.float32))
    address = x.address
    y = f(x)
    assert y.address == address
    del x  # deleted: its death must not return the buffer y now owns
    others = [g(tnp.asarray(np.full(n, k, np.float32))) for k in range(6)]
    assert all(o.address != address for o in others)
    np.testing.assert_array_equal(np.asarray(y), np.full(n, 2.0, np.float32))


def test_pooled_outputs_start_on_a_cache_line_and_are_reused():
    """Pooled buffers (outputs, workspaces) start at a multiple of 64 bytes, as XLA's do;
    a dead output's buffer serves the next call (same address, still aligned)."""
    f = tracejit.jit(lambda x: x * 2.0 + 1.0, backend="native")
    x = tnp.asarray(np.arange(1 << 15, dtype=np.float32))
    addresses = set()
    for _ in range(3):
        y = f(x)
        assert y.address % 64 == 0 and buffers.ALIGN % 64 == 0
        np.testing.assert_array_equal(np.asarray(y), np.arange(1 << 15, dtype=np.float32) * 2 + 1)
        addresses.add(y.address)
        del y
    assert len(addresses) == 1
    small = f(tnp.asarray(np.ones(8, np.float32)))  # below MIN_BYTES: NumPy's own allocation
    np.testing.assert_array_equal(np.asarray(small), np.full(8, 3.0, np.float32))


def test_a_calls_workspace_is_aligned_at_every_size(monkeypatch):
    """Every call's workspace starts at a multiple of 64 bytes, the small ones too (NumPy's
    own start at 16 mod 64: vectors there split cache lines), and goes back to the pool."""
    seen = []
    aligned = buffers.pool.aligned

    def recording(shape, dtype, nbytes):
        value, address = aligned(shape, dtype, nbytes)
        seen.append((nbytes, address, value.ctypes.data))
        return value, address
    monkeypatch.setattr(buffers.pool, "aligned", recording)
    rng = np.random.default_rng(4)
    for n in (8, 5, 12):   # (workspaces of a few hundred bytes: the sorted copies)
        a = rng.standard_normal((n, n)).astype(np.float32)
        f = tracejit.jit(lambda a: tnp.sort(a, axis=0) * 2 +
                         tnp.sort(a, axis=1))
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(f(a)),
                                          np.sort(a, axis=0) * 2 + np.sort(a, axis=1))
    small = [s for s in seen if s[0] < buffers.MIN_BYTES]
    assert small, seen
    assert all(address % 64 == 0 and address == data for _, address, data in seen), seen
    for size in (1, 17, 100, 4096, 1 << 16, (1 << 16) + 3):
        value, address = buffers.BufferPool().aligned((size,), np.dtype(np.uint8), size)
        assert address % 64 == 0 and value.nbytes == size and value.ctypes.data == address


def test_view_of_a_pooled_output_keeps_its_memory():
    n = 1 << 15
    f = tracejit.jit(lambda x: x + 1.0, backend="native")
    x = tnp.asarray(np.zeros(n, np.float32))
    del_me = f(x)
    del del_me  # its buffer goes to the pool; the next output is a view of it
    b = f(x)
    view = np.asarray(b)
    del b
    for k in range(4):
        f(tnp.asarray(np.full(n, 10.0 + k, np.float32)))
    np.testing.assert_array_equal(view, np.ones(n, np.float32))


def test_a_pooled_buffer_serves_another_dtype_and_shape_of_its_size():
    """The pool keeps a dead output as its aligned view: a program whose output has the same
    bytes in another dtype and shape gets that memory (same address, its own dtype and shape,
    writable for the call, frozen after), and the first program's next output is right too."""
    n = 1 << 15
    as_float = tracejit.jit(lambda x: x * 2.0, backend="native")
    as_int = tracejit.jit(lambda x: (x * 3).reshape(128, n // 128), backend="native")
    x = tnp.asarray(np.arange(n, dtype=np.float32))
    i = tnp.asarray(np.arange(n, dtype=np.int32))
    y = as_float(x)
    address = y.address
    del y
    z = as_int(i)
    assert z.address == address and z.dtype == np.int32 and z.shape == (128, n // 128)
    v = np.asarray(z)
    assert not v.flags.writeable
    np.testing.assert_array_equal(v, (np.arange(n, dtype=np.int32) * 3).reshape(128, -1))
    del v  # (first: a NumPy view of z keeps its buffer out of the pool)
    del z
    y = as_float(x)
    assert y.address == address and y.dtype == np.float32 and y.shape == (n,)
    np.testing.assert_array_equal(np.asarray(y), np.arange(n, dtype=np.float32) * 2)


def test_shared_buffer_is_copied_not_overwritten():
    data = RNG.standard_normal((64, 64)).astype(np.float32)
    x = tnp.asarray(data)
    view = np.asarray(x)  # a NumPy view of x's buffer keeps it from being donated in place
    y = tracejit.jit(lambda x: x + 1.0, backend="native", donate_argnums=0)(x)
    np.testing.assert_array_equal(view, data)
    np.testing.assert_array_equal(np.asarray(y), data + np.float32(1.0))
    assert x.is_deleted()


@pytest.mark.parametrize("backend", ["native", "interpret"])
def test_numpy_and_scalar_arguments_are_left_alone(backend):
    data = RNG.standard_normal(16).astype(np.float32)
    keep = data.copy()
    f = tracejit.jit(lambda x: x * 3.0, backend=backend, donate_argnums=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # JAX neither warns nor complains
        out = f(data)
        scalar = f(2.0)
    np.testing.assert_array_equal(data, keep)
    np.testing.assert_array_equal(np.asarray(out), keep * np.float32(3.0))
    assert float(scalar) == 6.0


def _jax():
    return pytest.importorskip("jax")


@pytest.mark.parametrize("backend", ["native", "interpret"])
def test_using_a_donated_array_raises_like_jax(backend):
    jax = _jax()
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    jx = jax.numpy.asarray(data)
    jax.jit(lambda x: x + 1, donate_argnums=0)(jx)
    x = tnp.asarray(data)
    f = tracejit.jit(lambda x: x + 1, backend=backend, donate_argnums=0)
    f(x)
    for use_j, use in [(np.asarray, np.asarray), (lambda a: a + 1, lambda a: a + 1), (repr, repr),
                       (lambda a: jax.jit(lambda v: v + 1, donate_argnums=0)(a), f)]:
        with pytest.raises(RuntimeError) as want:
            use_j(jx)
        with pytest.raises(RuntimeError) as got:
            use(x)
        assert str(got.value).startswith(str(want.value))
        assert "donate" in str(got.value)  # and ours goes on to name the fix


def test_unusable_donation_warns_and_keeps_the_array_like_jax():
    jax = _jax()
    data = np.arange(8, dtype=np.float32)
    for f in [lambda x: x.sum(), lambda x: x.astype(np.int32), lambda x: x[:4]]:
        jx = jax.numpy.asarray(data)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            jax.jit(f, donate_argnums=0)(jx)
        x = tnp.asarray(data)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            tracejit.jit(f, backend="native", donate_argnums=0)(x)
        assert [str(w.message) for w in got] == [str(w.message) for w in want]
        assert x.is_deleted() == jx.is_deleted()


def test_donating_a_buffer_passed_twice_raises_like_jax():
    jax = _jax()
    jx = jax.numpy.arange(4.0)
    with pytest.raises(RuntimeError, match="previously donated"):
        jax.jit(lambda a, b: a + b, donate_argnums=0)(jx, jx)
    x = tnp.arange(4.0)
    with pytest.raises(RuntimeError, match="previously donated"):
        tracejit.jit(lambda a, b: a + b, backend="native", donate_argnums=0)(x, x)
    assert not x.is_deleted()


def test_aot_stages_report_and_perform_donation_like_jax():
    jax = _jax()
    data = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(x, y):
        return x * 2.0 + y

    want = jax.jit(f, donate_argnums=0).lower(data, data).compile()
    compiled = tracejit.jit(f, backend="native", donate_argnums=0).lower(data, data).compile()
    assert [a.donated for a in compiled.args_info[0]] == [a.donated for a in want.args_info[0]]
    assert compiled.memory_analysis().alias_size_in_bytes == \
        want.memory_analysis().alias_size_in_bytes == data.nbytes
    plain = tracejit.jit(f, backend="native").lower(data, data).compile()
    assert plain.memory_analysis().alias_size_in_bytes == 0
    x, y = tnp.asarray(data), tnp.asarray(data)
    address = x.address
    out = compiled(x, y)
    assert out.address == address and x.is_deleted() and not y.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), data * 3)


def _huge_page_eligible(address: int) -> int | None:
    """THPeligible of the mapping holding `address` (Linux's /proc/self/smaps), else None."""
    try:
        with open("/proc/self/smaps") as f:
            lines = f.readlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        head = line.split(maxsplit=1)[0]
        if not head.endswith(":"):  # a mapping's first line: "lo-hi perms ..."
            lo, hi = (int(v, 16) for v in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == "THPeligible:":
            return int(line.split()[1])
    return None


def test_large_pooled_buffers_keep_numpys_huge_page_advice():
    """A large pooled output may use huge pages exactly when NumPy's own array of that size may
    (benchmarks/first_touch.py: on this machine a first write of 4 KiB pages cost 3-10x more
    than of huge pages); it stays 64-byte aligned and correct when reused."""
    n = 5 << 18  # 5 MiB of float32, above NumPy's 4 MiB threshold for MADV_HUGEPAGE
    f = tracejit.jit(lambda x: x * 2.0 + 1.0, backend="native")
    x = tnp.asarray(np.arange(n, dtype=np.float32))
    plain = np.empty(n, np.float32)
    expected = _huge_page_eligible(plain.ctypes.data + plain.nbytes // 2)
    for _ in range(2):  # fresh, then the recycled buffer
        y = f(x)
        assert y.address % buffers.ALIGN == 0
        assert _huge_page_eligible(y.address + y.nbytes // 2) == expected
        np.testing.assert_array_equal(np.asarray(y), np.arange(n, dtype=np.float32) * 2 + 1)
        del y


def test_a_donated_kernel_reading_a_fused_value_twice():
    """A kernel that reads one of its fused values twice (p * p - p) over a donated input:
    donation planning walked p's reads once per reader and failed (a KeyError) on the second."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(x):
        p = x * 2 + 1
        return p * p - p
    got = tracejit.jit(f, donate_argnums=0)(tnp.asarray(x))
    p = x * 2 + 1
    np.testing.assert_array_equal(np.asarray(got), p * p - p)
