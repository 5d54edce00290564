"""The user's brief (../shared/seed) as runnable files, written against JAX exactly as the
article has them (the integrator bodies it leaves out are filled in). `swap_imports` points
them at tracejit."""
from pathlib import Path

HERE = Path(__file__).parent


def source(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def swap_imports(src: str) -> str:
    """The one change a JAX user makes: imports point at tracejit."""
    return (src.replace("import jax.numpy as jnp", "import tracejit.numpy as jnp")
               .replace("from jax import", "from tracejit import")
               .replace("import jax\n", "import tracejit as jax\n"))


def run(name: str, backend: str = "tracejit", edit=None) -> dict:
    """Execute an example; returns its namespace."""
    src = source(name)
    if edit is not None:
        src = edit(src)
    if backend == "tracejit":
        src = swap_imports(src)
    namespace: dict = {"__name__": f"seed_{name}"}
    exec(compile(src, str(HERE / name), "exec"), namespace)
    return namespace
