"""Shardings, meshes and partition specs (JAX's `jax.sharding` objects). They sit in core beside
the device model because an Array answers `.sharding` itself. This process has one device, so
every sharding places the whole array on it; the objects still carry JAX's API, reprs, equality
and errors, so programs written for many devices run (and fail) here as they would on one.
"""
from __future__ import annotations

import abc
import contextlib
import enum
import functools
import itertools
import math
import threading
import warnings
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from .config import config
from .devices import MEMORY_KINDS, Device, default_device, devices as all_devices, process_index


class MemorySpace(enum.Enum):
    """Where an array's memory lives, in types (`jax.memory.Space`). On this CPU runtime all
    memory kinds are the same host memory: device_put with a memory_kind records the kind on
    the sharding and copies nothing."""
    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"

    __hash__ = object.__hash__  # (JAX's: by identity, not by the member's name)


class AxisType(enum.Enum):
    """How a mesh axis is partitioned: by the compiler (Auto), in the types (Explicit) or by
    the user inside shard_map (Manual)."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


def _axis_types(axis_names: tuple, axis_types: Any, where: str) -> tuple:
    if axis_types is None:
        return (AxisType.Auto,) * len(axis_names)
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,)
    if not all(isinstance(a, AxisType) for a in axis_types):
        raise TypeError(f"axis_types passed to {where} must be of type "
                        f"`jax.sharding.AxisType`. Got {axis_types} of type "
                        f"{tuple(type(a) for a in axis_types)}")
    if len(axis_types) != len(axis_names):
        raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                         f"axis_names={axis_names} and axis_types={axis_types}")
    return axis_types


class _UnconstrainedSingleton:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"


UNCONSTRAINED = _UnconstrainedSingleton()


def _canonical_entry(entry: Any) -> Any:
    """One entry of a PartitionSpec: None, an axis name, UNCONSTRAINED or a tuple of names (a
    one-name tuple or list is the name itself, as in JAX)."""
    if isinstance(entry, (tuple, list)):
        entry = tuple(entry)
        return entry[0] if len(entry) == 1 else entry
    return entry


class PartitionSpec:
    """How each dimension of an array is split over mesh axes: `P('x', None)` splits dimension
    0 over axis 'x' and replicates dimension 1. Entries are None, an axis name or a tuple of
    names. Not a tuple: `P('x') != ('x',)`, so pytree utilities can tell a spec from a tuple."""
    __slots__ = ("_partitions", "unreduced", "reduced")
    UNCONSTRAINED = UNCONSTRAINED

    def __init__(self, *partitions: Any, unreduced: Any = frozenset(),
                 reduced: Any = frozenset()):
        sets = []
        for name, value in (("unreduced", unreduced), ("reduced", reduced)):
            if not isinstance(value, (set, frozenset)):
                raise TypeError(f"{name} argument of PartitionSpec should of type `frozenset` "
                                f"or `set`. Got type {value}")
            sets.append(frozenset(value))
        object.__setattr__(self, "_partitions", tuple(_canonical_entry(p) for p in partitions))
        object.__setattr__(self, "unreduced", sets[0])
        object.__setattr__(self, "reduced", sets[1])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("PartitionSpec is immutable")

    def __init_subclass__(cls, **kwargs):
        raise TypeError("Subclassing `jax.P` is prohibited.")

    @property
    def partitions(self) -> tuple:
        return self._partitions

    def _key(self) -> tuple:
        return self._partitions, self.unreduced, self.reduced

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PartitionSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        inner = repr(self._partitions)[1:-1]
        extra = [f"{name}={{{', '.join(repr(a) for a in sorted(s, key=str))}}}"
                 for name, s in (("unreduced", self.unreduced), ("reduced", self.reduced)) if s]
        if not extra:
            return f"P({inner})"
        inner = "" if not inner else f"{inner} " if inner.endswith(",") else f"{inner}, "
        return f"P({inner}{', '.join(extra)})"

    def _plain(self, what: str, instead: str = "spec.partitions") -> tuple:
        if self.reduced or self.unreduced:
            raise ValueError(f"Using {what} is dangerous when PartitionSpec has non-empty "
                             f"unreduced/reduced set. Please use {instead}")
        return self._partitions

    def __getitem__(self, i):
        return self._plain("pspec[...]", "spec.partitions[...]")[i]

    def __iter__(self):
        return iter(self._plain("*pspec", "*spec.partitions"))

    def __len__(self) -> int:
        return len(self._partitions)

    def __add__(self, other: Any) -> PartitionSpec:
        if isinstance(other, PartitionSpec):
            return PartitionSpec(*self._partitions, *other._partitions,
                                 unreduced=self.unreduced | other.unreduced,
                                 reduced=self.reduced | other.reduced)
        if isinstance(other, tuple):
            return PartitionSpec(*self._plain("pspec + tuple"), *other)
        return NotImplemented

    def __radd__(self, other: Any) -> PartitionSpec:
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._plain("tuple + pspec"))
        return NotImplemented

    def index(self, value: Any) -> int:
        return self._partitions.index(_canonical_entry(value))

    def count(self, value: Any) -> int:
        return self._partitions.count(_canonical_entry(value))

    def update(self, partitions=None, unreduced=None, reduced=None) -> PartitionSpec:
        return PartitionSpec(*(self._partitions if partitions is None else partitions),
                             unreduced=self.unreduced if unreduced is None else unreduced,
                             reduced=self.reduced if reduced is None else reduced)

    def __reduce__(self):
        return _make_spec, (self._partitions, self.unreduced, self.reduced)

    def mesh_axes(self) -> list:
        """Every mesh axis name the spec uses, in order (a name used twice appears twice)."""
        out = []
        for p in self._partitions:
            if p is None or p is UNCONSTRAINED:
                continue
            out.extend(p if isinstance(p, tuple) else (p,))
        return out


def _make_spec(partitions, unreduced, reduced):
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


class Sharding(abc.ABC):
    """How an array's data is laid out across devices (JAX's abstract `jax.sharding.Sharding`).
    With one device every sharding puts the whole array, unsplit, on it."""

    @property
    @abc.abstractmethod
    def device_set(self) -> set:
        """The devices the array lives on."""

    @property
    @abc.abstractmethod
    def memory_kind(self) -> str | None:
        """Which memory of the devices holds the data ('device' here)."""

    @abc.abstractmethod
    def with_memory_kind(self, kind: str) -> Sharding:
        """The same sharding in another memory kind."""

    @property
    def is_fully_replicated(self) -> bool:
        return True  # one device holds a whole copy

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every device (false over several processes' devices)."""
        return all(d.process_index == process_index() for d in self.device_set)

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        return {d for d in self.device_set if d.process_index == process_index()}

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self.device_set)

    def shard_shape(self, global_shape: Sequence[int]) -> tuple:
        """The shape of the piece each device holds: the whole array."""
        return tuple(global_shape)

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        """Device -> the index of the piece it holds (all of the array)."""
        return {d: (slice(None),) * len(global_shape) for d in self.device_set}

    def addressable_devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        return self.devices_indices_map(global_shape)

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both lay an array of rank `ndim` out the same way (same devices and memory)."""
        return (isinstance(other, Sharding) and self.device_set == other.device_set
                and self.memory_kind == other.memory_kind)

    def check_compatible_aval(self, aval_shape: Sequence[int]) -> None:
        """Raise when this sharding cannot hold an array of shape `aval_shape`."""


def _check_memory_kind(kind: str | None) -> str:
    if kind is None:
        return "device"
    if kind not in MEMORY_KINDS:
        raise ValueError(f"Could not find memory addressable by device cpu. Device cpu can "
                         f"address the following memory kinds: {', '.join(MEMORY_KINDS)}. "
                         f"Got memory kind: {kind}")
    return kind


class SingleDeviceSharding(Sharding):
    """The whole array on one device: what every array here has as `.sharding`."""
    __slots__ = ("_device", "_memory_kind")

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        self._device = device
        self._memory_kind = _check_memory_kind(memory_kind)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, SingleDeviceSharding) and self._device == other._device
                and self._memory_kind == other._memory_kind)

    def __hash__(self) -> int:
        return hash((self._device, self._memory_kind))

    def __reduce__(self):
        return type(self), (self._device,), None

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=kind)


class _BaseMesh:
    """What concrete and abstract meshes share: named axes with sizes and axis types."""
    axis_names: tuple
    axis_types: tuple
    axis_sizes: tuple

    @property
    def shape(self) -> OrderedDict:
        return OrderedDict(self.shape_tuple)

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes) if self.axis_names else 0

    @property
    def empty(self) -> bool:
        return self.size == 0

    def _of_type(self, kind: AxisType) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == kind)

    @property
    def auto_axes(self) -> tuple:
        return self._of_type(AxisType.Auto)

    @property
    def explicit_axes(self) -> tuple:
        return self._of_type(AxisType.Explicit)

    @property
    def manual_axes(self) -> tuple:
        return self._of_type(AxisType.Manual)

    def _str_body(self) -> str:
        return (", ".join(f"'{n}': {s}" for n, s in self.shape_tuple) or "()") + \
            f", axis_types={self.axis_types}"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


class Mesh(_BaseMesh, contextlib.ContextDecorator):
    """A NumPy array of devices with a name for each axis (`Mesh(devices, ('x', 'y'))`);
    shardings name its axes. Equal meshes are equal and hash alike."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str],
                 axis_types: Any = None):
        devs = devices if isinstance(devices, np.ndarray) else np.array(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if any(n is None for n in names):
            raise ValueError(f"Mesh axis names cannot be None. Got: {names}")
        if devs.ndim != len(names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length "
                f"of its second argument (`axis_names`), but got devices.ndim == {devs.ndim} "
                f"and len(axis_names) == {len(names)}.")
        devs = devs.copy()
        devs.flags.writeable = False
        object.__setattr__(self, "devices", devs)
        object.__setattr__(self, "axis_names", names)
        object.__setattr__(self, "axis_types", _axis_types(names, axis_types, "Mesh"))
        # immutable: its key, hash and process span once (jit's dispatch hashes and compares
        # the meshes of its arguments' shardings every call)
        key = (tuple(devs.flat), devs.shape, names, self.axis_types)
        object.__setattr__(self, "_cached_key", key)
        object.__setattr__(self, "_hash", hash(key))
        object.__setattr__(self, "_multi_process",
                           len({getattr(d, "process_index", 0) for d in devs.flat}) > 1)

    @property
    def axis_sizes(self) -> tuple:
        return self.devices.shape

    @property
    def size(self) -> int:
        return 0 if self.devices.size == 0 or not self.axis_names and \
            self.devices.flat[0] is None else int(self.devices.size)

    def _key(self) -> tuple:
        return self._cached_key

    def __eq__(self, other: Any) -> bool:
        return self is other or isinstance(other, Mesh) and self._hash == other._hash and \
            self._cached_key == other._cached_key

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return Mesh, (self.devices, self.axis_names, self.axis_types)

    def __str__(self) -> str:
        return "Mesh()" if self.empty else f"Mesh({self._str_body()})"

    def __repr__(self) -> str:
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types})")

    @property
    def is_scalar(self) -> bool:
        return self.size == 1 and not self.axis_names

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        return [d for d in self.devices.flat if d.process_index == process_index()]

    @property
    def local_mesh(self) -> Mesh:
        return self

    @property
    def is_multi_process(self) -> bool:
        return self._multi_process

    @property
    def abstract_mesh(self) -> AbstractMesh:
        # (made once: shard_map compares it with the context's at every call)
        cached = self.__dict__.get("_abstract_mesh")
        if cached is None:
            d = self.devices.flat[0] if self.axis_names else None
            cached = AbstractMesh((), ()) if d is None else AbstractMesh(
                self.axis_sizes, self.axis_names, self.axis_types,
                abstract_device=AbstractDevice(d.device_kind, None, d.platform))
            object.__setattr__(self, "_abstract_mesh", cached)
        return cached

    def update(self, devices=None, axis_names=None, axis_types=None) -> Mesh:
        return Mesh(self.devices if devices is None else devices,
                    self.axis_names if axis_names is None else axis_names,
                    self.axis_types if axis_types is None else axis_types)

    def __enter__(self) -> Mesh:
        # JAX's legacy form: the mesh resolves PartitionSpecs but is not `get_mesh()`'s
        warnings.warn("`with mesh:` context manager has been deprecated. Please use `with"
                      " jax.set_mesh(mesh):` instead.", category=DeprecationWarning,
                      stacklevel=2)
        _STATE.legacy.append(self)
        _STATE.rekey()
        return self

    def __exit__(self, *exc) -> bool:
        _STATE.legacy.pop()
        _STATE.rekey()
        return False


