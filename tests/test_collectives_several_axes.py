"""Collectives over several mesh axes at once (lax/several_axes.py) under shard_map on 8 CPU
devices, meshes 2x4, 4x2 and 2x2x2, axes named in the mesh's order, in others and in part,
against real JAX 0.10 (tests/libraries/several_axes.py, run with both): all_gather, psum_scatter,
all_to_all (every argument), axis_index, axis_size, psum, pmax, pmin, pmean and
axis_index_groups — values, types, gradients inside and outside shard_map, vmap around and
inside, check_vma=False, and JAX's errors; then what JAX cannot differentiate (all_to_all with
tiled=False and split_axis != concat_axis), against the transpose identity."""
import ast
import sys

import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tests.in_devices import run_check
from tests.libraries import run_both_once


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both_once("several_axes", tmp_path_factory)


def _groups(theirs: dict) -> list[str]:
    return sorted({k.split("/")[0] for k in theirs if not k.startswith("error/")})


def test_values_gradients_and_vmap_as_jax(both):
    """Every value of the recording: integers and sums of small integers bit for bit (the
    gradients, of sin, within float32 rounding)."""
    ours, theirs = both
    assert sorted(ours) == sorted(theirs)
    numbers = [k for k in theirs if theirs[k].dtype.kind != "U"]
    assert len(numbers) > 250 and len(_groups(theirs)) == 8
    for k in numbers:
        a, b = ours[k], theirs[k]
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.shape, a.dtype, b.shape, b.dtype)
        if ".grad" in k:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max(), err_msg=k)
        else:
            np.testing.assert_array_equal(a, b, err_msg=k)


def test_result_types_as_jax(both):
    """The results' types (varying over the mesh axes, in the mesh's order). pmax within
    groups is left out: JAX types it invariant over the axes although each group holds its
    own maximum; ours is varying, as over one axis (tests/test_axis_index_groups.py)."""
    ours, theirs = both
    types = [k for k in theirs if k.endswith(".type") and "pmax_groups" not in k]
    assert len(types) > 150
    for k in types:
        assert str(ours[k]) == str(theirs[k]), k
    assert str(theirs["m222_zx/ag.type"]) == "float32[4,2,6]{V:(x,y,z)}"


@pytest.mark.parametrize("case", ["ps_not_divisible", "ps_not_the_size", "a2a_not_divisible",
                                  "a2a_not_the_size", "ps_mixed_state"])
def test_errors_in_jaxs_words(both, case):
    ours, theirs = both
    theirs, ours = str(theirs["error/" + case]), str(ours["error/" + case])
    assert theirs != "no error"
    if "input state: " in theirs:  # (a Python set: its order changes with the hash seed)
        (ours, our_set), (theirs, their_set) = (t.split("input state: ") for t in (ours, theirs))
        assert ast.literal_eval(our_set) == ast.literal_eval(their_set)
    assert ours == theirs, (ours, theirs)


@pytest.mark.parametrize("check", ["shape_errors_name_the_line_and_the_fix",
                                   "untiled_all_to_all_transposes_to_itself_reversed",
                                   "native_inside_jit"])
def test_on_four_devices(check):
    """The checks below, in a process of 4 CPU devices (this one has one)."""
    run_check(__file__, check, devices=4)


def _mesh(shape, names):
    return tj.sharding.Mesh(np.array(tj.devices()[:int(np.prod(shape))]).reshape(shape), names)


def check_shape_errors_name_the_line_and_the_fix():
    mesh = _mesh((2, 2), ("x", "y"))
    f = tj.shard_map(lambda v: tj.lax.all_to_all(v, ("x", "y"), 0, 0), mesh=mesh,
                     in_specs=tj.P(("x", "y")), out_specs=tj.P(("x", "y")))
    with pytest.raises(ValueError) as err:
        f(np.ones((20, 3), np.float32))
    text = str(err.value)
    assert text.startswith("all_to_all requires the size of the mapped axis axis_name to equal "
                           "x.shape[split_axis], but they are 4 and 5 respectively.\n\n"
                           "The lax.all_to_all at "), text
    assert "test_collectives_several_axes.py" in text and "tiled=True" in text, text


