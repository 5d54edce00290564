"""Products through BLAS (backend/llvm/linalg.py) and the passes that shape them
(compiler/passes.py): one gemm call, gemm tiles on our pool (rows, columns or the contracted
dimension), ?gemv for one-row/one-column products, outer products rewritten as a broadcast
multiply, transposed operands read through gemm's flags, transposed products computed in the
order wanted. Each against NumPy in float64 (within the reassociation bound of a length-k dot
product) and against the reference interpreter."""
import math
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backend.llvm import linalg

F32, F64, C64 = np.float32, np.float64, np.complex64


def _operand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(-9, 10, shape)
    return np.asarray(x).astype(dtype)


def _reference(f, *args):
    """f on the reference interpreter, and on float64/complex128 copies of the operands."""
    interp = np.asarray(tracejit.jit(f, backend="interpret")(*args))
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
    with tracejit.enable_x64():
        exact = np.asarray(tracejit.jit(f, backend="interpret")(*wide))
    return interp, exact


def _check(f, args, k, *, exact_ints=False):
    got = np.asarray(tracejit.jit(f)(*args))
    interp, exact = _reference(f, *args)
    assert got.dtype == interp.dtype and got.shape == interp.shape
    if exact_ints or got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, interp)
        return got
    # |error| <= k u sum|terms| per element (Higham 3.5), u = eps/2: bound by |A||B|
    absf = lambda *xs: np.abs(np.asarray(  # noqa: E731
        tracejit.jit(f, backend="interpret")(*[np.abs(x).astype(np.float64) for x in xs])))
    with tracejit.enable_x64():
        scale = absf(*args)
    eps = np.finfo(got.dtype).eps
    bound = (k + 2) * eps * scale + np.finfo(got.dtype).tiny
    assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / bound)
    assert np.all(np.abs(interp - exact) <= bound)
    return got


def _dot(dn):
    return lambda a, b: lax.dot_general(a, b, dn)


MM = (([1], [0]), ([], []))      # a @ b
TN = (([0], [0]), ([], []))      # a.T @ b
NT = (([1], [1]), ([], []))      # a @ b.T
TT = (([0], [1]), ([], []))      # a.T @ b.T


@pytest.mark.parametrize("a_shape,b_shape,dn,dtype,axis", [
    ((64, 96), (96, 80), MM, F32, None),              # one call
    ((2000, 128), (128, 128), MM, F32, "m"),          # uneven row tiles
    ((128, 2000), (128, 128), TN, F32, "m"),          # transposed lhs, row tiles
    ((256, 64), (2048, 256), TT, F32, "n"),           # column tiles, both transposed
    ((64, 256), (256, 2048), MM, F32, "n"),
    ((1024, 1024), (1024, 1024), NT, F32, "n"),       # square: columns (linalg.RHS_REPACK_WEIGHT)
    ((8192, 64), (8192, 64), TN, F32, "k"),           # contracted dim tiled: partials
    ((64, 8192), (64, 8192), NT, F32, "k"),
    ((40, 9000), (24, 9000), NT, F64, "k"),           # uneven partials
    ((512, 64), (64, 128), MM, C64, "m"),             # complex: rows/columns only
    ((64, 256), (256, 2048), MM, C64, "n"),
])
def test_gemm_paths_match_numpy(a_shape, b_shape, dn, dtype, axis):
    with tracejit.enable_x64(dtype == F64):
        a, b = _operand(a_shape, dtype, 0), _operand(b_shape, dtype, 1)
        (lc, _), _ = dn
        k = a_shape[lc[0]]
        m, n = a.size // k, b.size // k
        plan = linalg.tile_plan(np.dtype(dtype), m, n, k)
        assert (plan and plan[0]) == axis
        _check(_dot(dn), (a, b), k)