class AbstractDevice:
    """The kind of device an abstract mesh is for, without the devices."""
    __slots__ = ("device_kind", "num_cores", "platform")

    def __init__(self, device_kind: str, num_cores: int | None = None,
                 platform: str | None = None):
        self.device_kind, self.num_cores, self.platform = device_kind, num_cores, platform

    def _repr(self) -> str:
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")

    def __repr__(self) -> str:
        return f"AbstractDevice({self._repr()})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractDevice) and self._repr() == other._repr()

    def __hash__(self) -> int:
        return hash(self._repr())


class AbstractMesh(_BaseMesh):
    """Axis names and sizes without devices (for tracing a program for a mesh shape)."""

    def __init__(self, axis_sizes: tuple, axis_names: tuple, axis_types: Any = None, *,
                 abstract_device: AbstractDevice | None = None):
        object.__setattr__(self, "axis_sizes", tuple(axis_sizes))
        object.__setattr__(self, "axis_names", tuple(axis_names))
        object.__setattr__(self, "axis_types",
                           _axis_types(self.axis_names, axis_types, "AbstractMesh"))
        object.__setattr__(self, "abstract_device", abstract_device)

    def _key(self) -> tuple:
        return self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device

    def __eq__(self, other: Any) -> bool:
        return self is other or isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        device = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({self._str_body()}{device})"

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def update(self, axis_sizes=None, axis_names=None, axis_types=None) -> AbstractMesh:
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types,
                            abstract_device=self.abstract_device)

    def _no(self, name: str):
        raise ValueError(f"AbstractMesh does not implement {name}")

    devices = property(lambda self: self._no("devices"))
    device_ids = property(lambda self: self._no("device_ids"))
    local_devices = property(lambda self: self._no("local_devices"))

    def __enter__(self):
        self._no("__enter__")

    def __exit__(self, *exc):
        self._no("__exit__")


