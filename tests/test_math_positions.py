"""backend/llvm/math.py through jit: an element's result is the same bits wherever codegen and
LLVM put it -- the vector body or the scalar tail of a loop, either thread's part of a split
loop, a 0-d program (scalar code, where sin/cos/tan branch straight to their kernels for small
arguments) and a program LLVM optimises without its vectorisers (a huge function's O1
pipeline, llvm_setup.HUGE_FUNCTION_LINES). Oracle: the same program on the whole array."""
import re

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.backend import llvm_setup
from tracejit.backend.llvm import codegen, parallel_loops

_FUNCTIONS = {
    "exp": jnp.exp, "exp2": jnp.exp2, "expm1": jnp.expm1,
    "log": lambda x: jnp.log(jnp.abs(x)), "log2": lambda x: jnp.log2(jnp.abs(x)),
    "log1p": lambda x: jnp.log1p(jnp.abs(x)), "tanh": jnp.tanh,
    "logistic": tracejit.nn.sigmoid, "sinh": jnp.sinh, "cosh": jnp.cosh,
    "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "arctan": jnp.arctan,
    "arcsin": lambda x: jnp.arcsin(jnp.clip(x, -1, 1)), "erf": tracejit.scipy.special.erf,
}


def _program(x):
    return tuple(f(x) for f in _FUNCTIONS.values())


def _numpy(results):
    return [np.asarray(r) for r in results]