@pytest.mark.parametrize("a_shape,b_shape,dn", [
    ((3000, 300), (300, 1), MM),      # one column: gemv on the lhs
    ((300, 3000), (300, 1), TN),      # ... transposed lhs
    ((1, 300), (300, 700), MM),       # one row: gemv on the rhs
    ((300,), (700, 300), (([0], [1]), ([], []))),   # vector @ matrix.T
    ((50000,), (50000,), (([0], [0]), ([], []))),   # a dot product
    ((3, 300, 1), (3, 300, 200), (([1], [1]), ([0], [0]))),   # batched gemv
    ((3, 1, 300), (3, 200, 300), (([2], [2]), ([0], [0]))),
])
@pytest.mark.parametrize("dtype", [F32, C64])
def test_gemv_paths_match_numpy(a_shape, b_shape, dn, dtype):
    a, b = _operand(a_shape, dtype, 2), _operand(b_shape, dtype, 3)
    (lc, _), _ = dn
    _check(_dot(dn), (a, b), a_shape[lc[0]])


def test_batched_tiled_products():
    a, b = _operand((2, 1024, 128), F32, 4), _operand((2, 128, 128), F32, 5)
    assert linalg.tile_plan(np.dtype(F32), 1024, 128, 128)[0] == "m"
    _check(lambda a, b: a @ b, (a, b), 128)


BATCH_MM = (([2], [1]), ([0], [0]))   # a[i] @ b[i]
BATCH_TN = (([1], [1]), ([0], [0]))   # a[i].T @ b[i]


@pytest.mark.parametrize("a_shape,b_shape,dn,chunks", [
    ((16, 128, 128), (16, 128, 128), BATCH_MM, 16),      # one call per product: 16 chunks
    ((2, 2048, 256), (2, 2048, 256), BATCH_TN, "plan"),  # the MLP step's weight gradient on
    # 2 devices: each product 2 column tiles on our gemm (linalg.product_plan), in turn, where
    # our gemm runs (AVX-512); else 2 split-k tiles each on BLAS
    ((3, 9000, 64), (3, 9000, 64), BATCH_TN, 12),        # split-k tiles on BLAS (uneven)
    ((2, 2048, 256), (2, 2048, 1), BATCH_TN, 2),         # ... and its gemv: one per product
    ((3, 1, 600), (3, 600, 700), BATCH_MM, 3),           # one-row products
])
@pytest.mark.parametrize("threads,mode", [(1, None), (2, None), (2, "tiles"), (2, "one")])
def test_batch_of_products_is_one_pool_job(monkeypatch, a_shape, b_shape, dn, chunks, threads,
                                           mode):
    """A batch of products with work enough for the pool runs as one pool job (a chunk per
    product, or per split-k tile), or -- products run whole, as the site picks per call, or
    as linalg.GEMM_MODE forces -- in a loop on the calling thread: each product has the bits
    it has alone either way, whatever the thread count, and the values are within the dot
    product bound of float64's."""
    monkeypatch.setattr(linalg, "GEMM_MODE", mode)
    if chunks == "plan":
        m, k = a_shape[2], a_shape[1]
        plan, routine = linalg.product_plan(np.dtype(F32), m, b_shape[2], k)
        chunks = a_shape[0] * (plan[2] if plan[0] == "k" and routine == "gemm" else 1)
    old = tracejit.config.read("tracejit_num_threads")
    tracejit.config.update("tracejit_num_threads", threads)
    try:
        a, b = _operand(a_shape, F32, 29), _operand(b_shape, F32, 30)
        f, one = _dot(dn), _dot((([d - 1 for d in dn[0][0]], [d - 1 for d in dn[0][1]]),
                                 ([], [])))
        ir = _llvm(f, a, b)
        split_k = chunks > a_shape[0]
        if mode != "one" or split_k:
            assert ir.count("@tracejit_parallel_for(") == 2, ir  # (its declaration, one call)
            assert f"i64 {chunks})" in ir.split("call void @tracejit_parallel_for(")[1]
        else:  # (forced to loop: the pool job is folded away)
            assert "@tracejit_parallel_for(" not in ir
        jf = tracejit.jit(f)
        calls = [jf(a, b) for _ in range(2 * linalg.WARM_UP_CALLS)]  # (a site tries both ways)
        got = _check(f, (a, b), a_shape[dn[0][0][0]])
        for i in range(a_shape[0]):
            alone = np.asarray(tracejit.jit(one)(a[i], b[i]))
            for out in (got, *calls):
                assert np.asarray(out)[i].tobytes() == alone.tobytes()
    finally:
        tracejit.config.update("tracejit_num_threads", old)