class _MeshState(threading.local):
    """The meshes set by `with mesh:` / `set_mesh`, innermost last (per thread, as in JAX)."""

    def __init__(self):
        self.stack: list[Mesh] = []
        self.legacy: list[Mesh] = []  # `with mesh:` blocks
        # use_abstract_mesh blocks: (the depth of `stack` when entered, the abstract mesh)
        self.abstract: list[tuple[int, AbstractMesh]] = []
        # what a traced program may read of the above (the concrete, legacy and abstract
        # meshes in effect), kept current by every change: part of jit's full cache key
        self.key: tuple | None = None
        # the same as an int for the dispatch fast path's key, read and hashed every call (a
        # Mesh's __hash__, though computed once, is a Python call: ~80 ns a lookup): equal
        # keys get one token while `_TOKENS` remembers them, a token is never reused
        self.token: int | None = None
        # the mesh `set_mesh` put in effect: the results of jit and of eager operations on
        # values nobody laid out are replicated over it (as JAX reports them; over a mesh
        # spanning processes every process holds all of such a value, as JAX's global array
        # replicated over it); None otherwise (no mesh, or an empty one)
        self.placing: Mesh | None = None
        self.replicated: dict = {}  # rank -> replicated_sharding(placing, rank), filled on use

    def push(self, mesh: Mesh) -> None:
        self.stack.append(mesh)
        self.rekey()

    def pop(self) -> None:
        self.stack.pop()
        self.rekey()

    def rekey(self) -> None:
        stack, legacy, abstract = self.stack, self.legacy, self.abstract
        override = abstract[-1][1] if abstract and abstract[-1][0] >= len(stack) else None
        placing = stack[-1] if stack and not stack[-1].empty else None
        if placing is not self.placing:
            self.placing, self.replicated = placing, {}
        if not stack and not legacy and override is None:
            self.key = self.token = None
            return
        key = (stack[-1] if stack else None, legacy[-1] if legacy else None, override)
        token = _TOKENS.get(key)
        if token is None:
            if len(_TOKENS) >= 256:  # (a program making mesh after mesh: forget the old ones;
                _TOKENS.clear()      # their calls find their traces by the full key again)
            token = _TOKENS.setdefault(key, next(_TOKEN_COUNT))
        self.key, self.token = key, token


