"""compiler/block_maps.py `selects_source` against NumPy: the steps run on arrays of element
ids (every process's source distinct), and the verdict must hold exactly there — never True
where the slice is not the process's own source in its order, and True for the chains the
per-process programs of shard_map make (a process's devices, meshes interleaving the
processes)."""
import math

import numpy as np
import pytest

from tracejit.compiler.block_maps import selects_source


def _numpy_selects(source_shape, steps, position, n_processes):
    """Whether the steps, run on every process's distinct source, give the source of the
    process at `position` in row-major order."""
    size = math.prod(source_shape)
    values = [np.arange(q * size, (q + 1) * size).reshape(source_shape)
              for q in range(n_processes)]
    for step in steps:
        if step[0] == "reshape":
            values = [v.reshape(step[1]) for v in values]
        elif step[0] == "transpose":
            values = [v.transpose(step[1]) for v in values]
        elif step[0] == "gather":
            values = [np.stack(values)] * n_processes
        else:
            index = tuple(slice(a, b) for a, b in zip(step[1], step[2]))
            values = [v[index] for v in values]
    out = values[position]
    return out.size == size and bool((out.reshape(-1) == np.arange(size) + position * size)
                                     .all())


def _split(rng, n):
    """A random shape of n elements (unit dimensions included)."""
    primes, m, p = [], n, 2
    while m > 1:
        while m % p == 0:
            primes.append(p)
            m //= p
        p += 1
    rng.shuffle(primes)
    dims = [1] * int(rng.integers(1, 4))
    for f in primes:
        dims[int(rng.integers(len(dims)))] *= f
    return tuple(dims)


def _moves(rng, shape, count):
    steps = []
    for _ in range(count):
        if rng.random() < 0.5:
            shape = _split(rng, math.prod(shape))
            steps.append(("reshape", shape))
        else:
            perm = tuple(int(i) for i in rng.permutation(len(shape)))
            shape = tuple(shape[i] for i in perm)
            steps.append(("transpose", perm))
    return steps, shape


def _cut(rng, shape, n_processes):
    """A slice of whole blocks (sometimes a misaligned one): one dimension cut into
    n_processes blocks, at a random block."""
    starts, limits = [0] * len(shape), list(shape)
    splittable = [d for d, n in enumerate(shape) if n % n_processes == 0 and n > 1]
    if splittable:
        d = splittable[int(rng.integers(len(splittable)))]
        length = shape[d] // n_processes
        starts[d] = int(rng.integers(n_processes)) * length + (rng.random() < 0.1)
        limits[d] = min(starts[d] + length, shape[d])
    return ("slice", tuple(starts), tuple(limits)), tuple(b - a for a, b in zip(starts, limits))


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_numpy_on_random_chains(seed):
    rng = np.random.default_rng(seed)
    found = {True: 0, False: 0}
    for _ in range(400):
        n = int(rng.integers(1, 5))
        source = _split(rng, int(rng.choice([1, 2, 4, 6, 8, 12, 24])))
        before, shape = _moves(rng, source, int(rng.integers(0, 3)))
        after, shape = _moves(rng, (n,) + shape, int(rng.integers(0, 3)))
        cut, out = _cut(rng, shape, n)
        steps = before + [("gather", n)] + after + [cut]
        position = int(rng.integers(n))
        want = _numpy_selects(source, steps, position, n)
        got = selects_source(source, steps, position, out)
        # never a wrong block; and on these chains every own block is seen (a cut of merged
        # runs of the source split anew)
        assert got == want, (source, steps, position)
        found[got] += 1
    assert found[True] > 20 and found[False] > 20, found


# the chains of tests/mpi/programs.py's per-process programs (two devices per process), on
# both processes: a 2-d mesh's cells, a mesh interleaving the processes, columns split
SHARD_MAP_CHAINS = [
    ((2, 6), [("reshape", (2, 2, 3)), ("transpose", (1, 0, 2)), ("gather", 2),
              ("transpose", (1, 0, 2, 3)), ("reshape", (2, 4, 3)), ("transpose", (1, 0, 2)),
              ("reshape", (4, 6))], (2, 6)),
    ((2, 8), [("reshape", (2, 1, 8)), ("gather", 2), ("reshape", (4, 8))], (2, 8)),
    ((4, 4), [("gather", 2), ("transpose", (1, 0, 2)), ("reshape", (4, 8))], (4, 4)),
]


@pytest.mark.parametrize("source,moves,out", SHARD_MAP_CHAINS)
@pytest.mark.parametrize("position", [0, 1])
def test_shard_map_cuts_are_read(source, moves, out, position):
    cut_dim = 1 if moves[-1][1][1] == 2 * out[1] else 0
    starts = tuple(position * out[d] if d == cut_dim else 0 for d in range(2))
    steps = moves + [("slice", starts, tuple(a + n for a, n in zip(starts, out)))]
    assert _numpy_selects(source, steps, position, 2)
    assert selects_source(source, steps, position, out)
    # the other process's block, or the block transposed within it: not this source
    assert not selects_source(source, steps, 1 - position, out)
    swapped = [("transpose", (1, 0))] + moves if source[0] == source[1] else None
    if swapped is not None:
        assert not _numpy_selects(source, swapped + steps[len(moves):], position, 2)
        assert not selects_source(source, swapped + steps[len(moves):], position, out)