@pytest.mark.parametrize("a_shape,b_shape", [((0, 64), (64, 32)), ((64, 0), (0, 32)),
                                             ((64, 32), (32, 0))])
def test_empty_products(a_shape, b_shape):
    a, b = _operand(a_shape, F32, 6), _operand(b_shape, F32, 7)
    got = np.asarray(tracejit.jit(lambda a, b: a @ b)(a, b))
    np.testing.assert_array_equal(got, np.zeros((a_shape[0], b_shape[1]), F32))


def test_integer_products_are_exact():
    a, b = _operand((64, 96), np.int32, 8), _operand((96, 64), np.int32, 9)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda a, b: a @ b)(a, b)), a @ b)


def _kernels(f, *args) -> str:
    return tracejit.jit(f).lower(*args).compile().as_text()


@pytest.mark.parametrize("a_shape,b_shape,dn,dtype", [
    ((4096, 1), (256, 1), NT, F32),                       # the one-unit layer's gradient
    ((1, 300), (1, 200), TN, F64),
    ((3, 5, 1), (3, 1, 7), (([2], [1]), ([0], [0])), F32),     # batched
    ((1, 5, 3), (7, 1, 3), (([0], [1]), ([2], [2])), F32),     # batch dims last
    ((6, 1, 4, 1), (1, 5, 1), (([1, 3], [0, 2]), ([], [])), F32),
    ((40, 1), (1, 30), MM, np.int32),
    ((40, 1), (1, 30), MM, np.float16),
    ((40,), (30,), (([], []), ([], [])), C64),            # no contracted dims at all
])
def test_outer_products_become_a_fused_multiply(a_shape, b_shape, dn, dtype):
    with tracejit.enable_x64(dtype == F64):
        a, b = _operand(a_shape, dtype, 10), _operand(b_shape, dtype, 11)
        f = lambda a, b: lax.dot_general(a, b, dn) * 2  # noqa: E731
        assert "dot_general" not in _kernels(f, a, b)
        got = np.asarray(tracejit.jit(f)(a, b))
        # one product per element: the same bits as the interpreter's and NumPy's (a complex
        # product may be formed with fused multiply-adds natively: within a few ulps)
        want = np.asarray(tracejit.jit(f, backend="interpret")(a, b))
        outer = np.einsum(_einsum(a.ndim, b.ndim, dn), a, b).astype(dtype) * dtype(2)
        if np.dtype(dtype).kind == "c":
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps)
            np.testing.assert_allclose(got, outer, rtol=4 * np.finfo(dtype).eps)
        else:
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, outer)


def _einsum(na, nb, dn):
    (lc, rc), (lb, rb) = dn
    letters = iter("abcdefghij")
    la, ra = [None] * na, [None] * nb
    for x, y in zip(lb, rb):
        la[x] = ra[y] = next(letters)
    for x, y in zip(lc, rc):
        la[x] = ra[y] = next(letters)
    for i in range(na):
        la[i] = la[i] or next(letters)
    for i in range(nb):
        ra[i] = ra[i] or next(letters)
    out = [la[d] for d in lb] + [la[i] for i in range(na) if i not in lb and i not in lc] + \
        [ra[i] for i in range(nb) if i not in rb and i not in rc]
    return f"{''.join(la)},{''.join(ra)}->{''.join(out)}"


def test_bool_outer_product_stays_a_dot():
    a = np.array([[True], [False]])
    b = np.array([[True, False, True]])
    got = tracejit.jit(lambda a, b: a @ b)(a, b)
    np.testing.assert_array_equal(np.asarray(got), a @ b)


