"""jax.thread_guard under `mpiexec -n 2` (run by tests/test_options.py), after JAX's own
multiprocess test: while the guard is on, a jitted call on an array spanning the processes from
another thread raises; from the guard's thread, on arrays within the process, with the guard
off again, or nested in the same thread, calls run. Each process writes what happened in each
case to OUT.<rank>.json (files, not stdout: mpiexec's pipe may interleave the two processes'
lines).

usage: thread_guard.py OUT"""
import concurrent.futures
import json
import sys

import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize()
f = jax.jit(lambda x: jnp.sum(jnp.cos(jnp.square(x))))
g = jax.jit(lambda x: jnp.sin(jnp.square(x)) + 1)
mesh = jax.make_mesh((jax.device_count(),), ("i",), devices=jax.devices())
spanning = jax.device_put(np.ones(jax.device_count(), np.float32), NamedSharding(mesh, P("i")))
local_mesh = jax.make_mesh((jax.local_device_count(),), ("i",), devices=jax.local_devices())
local = jax.device_put(np.ones(jax.local_device_count(), np.float32),
                       NamedSharding(local_mesh, P("i")))


def in_thread(fn, *args):
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args).result()


said = {}


def case(name, fn):
    try:
        jax.block_until_ready(fn())
        said[name] = "ok"
    except RuntimeError as e:
        said[name] = "raised: " + str(e).splitlines()[0]


def nested_in_another_thread():
    def inner():
        with jax.thread_guard(True):
            return f(spanning)
    with jax.thread_guard(True):
        return in_thread(inner)


def guard_off_inside():
    with jax.thread_guard(True), jax.thread_guard(False):
        return in_thread(f, spanning)


def guarded(fn):
    def run():
        with jax.thread_guard(True):
            return fn()
    return run


case("other thread, spanning", guarded(lambda: in_thread(f, spanning)))
case("other thread, spanning, cached", guarded(lambda: in_thread(g, g(g(spanning)))))
case("same thread, spanning", guarded(lambda: f(spanning)))
case("other thread, within the process", guarded(lambda: in_thread(f, local)))
case("nested in the same thread", guarded(lambda: guarded(lambda: g(spanning))()))
case("guard off inside", guard_off_inside)
case("after the guard", lambda: in_thread(f, spanning))
case("nested in another thread", nested_in_another_thread)
with open(f"{sys.argv[1]}.{jax.process_index()}.json", "w") as out:
    json.dump(said, out)
