"""The dispatch fast path (runtime/jit.py `Jitted.__call__` and `_fast_key`, native.py
`NativeExecutable.runner`): repeated calls — on Arrays, NumPy arrays, Python floats, pytrees of
them, donated, chained, from several threads — give the values, types, structures, errors and
trace counts of the first call, of NumPy and of JAX."""
import threading

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from tracejit.core.array import Array as ArrayImpl

jax = pytest.importorskip("jax")


def _both(f, **jit_kwargs):
    """(tracejit's jit of f, JAX's), each counting its traces in a list."""
    traced = {"tracejit": [], "jax": []}

    def counted(name):
        def g(*args, **kwargs):
            traced[name].append(1)
            return f(*args, **kwargs)
        return g
    return (tracejit.jit(counted("tracejit"), **jit_kwargs),
            jax.jit(counted("jax"), **jit_kwargs), traced)


def _same(ours, want):
    """Same pytree structure (container types too), dtypes, shapes and values; ours frozen."""
    ours_leaves, ours_tree = tracejit.tree_util.tree_flatten(ours)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert str(ours_tree).replace("PyTreeDef", "") == str(want_tree).replace("PyTreeDef", "")
    if isinstance(want, (tuple, list, dict)):
        assert type(ours) is type(want)
    for a, b in zip(ours_leaves, want_leaves):
        assert a.dtype == b.dtype and a.shape == b.shape and a.weak_type == b.weak_type
        assert not np.asarray(a).flags.writeable  # (immutable, as JAX's)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_pytree_arguments_like_jax():
    """Dicts, lists and tuples of Arrays, NumPy arrays and Python floats, nested: the second
    round is served by the fast path's index (no trace, one index entry per signature) and
    every result is JAX's; a structure that differs only in a key, a container's type or
    nesting gets its own program."""
    def f(params, xs):
        scale = 2.0 if isinstance(xs, list) else 3.0
        w = params["w"] if "w" in params else params["v"]
        return {"y": w * xs[0] + params["b"] * scale, "n": len(xs)}

    rng = np.random.default_rng(0)
    w, b = (rng.standard_normal(4).astype(np.float32) for _ in range(2))
    x = rng.standard_normal(4).astype(np.float32)
    calls = [({"w": w, "b": b}, [x]),
             ({"v": w, "b": b}, [x]),            # another key
             ({"w": w, "b": b}, (x,)),           # a tuple, not a list
             ({"w": w, "b": b}, [x, x]),         # one more leaf
             ({"w": w, "b": [b][0]}, ([x],)),     # nested one level deeper (x[0] a list)
             ({"w": w, "b": 0.5}, [x]),          # a Python float leaf: weakly typed
             ({"w": np.float32(1.5), "b": b}, [np.float64(2.0) * x])]  # NumPy leaves
    ours, theirs, traced = _both(lambda p, xs: f(p, xs if not isinstance(xs[0], list)
                                                  else xs[0]))
    for round_ in range(2):
        for params, xs in calls:
            as_ours = tracejit.tree_util.tree_map(
                lambda v: tnp.asarray(v) if isinstance(v, np.ndarray) and v.ndim else v,
                params), xs
            _same(ours(*as_ours), theirs(params, xs))
        if round_ == 0:
            first = len(traced["tracejit"])
    assert len(traced["tracejit"]) == first == len(traced["jax"]) == len(calls)
    assert len(ours._traces.fast) == len(calls)


def test_pytree_argument_errors_like_the_first_call():
    """A dict whose keys do not sort and a list holding itself are refused as tree_flatten
    refuses them (the fast path's walk leaves them to it); an unhashable static argument too."""
    g = tracejit.jit(lambda t: t)
    with pytest.raises(ValueError, match="Comparator raised exception while sorting"):
        g({1: 1.0, "a": 2.0})
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(RecursionError):
        g(cyclic)


def test_fast_path_results_chained_threads_and_readonly():
    """A result fed back as the next argument (its key found by identity: the executable's
    interned types) for 50 calls, in 4 threads at once with their own values: each thread's
    values are NumPy's, the function is traced once, and every result's buffer is read-only
    (the lean runner freezes it as the general path does)."""
    traced = []

    @tracejit.jit
    def step(x, y):
        traced.append(1)
        return x * 0.5 + y, x - y

    results, errors = {}, []

    def run(k):
        try:
            x = tnp.asarray(np.full(3, float(k), np.float32))
            y = tnp.asarray(np.arange(3, dtype=np.float32))
            wx, wy = np.full(3, float(k), np.float32), np.arange(3, dtype=np.float32)
            for _ in range(50):
                x, y = step(x, y)
                wx, wy = wx * np.float32(0.5) + wy, wx - wy
                assert not np.asarray(x).flags.writeable
            results[k] = (np.asarray(x), np.asarray(y), wx, wy)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    step(tnp.zeros(3), tnp.zeros(3))
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(4):
        x, y, wx, wy = results[k]
        np.testing.assert_allclose(x, wx, rtol=1e-6)
        np.testing.assert_allclose(y, wy, rtol=1e-6)
    assert len(traced) == 1
    out = step(tnp.zeros(3), tnp.zeros(3))
    assert type(out) is tuple and len(out) == 2


