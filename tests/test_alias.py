"""`python -m tracejit` and `tracejit.alias_jax()` (tracejit/alias.py, tracejit/__main__.py): JAX
programs run unchanged with `jax` resolved to tracejit while real JAX is installed. Plain
`python` is the oracle for how scripts and modules run, real JAX for the numbers."""
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

# real JAX is installed: the alias has to win over it, not fill in for its absence
REAL_JAX = importlib.util.find_spec("jax")
pytestmark = pytest.mark.skipif(REAL_JAX is None, reason="real JAX (the oracle) not installed")


def python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the venv's python in `cwd`, importing tracejit from this checkout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def test_real_jax_is_what_plain_python_imports(tmp_path):
    """The setting under test: without the alias the same script gets real JAX."""
    write(tmp_path / "which.py", "import jax, jax.numpy as jnp\n"
                                 "print(jax.__name__, type(jnp.arange(3)).__module__)\n")
    out = python("which.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    name, array_module = out.stdout.split()
    assert name == "jax" and not array_module.startswith("tracejit")


def test_script_imports_of_jax_get_tracejit(tmp_path):
    write(tmp_path / "uses_jax.py", """
        import sys
        import jax, jax.numpy as jnp
        from jax import lax, random
        import jax.tree_util
        import tracejit

        x = jax.jit(lambda a: jnp.sin(a) * 2)(jnp.arange(3.0))
        print(jax.__name__, jax.__file__)
        print(type(x).__module__)
        print(jax is tracejit, jnp is tracejit.numpy, lax is tracejit.lax,
              random is tracejit.random, jax.tree_util is tracejit.tree_util,
              sys.modules["jax.numpy"] is tracejit.numpy,
              tracejit.__spec__.name, tracejit.numpy.__name__)
        print(x.tolist())
    """)
    out = python("-m", "tracejit", "uses_jax.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    name_line, module_line, identity_line, values_line = out.stdout.splitlines()
    assert name_line.split() == ["tracejit", str(ROOT / "tracejit" / "__init__.py")]
    assert module_line.startswith("tracejit")
    # the same module objects, which keep their own names and specs
    assert identity_line.split() == ["True"] * 6 + ["tracejit", "tracejit.numpy"]
    np.testing.assert_allclose(eval(values_line), 2 * np.sin(np.arange(3.0)), rtol=1e-6)


ARGV_SCRIPT = """
    import os, sys
    print(__name__, sys.argv, sys.path[0] == os.path.dirname(os.path.realpath(__file__)))
    if sys.argv[1] == "raise":
        raise ValueError("from the script")
    sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("args", [["0", "a b", "--flag"], ["3"], ["raise", "x"]])
def test_script_runs_as_under_python(tmp_path, args):
    """argv, __name__, sys.path[0], exit codes and uncaught exceptions as `python SCRIPT`."""
    write(tmp_path / "sub" / "prog.py", ARGV_SCRIPT)
    got = python("-m", "tracejit", "sub/prog.py", *args, cwd=tmp_path)
    expected = python("sub/prog.py", *args, cwd=tmp_path)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)
    assert got.stderr.splitlines()[-1:] == expected.stderr.splitlines()[-1:]


@pytest.mark.parametrize("args", [["0", "a"], ["5"]])
def test_module_mode_runs_as_python_m(tmp_path, args):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "tool.py", "import jax, sys\nprint(jax.__name__, sys.argv[0])\n"
          + textwrap.dedent(ARGV_SCRIPT))
    got = python("-m", "tracejit", "-m", "pkg.tool", *args, cwd=tmp_path)
    expected = python("-m", "pkg.tool", *args, cwd=tmp_path)
    assert got.returncode == expected.returncode, got.stderr
    (got_jax, got_rest), (expected_jax, expected_rest) = (
        out.stdout.split(" ", 1) for out in (got, expected))
    assert (got_jax, expected_jax) == ("tracejit", "jax")
    assert got_rest == expected_rest
    assert expected_rest.startswith(str(tmp_path / "pkg" / "tool.py"))


def test_usage_without_a_script(tmp_path):
    out = python("-m", "tracejit", cwd=tmp_path)
    assert out.returncode == 2 and "usage: python -m tracejit SCRIPT.py" in out.stderr


@pytest.mark.parametrize("mode", [[], ["-m"]])
def test_missing_script_or_module_fails_as_under_python(tmp_path, mode):
    name = "nosuch.py" if not mode else "nosuch_module"
    got = python("-m", "tracejit", *mode, name, cwd=tmp_path)
    expected = python(*mode, name, cwd=tmp_path)
    assert got.returncode == expected.returncode != 0
    what = "can't open file" if not mode else "No module named"
    tail = expected.stderr.strip().split(what)[1]
    assert got.stderr.strip().endswith(what + tail), got.stderr


def test_missing_submodule_says_tracejit_lacks_it(tmp_path):
    write(tmp_path / "jax2tf.py", """
        import jax.numpy
        try:
            import jax.experimental.jax2tf
        except ModuleNotFoundError as err:
            print(err.name)
            print(err)
    """)
    out = python("-m", "tracejit", "jax2tf.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    name, message = out.stdout.splitlines()
    assert name in ("jax.experimental", "jax.experimental.jax2tf")
    assert message.startswith(f"tracejit does not provide {name} yet")


def test_alias_jax_in_process(tmp_path):
    write(tmp_path / "inproc.py", """
        import sys
        import tracejit
        tracejit.alias_jax()
        tracejit.alias_jax()  # a second call changes nothing
        import jax.numpy as jnp
        from jax import numpy
        import jaxlib, jax_like  # names that only start with "jax" are not aliased
        print(jnp is tracejit.numpy, numpy is jnp,
              sum(type(f).__name__ == "JaxAliasFinder" for f in sys.meta_path),
              type(sys.meta_path[0]).__name__, jaxlib.__name__, jax_like.__name__)
    """)
    write(tmp_path / "jax_like.py", "")
    out = python("inproc.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "1", "JaxAliasFinder", "jaxlib", "jax_like"]


def test_alias_jax_after_real_jax_raises(tmp_path):
    write(tmp_path / "late.py", """
        import jax
        import tracejit
        try:
            tracejit.alias_jax()
        except RuntimeError as err:
            print(err)
        import sys
        print(sys.modules["jax"] is jax, jax is tracejit)
    """)
    out = python("late.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    message, state = out.stdout.splitlines()
    assert "real jax is already imported" in message
    assert "call tracejit.alias_jax() before anything imports jax" in message
    assert state.split() == ["True", "False"]


# A small JAX library (a tanh layer trained by jitted gradient steps, a lax.scan loop and a
# vmap), written against `jax` alone and run unmodified.
TINY_LIBRARY = """
    import jax
    from jax import numpy as jnp
    from jax import lax


    def predict(params, x):
        w, b = params["w"], params["b"]
        return jnp.tanh(x @ w + b)


    def loss(params, x, y):
        return jnp.mean((predict(params, x) - y) ** 2)


    @jax.jit
    def train(params, x, y):
        def step(p, _):
            value, grads = jax.value_and_grad(loss)(p, x, y)
            p = jax.tree_util.tree_map(lambda a, g: a - 0.5 * g, p, grads)
            return p, value
        return lax.scan(step, params, None, length=20)


    def per_example_loss(params, x, y):
        return jax.vmap(lambda xi, yi: loss(params, xi[None], yi[None]))(x, y)
"""

TINY_MAIN = """
    import numpy as np
    import tinylib

    rng = np.random.RandomState(0)
    x = rng.randn(16, 3).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    params = {"w": rng.randn(3, 1).astype(np.float32) * 0.5, "b": np.zeros(1, np.float32)}
    params, losses = tinylib.train(params, x, y)
    print(type(losses).__module__.startswith("tracejit"))
    print(np.asarray(losses).tolist())
    print(np.asarray(params["w"]).ravel().tolist())
    print(np.asarray(params["b"]).tolist())
    print(np.asarray(tinylib.per_example_loss(params, x, y)).tolist())
"""


def test_a_jax_library_runs_unmodified_with_jax_numbers(tmp_path):
    write(tmp_path / "tinylib.py", TINY_LIBRARY)
    write(tmp_path / "main.py", TINY_MAIN)
    got = python("-m", "tracejit", "main.py", cwd=tmp_path)
    expected = python("main.py", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert expected.returncode == 0, expected.stderr
    got_lines, expected_lines = got.stdout.splitlines(), expected.stdout.splitlines()
    assert (got_lines[0], expected_lines[0]) == ("True", "False")
    assert len(got_lines) == len(expected_lines) == 5
    for g, e in zip(got_lines[1:], expected_lines[1:]):
        np.testing.assert_allclose(eval(g), eval(e), rtol=2e-5, atol=1e-6)