def test_transposed_operands_use_gemm_flags():
    a, b = _operand((256, 128), F32, 12), _operand((200, 256), F32, 13)
    text = _kernels(lambda a, b: a.T @ b.T, a, b)
    assert "transpose" not in text and "kernel" not in text.split("let")[1]
    _check(lambda a, b: a.T @ b.T, (a, b), 256)
    # a transpose that would leave a batch dimension inside is still copied first
    x, y = _operand((8, 3, 16), F32, 14), _operand((3, 16, 8), F32, 15)
    f = lambda x, y: jnp.transpose(x, (1, 0, 2)) @ y  # noqa: E731
    assert "transpose" in _kernels(f, x, y)
    _check(f, (x, y), 16)


def test_transposed_product_swaps_operands():
    x, g = _operand((128, 784), F32, 16), _operand((128, 512), F32, 17)
    f = lambda x, g: (x.T @ g).T  # noqa: E731   (the weight gradient, transposed)
    assert "transpose" not in _kernels(f, x, g)
    _check(f, (x, g), 128)
    # used twice: the product is computed once and copied transposed
    h = lambda x, g: (x.T @ g).T[:2, :3].sum() + (x.T @ g)  # noqa: E731
    assert _kernels(h, x, g).count("dot_general") == 1
    _check(h, (x, g), 128 * 1536)


def test_mlp_gradient_matches_finite_differences():
    """jit(grad) of a tanh MLP whose products take the tiled, gemv and outer-product paths."""
    rng = np.random.default_rng(18)
    x = rng.standard_normal((4096, 128)).astype(F32)
    y = rng.standard_normal((4096, 1)).astype(F32)
    w1 = (rng.standard_normal((128, 128)) / 12).astype(F32)
    w2 = (rng.standard_normal((128, 1)) / 12).astype(F32)

    def loss(w1, w2):
        return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)
    g1, g2 = tracejit.jit(tracejit.grad(loss, argnums=(0, 1)))(w1, w2)
    assert linalg.tile_plan(np.dtype(F32), 128, 128, 4096) is not None

    def loss64(w1, w2):
        return np.mean((np.tanh(x.astype(F64) @ w1) @ w2 - y) ** 2)
    h = 1e-4
    for grad, w, i in ((g1, w1, (3, 7)), (g1, w1, (127, 0)), (g2, w2, (5, 0))):
        up, down = w.astype(F64), w.astype(F64)
        up[i] += h
        down[i] -= h
        fd = (loss64(up, w2.astype(F64)) - loss64(down, w2.astype(F64))) / (2 * h) \
            if w is w1 else (loss64(w1.astype(F64), up) - loss64(w1.astype(F64), down)) / (2 * h)
        assert abs(float(np.asarray(grad)[i]) - fd) <= 1e-4 + 1e-3 * abs(fd)


def _llvm(f, *args) -> str:
    return tracejit.jit(f).lower(*args).compile().as_text("llvm")


@pytest.mark.parametrize("a_shape,b_shape,dn", [
    # batch dim after a size-1 free one (shard_map's split over one device)
    ((1, 3, 64, 96), (3, 96, 80), (([3], [1]), ([1], [0]))),
    ((1, 3, 96, 1, 64), (3, 1, 80, 96), (([2], [3]), ([1], [0]))),    # transposed, size-1s
    ((1, 1, 1, 512), (512, 1, 700), (([3], [0]), ([], []))),          # one row: gemv
    ((2, 1, 37, 1, 53), (1, 2, 53, 29), (([4], [2]), ([0, 1], [1, 0]))),  # size-1 batch pair
])
def test_size_one_dims_still_reach_blas(a_shape, b_shape, dn):
    a, b = _operand(a_shape, F32, 19), _operand(b_shape, F32, 20)
    ir = _llvm(_dot(dn), a, b)
    assert "sgemm" in ir or "sgemv" in ir  # (not the inline loop nest)
    (lc, _), _ = dn
    _check(_dot(dn), (a, b), a_shape[lc[0]])


