"""Records real JAX outputs of jax.random for tests/test_random.py (`random_jax_outputs.json`)
and, with rbg keys, for tests/test_random_rbg.py (`random_rbg_jax_outputs.json`).

    .venv/bin/python tests/data/make_random_table.py

Each case names a jax.random function, its keyword arguments (arrays as {"array", "dtype"}),
the tolerance tracejit must meet and whether it needs x64; it is recorded for a few seeds in
both `jax_threefry_partitionable` modes. Outputs are stored as raw bit patterns (exact).
"""
from __future__ import annotations

import json
import pathlib

import numpy as np

SEEDS = (0, 42, 2 ** 31 + 5)
RBG_IMPLS = ("rbg", "unsafe_rbg")
RBG_SEEDS = (0, 42)


def arr(values, dtype):
    return {"array": np.asarray(values, dtype).tolist(), "dtype": dtype}


COV = arr([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]], "float32")
COV64 = arr([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.5]], "float64")

# (function, kwargs, tolerance, x64). Tolerance: "exact", or {"ulp": n} and optionally "rtol" /
# "atol" (either bound suffices). Why some are not exact is explained in test_random.py.
CASES = [
    ("split", {"num": 3}, "exact", False),
    ("split", {"num": [2, 2]}, "exact", False),
    ("fold_in", {"data": 7}, "exact", False),
    ("fold_in", {"data": 2 ** 32 - 1}, "exact", False),
    ("bits", {"shape": [5]}, "exact", False),
    ("bits", {"shape": [7], "dtype": "uint8"}, "exact", False),
    ("bits", {"shape": [3], "dtype": "uint16"}, "exact", False),
    ("bits", {"shape": [3], "dtype": "uint64"}, "exact", True),
    ("uniform", {"shape": [6]}, "exact", False),
    ("uniform", {"shape": [2, 3], "minval": -2.0, "maxval": 3.0}, "exact", False),
    ("uniform", {"shape": [5], "dtype": "float16"}, "exact", False),
    ("uniform", {"shape": [5], "dtype": "float64", "minval": -2.5, "maxval": 3.7}, "exact",
     True),
    ("uniform", {"shape": [2, 3], "minval": arr([0, 1, 2], "float32"), "maxval": 9.0}, "exact",
     False),
    ("uniform", {"shape": [2, 3], "minval": arr(np.zeros((2, 1)), "float32")}, "exact", False),
    ("uniform", {"shape": [3], "minval": 2.0, "maxval": 1.0}, "exact", False),
    ("uniform", {"shape": [3], "minval": float("nan")}, "exact", False),
    ("uniform", {"shape": [3], "maxval": 5}, "exact", False),
    ("uniform", {"shape": [0]}, "exact", False),
    ("normal", {"shape": [8]}, "exact", False),
    ("normal", {"shape": [2, 0]}, "exact", False),
    ("normal", {"shape": [200], "dtype": "float64"}, "exact", True),
    ("normal", {"shape": [5], "dtype": "float16"}, "exact", False),
    ("normal", {"shape": [5], "dtype": "float64"}, "exact", True),
    ("normal", {"shape": [3], "dtype": "complex64"}, "exact", False),
    ("truncated_normal", {"lower": -1.5, "upper": 2.0, "shape": [6]}, "exact", False),
    ("truncated_normal", {"lower": arr([-1, 0, 1], "float32"), "upper": 3.0}, "exact", False),
    ("truncated_normal", {"lower": -0.5, "upper": 0.5, "shape": [4], "dtype": "float64"},
     {"ulp": 4}, True),
    ("truncated_normal", {"lower": -1.5, "upper": 2.0, "shape": [6], "dtype": "float64"},
     {"ulp": 4}, True),
    ("bernoulli", {"p": 0.3, "shape": [10]}, "exact", False),
    ("bernoulli", {"p": arr([0.1, 0.5, 0.9], "float32")}, "exact", False),
    ("bernoulli", {"p": arr(0.3, "float32"), "shape": [6], "mode": "high"}, "exact", False),
    ("randint", {"shape": [8], "minval": -5, "maxval": 17}, "exact", False),
    ("randint", {"shape": [6], "minval": 0, "maxval": 256, "dtype": "uint8"}, "exact", False),
    ("randint", {"shape": [6], "minval": -300, "maxval": 3000, "dtype": "int16"}, "exact", False),
    ("randint", {"shape": [6], "minval": -2 ** 31, "maxval": 2 ** 31 - 1}, "exact", False),
    ("randint", {"shape": [4], "minval": 5, "maxval": 2}, "exact", False),
    ("randint", {"shape": [2, 3], "minval": arr([0, 10, 20], "int32"), "maxval": 25}, "exact",
     False),
    ("randint", {"shape": [12], "minval": -3, "maxval": 3, "dtype": "int8"}, "exact", False),
    ("randint", {"shape": [12], "minval": -200, "maxval": 200, "dtype": "int8"}, "exact", False),
    ("randint", {"shape": [12], "minval": -128, "maxval": 128, "dtype": "int8"}, "exact", False),
    ("randint", {"shape": [12], "minval": 0, "maxval": 300, "dtype": "uint8"}, "exact", False),
    ("randint", {"shape": [12], "minval": 0, "maxval": 65536, "dtype": "uint16"}, "exact",
     False),
    ("randint", {"shape": [12], "minval": arr(0, "uint32"), "maxval": arr(2 ** 32 - 1, "uint32"),
                 "dtype": "uint32"}, "exact", False),
    ("randint", {"shape": [6], "minval": 5, "maxval": 5}, "exact", False),
    ("randint", {"shape": [6], "minval": 0.5, "maxval": 4.7}, "exact", False),
    ("randint", {"shape": [2, 3], "minval": arr([0, 5, 10], "int32"),
                 "maxval": arr([[3], [20]], "int32")}, "exact", False),
    ("randint", {"shape": [5], "minval": -2 ** 62, "maxval": 2 ** 62, "dtype": "int64"},
     "exact", True),
    ("randint", {"shape": [9], "minval": -2 ** 63, "maxval": 2 ** 63 - 1}, "exact", True),
    ("randint", {"shape": [9], "minval": 2 ** 40, "maxval": 2 ** 41}, "exact", True),
    ("randint", {"shape": [9], "minval": 0, "maxval": 2 ** 33, "dtype": "uint32"}, "exact",
     True),
    ("randint", {"shape": [5], "minval": arr(0, "uint64"), "maxval": arr(2 ** 64 - 1, "uint64"),
                 "dtype": "uint64"}, "exact", True),
    ("permutation", {"x": 12}, "exact", False),
    ("permutation", {"x": arr(np.arange(12).reshape(3, 4), "int32"), "axis": 1}, "exact",
     False),
    ("permutation", {"x": arr(np.arange(12).reshape(3, 4), "float32"), "axis": 1,
                     "independent": True}, "exact", False),
    ("permutation", {"x": arr(np.arange(60).reshape(3, 4, 5), "int32"), "axis": 2}, "exact",
     False),
    ("permutation", {"x": arr(np.arange(60).reshape(3, 4, 5), "int32"), "axis": -2,
                     "independent": True}, "exact", False),
    ("permutation", {"x": 1}, "exact", False),
    ("permutation", {"x": arr(np.zeros((0, 3)), "float32")}, "exact", False),
    ("choice", {"a": 10, "shape": [5]}, "exact", False),
    ("choice", {"a": 7, "shape": []}, "exact", False),
    ("choice", {"a": 7, "shape": [0]}, "exact", False),
    ("choice", {"a": arr(np.arange(6), "float32"), "shape": [2, 2], "replace": False}, "exact",
     False),
    ("choice", {"a": arr(np.arange(20).reshape(4, 5), "int32"), "shape": [2, 3], "axis": 1},
     "exact", False),
    ("choice", {"a": 10, "shape": [4], "replace": False}, "exact", False),
    ("choice", {"a": arr(np.arange(12).reshape(4, 3), "int32"), "shape": [2], "axis": 1},
     "exact", False),
    ("choice", {"a": 5, "shape": [6], "p": arr([0.1, 0.2, 0.3, 0.2, 0.2], "float32")}, "exact",
     False),
    ("choice", {"a": 5, "shape": [3], "replace": False,
                "p": arr([0.1, 0.2, 0.3, 0.2, 0.2], "float32")}, "exact", False),
    ("categorical", {"logits": arr(np.log([0.1, 0.2, 0.7]), "float32"), "shape": [8]}, "exact",
     False),
    ("categorical", {"logits": arr(np.zeros((2, 5)), "float32"), "axis": 1}, "exact", False),
    ("categorical", {"logits": arr(np.zeros((2, 6)), "float32"), "shape": [3, 2],
                     "replace": False}, "exact", False),
    ("categorical", {"logits": arr(np.log(np.full((3, 4), 0.25)), "float32"), "axis": 0,
                     "shape": [5, 4]}, "exact", False),
    ("categorical", {"logits": arr(np.zeros((2, 6)), "float32"), "mode": "high"}, "exact",
     False),
    ("bernoulli", {"p": arr([[0.2], [0.9]], "float32"), "shape": [2, 4]}, "exact", False),
    ("gumbel", {"shape": [6]}, "exact", False),
    ("gumbel", {"shape": [6], "mode": "high"}, "exact", False),
    ("gumbel", {"shape": [6], "mode": "highest"}, "exact", False),
    ("exponential", {"shape": [6]}, "exact", False),
    ("exponential", {"shape": [4], "dtype": "float64"}, {"ulp": 2}, True),
    ("laplace", {"shape": [6]}, "exact", False),
    ("logistic", {"shape": [6]}, "exact", False),
    ("cauchy", {"shape": [6]}, {"ulp": 2}, False),
    ("rademacher", {"shape": [8]}, "exact", False),
    ("rademacher", {"shape": [4], "dtype": "float32"}, "exact", False),
    ("poisson", {"lam": arr([0.5, 3.0, 12.0, 100.0], "float32")}, "exact", False),
    ("poisson", {"lam": 4.0, "shape": [5]}, "exact", False),
    ("gamma", {"a": arr([1.0, 10.0, 100.0], "float32")}, {"ulp": 16}, False),
    ("gamma", {"a": 0.3, "shape": [4]}, {"ulp": 16}, False),
    ("loggamma", {"a": arr([0.05, 1.0, 4.0], "float32")}, {"ulp": 16, "atol": 1e-6}, False),
    ("beta", {"a": 0.5, "b": 2.0, "shape": [5]}, {"ulp": 16}, False),
    ("dirichlet", {"alpha": arr([0.5, 1.0, 3.0], "float32"), "shape": [2]}, {"ulp": 16},
     False),
    ("multivariate_normal", {"mean": arr([0, 1, 2], "float32"), "cov": COV, "shape": [3]},
     {"ulp": 4, "rtol": 1e-5, "atol": 1e-6}, False),
    ("multivariate_normal", {"mean": arr([0, 1, 2], "float64"), "cov": COV64, "shape": [2]},
     {"ulp": 4, "rtol": 1e-12, "atol": 1e-14}, True),
    ("orthogonal", {"n": 3}, {"ulp": 4, "atol": 2e-6}, False),
    ("orthogonal", {"n": 2, "m": 4, "shape": [2]}, {"ulp": 4, "atol": 2e-6}, False),
    # random_derived.py (why some are not exact: tests/test_random_derived.py)
    ("t", {"df": 3.5, "shape": [7]}, {"ulp": 16}, False),
    ("t", {"df": arr([0.5, 2.0, 30.0], "float32")}, {"ulp": 16}, False),
    ("t", {"df": 3.5, "shape": [5], "dtype": "float64"}, {"ulp": 16}, True),
    ("chisquare", {"df": arr([0.3, 2.0, 9.0], "float32"), "shape": [4, 3]}, {"ulp": 16}, False),
    ("f", {"dfnum": 2.5, "dfden": 4.0, "shape": [3, 2]}, {"ulp": 16}, False),
    ("pareto", {"b": arr([1.0, 3.0], "float32"), "shape": [5, 2]}, {"ulp": 2}, False),
    ("lognormal", {"sigma": 0.7, "shape": [6]}, {"ulp": 2}, False),
    ("weibull_min", {"scale": 2.0, "concentration": 1.5, "shape": [6]}, {"ulp": 2}, False),
    ("rayleigh", {"scale": arr([1.0, 2.5], "float32"), "shape": [3, 2]}, "exact", False),
    ("wald", {"mean": arr([0.5, 2.5], "float32"), "shape": [3, 2]},
     {"ulp": 16, "rtol": 1e-5, "atol": 1e-5}, False),
    ("triangular", {"left": 0.0, "mode": 0.3, "right": 2.0, "shape": [8]}, "exact", False),
    ("maxwell", {"shape": [5]}, {"ulp": 2}, False),
    ("double_sided_maxwell", {"loc": 0.5, "scale": arr([1.0, 2.0], "float32"), "shape": [3]},
     {"ulp": 2}, False),
    ("generalized_normal", {"p": 1.5, "shape": [6]}, {"ulp": 16}, False),
    ("ball", {"d": 3, "p": 1.5, "shape": [4]}, {"ulp": 16}, False),
    ("geometric", {"p": arr([0.1, 0.7], "float32"), "shape": [3, 2]}, "exact", False),
    ("binomial", {"n": arr([3.0, 20.0], "float32"), "p": arr([0.3, 0.8], "float32"),
                  "shape": [4, 2]}, "exact", False),
    ("binomial", {"n": arr([300.0, 2000.0], "float32"), "p": arr([0.3, 0.8], "float32"),
                  "shape": [4, 2]}, "exact", False),
    ("binomial", {"n": arr([5.0, 40.0], "float64"), "p": arr([0.3, 0.6], "float64"),
                  "dtype": "float64"}, "exact", True),
    ("multinomial", {"n": 50.0, "p": arr([0.2, 0.3, 0.5], "float32"), "shape": [4, 3]}, "exact",
     False),
    ("clone", {}, "exact", False),
]