# the meshes in effect (`_MeshState.key`) -> their token (shared by all threads: a race gives
# one key two tokens, which costs a trace lookup by the full key, never a wrong program)
_TOKENS: dict[tuple, int] = {}
_TOKEN_COUNT = itertools.count()


_STATE = _MeshState()


class _ArgumentTypes(threading.local):
    """The layouts jit's arguments are typed by while jit traces its function (shard_map's
    check of in_specs over Explicit axes reads them): tracer id -> the argument's sharding."""

    def __init__(self):
        self.types: dict[int, Any] = {}


_ARGUMENT_TYPES = _ArgumentTypes()


@contextlib.contextmanager
def typed_arguments(tracers: Sequence, shardings: Sequence):
    """While jit traces its function: each argument tracer typed by the sharding its value
    carries (None: none, the value never laid out), as JAX's types hold them."""
    types = _ARGUMENT_TYPES.types
    added = [id(t) for t in tracers]
    types.update(zip(added, shardings))
    try:
        yield
    finally:
        for k in added:
            types.pop(k, None)


def argument_type(tracer: Any) -> tuple[bool, Any]:
    """(whether `tracer` is an argument of the jit being traced, the sharding it is typed by)."""
    types = _ARGUMENT_TYPES.types
    k = id(tracer)
    return (k in types, types.get(k))


def mesh_context() -> _MeshState:
    """The per-thread mesh state, for jit: `mesh_context().key` is the part of a cache key that
    says which meshes were in effect when a program was traced (None when none is), `.token`
    the same for the dispatch fast path."""
    return _STATE


