"""Abstract values: what tracing knows about an array (shape, dtype, weak type), never its data."""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from . import dtypes


class AbstractValue:
    """The type of a value a trace knows only abstractly (JAX's `core.AbstractValue`)."""
    __slots__ = ()


class ManualAxisType:
    """How a value stands over the manual mesh axes of a shard_map (`jax.sharding`'s, JAX
    0.10's fields): the axes it varies over (the types tracejit gives have no unreduced or
    reduced axes: empty). Immutable; keyword-only, each a set of mesh axis names."""
    __slots__ = ("reduced", "unreduced", "varying")

    def __init__(self, *, varying: Any = frozenset(), unreduced: Any = frozenset(),
                 reduced: Any = frozenset()):
        sets = {}
        for name, value in (("varying", varying), ("unreduced", unreduced),
                            ("reduced", reduced)):
            if not isinstance(value, (set, frozenset)):
                raise TypeError(f"{name} argument of ManualAxisType should of type `frozenset` "
                                f"or `set`. Got type {type(value)}")
            sets[name] = frozenset(value)
        for other, given in (("unreduced", unreduced), ("reduced", reduced)):
            if sets["varying"] & sets[other]:
                raise ValueError(f"varying and {other} cannot have common mesh axes. Got "
                                 f"varying={varying} and {other}={given}")
        if sets["unreduced"] & sets["reduced"]:
            raise ValueError(f"`unreduced` and `reduced` argument to ManualAxisType cannot "
                             f"overlap. Got unreduced: {unreduced} and reduced: {reduced}")
        for name, value in sets.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ManualAxisType is immutable")

    def _key(self) -> tuple:
        return self.varying, self.unreduced, self.reduced

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ManualAxisType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")

    def __reduce__(self):
        return _manual_axis_type, self._key()

    def update(self, **kwargs: Any) -> ManualAxisType:
        """This type with the fields given changed."""
        return ManualAxisType(**{"varying": self.varying, "unreduced": self.unreduced,
                                 "reduced": self.reduced, **kwargs})

    @property
    def empty(self) -> bool:
        return not (self.varying or self.unreduced or self.reduced)


def _manual_axis_type(varying: frozenset, unreduced: frozenset, reduced: frozenset
                      ) -> ManualAxisType:
    return ManualAxisType(varying=varying, unreduced=unreduced, reduced=reduced)


class ShapedArray(AbstractValue):
    __slots__ = ("shape", "dtype", "weak_type", "vma", "_hash", "_sharding")
    array_abstraction_level = 1

    def __init__(self, shape: tuple[int, ...], dtype: Any, weak_type: bool = False, *,
                 sharding: Any = None, vma: frozenset = frozenset()):
        # `sharding`: a NamedSharding over Explicit mesh axes, where the layout is part of the
        # type as in JAX (only `typeof` of an array laid out so passes one; traced values carry
        # none, their layout is decided when jit partitions the program)
        self._sharding = sharding if hasattr(sharding, "_parts") else None
        self.shape = tuple(int(d) for d in shape)
        try:
            self.dtype = np.dtype(dtype)
        except TypeError:  # a name of ml_dtypes' ("bfloat16") before ml_dtypes is imported
            self.dtype = dtypes.np_dtype(dtype)
        if self.dtype.isbuiltin == 2:  # one of ml_dtypes': the dtype tables must know it
            dtypes.np_dtype(self.dtype)
        self.weak_type = bool(weak_type)
        # the manual mesh axes (shard_map, check_vma=True) the value varies over (JAX's
        # varying manual axes, core/vma.py); outside shard_map empty. Not part of equality:
        # the jaxpr checker compares shapes and dtypes, vma is checked where JAX checks it
        self.vma = frozenset(vma)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def mat(self) -> ManualAxisType:
        """JAX 0.10's manual-axis type (`typeof(x).mat.varying`)."""
        return ManualAxisType(varying=self.vma)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    @property
    def sharding(self):
        """How a value of this type is laid out over devices, as JAX types say it: the Explicit
        layout it was given, else no mesh axes, every dimension unpartitioned."""
        if self._sharding is not None:
            return self._sharding
        from .sharding import AbstractMesh, NamedSharding, PartitionSpec
        return NamedSharding(AbstractMesh((), ()), PartitionSpec(*[None] * self.ndim))

    def update(self, shape=None, dtype=None, weak_type=None, vma=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type,
                           vma=self.vma if vma is None else vma)

    def to_tangent_aval(self) -> ShapedArray:
        """The type of this type's tangents: float0 for integer and boolean values."""
        if dtypes.is_inexact(self.dtype):
            return self
        return ShapedArray(self.shape, dtypes.float0, self.weak_type, vma=self.vma)

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other: object) -> bool:
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return self._hash

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def str_long(self) -> str:
        """`float32[3]`, `~float32[]` for a weak type, `float32[8@x,4]` split over an Explicit
        axis, `float32[2]{V:i}` varying inside shard_map: JAX's `str` of a type."""
        return f"{'~' if self.weak_type else ''}{self._type_str()}"

    def _type_str(self) -> str:
        """JAX's `str_short_aval`: dtype, dimensions with their Explicit mesh axes, vma."""
        parts = self._sharding._parts(self.ndim) if self._sharding is not None else ()
        dims = [str(n) if not axes else f"{n}@{axes[0]}" if len(axes) == 1 else
                f"{n}@({','.join(axes)})" for n, axes in
                itertools.zip_longest(self.shape, parts, fillvalue=())]
        name = "float0" if self.dtype == dtypes.float0 else self.dtype.name  # (numpy: 'void')
        return f"{name}[{','.join(dims)}]{self._vma_str()}"

    def _vma_str(self) -> str:
        """JAX's `{V:i}` / `{V:(i,j)}` suffix of a type varying over manual axes, in the mesh's
        order (that of the shard_map axes bound; names bound nowhere after them, sorted)."""
        if not self.vma:
            return ""
        from .axis_env import vma_frames
        bound = [f.typed_as if f.typed_as is not None else f.name for f in vma_frames()]
        names = [n for n in dict.fromkeys(bound) if n in self.vma]
        names += sorted(str(n) for n in self.vma if n not in names)
        return "{V:" + (str(names[0]) if len(names) == 1 else
                        f"({','.join(map(str, names))})") + "}"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self._type_str()}{weak})"

    __str__ = str_long