def test_output_structures_like_jax():
    """A tuple, a list, a dict and a single array, each returned through the fast path (the
    second and third calls) as JAX returns them."""
    x = np.arange(4, dtype=np.float32)
    for f in (lambda x: (x, x * 2), lambda x: [x, x + 1, x * x], lambda x: {"b": x, "a": -x},
              lambda x: x.sum(), lambda x: ((x,), [x * 3])):
        ours, theirs, _ = _both(f)
        for _ in range(3):
            _same(ours(tnp.asarray(x)), theirs(x))


def test_donated_fast_path_like_jax():
    """A donated argument is deleted by every call through the fast path, and the result is
    the right value; passing the deleted array again is refused, as in JAX."""
    ours = tracejit.jit(lambda x: x + 1.0, donate_argnums=0)
    theirs = jax.jit(lambda x: x + 1.0, donate_argnums=0)
    x, y = tnp.asarray(np.zeros(4, np.float32)), jax.numpy.zeros(4, np.float32)
    for k in range(5):
        old, old_y = x, y
        x, y = ours(x), theirs(y)
        assert old.is_deleted() and old_y.is_deleted()
        np.testing.assert_array_equal(np.asarray(x), np.full(4, k + 1.0, np.float32))
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(RuntimeError, match="deleted"):
        ours(old)


def test_transfer_guard_and_committed_arguments_on_the_fast_path():
    """After a signature is on the fast path: a NumPy leaf inside a dict is still a guarded
    host-to-device transfer, and a result of a committed argument is still committed (an
    uncommitted one's not), as in JAX."""
    g = tracejit.jit(lambda d: d["a"] * 2)
    d = {"a": np.ones(3, np.float32)}
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(g(d)), np.full(3, 2.0, np.float32))
    with tracejit.transfer_guard("disallow"), \
            pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
        g(d)
    h = tracejit.jit(lambda x: x + 1)
    x = tnp.ones(3)
    placed = tracejit.device_put(x, tracejit.devices()[0])
    for _ in range(3):
        assert h(placed).committed and not h(x).committed


@pytest.mark.parametrize("shape, dtype", [((), np.float32), ((3, 5), np.float32),
                                          ((2,), np.complex128), ((7,), np.int8),
                                          ((4, 4), np.float64), ((1,), np.bool_)])
def test_slab_buffers_are_distinct_aligned_and_read_only(shape, dtype):
    """runtime.buffers.Slab over several refills: every buffer has the shape and dtype asked
    for, its own memory at the address given (ctypes' own reading), 16-byte aligned as
    np.empty's; read-only, and not to be made writable (its block is read-only)."""
    from tracejit.runtime.buffers import Slab
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    slab = Slab(shape, dtype, nbytes)
    taken = [slab.take() for _ in range(300)]
    spans = sorted((address, address + nbytes) for _, address in taken)
    assert all(a_end <= b for (_, a_end), (b, _) in zip(spans, spans[1:]))  # no overlap
    for view, address in taken:
        assert view.shape == shape and view.dtype == dtype and view.flags.c_contiguous
        assert view.ctypes.data == address and address % 16 == 0
        assert not view.flags.writeable
        with pytest.raises(ValueError):
            view.setflags(write=True)


def test_small_results_donated_later_and_kept_across_refills():
    """Small results (slab buffers) keep their values while later calls fill the slab's next
    blocks, and donating one to another program deletes it and gives the right value (its
    bytes copied: a slab buffer is never a donated buffer's new owner)."""
    add = tracejit.jit(lambda x: x + 1.0)
    donating = tracejit.jit(lambda x: x * 2.0, donate_argnums=0)
    x = tnp.asarray(np.arange(3, dtype=np.float32))
    kept = [add(x) for _ in range(3)]
    for _ in range(200):
        kept.append(add(kept[-1]))
    for k, y in enumerate(kept):
        np.testing.assert_array_equal(np.asarray(y),
                                      np.arange(3, dtype=np.float32) + max(1, k - 1))
    for _ in range(3):
        y = add(x)
        z = donating(y)
        assert y.is_deleted() and not z.is_deleted()
        np.testing.assert_array_equal(np.asarray(z), (np.arange(3, dtype=np.float32) + 1) * 2)