def get_mesh() -> Mesh:
    """The concrete mesh in effect (an empty Mesh when none is set)."""
    return _STATE.stack[-1] if _STATE.stack else Mesh(np.empty((), dtype=object), ())


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in effect: the innermost of `use_abstract_mesh` and the abstract mesh
    of `set_mesh`'s mesh (empty when none is set)."""
    if _STATE.abstract and _STATE.abstract[-1][0] >= len(_STATE.stack):
        return _STATE.abstract[-1][1]
    return _STATE.stack[-1].abstract_mesh if _STATE.stack else AbstractMesh((), ())


class use_abstract_mesh:  # noqa: N801  (JAX's name)
    """`with jax.sharding.use_abstract_mesh(abstract_mesh):` makes it the abstract mesh
    programs are traced for (`get_abstract_mesh()`), without devices."""

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                             f"{type(mesh)}")
        self.mesh = mesh

    def __enter__(self) -> None:
        prev = get_abstract_mesh()
        if not prev.empty and not self.mesh.empty and prev.size != self.mesh.size:
            raise ValueError(f"use_abstract_mesh cannot change the size of the mesh. Got new "
                             f"mesh: {self.mesh} with size={self.mesh.size} and prev mesh: "
                             f"{prev} with size={prev.size}")
        _STATE.abstract.append((len(_STATE.stack), self.mesh))
        _STATE.rekey()

    def __exit__(self, *exc) -> bool:
        _STATE.abstract.pop()
        _STATE.rekey()
        return False


class set_mesh:  # noqa: N801  (JAX's name; a function in use, a context manager in `with`)
    """Make `mesh` the mesh in effect: `jax.set_mesh(mesh)` for the rest of the program, or
    `with jax.set_mesh(mesh):` for a block. PartitionSpecs given to jit and device_put then
    name its axes."""

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        self._mesh = mesh
        self._depth = len(_STATE.stack)
        _STATE.push(mesh if mesh is not None else get_mesh())

    def __enter__(self) -> Mesh:
        return self._mesh

    def __exit__(self, *exc) -> bool:
        del _STATE.stack[self._depth:]
        _STATE.rekey()
        return False