TYPED_KEY_FUNCTIONS = ("split", "fold_in")


def decode(value):
    """A case argument as the functions take it (shared with test_random.py)."""
    if isinstance(value, dict) and "array" in value:
        return np.asarray(value["array"], value["dtype"])
    if isinstance(value, list):
        return tuple(value)
    return value


def record(jax, fn: str, kwargs: dict, seed: int, typed: bool, impl: str | None = None) -> dict:
    key = jax.random.key(seed, impl=impl) if typed else jax.random.PRNGKey(seed)
    out = getattr(jax.random, fn)(key, **{k: decode(v) for k, v in kwargs.items()})
    if typed and (impl is None or fn in ("split", "fold_in", "clone")):
        out = jax.random.key_data(out)
    out = np.asarray(out)
    if out.dtype.kind == "c":
        bits = out.view(f"uint{out.dtype.itemsize * 4}")
    elif out.dtype == np.bool_:
        bits = out.astype(np.uint8)
    else:
        bits = out.view(f"uint{out.dtype.itemsize * 8}")
    return {"dtype": str(out.dtype), "shape": list(out.shape), "bits": bits.ravel().tolist()}


def main() -> None:
    import jax
    record_rbg(jax)  # (first: in JAX's default threefry mode, which the loops below change)
    rows = []
    for x64 in (False, True):
        jax.config.update("jax_enable_x64", x64)
        for partitionable in (True, False):
            jax.config.update("jax_threefry_partitionable", partitionable)
            for fn, kwargs, tol, needs_x64 in CASES:
                if needs_x64 != x64:
                    continue
                for seed in SEEDS:
                    for typed in ((False, True) if fn in TYPED_KEY_FUNCTIONS else (False,)):
                        rows.append({"fn": fn, "kwargs": kwargs, "tolerance": tol, "x64": x64,
                                     "partitionable": partitionable, "seed": seed,
                                     "typed_key": typed,
                                     "out": record(jax, fn, kwargs, seed, typed)})
    _write("random_jax_outputs.json", {"jax_version": jax.__version__, "seeds": SEEDS,
                                       "cases": rows})


