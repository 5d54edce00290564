"""The primitive registry: every primitive has the rules this stage of the project requires."""
import tracejit  # noqa: F401  (registers every primitive)
from tracejit.core.primitive import registry

REQUIRED_NOW = ("abstract_eval", "impl")


def test_every_primitive_has_required_rules():
    missing = {name: [r for r in REQUIRED_NOW if not p.has_rule(r)]
               for name, p in registry.items()}
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, f"primitives missing rules: {missing}"


def test_registry_is_populated():
    for name in ("add", "exp", "reduce_sum", "broadcast_in_dim", "convert_element_type", "jit"):
        assert name in registry


def test_every_primitive_has_a_native_lowering():
    """`jit` compiles natively by default, with no fallback: a primitive without a lowering
    would fail at a user's call."""
    from tracejit.backend.llvm.codegen import has_lowering
    missing = sorted(name for name, p in registry.items() if not has_lowering(p))
    assert not missing, f"primitives the native backend cannot compile: {missing}"
