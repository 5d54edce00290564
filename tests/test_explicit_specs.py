"""Under jax.set_mesh over Explicit axes, a result computed from values nobody laid out is
replicated over the mesh; JAX writes its spec `P()` or with an entry per dimension as its typing
rules made it, operation by operation (tests/libraries/explicit_specs.py, run with both): the
number of entries of each result's spec against real JAX 0.10."""
import pytest

from tests.libraries import run_both

# jnp.tile is one primitive in JAX (its rule keeps P()); tracejit builds it from
# broadcast_in_dim and reshape, whose rules write an entry per dimension
DIVERGING = ["tile"]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return run_both("explicit_specs", tmp_path_factory.mktemp("explicit_specs"))


def test_replicated_specs_are_written_as_jax_writes_them(both):
    ours, theirs = both
    assert sorted(ours) == sorted(theirs) and len(theirs) > 100
    short = [k for k in theirs if theirs[k][0] == 0 and theirs[k][1] > 0]
    assert len(short) > 30 and "sin" in short and "add_self" not in short  # (both forms)
    for k in theirs:
        if k not in DIVERGING:
            assert list(ours[k]) == list(theirs[k]), k


@pytest.mark.parametrize("case", DIVERGING)
def test_known_divergences(both, case):
    # (strict: a fix makes this fail, and the case joins the test above)
    ours, theirs = both
    assert list(ours[case]) != list(theirs[case])