class NamedSharding(Sharding):
    """An array split over the axes of a mesh as a PartitionSpec says:
    `NamedSharding(mesh, P('x', None))`."""
    __slots__ = ("mesh", "spec", "_memory_kind", "_hash")

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec, *,
                 memory_kind: str | None = None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: mesh must be a jax.sharding.Mesh or AbstractMesh, "
                            f"got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec (jax.P(...)), got "
                            f"{spec!r} of type {type(spec).__name__}")
        self.mesh, self.spec = mesh, spec
        self._memory_kind = _check_memory_kind(memory_kind)
        _check_spec(mesh, spec)
        # once (all three are immutable): jit's dispatch hashes its arguments' shardings
        self._hash = hash((mesh, self._memory_kind, spec))

    def __repr__(self) -> str:
        return (f"NamedSharding(mesh={self.mesh}, spec={self.spec}, "
                f"memory_kind={self._memory_kind})")

    def __eq__(self, other: Any) -> bool:
        return self is other or (isinstance(other, NamedSharding) and self.spec == other.spec
                                 and self._memory_kind == other._memory_kind
                                 and self.mesh == other.mesh)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return _make_named, (self.mesh, self.spec, self._memory_kind)

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self.mesh.devices.flat)  # (the mesh's order, as JAX's)

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    @property
    def is_fully_replicated(self) -> bool:
        sizes = dict(self.mesh.shape_tuple)
        return all(sizes[a] == 1 for a in self.spec.mesh_axes())

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def with_spec(self, spec: PartitionSpec | Sequence) -> NamedSharding:
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        return NamedSharding(self.mesh, spec, memory_kind=self._memory_kind)

    def update(self, **kwargs) -> NamedSharding:
        return NamedSharding(kwargs.get("mesh", self.mesh), kwargs.get("spec", self.spec),
                             memory_kind=kwargs.get("memory_kind", self._memory_kind))

    def check_compatible_aval(self, aval_shape: Sequence[int]) -> None:
        if len(aval_shape) < len(self.spec):
            scalar = " For scalars the PartitionSpec should be P()" if not aval_shape else ""
            raise ValueError(f"Sharding {self!r} is only valid for values of rank at least "
                             f"{len(self.spec)}, but was applied to a value of rank "
                             f"{len(aval_shape)}.{scalar}")

    def _parts(self, ndim: int) -> list[tuple]:
        """Per array dimension, the mesh axes splitting it (major first)."""
        parts = []
        for d in range(ndim):
            entry = self.spec[d] if d < len(self.spec) else None
            if entry is None or entry is UNCONSTRAINED:
                parts.append(())
            else:
                parts.append(entry if isinstance(entry, tuple) else (entry,))
        return parts

    def shard_shape(self, global_shape: Sequence[int]) -> tuple:
        """The shape of each device's piece: every split dimension divided by its axes."""
        sizes = dict(self.mesh.shape_tuple)
        out = []
        for d, (n, axes) in enumerate(zip(global_shape, self._parts(len(global_shape)))):
            count = math.prod(sizes[a] for a in axes)
            if n % count:
                raise ValueError(
                    f"One of device_put args was given the sharding of {self!r}, which "
                    f"implies that the global size of its dimension {d} should be divisible "
                    f"by {count}, but it is equal to {n} (full shape: {tuple(global_shape)})")
            out.append(n // count)
        return tuple(out)

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        """Device -> the index (a tuple of slices) of the piece it holds."""
        return {d: index for d, (index, _) in self._placement(global_shape).items()}

    def _placement(self, global_shape: Sequence[int]) -> dict:
        """Device -> (its index, its replica id): the position along the axes the spec uses
        picks the piece, the position along the others numbers the copies."""
        shard = self.shard_shape(global_shape)
        names = self.mesh.axis_names
        sizes = dict(self.mesh.shape_tuple)
        parts = self._parts(len(global_shape))
        used = {a for axes in parts for a in axes}
        out = {}
        for coord in np.ndindex(*self.mesh.devices.shape):
            at = dict(zip(names, coord))
            index = []
            for k, axes in zip(shard, parts):
                if not axes:
                    index.append(slice(None))
                    continue
                i = 0
                for a in axes:
                    i = i * sizes[a] + at[a]
                index.append(slice(i * k, (i + 1) * k))
            replica = 0
            for a in names:
                if a not in used:
                    replica = replica * sizes[a] + at[a]
            out[self.mesh.devices[coord]] = (tuple(index), replica)
        return out

    def replica_ids(self, global_shape: Sequence[int]) -> dict:
        return {d: r for d, (_, r) in self._placement(global_shape).items()}


def _make_named(mesh, spec, memory_kind):
    return NamedSharding(mesh, spec, memory_kind=memory_kind)


class DuplicateSpecError(Exception):
    """A PartitionSpec that maps one mesh axis to two dimensions."""


def _check_spec(mesh: Mesh | AbstractMesh, spec: PartitionSpec) -> None:
    """JAX's checks of a spec against a mesh: every axis exists, none is used twice."""
    used = spec.mesh_axes()
    for axis in used + sorted(spec.unreduced | spec.reduced, key=str):
        if axis not in mesh.axis_names:
            raise ValueError(f"Resource axis: {axis} of {spec} is not found in mesh: "
                             f"{mesh.axis_names}.")
    for axis in used:
        if used.count(axis) > 1:
            raise DuplicateSpecError(
                f"A single NamedSharding spec specification can map every mesh axis to at "
                f"most one positional dimension, but {spec} has duplicate entries for `{axis}`")


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
              devices: Sequence[Device] | None = None) -> Mesh:
    """A mesh of `axis_shapes` over the devices (all of them by default); axes are Explicit
    unless `axis_types` says otherwise, as in JAX."""
    axis_shapes, axis_names = tuple(axis_shapes), tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(
            "Mesh requires the ndim of its first argument (`devices`) to equal the length of "
            f"its second argument (`axis_names`), but got devices.ndim == {len(axis_shapes)} "
            f"and len(axis_names) == {len(axis_names)}.")
    pool = list(all_devices() if devices is None else devices)
    need = math.prod(axis_shapes)
    if len(pool) < need:
        raise ValueError(f"Number of devices {len(pool)} must be >= the product of mesh_shape "
                         f"{axis_shapes}")
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_names)
    grid = np.empty(need, dtype=object)
    grid[:] = pool[:need]
    return Mesh(grid.reshape(axis_shapes), axis_names, axis_types)


class Shard:
    """One device's piece of an array (`x.addressable_shards`)."""
    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device: Device, index: tuple, replica_id: int, data: Any):
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self) -> str:
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


@functools.lru_cache(maxsize=64)  # (a Mesh's hash is computed once)
def mesh_processes(mesh: Mesh) -> np.ndarray:
    """The process index of each device of `mesh`, in the mesh's shape (read-only)."""
    procs = np.vectorize(lambda d: d.process_index, otypes=[int])(mesh.devices)
    procs.flags.writeable = False
    return procs


