"""jax_debug_key_reuse: a typed PRNG key (`random.key`) is consumed once — by a sampler, `split`
or `bits` — and a second use raises JAX's KeyReuseError (fold_in, key_data and clone consume
nothing). JAX's rules (jax.experimental.key_reuse), kept on the key objects themselves:

- random.py marks a key consumed (`consume`); a slice of a key array consumes the elements it
  takes and gives fresh keys (`consume_slice`);
- a jitted (or vmapped) function's signature — which key arguments its body consumed, and per
  key result whether it is an argument passed through or a key made inside — is read off the
  key objects while tracing it (`signature`), then applied to the caller's keys at every call
  (`call`); a vmapped body consuming its key consumes the whole key array, as in JAX.

Raw uint32 keys (`PRNGKey`) are not tracked, as in JAX. Off (the default), nothing here runs.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .config import config
from .errors import KeyReuseError, key_reuse_error
from .pytree import tree_leaves
from .trace import Tracer

KEY_TYPE: type | None = None  # random's typed key array (prng.PRNGKeyArray), registered there


def enabled() -> bool:
    return config.jax_debug_key_reuse


def _reused(key: Any, name: str, index: int, mask: Any = True) -> KeyReuseError | None:
    if not np.any(np.logical_and(key._consumed, mask)):
        return None
    if isinstance(key._base_array, Tracer):  # (being staged: the words of JAX's jaxpr check)
        return key_reuse_error(f"In {name}, argument {index} is already consumed.")
    caller = "jit-compiled function" if name == "jit" else name
    return key_reuse_error(f"Previously-consumed key passed to {caller} at index {index}")


def consume(key: Any, name: str) -> None:
    """`key` consumed by `name` ("jit" for a sampler: JAX's samplers are jitted functions;
    "random_split", "random_bits" for the primitives split and bits bind)."""
    error = _reused(key, name, 0)
    if error is not None:
        raise error
    key._consumed = True


def consume_slice(key: Any, idx: Any, out: Any) -> None:
    """`out = key[idx]`: the elements taken are consumed in `key`, `out` is fresh (JAX's rule
    for a static slice); an index that is not static passes `key`'s state on instead."""
    mask = np.zeros(key.shape, bool)
    try:
        mask[idx] = True
    except (IndexError, TypeError):  # (a traced index: the whole state is forwarded)
        out._consumed = bool(np.any(key._consumed))
        return
    error = _reused(key, "slice", 0, mask)
    if error is not None:
        raise error
    key._consumed = np.logical_or(key._consumed, mask)


def _keys(tree: Any) -> list[tuple[int, Any]]:
    """(flat argument index, key) for each typed key among the leaves of `tree`."""
    leaves = tree_leaves(tree, is_leaf=lambda x: isinstance(x, KEY_TYPE))
    return [(i, x) for i, x in enumerate(leaves) if isinstance(x, KEY_TYPE)]


class Signature(NamedTuple):
    """What a traced function does to keys: the argument keys it consumed (index, mask), and per
    key result the argument it passes through (index) or None with whether it left it used."""
    sinks: tuple[tuple[int, Any], ...]
    results: tuple[tuple[int | None, bool], ...]


def signature(args: Any, out: Any) -> Signature | None:
    """Read off the key objects a function was traced with (`args`) and returned (`out`)."""
    ins = _keys(args)
    outs = _keys(out)
    if not ins and not outs:
        return None
    sinks = tuple((i, np.copy(k._consumed)) for i, k in ins if np.any(k._consumed))
    results = []
    for _, o in outs:
        source = next((i for i, k in ins if o is k or o._base_array is k._base_array), None)
        results.append((source, bool(np.all(o._consumed)) if source is None else False))
    return Signature(sinks, tuple(results))


def check(sig: Signature, args: Any) -> None:
    """Before a call runs: refuse a consumed key that the body consumes again."""
    ins = dict(_keys(args))
    for i, mask in sig.sinks:
        key = ins.get(i)
        error = None if key is None else _reused(key, "jit", i, mask)
        if error is not None:
            raise error


def call(sig: Signature, args: Any, out: Any) -> None:
    """Apply `sig` to a call's keys (`check`ed, if not before): mark the ones the body
    consumes, and give the key results their state (as JAX's update_consumption)."""
    check(sig, args)
    ins = dict(_keys(args))
    for i, mask in sig.sinks:
        if i in ins:
            ins[i]._consumed = np.logical_or(ins[i]._consumed, mask)
    for (_, o), (source, used) in zip(_keys(out), sig.results):
        o._consumed = ins[source]._consumed if source in ins else used