def test_shard_map_matmul_on_one_device_is_one_gemm():
    """shard_map(a @ b) with b replicated: pvary materialises b per device (a broadcast) and
    the device split puts a size-1 dim before the batch dim; the product must still be one
    gemm of a with b itself (it ran as an inline loop nest: 4.4 s for 1024^2)."""
    P = tracejit.sharding.PartitionSpec
    mesh = tracejit.sharding.Mesh(np.array(tracejit.devices()[:1]), ("x",))
    a, b = _operand((96, 64), F32, 21), _operand((64, 80), F32, 22)
    rows = tracejit.sharding.NamedSharding(mesh, P("x"))
    whole = tracejit.sharding.NamedSharding(mesh, P())
    ga = tracejit.make_array_from_callback(a.shape, rows, lambda i: a[i])
    gb = tracejit.make_array_from_callback(b.shape, whole, lambda i: b[i])
    mm = tracejit.jit(tracejit.shard_map(lambda a, b: a @ b, mesh=mesh,
                                         in_specs=(P("x"), P()), out_specs=P("x")))
    compiled = mm.lower(ga, gb).compile()
    assert compiled.as_text().count(" = ") == 1  # (the dot_general: no copy, before or after)
    assert "sgemm" in compiled.as_text("llvm")
    got = np.asarray(mm(ga, gb))
    bound = 66 * np.finfo(F32).eps * (np.abs(a).astype(F64) @ np.abs(b))
    assert np.all(np.abs(got - a.astype(F64) @ b) <= bound)


def test_unit_dim_reshapes_and_transposes_around_a_product_are_no_copies():
    """reshape/squeeze adding or dropping size-1 dims of an operand, and transposes moving
    only size-1 dims of the product, are read through: one dot_general, no copy kernels."""
    a, b = _operand((37, 53), F32, 23), _operand((53, 2, 29), F32, 24)

    def f(a, b):
        p = lax.dot_general(a.reshape(1, 37, 1, 53), b[None], (([3], [1]), ([], [])))
        return jnp.transpose(p, (2, 0, 1, 3, 4, 5)).reshape(37, 58) * 2  # [1,37,1,1,2,29]
    text = _kernels(f, a, b)
    assert text.count("dot_general") == 1 and "transpose" not in text, text
    assert text.count("// kernel") == 1, text  # (the multiply, reading the product's memory)
    _check(f, (a, b), 53)


_PICK = lax.GatherDimensionNumbers(offset_dims=(1, 2, 3), collapsed_slice_dims=(),
                                   start_index_map=(0, 1, 2))


@pytest.mark.parametrize("mode", ["clip", "promise_in_bounds", "fill"])
def test_gather_of_a_broadcast_copy(mode):
    """Each device's copy of a replicated operand, picked by device index (shard_map over the
    devices of one process) is the operand itself: no gather, the product one gemm -- except
    with FILL_OR_DROP, where an index out of range gives the fill value."""
    a, b = _operand((2, 1, 48, 64), F32, 25), _operand((64, 80), F32, 26)
    starts = np.array([[0, 0, 0], [5, 0, 0]], np.int32)  # 5: out of range along the copies

    def f(a, b, starts):
        copies = lax.broadcast_in_dim(b, (2, 64, 80), (1, 2))
        picked = lax.gather(copies, starts, _PICK, (1, 64, 80), mode=mode)  # [2, 1, 64, 80]
        return lax.dot_general(a, picked, (([3], [2]), ([0, 1], [0, 1])))
    text = _kernels(f, a, b, starts)
    assert ("gather" in text) == (mode == "fill")
    if mode != "fill":
        assert text.count(" = ") == 1, text  # one dot_general of a with b
    got = np.asarray(tracejit.jit(f)(a, b, starts))
    want = np.einsum("xymk,kn->xymn", a.astype(F64), b)
    if mode == "fill":
        want[1] = np.nan  # (the fill value of a float gather)
    bound = 66 * np.finfo(F32).eps * np.einsum("xymk,kn->xymn", np.abs(a).astype(F64), np.abs(b))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.all(np.abs(got - want)[~np.isnan(want)] <= bound[~np.isnan(want)])


