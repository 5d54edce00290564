"""`jax.experimental.layout`: how an array's elements are laid out in device memory (Layout)
and, with a sharding, its format (Format). tracejit's one device keeps every array dense and
row-major, the layout `Layout(major_to_minor=tuple(range(ndim)))`; these are the types JAX's
APIs and libraries (flax's sharding helpers) pass around. User-facing layer."""
from __future__ import annotations

from typing import Any


class AutoLayoutSingleton:
    """`Layout.AUTO`: let the compiler choose the layout."""

    def __repr__(self) -> str:
        return "AUTO"


AutoLayout = AutoLayoutSingleton()


class Layout:
    """The order of an array's dimensions in memory, most major first (and its tiling)."""
    AUTO = AutoLayout

    def __init__(self, major_to_minor: tuple[int, ...],
                 tiling: tuple[tuple[int, ...], ...] | None = None,
                 sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(map(tuple, tiling))
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def __repr__(self) -> str:
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

    def _key(self) -> tuple:
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    def update(self, **kwargs: Any) -> Layout:
        fields = dict(zip(("major_to_minor", "tiling", "sub_byte_element_size_in_bits"),
                          self._key()))
        fields.update(kwargs)
        return Layout(**fields)

    def check_compatible_aval(self, aval_shape: tuple[int, ...]) -> None:
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError(f"Length of major_to_minor and the rank of the value should match. "
                             f"Got major_to_minor={self.major_to_minor} and shape={aval_shape}")


class Format:
    """An array's layout together with its sharding."""
    __slots__ = ("layout", "sharding")

    def __init__(self, layout: Layout | AutoLayoutSingleton | None = None, sharding: Any = None):
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(
                f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass "
                f"a `jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` to the "
                f"sharding argument. Got sharding {sharding}")
        if not isinstance(layout, (Layout, type(None), AutoLayoutSingleton)):
            raise TypeError(f"Invalid value received for the layout argument. Expected values "
                            f"are `None`, `Layout.AUTO` or an instance of `Layout`. Got {layout} "
                            f"of type {type(layout)}")
        if sharding is not None:
            from ..sharding import Sharding
            if not isinstance(sharding, Sharding):
                raise TypeError(f"Invalid value received for the sharding argument. Expected "
                                f"values are `None` or an instance of `jax.Sharding`. Got "
                                f"{sharding} of type {type(sharding)}")
        self.layout = layout
        self.sharding = sharding

    def __repr__(self) -> str:
        return f"Format(layout={self.layout}, sharding={self.sharding})"

    def __hash__(self) -> int:
        return hash((self.layout, self.sharding))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Format) and (self.layout, self.sharding) == \
            (other.layout, other.sharding)
