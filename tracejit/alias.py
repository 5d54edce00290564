"""The name `jax` as an alias of tracejit: a finder first on sys.meta_path resolves `import jax`
and `import jax.X.Y` to tracejit and tracejit.X.Y, the same module objects. It belongs to the
package face (beside tracejit/__init__.py): it hands out every module of the package by name.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

ALIAS = "jax"
TARGET = "tracejit"

# JAX's internal modules that libraries built on JAX import (equinox, flax), each answered by
# the tracejit module that holds the same machinery; the packages above them (`jax._src`) are
# empty namespaces made here. Any other `jax._src` module is missing, as the libraries expect
# of modules they import only where they exist. (numpyro reads jax._src.core.trace_state_clean;
# optax, numpyro and blackjax reach ravel_pytree through jax._src.flatten_util.)
INTERNALS = {
    "jax._src.core": "tracejit.core",
    "jax._src.checkify": "tracejit.experimental.checkify",
    "jax._src.dispatch": "tracejit.runtime.jit",
    "jax._src.dtypes": "tracejit.dtypes",
    "jax._src.flatten_util": "tracejit.flatten_util",
    "jax._src.state.types": "tracejit.ref",
    "jax._src.traceback_util": "tracejit.core.traceback_util",
    "jax._src.tree_util": "tracejit.core.pytree",
}
_NAMESPACES = {name.rsplit(".", i)[0] for name in INTERNALS for i in range(1, name.count("."))}


def _target_name(fullname: str) -> str | None:
    """'jax.numpy' -> 'tracejit.numpy'; None for a name outside the `jax` package."""
    if fullname in INTERNALS:
        return INTERNALS[fullname]
    if fullname == ALIAS or fullname.startswith(ALIAS + "."):
        return TARGET + fullname[len(ALIAS):]
    return None


def _names_target(err: ModuleNotFoundError, target: str) -> bool:
    """Whether `err` says `target` (or a package above it) is missing, rather than a module that
    `target` itself imports (that error is the user's to see as it is)."""
    return err.name is not None and (target == err.name or target.startswith(err.name + "."))


class JaxAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `jax` and `jax.*` and loads each as the tracejit module of the same dotted path."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname in _NAMESPACES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        name = _target_name(fullname)
        if name is None:
            return None
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError as err:
            if not _names_target(err, name):
                raise
            found = None
        if found is None:
            # Raised here rather than returning None: the path finders that would run next
            # could only say "No module named 'jax.X'", which hides that tracejit stood in.
            raise ModuleNotFoundError(
                f"tracejit does not provide {fullname} yet (there is no module {name}); "
                f"`jax` is an alias of tracejit in this process", name=fullname)
        return importlib.machinery.ModuleSpec(
            fullname, self, origin=found.origin,
            is_package=found.submodule_search_locations is not None)

    def create_module(self, spec):
        return None  # a placeholder: exec_module puts the tracejit module in its place

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ in _NAMESPACES:
            module.__doc__ = f"JAX's internal package {module.__name__}: a namespace of the " \
                             f"tracejit modules in tracejit.alias.INTERNALS"
            return
        # The import system returns whatever sys.modules holds once this returns, so the
        # tracejit module itself stands under the jax name, with its own __name__ and __spec__
        # (setting them up through create_module would overwrite tracejit's __spec__).
        sys.modules[module.__name__] = importlib.import_module(_target_name(module.__name__))


def alias_jax() -> None:
    """Make `import jax` and `import jax.X` in this process give tracejit and tracejit.X (the
    same module objects), ahead of a real JAX that may be installed. Call it before anything
    imports jax; it raises RuntimeError when real JAX has been imported already. Calling it
    again does nothing. `python -m tracejit SCRIPT.py` runs a script with this in effect."""
    if any(isinstance(f, JaxAliasFinder) for f in sys.meta_path):
        return
    loaded = sys.modules.get(ALIAS)
    if loaded is not None and loaded is not sys.modules[TARGET]:
        where = getattr(loaded, "__file__", None) or repr(loaded)
        raise RuntimeError(
            f"tracejit.alias_jax(): the real jax is already imported in this process (from "
            f"{where}); call tracejit.alias_jax() before anything imports jax")
    sys.meta_path.insert(0, JaxAliasFinder())