@functools.lru_cache(maxsize=64)
def axes_across_processes(mesh: Mesh) -> frozenset:
    """The axes of `mesh` along which the process changes."""
    procs = mesh_processes(mesh)
    return frozenset(name for i, name in enumerate(mesh.axis_names)
                     if not (procs == np.take(procs, [0], axis=i)).all())


@functools.lru_cache(maxsize=256)  # (a Mesh's hash is computed once)
def replicated_sharding(mesh: Mesh, ndim: int | None) -> NamedSharding:
    """The whole array on every device of `mesh`, as JAX writes it for a value of rank `ndim`:
    P() over Auto axes, an entry per dimension over Explicit ones (the layout is part of the
    type there); P() for ndim None."""
    explicit = ndim is not None and AxisType.Explicit in mesh.axis_types
    return NamedSharding(mesh, PartitionSpec(*(None,) * ndim) if explicit else PartitionSpec())


# Over Explicit axes JAX types each result with a sharding its primitive's rule derives from
# its operands'. A value nobody laid out (host data, a Python scalar, an array on its default
# device) enters a program typed `P()` under set_mesh; the rules of these primitives keep,
# drop or permute the entries of their operand's spec, so that P() stays P(); every other rule
# (a broadcasting binary operation, broadcast_in_dim, iota, concatenate, gather, select_n, a
# scan's stacking) writes an entry per dimension: `P(None, None)`. Both are whole on every
# device; only how the spec is written differs (tests/test_context_mesh.py, against JAX 0.10).
_SPEC_KEEPING = frozenset({
    "transpose", "reshape", "squeeze", "rev", "slice", "dynamic_slice", "pad", "dot_general",
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "sort",
    "top_k", "copy", "copy_p", "convert_element_type", "bitcast_convert_type",
    "reduce_precision", "integer_pow", "split"})


def keeps_short_spec(primitive: Any, operand_avals: Sequence, out_avals: Sequence) -> bool:
    """Whether `primitive` (one without a body) types its results `P()` when its operands of
    rank > 0 are typed `P()`: a rule of _SPEC_KEEPING's, or a unary elementwise operation. (A
    reshape that only adds unit dimensions is JAX's expand_dims, a broadcast_in_dim there.)"""
    from .primitive import ELEMENTWISE  # (primitive imports trace, which imports this module)
    if primitive.name == "reshape" and out_avals[0].ndim > operand_avals[0].ndim and \
            [n for n in out_avals[0].shape if n != 1] == \
            [n for n in operand_avals[0].shape if n != 1]:
        return False
    return primitive.name in _SPEC_KEEPING or (
        primitive.fusion == ELEMENTWISE and len(operand_avals) == 1)


def explicit_type_sharding(s: Any, ndim: int) -> NamedSharding | None:
    """The layout JAX's type of an array laid out as `s` shows (`float32[8@x,4]`): its split
    dimensions' Explicit mesh axes; None where it names none (Auto axes stay out of types)."""
    if type(s) is not NamedSharding or AxisType.Explicit not in s.mesh.axis_types:
        return None
    explicit = set(s.mesh.explicit_axes)
    if config.jax_remove_size_one_mesh_axis_from_type:  # (JAX's option: not in types)
        explicit -= {a for a, n in s.mesh.shape_tuple if n == 1}
    parts = [tuple(a for a in axes if a in explicit) for axes in s._parts(ndim)]
    if not any(parts):
        return None
    return NamedSharding(s.mesh, PartitionSpec(*[
        None if not axes else axes[0] if len(axes) == 1 else axes for axes in parts]))


_REDUCERS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                       "reduce_or", "argmax", "argmin"})


def typed_out_sharding(primitive: Any, params: dict, operand_avals: Sequence,
                       out_aval: Any) -> NamedSharding | None:
    """The layout over Explicit mesh axes JAX's type of `primitive`'s result shows, where an
    operand's type shows one (jit tracing an argument laid out so: `typeof(a * 2)` reads
    `float32[8@x,4]` inside, as JAX's): elementwise operations keep their operands' common
    layout (rank-0 operands aside), transpose permutes it, reductions drop the reduced
    dimensions' entries, broadcast_in_dim maps it to its result's dimensions. None where no
    operand shows one, operands disagree (JAX raises there), or for other primitives (their
    results print without a layout here)."""
    from .primitive import ELEMENTWISE  # (primitive imports trace, which imports this module)
    typed = [(a, a._sharding) for a in operand_avals
             if getattr(a, "_sharding", None) is not None]
    if not typed or getattr(out_aval, "shape", None) is None:
        return None
    (a, s), name = typed[0], primitive.name
    parts = [p[0] if len(p) == 1 else p if p else None for p in s._parts(a.ndim)]
    if primitive.fusion == ELEMENTWISE and not primitive.multiple_results:
        if any(b.ndim and b.shape != out_aval.shape for b in operand_avals) or \
                any(t._parts(b.ndim) != s._parts(a.ndim) for b, t in typed[1:]):
            return None
        return s
    if name == "transpose":
        parts = [parts[k] for k in params["permutation"]]
    elif name in _REDUCERS:
        axes = params.get("axes", (params.get("axis"),))
        parts = [p for k, p in enumerate(parts) if k not in axes]
    elif name == "broadcast_in_dim":
        out = [None] * out_aval.ndim
        for k, d in enumerate(params["broadcast_dimensions"]):
            if a.shape[k] == out_aval.shape[d]:
                out[d] = parts[k]
        parts = out
    else:
        return None
    return s.with_spec(PartitionSpec(*parts))


