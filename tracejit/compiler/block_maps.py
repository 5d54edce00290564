"""Index maps of data movement, read by compiler/passes.py `_own_block_of_gather`: which
elements of a source a chain of reshapes, transposes, one gather across processes and a slice
selects, decided from the shapes alone (no index arrays, whatever the sizes).

Each dimension of a value along the chain is a list of factors, most significant first; a
factor (size, kind, stride) is one mixed-radix digit of the dimension's index and says where
that digit moves in the source: along its row-major element index (kind SOURCE) or along the
processes' positions (kind PROCESS). A reshape regroups the factors (splitting one where a new
dimension's boundary falls inside it), a transpose permutes dimensions, the gather adds a
leading PROCESS dimension, a slice of whole aligned blocks fixes its leading digits.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

SOURCE, PROCESS = 0, 1

Factor = tuple  # (size, kind, stride)


def _source_dims(shape: Sequence[int]) -> list[list[Factor]]:
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    return [[(n, SOURCE, s)] if n > 1 else [] for n, s in zip(shape, strides)]


def _regroup(factors: list[Factor], shape: Sequence[int]) -> list[list[Factor]] | None:
    """`factors` (row-major) as the dimensions of `shape`, or None when a dimension's
    boundary splits a factor unevenly."""
    merged: list[Factor] = []  # (neighbours contiguous in the source: one factor, split anew)
    for size, kind, stride in factors:
        if merged and merged[-1][1] == kind and merged[-1][2] == size * stride:
            merged[-1] = (merged[-1][0] * size, kind, stride)
        else:
            merged.append((size, kind, stride))
    factors = merged[::-1]  # (popped from the end: most significant first)
    dims = []
    for n in shape:
        dim, need = [], n
        while need > 1:
            if not factors:
                return None
            size, kind, stride = factors.pop()
            if need % size == 0:
                dim.append((size, kind, stride))
                need //= size
            elif size % need == 0:  # (the factor's upper digit closes this dimension)
                dim.append((need, kind, stride * (size // need)))
                factors.append((size // need, kind, stride))
                need = 1
            else:
                return None
        dims.append(dim)
    return dims if not factors else None


def selects_source(source_shape: Sequence[int], steps: Sequence[tuple], position: int,
                   out_shape: Sequence[int]) -> bool:
    """Whether `steps` applied to a source of `source_shape` held by every process give,
    on the process at `position` of the gather, exactly its own source in row-major order
    (a value of `out_shape`). Steps: ("reshape", shape), ("transpose", permutation),
    ("gather", number of processes: a new leading axis), ("slice", starts, limits) of unit
    strides, each slice taking whole blocks (a start a multiple of its length)."""
    if math.prod(source_shape) == 0:
        return False
    dims = _source_dims(tuple(source_shape))
    shape = tuple(source_shape)
    offset = [0, 0]  # (source element, process position) of the first element selected
    for step in steps:
        if step[0] == "reshape":
            shape = tuple(step[1])
            dims = _regroup([f for d in dims for f in d], shape)
        elif step[0] == "transpose":
            shape = tuple(shape[p] for p in step[1])
            dims = [dims[p] for p in step[1]]
        elif step[0] == "gather":
            shape = (step[1],) + shape
            dims = [[(step[1], PROCESS, 1)] if step[1] > 1 else []] + dims
        else:
            _, starts, limits = step
            new = []
            for n, dim, a, b in zip(shape, dims, starts, limits):
                length = b - a
                if length == n:
                    new.append(dim)
                    continue
                if length <= 0 or n % length or a % length:
                    return False
                split = _regroup(dim, (n // length, length))
                if split is None:
                    return False
                k = a // length  # (the block's digits, least significant first)
                for size, kind, stride in reversed(split[0]):
                    offset[kind] += (k % size) * stride
                    k //= size
                new.append(split[1])
            shape = tuple(b - a for a, b in zip(starts, limits))
            dims = new
        if dims is None:
            return False
    if shape != tuple(out_shape) or offset != [0, position]:
        return False
    # the identity: every digit a source one, strides those of the row-major order
    expected = 1
    for size, kind, stride in reversed([f for d in dims for f in d]):
        if kind != SOURCE or stride != expected:
            return False
        expected *= size
    return expected == math.prod(source_shape)
