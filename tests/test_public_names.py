"""JAX's public names, recorded from real JAX (0.10) into this file, exist in tracejit for each
module it mirrors; what is left out is listed with the reason."""
import importlib

import pytest

import tracejit

# module -> JAX's public names there (dir() without underscores), as recorded
PUBLIC = {
    "core": ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
             "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim"],
    "errors": ["ConcretizationTypeError", "InconclusiveDimensionOperation", "JAXIndexError",
               "JAXTypeError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError",
               "NonConcreteBooleanIndexError", "TracerArrayConversionError",
               "TracerBoolConversionError", "TracerIntegerConversionError",
               "UnexpectedTracerError"],
}
PUBLIC["stages"] = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
PUBLIC["custom_derivatives"] = [
    "CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
    "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p", "custom_vjp_primal_tree_values",
    "linear_call", "remat_opt_p", "zero_from_primal"]
PUBLIC["ad_checkpoint"] = ["Offloadable", "Recompute", "Saveable", "checkpoint_name",
                           "checkpoint_policies", "print_saved_residuals"]
PUBLIC["ref"] = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
                 "new_ref", "set", "swap"]
OUT_OF_SCOPE: dict[str, dict[str, str]] = {
    "custom_derivatives": {"remat_opt_p": "JAX's internal primitive for custom_vjp's "
                           "optimize_remat, which tracejit does not implement"},
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_exist(module):
    ours = importlib.import_module(f"tracejit.{module}")
    skip = OUT_OF_SCOPE.get(module, {})
    missing = [n for n in PUBLIC[module] if n not in skip and not hasattr(ours, n)]
    assert not missing, f"tracejit.{module} lacks {missing}"


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_recorded_lists_are_jaxs(module):
    """The lists above are JAX's own (this fails when the oracle's surface moves)."""
    import jax  # noqa: F401
    theirs = importlib.import_module(f"jax.{module}")
    assert sorted(n for n in dir(theirs) if not n.startswith("_")) == sorted(PUBLIC[module])


def test_error_classes_derive_as_jaxs():
    import jax.errors as theirs
    for name in PUBLIC["errors"]:
        ours = getattr(tracejit.errors, name)
        builtin = [c.__name__ for c in getattr(theirs, name).__mro__
                   if c.__module__ == "builtins"]
        assert [c.__name__ for c in ours.__mro__ if c.__module__ == "builtins"] == builtin, name


def test_jitted_functions_are_wrapped_and_args_info_is_jaxs():
    import jax
    import numpy as np
    assert isinstance(tracejit.jit(lambda x: x), tracejit.stages.Wrapped)
    assert not isinstance(lambda x: x, tracejit.stages.Wrapped)
    x = np.ones(2, np.float32)
    ours = tracejit.jit(lambda x: x).lower(x).compile().args_info
    theirs = jax.jit(lambda x: x).lower(x).compile().args_info
    assert repr(ours) == repr(theirs)