def _inputs(n, dtype, seed=0):
    """Ordinary and small arguments, trig's huge ones (Payne-Hanek), specials, subnormals."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10, 10, n)
    x[::5] = rng.uniform(-0.9, 0.9, len(x[::5]))  # sin/cos/tan's small-argument branch
    x[::11] *= 1e-9
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e5, -3e7, 1e30, 0.7853981633974483,
               float(np.finfo(dtype).smallest_subnormal)]
    x[3:3 + 13 * len(special):13] = special
    return x.astype(dtype)


def _assert_bits(got, want, where):
    for name, g, w in zip(_FUNCTIONS, got, want):
        g, w = np.asarray(g), np.asarray(w)
        same = (g.view(f"u{g.itemsize}") == w.view(f"u{w.itemsize}")) | (np.isnan(g) &
                                                                          np.isnan(w))
        assert same.all(), f"{name} ({where}): {np.flatnonzero(~same)[:5]}"


# elements of the main test array: enough for codegen's vectorised emission of the slow paths
# (codegen.INLINE_SLOW_PATH_MIN_ELEMENTS), with a scalar tail after the vector body for any
# vector width
_N = codegen.INLINE_SLOW_PATH_MIN_ELEMENTS + 37


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_elements_bits_do_not_depend_on_where_it_lies(dtype):
    """A vectorised loop's results against the same program on the array shifted by 1..13
    elements (each element in another lane, some moved between body and tail), on a short
    array (a loop emitted as scalar code: sin/cos/tan branch to their kernels for small
    arguments and call their far path) and on 0-d arrays (straight-line scalar code)."""
    with tracejit.enable_x64(dtype == np.float64):
        x = _inputs(_N, dtype)
        f = tracejit.jit(_program)
        whole = _numpy(f(x))
        for s in (1, 3, 13):
            _assert_bits(f(x[s:]), [w[s:] for w in whole], f"shifted by {s}")
        _assert_bits(f(x[-37:]), [w[-37:] for w in whole], "short array")
        picks = list(range(0, 300, 7)) + list(range(_N - 20, _N))
        one = [_numpy(f(x[k])) for k in picks]
        _assert_bits([np.array([o[j] for o in one]) for j in range(len(_FUNCTIONS))],
                     [w[picks] for w in whole], "0-d")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_elements_bits_do_not_depend_on_the_thread_split(dtype):
    """An array large enough for the loop to be cut into chunks the pool's threads take,
    shifted by 5 (the chunk boundaries then fall on other elements)."""
    with tracejit.enable_x64(dtype == np.float64):
        x = _inputs(parallel_loops.PARALLEL_MIN_ELEMENTS + parallel_loops.CHUNK_ELEMENTS + 7,
                    dtype, seed=1)
        f = tracejit.jit(_program)
        assert "@chunks" in f.lower(x[5:]).compile().as_text(dialect="llvm")
        whole = _numpy(f(x))
        _assert_bits(f(x[5:]), [w[5:] for w in whole], "shifted by 5")


# a vector of floats in an instruction (the slow paths' vector variants are declared either way)
_VECTOR_CODE = re.compile(r"^(?!declare ).*<\d+ x (float|double)>", re.MULTILINE)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_without_the_vectorisers_an_element_gets_the_same_bits(dtype, monkeypatch):
    """Every function "huge" (llvm_setup.optimize: O1 without loop or SLP vectorisers), on a
    shape compiled nowhere else (so neither the process's kernels nor the disk cache give the
    O3 code): its optimised IR has no vectors and the same bits as the vectorised program."""
    with tracejit.enable_x64(dtype == np.float64):
        x = _inputs(_N, dtype, seed=2)
        whole = _numpy(tracejit.jit(_program)(x))
        assert _VECTOR_CODE.search(
            tracejit.jit(_program).lower(x).compile().as_text(dialect="llvm"))
        monkeypatch.setattr(llvm_setup, "HUGE_FUNCTION_LINES", 0)
        scalar = tracejit.jit(lambda x: _program(x))
        text = scalar.lower(x[2:]).compile().as_text(dialect="llvm")
        assert not _VECTOR_CODE.search(text)
        _assert_bits(scalar(x[2:]), [w[2:] for w in whole], "O1, no vectorisers")


# math.INTERLEAVED's functions, each alone in a loop (a loop of several, over
# codegen.MATH_INTERLEAVE_MAX_BODY, keeps one vector a turn), and a loop of two of them
_INTERLEAVED = {
    "exp": jnp.exp, "exp2": jnp.exp2, "expm1": jnp.expm1,
    "log": lambda x: jnp.log(jnp.abs(x)), "log2": lambda x: jnp.log2(jnp.abs(x)),
    "logistic": tracejit.nn.sigmoid, "sinh": jnp.sinh, "cosh": jnp.cosh,
    "asinh": jnp.arcsinh, "acosh": lambda x: jnp.arccosh(jnp.abs(x) + 1),
    "atanh": lambda x: jnp.arctanh(x / 11), "atan2": lambda x: jnp.arctan2(x, 1 - x),
    "pow": lambda x: jnp.abs(x) ** 2.5, "cbrt": jnp.cbrt,
    "lgamma": tracejit.scipy.special.gammaln,
    "erf_inv": lambda x: tracejit.scipy.special.erfinv(x / 11),
    "softplus": tracejit.nn.softplus,
}
_FMA = re.compile(r"call <\d+ x (?:float|double)> @llvm\.fma\.")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(_INTERLEAVED))
def test_an_interleaved_loop_gets_the_same_bits(name, dtype, monkeypatch):
    """A loop calling math.INTERLEAVED's functions over enough elements runs
    codegen.CHAIN_INTERLEAVE vectors a turn (its optimised IR holds that many copies of the
    function's vector fmas), and every element has the bits the one-vector loop gives it (that
    loop compiled on a shape of its own, with the threshold out of reach)."""
    f = _INTERLEAVED[name]
    with tracejit.enable_x64(dtype == np.float64):
        x = _inputs(codegen.MATH_INTERLEAVE_MIN_ELEMENTS + 37, dtype, seed=3)
        interleaved = tracejit.jit(f)
        wide = len(_FMA.findall(interleaved.lower(x).compile().as_text(dialect="llvm")))
        want = np.asarray(interleaved(x))
        monkeypatch.setattr(codegen, "MATH_INTERLEAVE_MIN_ELEMENTS", 1 << 62)
        one = tracejit.jit(lambda x: f(x))
        narrow = len(_FMA.findall(one.lower(x[3:]).compile().as_text(dialect="llvm")))
        assert wide >= 3 * narrow > 0, (wide, narrow)
        got = np.asarray(one(x[3:]))
        same = (got.view(f"u{got.itemsize}") == want[3:].view(f"u{got.itemsize}")) | (
            np.isnan(got) & np.isnan(want[3:]))
        assert same.all(), np.flatnonzero(~same)[:5]