def check_untiled_all_to_all_transposes_to_itself_reversed():
    """JAX 0.10 cannot transpose all_to_all(tiled=False) with split_axis != concat_axis (the
    recording leaves it out); ours is linear: <all_to_all(x), y> == <x, vjp(y)> over a 2x2
    mesh named ('y', 'x'), and the vjp equals the all_to_all with the axes swapped."""
    mesh = _mesh((2, 2), ("x", "y"))
    spec = tj.P(("x", "y"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype(np.float32)   # each position (4, 3)
    y = rng.standard_normal((12, 4)).astype(np.float32)   # each position (3, 4)

    def a2a(v, split, concat):
        return tj.shard_map(lambda u: tj.lax.all_to_all(u, ("y", "x"), split, concat),
                            mesh=mesh, in_specs=spec, out_specs=spec)(v)
    out, vjp = tj.vjp(lambda v: a2a(v, 0, 1), x)
    assert out.shape == (12, 4)
    (ct,) = vjp(y)
    lhs = float(np.sum(np.asarray(out, np.float64) * y))
    rhs = float(np.sum(np.asarray(ct, np.float64) * x))
    assert abs(lhs - rhs) <= 1e-5 * (1 + abs(lhs))
    np.testing.assert_array_equal(np.asarray(ct), np.asarray(a2a(y, 1, 0)))
    # and the forward values against NumPy: position p = 2 y + x gets chunk p of every source
    blocks = x.reshape(2, 2, 4, 3)  # (x, y, rows, cols) of the input, by mesh coordinates
    for px in range(2):
        for py in range(2):
            got = np.asarray(out).reshape(2, 2, 3, 4)[px, py]
            want = np.stack([blocks[sx, sy, 2 * py + px] for sy in range(2) for sx in range(2)],
                            axis=1)
            np.testing.assert_array_equal(got, want)


def check_native_inside_jit():
    """Under jit the collectives over several axes are array arithmetic over the mesh axes'
    batch dimensions (no collective left in the program jit compiles), run natively with the
    reference interpreter's values and NumPy's."""
    mesh = _mesh((2, 2), ("x", "y"))
    spec = tj.P(("x", "y"))

    def f(v):
        return tj.lax.psum_scatter(tj.lax.all_gather(v, ("y", "x"), tiled=True), ("x", "y"),
                                   tiled=True)
    x = np.arange(24.0, dtype=np.float32).reshape(8, 3)
    native = tj.jit(tj.shard_map(f, mesh=mesh, in_specs=spec, out_specs=spec))
    text = native.lower(x).as_text()
    for name in ("all_gather", "reduce_scatter", "all_to_all", "psum"):
        assert name not in text, name
    reference = tj.jit(tj.shard_map(f, mesh=mesh, in_specs=spec, out_specs=spec),
                       backend="interpret")
    np.testing.assert_array_equal(np.asarray(native(x)), _gather_scatter_numpy(x))
    np.testing.assert_array_equal(np.asarray(reference(x)), _gather_scatter_numpy(x))


def _gather_scatter_numpy(x: np.ndarray) -> np.ndarray:
    """all_gather over ('y', 'x') (position y * 2 + x's block at place y * 2 + x), then
    psum_scatter over ('x', 'y'): position (x, y) keeps part 2 x + y of the four positions'
    (equal) gathers' sum."""
    blocks = x.reshape(2, 2, 2, 3)  # (x, y, rows, cols)
    gathered = np.concatenate([blocks[sx, sy] for sy in range(2) for sx in range(2)])
    parts = (4 * gathered).reshape(4, 2, 3)
    return np.concatenate([parts[2 * px + py] for px in range(2) for py in range(2)])


def test_vmap_named_axes_compute_what_shard_map_does():
    """vmap(axis_name=...) nested twice: all_to_all over both names as JAX's vmap computes it,
    and all_gather and psum_scatter (JAX 0.10's vmap fails on them: AssertionError 'axis size
    doesn't match') as shard_map does, checked against NumPy."""
    import jax
    xs = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)

    def both_names(f):
        return tj.vmap(tj.vmap(f, axis_name="j"), axis_name="i")
    gathered = both_names(lambda v: tj.lax.all_gather(v, ("j", "i")))(xs)
    want = np.broadcast_to(xs.transpose(1, 0, 2).reshape(6, 4), (2, 3, 6, 4))
    np.testing.assert_array_equal(np.asarray(gathered), want)
    scattered = both_names(lambda v: tj.lax.psum_scatter(tnp.outer(tnp.arange(6.0), v),
                                                         ("i", "j"), tiled=True))(xs)
    place = np.arange(6.0).reshape(2, 3, 1, 1)  # (position (i, j) keeps part 3 i + j)
    np.testing.assert_array_equal(np.asarray(scattered), place * xs.sum((0, 1))[None])

    def a2a(j, m):
        return lambda v: j.lax.all_to_all(m.outer(m.arange(6.0), v), ("j", "i"), 0, 1,
                                          tiled=True)
    theirs = jax.vmap(jax.vmap(a2a(jax, jax.numpy), axis_name="j"), axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(both_names(a2a(tj, tnp))(xs)), np.asarray(theirs))


if __name__ == "__main__":
    globals()["check_" + sys.argv[1]]()
    print(f"{sys.argv[1]} ok")