@pytest.mark.parametrize("shape", [(1000,), (70, 80)])  # (below the pool's 64 KiB, above a slab's)
def test_mid_size_outputs_on_the_fast_path(shape):
    """Outputs above a slab's size and below the pool's (fresh NumPy buffers, frozen before the
    call) through the fast path: NumPy's values, JAX's types, read-only, each call its own."""
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours, theirs, _ = _both(lambda x: (x * 2.0, x[..., ::2] - 1.0))
    outs = [ours(tnp.asarray(x)) for _ in range(3)]
    for got in outs:
        _same(got, theirs(x))
    assert len({o[0].unsafe_buffer_pointer() for o in outs}) == 3
    single, _, _ = _both(lambda x: x + 1.0)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(single(tnp.asarray(x))), x + np.float32(1))


def test_keyword_and_python_scalar_arguments_like_jax():
    """Dynamic keyword arguments (Arrays, Python scalars, pytrees, beside static ones passed by
    name) and Python int and bool arguments take the fast path's index: the second round
    traces nothing, and every result is JAX's (an int weakly typed, a bool not); an int
    beyond int32 still raises JAX's OverflowError after its type was indexed, and a keyword
    argument moved to another name or made positional is another signature; a host value
    by keyword is still a guarded transfer."""
    def f(x, y=1.0, *, n=2, scale=None, flag=False):
        s = 1.0 if scale is None else scale["a"] * scale["b"][0]
        return x * y * n + s if not flag else x - y * n

    v = np.arange(4, dtype=np.float32)
    calls = [((v,), {"y": v}),
             ((v,), {"y": 2.5, "n": 3}),                     # n static by name
             ((v,), {"y": 3, "n": 3}),                       # a Python int: weak int32
             ((v, 2), {"n": 4}),                             # positional int
             ((v,), {"y": v, "scale": {"a": 2.0, "b": [v]}}),  # a pytree by keyword
             ((v,), {"scale": {"a": np.float32(2.0), "b": [v]}, "y": -7}),
             ((v,), {"y": True, "n": 2, "flag": True}),      # a bool: not weak
             ((v, True), {"flag": False}),
             ((v, 1.5 - 2j), {}),                             # a Python complex: weak
             ((v, np.int8(-3)), {}), ((v,), {"y": np.complex64(1 + 1j)}),  # NumPy scalars
             ((v, np.uint16(7)), {}),
             ((v, 2**31 - 1), {}),
             ((v, -2**31), {})]
    ours, theirs, traced = _both(f, static_argnames=("n", "flag"))
    for round_ in range(2):
        for args, kwargs in calls:
            as_ours = tuple(tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
            _same(ours(*as_ours, **kwargs), theirs(*args, **kwargs))
        if round_ == 0:
            first = len(traced["tracejit"])
    assert len(traced["tracejit"]) == first == len(traced["jax"])
    assert len(ours._traces.fast) == len(calls) - 1  # (the last two: one signature)
    for kwargs in ({"y": v}, {"y": 3}, {"y": 2.5, "n": 3}):  # (indexed above: still guarded)
        with tracejit.transfer_guard("disallow"), \
                pytest.raises(RuntimeError, match="Disallowed host-to-device transfer"):
            ours(tnp.asarray(v), **kwargs)
    for big in (2**31, -2**31 - 1, 2**70):
        with pytest.raises(OverflowError):
            ours(tnp.asarray(v), big)
        with pytest.raises(OverflowError):
            ours(tnp.asarray(v), y=big)
    g, h, g_traced = _both(lambda a, b: a - 2 * b)
    for args, kwargs in [((1.0,), {"b": 2}), ((1.0, 2), {}), ((), {"a": 1.0, "b": 2}),
                         ((), {"b": 2, "a": 1.0}), ((), {"a": 2, "b": 1.0})] * 2:
        _same(g(*args, **kwargs), h(*args, **kwargs))
    assert len(g_traced["tracejit"]) == len(g_traced["jax"]) == 4


def test_python_int_under_x64_and_disable_jit():
    """An int's indexed type follows jax_enable_x64 (int32, then int64 with a value beyond
    int32 accepted) and jax_disable_jit runs the function itself, for keyword calls too."""
    f = tracejit.jit(lambda x, k=0: x + k)
    assert f(1, k=2).dtype == np.int32 and f(1, k=2).dtype == np.int32
    with tracejit.enable_x64(True):
        r = f(2**40, k=2)
        assert r.dtype == np.int64 and int(r) == 2**40 + 2
        assert f(1, k=2).dtype == np.int64
    assert f(1, k=2).dtype == np.int32
    seen = []
    g = tracejit.jit(lambda x, k=0: seen.append(type(x)) or x + k)
    g(1, k=2), g(1, k=2)
    with tracejit.disable_jit():
        assert g(1, k=2) == 3
    assert len(seen) == 2 and seen[1] is int  # (traced once, then run as Python)


def test_host_arguments_converted_on_the_fast_path():
    """NumPy arrays (read-only, strided, of another dtype) and Python scalars beside Arrays
    (`runners`' host variant: converted first), for one, three and a tree of outputs: the
    values of JAX after the index holds each signature, and the same entry serves the Array
    and the host calls of one type."""
    def f(x, y, s):
        return x * s + y, (x - y, {"m": x * y})

    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    frozen = a.copy()
    frozen.setflags(write=False)
    wide = rng.standard_normal((3, 8)).astype(np.float32)[:, ::2]  # (not contiguous)
    calls = [(a, a, 0.1), (tnp.asarray(a), frozen, 1e40), (wide, tnp.asarray(a), -3),
             (a.astype(np.float64), a, True), (tnp.asarray(a), tnp.asarray(a), 0.1),
             (a, tnp.asarray(a), np.float32(2.5))]
    ours, theirs, traced = _both(f)
    one, one_jax, _ = _both(lambda x, s: x * s)
    for _ in range(3):
        for x, y, s in calls:
            plain = [np.asarray(v) if isinstance(v, tracejit.Array) else v for v in (x, y)]
            _same(ours(x, y, s), theirs(*plain, s))
            _same(one(x, s), one_jax(plain[0], s))
    assert len(traced["tracejit"]) == len(traced["jax"])
    assert np.isinf(np.asarray(ours(a, a, 1e40)[0])).all()


def test_donated_arguments_on_the_lean_path():
    """`_aliased_runner`: a donated Array that owns its buffer lends it to the result (the
    same address, call after call, once a call made it); one whose buffer a slab or another Array shares, or a
    NumPy array, is copied, the sharer left as it was; an unmatched donated argument and the
    undonated one stay or go as JAX's; a donated array passed twice is refused."""
    f = tracejit.jit(lambda x, y, s: (x * s + y, y * 2.0), donate_argnums=(0, 2))
    g = jax.jit(lambda x, y, s: (x * s + y, y * 2.0), donate_argnums=(0, 2))
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, y = tnp.asarray(data), tnp.asarray(data + 1)
    x_jax, want = jax.numpy.asarray(data), data
    addresses = []
    with pytest.warns(UserWarning, match="donated buffers were not usable"):
        for k in range(4):
            old, s = x, tnp.asarray(np.float32(k))
            x, _ = f(x, y, s)
            x_jax, _ = g(x_jax, data + 1, np.float32(k))
            want = want * np.float32(k) + data + 1
            assert old.is_deleted() and not y.is_deleted()
            addresses.append(x.address)
            np.testing.assert_array_equal(np.asarray(x), np.asarray(x_jax))
            np.testing.assert_array_equal(np.asarray(x), want)
    assert len(set(addresses[1:])) == 1  # (the first call's trace held the first buffer)
    shared = tnp.asarray(data)
    view = ArrayImpl(np.asarray(shared), shared.aval)  # (the same buffer, two Arrays)
    out, diff = f(view, y, 2.0)
    np.testing.assert_array_equal(np.asarray(shared), data)
    np.testing.assert_array_equal(np.asarray(out), data * 2 + data + 1)
    np.testing.assert_array_equal(np.asarray(diff), (data + 1) * 2)
    assert view.is_deleted() and out.address != shared.address
    small = tracejit.jit(lambda x: x * 2.0, donate_argnums=0)
    v = small(tnp.asarray(np.float32(3.0)))  # (a slab's: copied when donated)
    for _ in range(3):
        old, v = v, small(v)
        assert old.is_deleted()
    assert float(v) == 48.0
    host = data.copy()
    assert np.asarray(small(host)).tolist() == (data * 2).tolist()
    np.testing.assert_array_equal(host, data)  # (a NumPy argument is only read)
    z = tnp.asarray(data)
    with pytest.raises(RuntimeError, match="previously donated in the same call"):
        f(z, z, 1.0)