def record_rbg(jax) -> None:
    """The table again with typed keys of the rbg and unsafe_rbg implementations (poisson left
    out: JAX refuses it for keys other than threefry's), for tests/test_random_rbg.py, in JAX's
    default threefry mode (rbg's split and fold_in run threefry)."""
    rows = []
    for x64 in (False, True):
        jax.config.update("jax_enable_x64", x64)
        for fn, kwargs, tol, needs_x64 in CASES:
            if needs_x64 != x64 or fn == "poisson":
                continue
            for impl in RBG_IMPLS:
                for seed in RBG_SEEDS:
                    rows.append({"fn": fn, "kwargs": kwargs, "tolerance": tol, "x64": x64,
                                 "impl": impl, "seed": seed,
                                 "out": record(jax, fn, kwargs, seed, True, impl)})
    _write("random_rbg_jax_outputs.json", {"jax_version": jax.__version__, "seeds": RBG_SEEDS,
                                           "cases": rows})
    jax.config.update("jax_enable_x64", False)


def _write(name: str, table: dict) -> None:
    path = pathlib.Path(__file__).with_name(name)
    path.write_text(json.dumps(table, separators=(",", ":")) + "\n")
    print(f"wrote {len(table['cases'])} recorded outputs to {path}")


if __name__ == "__main__":
    main()