class ArrayMetadata:
    """What Array and every Tracer share: metadata read off `self.aval`, len() and iteration."""
    __slots__ = ()

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))


class ShapeDtypeStruct:
    """A shape and dtype standing for an argument in `jit(f).lower(...)` and `eval_shape`, or for
    a result of pure_callback / ffi_call. As in JAX it keeps the dtype it is given (float64 with
    x64 off too): its uses decide — an argument's type is canonical (`aval`), pure_callback
    refuses a 64-bit result with x64 off, ffi_call's result has the dtype given."""
    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, weak_type: bool = False, sharding=None):
        self.shape = tuple(int(d) for d in shape)
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else dtypes.np_dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    @classmethod
    def like(cls, x: Any) -> ShapeDtypeStruct:
        """The struct of an array's (or anything with a type's) type, as JAX's: canonical dtype
        and weak type; the sharding of a committed Array."""
        from .trace import typeof  # (trace imports this module)
        aval = typeof(x)
        committed = getattr(x, "committed", True)
        sharding = getattr(x, "sharding", None) if committed else None
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type, sharding=sharding)

    def update(self, **kwargs: Any) -> ShapeDtypeStruct:
        """A copy with the fields named replaced (JAX's `ShapeDtypeStruct.update`)."""
        fields = {"shape": self.shape, "dtype": self.dtype, "weak_type": self.weak_type,
                  "sharding": self.sharding}
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update got unexpected fields {sorted(unknown)}")
        fields.update(kwargs)
        return ShapeDtypeStruct(fields.pop("shape"), fields.pop("dtype"), **fields)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    @property
    def aval(self) -> ShapedArray:
        """The type of an argument of this struct: its dtype canonical (JAX's
        shaped_abstractify), float32 for float64 with x64 off."""
        return ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.sharding == other.sharding
                and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.sharding, self.weak_type))

    def __repr__(self):
        sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"


def check_shape(shape: Any, name: str = "shape") -> tuple[int, ...]:
    """Normalise a user shape; concrete non-negative ints only."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of integers, got {shape!r}") from None
    out = []
    for d in dims:
        if hasattr(d, "_trace") and not hasattr(d, "_value"):
            from .errors import concretization_error
            raise concretization_error(
                d, f"The {name} argument must be concrete (known while tracing).")
        try:
            i = int(d.__index__())
        except (AttributeError, TypeError):
            raise TypeError(f"{name} must contain only integers, got {shape!r}") from None
        if i < 0:  # JAX's shape rules raise TypeError for negative dimensions
            raise TypeError(f"{name} must have every element be nonnegative, got {dims}")
        out.append(i)
    return tuple(out)