def test_shard_map_matmul_on_two_devices_is_one_gemm():
    """The row-sharded matmul over 2 devices of one process: the replicated b is read by one
    gemm (no per-device copy, no copies of a or of the product)."""
    script = (
        "import numpy as np, tracejit as jax\n"
        "P = jax.sharding.PartitionSpec\n"
        "mesh = jax.sharding.Mesh(np.array(jax.devices()), ('x',))\n"
        "rng = np.random.default_rng(0)\n"
        "a0, b0 = rng.standard_normal((96, 64), np.float32), rng.standard_normal((64, 80), "
        "np.float32)\n"
        "put = lambda v, s: jax.make_array_from_callback(v.shape, jax.sharding.NamedSharding("
        "mesh, s), lambda i: v[i])\n"
        "a, b = put(a0, P('x')), put(b0, P())\n"
        "mm = jax.jit(jax.shard_map(lambda a, b: a @ b, mesh=mesh, in_specs=(P('x'), P()), "
        "out_specs=P('x')))\n"
        "print(mm.lower(a, b).compile().as_text().count(' = '))\n"
        "got, want = np.asarray(mm(a, b)), a0.astype(np.float64) @ b0\n"
        "bound = 66 * np.finfo(np.float32).eps * (np.abs(a0).astype(np.float64) @ np.abs(b0))\n"
        "print(bool(np.all(np.abs(got - want) <= bound)))\n")
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TRACEJIT_NUM_CPU_DEVICES="2", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "True"], out.stdout


@pytest.mark.parametrize("xs,xr,ys,yr,dn", [
    ((6, 4, 5), (24, 5), (5, 7), None, MM),                           # free dims merged
    ((9, 5), None, (14, 5), (2, 7, 5), (([1], [2]), ([], []))),        # rhs's split
    ((8, 3, 5), (2, 4, 3, 5), (3, 5, 7), None, (([3], [1]), ([2], [0]))),  # batch after them
    ((4, 10), (4, 2, 5), (2, 5, 3), None, (([1, 2], [0, 1]), ([], []))),  # contracted: kept
    ((40,), (2, 4, 5), (5, 3), (1, 5, 3, 1), (([2], [1]), ([], []))),
])
def test_products_of_reshaped_operands(xs, xr, ys, yr, dn):
    """dot_general reads through reshapes of its operands' free dims (simplify renames the
    dimension numbers and reshapes the product): the values of the product as written."""
    x, y = _operand(xs, F32, 27), _operand(ys, F32, 28)
    f = lambda x, y: lax.dot_general(x.reshape(xr) if xr else x,  # noqa: E731
                                     y.reshape(yr) if yr else y, dn)
    (lc, _), _ = dn
    _check(f, (x, y), math.prod((xr or xs)[d] for d in lc))


@pytest.mark.parametrize("a_shape,b_shape,dn,dtype", [
    # over a middle dimension (jax.image.resize's products): the lhs copied to [free, contract]
    ((16, 40, 24), (40, 72), (([1], [0]), ([], [])), F32),
    ((16, 24, 40), (16, 40, 72), (([2], [1]), ([0], [0])), F32),       # (already a gemm)
    ((24, 16, 40), (16, 40, 72), (([2], [1]), ([1], [0])), F32),       # batch not leading
    ((12, 40, 60), (30, 40, 12), (([1], [1]), ([0], [2])), F32),       # both copied
    ((40, 30, 50), (50, 40), (([0, 2], [1, 0]), ([], [])), C64),       # two contracting: gemv
    ((70, 64, 50), (64,), (([1], [0]), ([], [])), F32),                # one column: gemv
])
def test_products_over_other_dimensions_reach_blas(a_shape, b_shape, dn, dtype):
    """An operand whose free and contracting dimensions are interleaved (or whose batch
    dimensions do not lead) is copied into [batch, free, contract] order for BLAS, as XLA's
    dot decomposition transposes, where it ran as the inline loop nest: results within the
    bound of the interpreter's float64 product."""
    a, b = _operand(a_shape, dtype, 23), _operand(b_shape, dtype, 24)
    ir = _llvm(_dot(dn), a, b)
    assert re.search(r"[sdcz]gem[mv]", ir)  # (not the inline loop nest)
    (lc, _), _ = dn
    _check(_dot(dn), (a, b), int(np.prod([a_shape[d] for d in lc])))


