"""How types print — `str(jax.typeof(x))` in JAX's short form (`float32[3,4]`, `~float32[]`,
`float32[8@x,4]` over Explicit mesh axes, `float32[2]{V:(x,y)}` inside shard_map), `repr` as
`ShapedArray(...)`, tracers' str and repr under jit and shard_map — and lax.pbroadcast (values and
type error), ppermute and pshuffle over several mesh axes, against real JAX 0.10
(tests/libraries/type_strings.py, run with both)."""
import numpy as np
import pytest

import tracejit as tj
from tests.libraries import run_both


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("type_strings", tmp_path_factory.mktemp("type_strings"))


def test_types_print_as_jax_prints_them(both):
    ours, theirs = both
    assert sorted(ours) == sorted(theirs)
    texts = [k for k in theirs if theirs[k].dtype.kind == "U"]
    assert len(texts) > 100
    for k in texts:
        assert str(ours[k]) == str(theirs[k]), k
    # (what the recording holds: the short form, JAX's layout and varying-axes annotations)
    assert str(theirs["weak_float.str"]) == "~float32[]"
    assert str(theirs["explicit_tuple.str"]) == "float32[8@(x,y),4]"
    assert str(theirs["sm_yx.sum.str"]) == "float32[]{V:(y,x)}"


@pytest.mark.parametrize("case", ["pbroadcast_xy_0", "pbroadcast_xy_1", "pbroadcast_xy_3",
                                  "pbroadcast_yx_1", "pbroadcast_y_1", "pbroadcast_xy_invariant_y",
                                  "pbroadcast_xy_invariant", "pbroadcast_xy_unchecked"])
def test_pbroadcast_over_several_axes_as_jax(both, case):
    ours, theirs = both
    np.testing.assert_array_equal(ours[case], theirs[case])
    assert str(ours[case + ".error"]) == str(theirs[case + ".error"])


@pytest.mark.parametrize("case", ["ppermute_xy", "ppermute_yx", "ppermute_partial",
                                  "ppermute_ab_on_ba", "pshuffle_xy"])
def test_ppermute_over_several_axes_as_jax(both, case):
    """Positions numbered over the axes' product in the mesh's order, whatever the tuple's (it
    raised NotImplementedError); values and gradients."""
    ours, theirs = both
    for k in (case, case + ".grad"):
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-6, atol=1e-6, err_msg=k)


def test_pbroadcast_error_names_the_line_and_the_fix():
    mesh = tj.sharding.Mesh(np.array(tj.devices()[:1]).reshape(1, 1), ("x", "y"))
    f = tj.shard_map(lambda v: tj.lax.pbroadcast(v, ("x", "y"), 0), mesh=mesh,
                     in_specs=tj.P("x"), out_specs=tj.P("x"))
    with pytest.raises(ValueError) as err:
        f(np.ones(4, np.float32))
    text = str(err.value)
    assert "over axis name ('x', 'y')" in text and "test_type_strings.py" in text
    assert "invariant over the mesh axis 'y'" in text and "pcast(x, 'y', to='varying')" in text


@pytest.mark.parametrize("shape,dtype,weak", [((2, 3), np.float32, True), ((), np.int32, False),
                                              ((0, 4), np.bool_, False)])
def test_str_and_repr_of_an_abstract_value(shape, dtype, weak):
    import jax
    ours = tj.ShapedArray(shape, dtype, weak_type=weak)
    theirs = jax.core.ShapedArray(shape, dtype, weak_type=weak)
    assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))
