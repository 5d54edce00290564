"""jax.experimental.hijax: JAX's interface for high-level types (mutable, pytree-like values that
lower to ordinary arrays) and primitives over them. User-facing layer over core and the rule
tables of tracejit.interpreters.

tracejit provides the vocabulary (the names libraries build on: flax.nnx defines its Variable
primitives and types with it at import time) but does not lower high-level types: binding a
HiPrimitive raises NotImplementedError. flax.nnx uses them only under
`flax_hijax_variable=True` (off by default); its default Variables are plain pytrees.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Any

from ..core.avals import AbstractValue, ShapedArray  # noqa: F401
from ..core.primitive import Primitive
from ..core.refs import AbstractRef  # noqa: F401
from ..core.trace import pytype_aval_mappings
from ..interpreters.ad import (  # noqa: F401
    Zero,
    instantiate_zeros,
    is_undefined_primal,
    primitive_jvps,
    primitive_transposes,
)

# As JAX's core: an attribute of an abstract value that a tracer of that type exposes as a
# property (fget(tracer)) or a method bound to the tracer.
aval_property = namedtuple("aval_property", ["fget"])
aval_method = namedtuple("aval_method", ["fun"])


class QuasiDynamicData:
    """Type information of a mutable high-level value that may change as it is mutated."""


@dataclass(frozen=True)
class AvalQDD:
    """An abstract value with its current quasi-dynamic data (JAX's core.AvalQDD)."""
    aval: AbstractValue
    qdd: QuasiDynamicData | None
    is_high = True
    has_qdd = True

    def lo_ty(self):
        return self.aval.lo_ty_qdd(self.qdd)

    def read_loval(self, val):
        return self.aval.read_loval(self.qdd, val)

    def new_from_loval(self, *lovals):
        return self.aval.new_from_loval(self.qdd, *lovals)

    def to_tangent_aval(self):
        qdd = self.qdd and self.qdd.to_tangent_qdd()
        return AvalQDD(self.aval.to_tangent_aval(), qdd)


@dataclass(frozen=True)
class AvalMutableQDD:
    """An abstract value with its mutable quasi-dynamic data (JAX's core.AvalMutableQDD)."""
    aval: AbstractValue
    mutable_qdd: Any


class EffectTypeSet:
    """A set of effect types (JAX's effects.EffectTypeSet): which effects a context allows."""

    def __init__(self):
        self._effect_types: set[type] = set()

    def __repr__(self) -> str:
        return f"EffectTypeSet({self._effect_types})"

    def add_type(self, effect_type: type) -> None:
        self._effect_types.add(effect_type)

    def contains(self, eff: Any) -> bool:
        return any(isinstance(eff, t) for t in self._effect_types)

    def filter_in(self, effects) -> list:
        return [eff for eff in effects if self.contains(eff)]

    def filter_not_in(self, effects) -> list:
        return [eff for eff in effects if not self.contains(eff)]


# Effects allowed inside cond/while/scan bodies (as JAX's effects.control_flow_allowed_effects).
control_flow_allowed_effects = EffectTypeSet()

_NOT_LOWERED = ("tracejit does not lower hijax high-level types yet (HiPrimitive {name!r}); "
                "with flax.nnx leave `flax_hijax_variable` off (its default)")


class HiPrimitive(Primitive):
    """A primitive over high-level types: subclasses give abstract_eval, to_lojax (its meaning
    in ordinary primitives), jvp and transpose, as in JAX."""

    def __init__(self, name: str):
        super().__init__(name, registered=False)
        primitive_jvps[self] = self.jvp
        primitive_transposes[self] = self.transpose

    def is_high(self, *avals, **params) -> bool:
        return True

    def is_effectful(self, params) -> bool:
        return False

    def abstract_eval(self, *arg_avals, **params):
        raise NotImplementedError(f"{type(self).__name__} must override abstract_eval")

    def to_lojax(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} must override to_lojax")

    def jvp(self, primals, tangents, **params):
        raise NotImplementedError(f"{type(self).__name__} must override jvp")

    def transpose(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} must override transpose")

    def bind(self, *args, **params):
        raise NotImplementedError(_NOT_LOWERED.format(name=self.name))


class VJPHiPrimitive:
    """A high-level primitive given by its expansion and VJP (JAX's hijax.VJPHiPrimitive)."""

    def __init__(self):
        for attr in ("in_avals", "out_aval", "params"):
            if not hasattr(self, attr):
                raise AttributeError(f"subclass __init__ should set `self.{attr}`")
        self.__dict__.update(self.params)

    def __call__(self, *args):
        raise NotImplementedError(_NOT_LOWERED.format(name=type(self).__name__))


class HiType(AbstractValue):
    """An immutable high-level type: lo_ty/lower_val/raise_val say how it maps to arrays."""
    is_high = True
    has_qdd = False

    def lo_ty(self) -> list:
        raise NotImplementedError(f"{type(self).__name__} must override lo_ty")

    def lower_val(self, hi_val) -> list:
        raise NotImplementedError(f"{type(self).__name__} must override lower_val")

    def raise_val(self, *lo_vals):
        raise NotImplementedError(f"{type(self).__name__} must override raise_val")

    def to_tangent_aval(self):
        raise NotImplementedError(f"{type(self).__name__} must override to_tangent_aval")

    def to_ct_aval(self):
        return self.to_tangent_aval()


class MutableHiType(AbstractValue):
    """A mutable high-level type whose lowering depends on its quasi-dynamic data."""
    is_high = True
    has_qdd = True
    is_writer = False

    def lo_ty_qdd(self, state, /) -> list:
        raise NotImplementedError(f"{type(self).__name__} must override lo_ty_qdd")

    def lo_ty(self):
        raise NotImplementedError("mutable hitypes should use lo_ty_qdd instead")

    def new_from_loval(self, state, /, *vals):
        raise NotImplementedError(f"{type(self).__name__} must override new_from_loval")

    def read_loval(self, state, val, /) -> list:
        raise NotImplementedError(f"{type(self).__name__} must override read_loval")

    def update_from_loval(self, state, val, /, *lo_vals) -> None:
        raise NotImplementedError(f"{type(self).__name__} must override update_from_loval")


class HiPspec:
    """How a high-level type is partitioned (JAX's hijax.HiPspec)."""

    def to_lo(self) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} must override to_lo")


def register_hitype(val_cls: type, typeof_fn) -> None:
    """Declare `typeof_fn(value)` the high-level type of instances of `val_cls` (what
    `jax.typeof` answers for them)."""
    pytype_aval_mappings[val_cls] = typeof_fn


@dataclass(frozen=True)
class TransformedRef:
    """A Ref seen through transforms (indexing, bitcasts) before it is read or written."""
    ref: Any
    transforms: tuple