@pytest.mark.parametrize("dtype, out", [("bfloat16", "bfloat16"), (np.float16, np.float16),
                                        ("bfloat16", np.float32), (np.float16, np.float32)])
def test_half_float_products_go_through_a_float32_gemm(dtype, out):
    """float16/bfloat16 operands are widened (exactly) for a float32 BLAS product, rounded
    once to a half output, where they ran as the loop nest: within the float32 sum's bound
    plus that rounding of the float64 product, and the interpreter's value as closely."""
    dtype, out = tracejit.numpy.dtype(dtype), tracejit.numpy.dtype(out)
    a = _operand((64, 96), F32, 25).astype(dtype)
    b = _operand((96, 80), F32, 26).astype(dtype)

    def f(a, b):
        return lax.dot_general(a, b, MM, preferred_element_type=out)
    assert "sgemm" in _llvm(f, a, b)
    got = np.asarray(tracejit.jit(f)(a, b)).astype(F64)
    exact = a.astype(F64) @ b.astype(F64)
    scale = np.abs(a.astype(F64)) @ np.abs(b.astype(F64))
    bound = 98 * np.finfo(F32).eps * scale + float(np.finfo(out).eps) * np.abs(exact) + 1e-30
    assert np.all(np.abs(got - exact) <= bound)
    interp = np.asarray(tracejit.jit(f, backend="interpret")(a, b)).astype(F64)
    assert np.all(np.abs(got - interp) <= 2 * bound)


@pytest.mark.parametrize("a_shape,b_shape,dn,tiles", [
    ((1024, 4096), (4096,), (([1], [0]), ([], [])), 8),   # A @ x: "T" on A's rows
    ((4096, 1024), (4096,), (([0], [0]), ([], [])), 8),   # A.T @ x: "N", tiles of rows
    ((4096,), (4096, 1024), (([0], [0]), ([], [])), 8),   # x @ B: "N"
    ((4096,), (1024, 4096), (([0], [1]), ([], [])), 8),   # x @ B.T: "T"
    ((4160, 1100), (1100,), (([1], [0]), ([], [])), 5),   # 65 groups of 64 outputs: 5 tiles
    ((1000, 4100), (4100,), (([1], [0]), ([], [])), 1),   # 1000 outputs: no whole groups
])
@pytest.mark.parametrize("dtype", [F32, np.float64])
@pytest.mark.parametrize("threads,mode", [(2, None), (2, "tiles"), (2, "one"), (1, None)])
def test_large_gemvs_run_as_row_tiles_with_the_bits_of_one_call(monkeypatch, a_shape, b_shape,
                                                                 dn, tiles, dtype, threads,
                                                                 mode):
    """A matrix-vector product of >= linalg.GEMV_TILE_ELEMENTS matrix elements is cut into row
    tiles of whole 64-output groups, one pool job: each output has the bits of the one ?gemv
    call (the tiles cut to nothing where the product is below the threshold)."""
    monkeypatch.setattr(linalg, "GEMM_MODE", mode)
    a, b = _operand(a_shape, dtype, 31), _operand(b_shape, dtype, 32)
    f = _dot(dn)
    old = tracejit.config.read("tracejit_num_threads")
    tracejit.config.update("tracejit_num_threads", threads)
    try:
        ir = _llvm(f, a, b)
        if tiles > 1 and mode != "one":
            assert f"i64 {tiles})" in ir.split("call void @tracejit_parallel_for(")[1]
        elif tiles == 1:
            assert "@tracejit_parallel_for(" not in ir
        jf = tracejit.jit(f)
        calls = [np.asarray(jf(a, b)) for _ in range(2 * linalg.WARM_UP_CALLS)]
        monkeypatch.setattr(linalg, "GEMV_TILE_ELEMENTS", 1 << 62)
        whole = np.asarray(tracejit.jit(_dot(dn))(a, b))
        for got in calls:
            assert got.tobytes() == whole.tobytes()
        _check(f, (a, b), a_shape[dn[0][0][0]])
    finally:
        tracejit.config.update("tracejit_num_threads", old)
