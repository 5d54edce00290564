"""What jit tells a user who asks (`jax_explain_cache_misses`, `jax_log_compiles`): why a call
traced again, and when tracing and compiling happen. Messages go to the `tracejit` logger at
WARNING level, worded as JAX's."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core.avals import ShapedArray
from ..core.sharding import AbstractMesh
from ..core.trace import user_source_info


def warn(message: str) -> None:
    """A WARNING to the `tracejit` logger (logging is imported on the first message: `import
    tracejit` need not import it)."""
    import logging
    logging.getLogger("tracejit").warning(message)


def _where_defined(fun: Callable) -> str:
    code = getattr(getattr(fun, "__wrapped__", fun), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "<unknown>"


def _type_str(aval: ShapedArray) -> str:
    return aval.str_short() + ("{weak_type=True}" if aval.weak_type else "")


_ABSENT = object()


def _static_str(value: Any) -> str:
    """A static argument as the user passed it (keys hold it as (type, value))."""
    if value is _ABSENT:
        return "not passed"
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], type):
        value = value[1]
    return repr(value)


def _differences(key: tuple, old: tuple, arg_names: Sequence[str]) -> list[tuple[str, str]]:
    """(kind, detail) for each way the cache key `key` differs from a previously seen `old`.
    Keys are (pytree, avals, static positional args, static keyword args, config, the
    arguments' shardings, the meshes in effect)."""
    tree, avals, static, static_kw, config_key, layout, meshes = key
    o_tree, o_avals, o_static, o_static_kw, o_config, o_layout, o_meshes = old
    out = []
    if tree != o_tree:
        out.append(("different input pytree", f"now {tree} and before {o_tree}"))
    else:
        for name, a, b in zip(arg_names, avals, o_avals):
            if a != b:
                out.append(("different input types",
                            f"at {name}, now {_type_str(a)} and before {_type_str(b)}"))
    now, before = dict(static) | dict(static_kw), dict(o_static) | dict(o_static_kw)
    for k in sorted(now.keys() | before.keys(), key=str):
        if now.get(k, _ABSENT) != before.get(k, _ABSENT):
            out.append(("different static arguments",
                        f"at {k}, now {_static_str(now.get(k, _ABSENT))} and before "
                        f"{_static_str(before.get(k, _ABSENT))}"))
    if config_key != o_config:
        out.append(("different configuration (jax.config options that change the program)",
                    f"now {config_key} and before {o_config}"))
    if layout != o_layout:
        out.append(("different input shardings", f"now {layout} and before {o_layout}"))
    if meshes != o_meshes:
        out.append(("different context mesh (jax.set_mesh / use_abstract_mesh)",
                    f"now {_meshes_str(meshes)} and before {_meshes_str(o_meshes)}"))
    return out


def _meshes_str(key: tuple | None) -> str:
    """The meshes of a cache key's mesh part (core/sharding.py `_MeshState.key`)."""
    if key is None:
        return "none"
    def one(m) -> str:  # (a Mesh's devices too: meshes of one shape differ by them)
        return repr(m) if isinstance(m, AbstractMesh) else \
            f"{m} over devices {m.device_ids.ravel().tolist()}"
    return ", ".join(f"{what} {one(m)}" for what, m in zip(("set_mesh", "`with mesh:`",
                                                           "use_abstract_mesh"), key)
                     if m is not None)


def explain_cache_miss(fun: Callable, fun_name: str, key: tuple, seen: Sequence[tuple],
                       arg_names: Sequence[str]) -> None:
    """Log why the call with cache key `key` traces `fun` again, against the closest of the
    keys `seen` before (the one that differs in the fewest ways)."""
    where = user_source_info()
    at = f"{where.filename}:{where.lineno} ({where.function})" if where else "<unknown>"
    lines = [f"TRACING CACHE MISS at {at}:"]
    if not seen:
        lines += ["  never seen function:",
                  f"    {fun_name} id={id(fun)} defined at {_where_defined(fun)}"]
    else:
        diffs = min((_differences(key, old, arg_names) for old in seen), key=len)
        lines += [f"  for {fun_name} defined at {_where_defined(fun)}",
                  "  all previously seen cache keys differ. For the closest previous key:"]
        kinds: dict[str, list[str]] = {}
        for kind, detail in diffs:
            kinds.setdefault(kind, []).append(detail)
        for kind, details in kinds.items():
            lines.append(f"  {kind}:")
            lines += [f"  * {d}" for d in details]
    warn("\n".join(lines))


def log_traced(fun_name: str, seconds: float) -> None:
    warn(f"Finished tracing {fun_name} for jit in {seconds:.9f} sec")


def log_compiling(fun_name: str, in_avals: Sequence[Any]) -> None:
    types = ", ".join(repr(a) for a in in_avals) + ("," if len(in_avals) == 1 else "")
    warn(f"Compiling jit({fun_name}) with global shapes and types ({types}).")


def log_compiled(fun_name: str, backend: str, seconds: float) -> None:
    warn(f"Finished {backend} compilation of jit({fun_name}) in {seconds:.9f} sec")
