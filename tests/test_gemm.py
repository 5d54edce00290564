"""Our float32 GEMM (backend/llvm/gemm.py) and linalg's choice of it over BLAS's sgemm. Oracles:
NumPy's float64 product with the bound of a float32 sum in any order, |err| <= k eps sum|a||b|
per element (Higham: gamma_k <= k u / (1 - k u), u = eps / 2: k eps holds with room), eager
dot_general (NumPy: the reference interpreter's code), and the routine itself: one call against
tiles, one thread against two, one tier against the other, bit for bit. Operands placed against a
page the process may not touch find any read past them; C's padding finds any write."""
import ctypes
import mmap

import numpy as np
import pytest
from tolerance import native

import tracejit
from tracejit import lax
from tracejit.backend.llvm import gemm, linalg

EPS = np.finfo(np.float32).eps
LANES = [w for w in (16, 8) if gemm.host_lanes() is not None and w <= gemm.host_lanes()]
pytestmark = pytest.mark.skipif(not LANES, reason="the host has neither AVX-512 nor AVX2+FMA")
P = ctypes.c_void_p


def _bound(a64, b64, k):
    return k * EPS * (np.abs(a64) @ np.abs(b64)) + 1e-30


def _draw(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


# --- the routine, called as Fortran's sgemm ---------------------------------------------------

_libc = ctypes.CDLL(None)
_libc.mprotect.argtypes = [P, ctypes.c_size_t, ctypes.c_int]


class _Fenced:
    """float32 arrays ending where a page the process may not read begins."""

    def __init__(self):
        self.maps = []

    def place(self, x: np.ndarray) -> np.ndarray:
        page = mmap.PAGESIZE
        nbytes = max(x.nbytes, 4)
        pages = -(-nbytes // page) + 1
        buf = mmap.mmap(-1, pages * page)
        self.maps.append(buf)
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        assert _libc.mprotect(P(base + (pages - 1) * page), page, 0) == 0  # (PROT_NONE)
        start = (pages - 1) * page - nbytes
        out = np.frombuffer(buf, np.float32, count=nbytes // 4, offset=start)
        out[:x.size] = x.ravel(order="F")
        return out

    def close(self):
        self.maps.clear()  # (the arrays' buffers keep the maps open while they live)


def _sgemm(lanes, ta, tb, m, n, k, x, ldx, y, ldy, c, ldc):
    fn = ctypes.CFUNCTYPE(None, *[P] * 13)(gemm.address(lanes))
    scalars = [ctypes.c_char(ta.encode()), ctypes.c_char(tb.encode()), ctypes.c_int(m),
               ctypes.c_int(n), ctypes.c_int(k), ctypes.c_float(1), ctypes.c_int(ldx),
               ctypes.c_int(ldy), ctypes.c_float(0), ctypes.c_int(ldc)]
    a = [P(ctypes.addressof(s)) for s in scalars]
    fn(a[0], a[1], a[2], a[3], a[4], a[5], P(x.ctypes.data), a[6], P(y.ctypes.data), a[7],
       a[8], P(c.ctypes.data), a[9])


def _fortran_case(lanes, m, n, k, ta, tb, pad, seed):
    """C[m,n] = op(X) op(Y) through the routine, operands fenced, leading dims `pad` longer."""
    rng = np.random.default_rng(seed)
    xr, xc = (k, m) if ta == "T" else (m, k)
    yr, yc = (n, k) if tb == "T" else (k, n)
    x = np.asfortranarray(_draw(rng, (xr + pad, xc)))
    y = np.asfortranarray(_draw(rng, (yr + pad, yc)))
    c = np.full((m + pad, n), np.nan, np.float32, order="F")
    c[m:] = 7.0  # (padding the routine must not write)
    fence = _Fenced()
    fx, fy, fc = fence.place(x), fence.place(y), fence.place(c)
    _sgemm(lanes, ta, tb, m, n, k, fx, xr + pad, fy, yr + pad, fc, m + pad)
    got = fc[:c.size].reshape(c.shape, order="F")
    x64 = x[:xr].astype(np.float64)
    y64 = y[:yr].astype(np.float64)
    a64, b64 = (x64.T if ta == "T" else x64), (y64.T if tb == "T" else y64)
    want = a64 @ b64
    out = got[:m].copy()
    assert np.all(got[m:] == 7.0), "wrote past C's rows"
    fence.close()
    return out, want, _bound(a64, b64, k)


SMALL = [1, 2, 3, 5, 13, 14, 15, 16, 17, 31, 32, 33]


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_small_shapes_every_layout_within_the_bound(lanes, ta, tb):
    """Edge tiles in m, n and k (sizes around the kernel's MR, NR and the vector width)."""
    seed = 0
    for m in SMALL:
        for n in SMALL[::2] if m % 2 else SMALL[1::2]:
            for k in (1, 7, 33):
                seed += 1
                got, want, bound = _fortran_case(lanes, m, n, k, ta, tb, seed % 3, seed)
                assert np.all(np.abs(got - want) <= bound), (m, n, k)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("m,n,k,ta,tb", [
    (gemm.MC + 37, 29, gemm.KC + 3, "N", "N"),    # several row blocks and sum blocks
    (61, 17, 2 * gemm.KC + 11, "T", "T"),
    (97, 1, 5, "N", "T"),
    (1, 101, 13, "T", "N"),
])
def test_blocks_and_their_edges_within_the_bound(lanes, m, n, k, ta, tb):
    got, want, bound = _fortran_case(lanes, m, n, k, ta, tb, 1, m * n + k)
    assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("lanes", LANES)
def test_more_columns_than_a_packed_block(lanes):
    """N past one packed block of Y (NC_PANELS micro-panels), with a column edge."""
    n = gemm.NC_PANELS * gemm._shape(lanes)[1] + 3
    got, want, bound = _fortran_case(lanes, 35, n, 9, "N", "T", 0, 5)
    assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("lanes", LANES)
def test_an_empty_sum_writes_zeros(lanes):
    got, _, _ = _fortran_case(lanes, 5, 3, 0, "N", "N", 1, 0)
    assert np.array_equal(got, np.zeros((5, 3), np.float32))


@pytest.mark.parametrize("lanes", LANES)
def test_each_element_is_one_chain_of_fmas_in_k_order(lanes):
    """The bits the kernel promises: every element is fma(a_k-1, b_k-1, ... fma(a_0, b_0, 0)),
    whatever its tile, block or edge (so tiles of any split agree with one call)."""
    m, n, k = 37, 19, gemm.KC + 5
    rng = np.random.default_rng(3)
    x = np.asfortranarray(_draw(rng, (m, k)))
    y = np.asfortranarray(_draw(rng, (k, n)))
    c = np.zeros((m, n), np.float32, order="F")
    _sgemm(lanes, "N", "N", m, n, k, x, m, y, k, c, m)
    acc = np.zeros((m, n), np.float32)
    for p in range(k):  # (float64 holds a float32 product exactly: one rounding, an fma's)
        acc = (x[:, p:p + 1].astype(np.float64) * y[p].astype(np.float64)
               + acc).astype(np.float32)
    np.testing.assert_array_equal(c, acc)


# --- linalg's products through the routine ----------------------------------------------------

@pytest.fixture
def ours(monkeypatch):
    monkeypatch.setattr(linalg, "GEMM_KERNEL", "ours")


@pytest.fixture
def threads():
    old = tracejit.config.read("tracejit_num_threads")
    yield lambda n: tracejit.config.update("tracejit_num_threads", n)
    tracejit.config.update("tracejit_num_threads", old)


CASES = [  # (lhs shape, rhs shape, dimension numbers)
    ((33, 17), (17, 29), (((1,), (0,)), ((), ()))),
    ((64, 64), (64, 64), (((1,), (0,)), ((), ()))),
    ((37, 53), (41, 53), (((1,), (1,)), ((), ()))),          # x @ y.T
    ((53, 37), (53, 41), (((0,), (0,)), ((), ()))),          # x.T @ y
    ((53, 37), (41, 53), (((0,), (1,)), ((), ()))),          # x.T @ y.T
    ((3, 31, 47), (3, 47, 23), (((2,), (1,)), ((0,), (0,)))),  # batch
    ((2, 47, 31), (2, 23, 47), (((1,), (2,)), ((0,), (0,)))),  # batch, both transposed
    ((128, 784), (784, 512), (((1,), (0,)), ((), ()))),      # the MLP's forward product
]


@pytest.mark.parametrize("lhs,rhs,dims", CASES)
def test_dot_general_within_the_bound_of_eager(ours, lhs, rhs, dims):
    rng = np.random.default_rng(len(lhs) * 100 + lhs[-1])
    x, y = _draw(rng, lhs), _draw(rng, rhs)

    def f(a, b):
        return lax.dot_general(a, b, dims)
    got = np.asarray(tracejit.jit(f)(x, y))
    eager = np.asarray(f(x, y))  # (NumPy: the reference interpreter's dot_general)
    want = np.asarray(f(x.astype(np.float64), y.astype(np.float64)))
    k = np.prod([lhs[d] for d in dims[0][0]])
    bound = np.asarray(f(np.abs(x).astype(np.float64), np.abs(y).astype(np.float64)))
    assert np.all(np.abs(got - want) <= k * EPS * bound + 1e-30)
    assert np.all(np.abs(eager - want) <= k * EPS * bound + 1e-30)


@pytest.mark.skipif(not native(), reason="the routine is the native backend's")
@pytest.mark.parametrize("m,k,n,lhs_t", [(1024, 1024, 1024, False), (784, 128, 512, True),
                                         (128, 784, 512, False)])
def test_one_or_two_threads_tiles_or_one_call_same_bits(ours, threads, monkeypatch, m, k, n,
                                                        lhs_t):
    """Row and column tiles (1024^3, the MLP's products) agree bit for bit with one call, on
    one thread and on two."""
    rng = np.random.default_rng(m + n)
    x = _draw(rng, (k, m) if lhs_t else (m, k))
    y = _draw(rng, (k, n))

    def f(a, b):
        return (a.T if lhs_t else a) @ b
    runs = []
    for count in (1, 2):
        threads(count)
        for mode in ("tiles", "one"):
            monkeypatch.setattr(linalg, "GEMM_MODE", mode)
            runs.append(np.asarray(tracejit.jit(f)(x, y)))
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])
    want = (x.T if lhs_t else x).astype(np.float64) @ y
    bound = (np.abs(x.T if lhs_t else x).astype(np.float64) @ np.abs(y))
    assert np.all(np.abs(runs[0] - want) <= k * EPS * bound + 1e-30)


@pytest.mark.skipif(not native(), reason="the routine is the native backend's")
def test_ours_and_blas_both_within_the_bound(monkeypatch):
    """The two kernels differ in the order of their sums, not in their accuracy class."""
    rng = np.random.default_rng(7)
    x, y = _draw(rng, (200, 300)), _draw(rng, (300, 150))
    want = x.astype(np.float64) @ y
    bound = _bound(x.astype(np.float64), y.astype(np.float64), 300)
    for kernel in ("ours", "blas"):
        monkeypatch.setattr(linalg, "GEMM_KERNEL", kernel)
        got = np.asarray(tracejit.jit(lambda a, b: a @ b)(x, y))
        assert np.all(np.abs(got - want) <= bound), kernel


def test_the_rule(monkeypatch):
    """float32 only; AVX-512 only (AVX2 hosts keep BLAS); large enough, no side narrow; never
    split-k."""
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    monkeypatch.setattr(gemm, "host_lanes", lambda: 16)
    assert linalg.gemm_routine(f32, 1024, 1024, 1024, linalg.tile_plan(f32, 1024, 1024,
                                                                         1024)) == "ours"
    assert linalg.gemm_routine(f64, 1024, 1024, 1024, None) == "gemm"
    small = round(linalg.OURS_MIN_WORK ** (1 / 3)) - 1
    assert linalg.gemm_routine(f32, small, small, small, None) == "gemm"
    narrow = linalg.OURS_MIN_SIDE - 1  # (the CNN's im2col products: 6272x144 by 144x32)
    assert linalg.gemm_routine(f32, 8192, narrow, 144, None) == "gemm"
    assert linalg.gemm_routine(f32, 8192, 1024, narrow, None) == "gemm"
    plan = linalg.tile_plan(f32, 64, 64, 16384)
    assert plan[0] == "k" and linalg.gemm_routine(f32, 64, 64, 16384, plan) == "gemm"
    monkeypatch.setattr(gemm, "host_lanes", lambda: 8)
    assert linalg.gemm_routine(f32, 1024, 1024, 1024, None) == "gemm"
    monkeypatch.setattr(gemm, "host_lanes", lambda: None)
    monkeypatch.setattr(linalg, "GEMM_KERNEL", "ours")
    assert linalg.gemm_routine(f32, 1024, 1024, 1024, None) == "gemm"


def test_without_memory_for_the_packing_the_same_bits(monkeypatch):
    """Where malloc fails, the routine computes every element's chain of fmas from the operands
    where they lie: the bits of the packed path, every layout."""
    from llvmlite import ir

    from tracejit.backend.llvm import jit_engine
    lanes = LANES[0]
    mod = gemm.module(lanes)
    malloc = mod.globals["malloc"]
    ir.IRBuilder(malloc.append_basic_block()).ret(ir.Constant(malloc.return_value.type, None))
    name = gemm.symbol(lanes)
    _, code = jit_engine.compile_ir(str(mod).replace(name, name + "_nomem"))
    monkeypatch.setattr(gemm, "address", lambda lanes: code.address(name + "_nomem"))
    for ta, tb in (("N", "N"), ("T", "T"), ("N", "T")):
        starved, _, _ = _fortran_case(lanes, 37, 19, gemm.KC + 5, ta, tb, 1, 9)
        monkeypatch.undo()
        packed, want, bound = _fortran_case(lanes, 37, 19, gemm.KC + 5, ta, tb, 1, 9)
        monkeypatch.setattr(gemm, "address", lambda lanes: code.address(name + "_nomem"))
        np.testing.assert_array_equal(starved, packed)
        assert np.all(np.abs(packed - want) <= bound)


class _FencedHeap:
    """malloc and free for the routine: each block ends where a page the process may not touch
    begins, so a packed buffer sized short of what the routine writes faults."""

    def __init__(self):
        self.fence = _Fenced()
        self.sizes = []
        self.malloc = ctypes.CFUNCTYPE(P, ctypes.c_int64)(self._malloc)
        self.free = ctypes.CFUNCTYPE(None, P)(lambda ptr: None)

    def _malloc(self, nbytes):
        self.sizes.append(nbytes)
        block = self.fence.place(np.zeros(-(-nbytes // 4), np.float32))
        return block.ctypes.data


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("m,n,k,ta,tb", [
    (gemm.MC + 33, gemm.NC_PANELS * 14 + 5, gemm.KC + 7, "N", "N"),  # past every block
    (35, 29, 9, "T", "T"),
    (3, 2 * 14 + 1, gemm.KC - 1, "N", "T"),
    (gemm.MC - 1, 15, 2 * gemm.KC + 1, "T", "N"),
])
def test_packed_buffers_sized_to_the_product(lanes, m, n, k, ta, tb, monkeypatch):
    """The routine mallocs what the product packs (MC x KC of X, NC x KC of Y at most): its
    buffers against an unreadable page, every layout, the bits of the routine on malloc's."""
    import llvmlite.binding as llvm

    from tracejit.backend.llvm import jit_engine
    heap = _FencedHeap()
    llvm.add_symbol("tracejit_test_malloc", ctypes.cast(heap.malloc, P).value)
    llvm.add_symbol("tracejit_test_free", ctypes.cast(heap.free, P).value)
    name = gemm.symbol(lanes)
    text = str(gemm.module(lanes)).replace(name, name + "_fenced")
    text = text.replace('@"malloc"', '@"tracejit_test_malloc"').replace(
        '@"free"', '@"tracejit_test_free"')
    _, code = jit_engine.compile_ir(text)
    monkeypatch.setattr(gemm, "address", lambda lanes: code.address(name + "_fenced"))
    fenced, want, bound = _fortran_case(lanes, m, n, k, ta, tb, 1, m + n + k)
    monkeypatch.undo()
    plain, _, _ = _fortran_case(lanes, m, n, k, ta, tb, 1, m + n + k)
    np.testing.assert_array_equal(fenced, plain)
    assert np.all(np.abs(fenced - want) <= bound)
    mr, nr = gemm._shape(lanes)
    most = 4 * (gemm.MC * gemm.KC + (gemm.NC_PANELS + 1) * nr * (gemm.KC + 16) + mr * nr + 64)
    if most >= gemm.HUGE_PAGE_MIN:  # (on whole huge pages: rounded up, and one more to align)
        most = -(-most // gemm.HUGE_PAGE) * gemm.HUGE_PAGE + gemm.HUGE_PAGE
    assert len(heap.sizes) == 1 and heap.sizes[0] <= most
    heap.fence.close()


_SCRIPT = """
import json
import numpy as np
import tracejit
from tracejit.backend.llvm import jit_engine
from tracejit.runtime import disk_cache
built = []  # the library routines whose IR was built
compile_library = jit_engine._library_compiler
jit_engine.set_library_compiler(lambda name, ir_text, level: compile_library(
    name, lambda: built.append(name) or ir_text(), level))
x = np.linspace(-1.0, 1.0, 160 * 160, dtype=np.float32).reshape(160, 160)
out = np.asarray(tracejit.jit(lambda a, b: a @ b)(x, x.T))
print(json.dumps({"built": built, "out": out.tobytes().hex()}))
"""


@pytest.mark.skipif(not native() or gemm.host_lanes() != 16, reason="the rule's AVX-512 path")
def test_compiled_once_per_machine_then_loaded(tmp_path):
    """The routine is the runtime's library code: the first process builds and compiles it, a
    second one loads it from the cache by name (a first call pays the load, not a compile),
    with the same bits."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), TRACEJIT_PERSISTENT_CACHE="0",
               TRACEJIT_LIBRARY_CACHE="1", TRACEJIT_BACKEND="native")
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert gemm.symbol(16) in runs[0]["built"]
    assert gemm.symbol(16) not in runs[1]["built"]
    assert runs[0]["out"] == runs[1]["out"]


@pytest.mark.skipif(not native(), reason="the routine is the native backend's")
def test_a_batch_as_one_pool_job_same_bits(ours, threads, monkeypatch):
    """A batch of products holding work enough for the pool (linalg._pool_the_batch): its
    products as the chunks of one pool job or in a loop, on one thread or two, give the bits of
    each product computed alone."""
    rng = np.random.default_rng(11)
    x, y = _draw(rng, (8, 192, 256)), _draw(rng, (8, 256, 160))
    assert linalg._pool_the_batch(8, 192 * 160 * 256, linalg.POOL_GEMM_WORK)
    f = tracejit.jit(lambda a, b: a @ b)
    runs = []
    for count in (1, 2):
        threads(count)
        for mode in ("tiles", "one"):
            monkeypatch.setattr(linalg, "GEMM_MODE", mode)
            runs.append(np.asarray(tracejit.jit(lambda a, b: a @ b)(x, y)))
    alone = np.stack([np.asarray(f(x[i], y[i])) for i in range(8)])
    for r in runs:
        np.testing.assert_array_equal(r, alone)
    want = x.astype(np.float64) @ y
    assert np.all(np.abs(alone - want) <= 256 * EPS * (np.abs(x).astype(np.float64) @ np.abs(y)))