def context_sharding(ndim: int | None) -> NamedSharding | None:
    """The sharding JAX reports for a result computed under `jax.set_mesh(mesh)` from values
    nobody laid out (jit's and eager operations' of rank `ndim`; None: host data placed as
    device_put writes it, P() over any axis types): replicated over that mesh. None outside
    any set_mesh (`with mesh:` and use_abstract_mesh place nothing, as in JAX)."""
    state = _STATE
    if state.placing is None:
        return None
    s = state.replicated.get(ndim)
    if s is None:
        s = state.replicated[ndim] = replicated_sharding(state.placing, ndim)
    return s


def default_sharding() -> SingleDeviceSharding:
    """The sharding of an array nobody placed: all of it on this process's first device (made
    again once distributed.initialize has named it: it was process 0's device 0 on every
    process)."""
    global _DEFAULT
    if _DEFAULT._device is not default_device():
        _DEFAULT = SingleDeviceSharding(default_device())
    return _DEFAULT


_DEFAULT = SingleDeviceSharding(default_device())


def resolve_sharding(s: Any, where: str) -> Sharding | None:
    """A sharding argument as a Sharding (a PartitionSpec names the axes of the mesh in
    effect, as under `jax.set_mesh`); None stays None."""
    if s is None or isinstance(s, Sharding):
        return s
    if isinstance(s, PartitionSpec):
        mesh = _STATE.legacy[-1] if _STATE.legacy and not _STATE.stack else get_mesh()
        if mesh.empty:
            raise ValueError(f"{where}: a PartitionSpec {s} needs a mesh in effect: use "
                             f"NamedSharding(mesh, {s}) or `with jax.set_mesh(mesh):`")
        return NamedSharding(mesh, s)
    raise TypeError(f"{where}: expected a jax.sharding.Sharding, a PartitionSpec or None, got "
                    f"{s!r} of type {type(s).__name__}")


def check_sharding_for(sharding: Sharding, shape: Sequence[int], where: str) -> None:
    """Raise JAX's error when `sharding` cannot hold an array of `shape`."""
    try:
        sharding.check_compatible_aval(shape)
    except ValueError as err:
        raise ValueError(f"One of {where} args is incompatible with its sharding annotation "
                         f"{sharding!r}: {err}") from None


def check_shardings(shardings: Any, tree: Any, where: str) -> None:
    """Check a pytree prefix of shardings (Sharding, PartitionSpec or None at each leaf)
    against the arrays of `tree`: the structure fits and each array's rank suits its sharding.
    With one device a sharding changes no value, so checking is all there is to do."""
    from .pytree import _flatten_up_to, tree_flatten, tree_leaves
    from .trace import get_aval
    specs, treedef = tree_flatten(shardings, is_leaf=lambda s: s is None)
    try:
        subtrees = _flatten_up_to(treedef, tree)
    except ValueError as err:
        raise ValueError(f"{where}: the shardings must be a tree prefix of the arguments' "
                         f"structure: {err}") from None
    for spec, sub in zip(specs, subtrees):
        sharding = resolve_sharding(spec, where)
        if sharding is None:
            continue
        for leaf in tree_leaves(sub):
            shape = leaf.shape if hasattr(leaf, "shape") else get_aval(leaf).shape
            check_sharding_for(sharding, shape, where)


def check_sharding_leaves(shardings: Any, name: str) -> None:
    """The in_shardings / out_shardings of jit: each leaf a Sharding, a PartitionSpec or None
    (a TypeError naming the first other leaf, as JAX raises when jit is called)."""
    from .pytree import tree_leaves
    for leaf in tree_leaves(shardings, is_leaf=lambda s: s is None):
        if leaf is not None and not isinstance(leaf, (Sharding, PartitionSpec)):
            raise TypeError(f"{name} leaf specifications are expected to be PartitionSpec "
                            f"instances or None, but got {leaf!r}")
