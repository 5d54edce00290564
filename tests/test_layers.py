"""One-way layers: every import inside the package, module-level or inside a function, absolute or
relative, points to the importing module's own layer or a lower one. The layers, lowest first:

    core <- lax <- transforms <- compiler <- backend <- runtime <- user-facing modules <- face

(the face is tracejit/__init__.py). Imports by name string (`importlib.import_module`,
`__import__`) would hide a dependency from this check, so the package has none below the face;
in the face (alias.py hands out any tracejit module under the `jax` name) none can point up.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tracejit"

# lowest first: the top-level names under tracejit/ that make up each layer
LAYERS = [
    ("core", {"core"}),
    ("lax", {"lax"}),
    ("transforms", {"transforms"}),
    ("compiler", {"compiler"}),
    ("backend", {"backend"}),
    ("runtime", {"runtime"}),
    ("user-facing", {"numpy", "nn", "random", "prng", "tree_util", "tree", "errors", "scipy",
                     "stages", "typing", "dtypes", "flatten_util", "test_util", "debug",
                     "callback", "extend", "interpreters", "experimental", "sharding",
                     "api_util", "version", "custom_derivatives", "ad_checkpoint", "ref",
                     "shard_map", "example_libraries", "random_derived",
                     "shard_map_processes", "distributed", "image", "custom_batching",
                     "testing",
                     "api", "dlpack", "environment_info", "lib", "monitoring", "ops",
                     "profiler", "export", "ffi"}),
    ("face", {"alias", "__main__"}),  # and tracejit/__init__.py
]


def layer_of(module: str) -> int:
    """The rank of a tracejit module's layer (KeyError for a module no layer names)."""
    parts = module.split(".")
    if parts == ["tracejit"]:
        return len(LAYERS) - 1
    for rank, (_, names) in enumerate(LAYERS):
        if parts[1] in names:
            return rank
    raise KeyError(module)


def package_modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (its file, whether it is a package's __init__)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def imported_modules(module: str, is_pkg: bool, tree: ast.AST, known: set[str]
                     ) -> list[tuple[int, str]]:
    """(line, module) for every import of a tracejit module anywhere in `tree`; `from P import x`
    names the submodule P.x when x is one, else P. Name-string imports appear as '<dynamic>'."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((node.lineno, sub if sub in known else target))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__"):
                out.append((node.lineno, "<dynamic>"))
    return sorted((line, m) for line, m in out
                  if m == "<dynamic>" or m == "tracejit" or m.startswith("tracejit."))


def upward_imports(module: str, is_pkg: bool, source: str, known: set[str]) -> list[str]:
    rank = layer_of(module)
    found = []
    for line, target in imported_modules(module, is_pkg, ast.parse(source), known):
        if target == "<dynamic>":
            if rank == len(LAYERS) - 1:
                continue  # nothing lies above the face
            found.append(f"{module}:{line} imports a module by name string")
        elif layer_of(target) > rank:
            found.append(f"{module}:{line} imports {target} "
                         f"({LAYERS[rank][0]} -> {LAYERS[layer_of(target)][0]})")
    return found


def test_every_module_has_a_layer():
    unplaced = []
    for module in package_modules():
        try:
            layer_of(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"give these modules a layer in LAYERS: {unplaced}"


def test_imports_point_down_the_layers():
    modules = package_modules()
    known = set(modules)
    upward = []
    for module, (path, is_pkg) in modules.items():
        upward += upward_imports(module, is_pkg, path.read_text(), known)
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def test_the_check_finds_upward_imports():
    """The checker itself: function-local, relative (`from .. import x` naming a submodule) and
    absolute upward imports are found; same-layer and downward ones are not."""
    source = """
from . import rules
from ..core.trace import Tracer
import numpy as np

def f():
    from ..runtime import jit
    from .. import numpy
    import tracejit.lax.shape
    import importlib
    return importlib.import_module("tracejit.runtime")
"""
    known = {"tracejit", "tracejit.core", "tracejit.core.rules", "tracejit.core.trace",
             "tracejit.runtime", "tracejit.runtime.jit", "tracejit.numpy", "tracejit.lax",
             "tracejit.lax.shape"}
    found = upward_imports("tracejit.core.fake", False, source, known)
    assert found == [
        "tracejit.core.fake:7 imports tracejit.runtime.jit (core -> runtime)",
        "tracejit.core.fake:8 imports tracejit.numpy (core -> user-facing)",
        "tracejit.core.fake:9 imports tracejit.lax.shape (core -> lax)",
        "tracejit.core.fake:11 imports a module by name string",
    ]
    # the face has nothing above it, so its name-string imports cannot point up
    assert upward_imports("tracejit.alias", False, source, known) == []
