"""Exported <-> bytes in tracejit's own versioned format (not JAX's flatbuffer of StableHLO).

Layout: MAGIC (16 bytes), the format version (uint32, little-endian), the payload's length
(uint64) and SHA-256 (32 bytes), then the payload: UTF-8 JSON of plain data only (numbers,
strings, lists; arrays and literals as base64 of their bytes, floats in hex, bit-exact). The
program is the jaxpr: primitives by their registered names, variables by number (each defined
before it is read), params as tagged data. Nothing in a blob names code to run: enums and
namedtuples in params are looked up among tracejit's own imported modules, pytree nodes among
the serializations registered with `register_pytree_node_serialization`. Loading checks the
digest, then types the whole program with the jaxpr checker (each equation's abstract eval)
before anything runs; every refusal is a ValueError naming its cause."""
from __future__ import annotations

import base64
import enum
import functools
import hashlib
import json
import struct
import sys
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.jaxpr import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, check_jaxpr
from ..core.primitive import Primitive, registry
from ..core.pytree import PyTreeDef, tree_structure
from ..version import __version__
from . import _export

MAGIC = b"tracejit.export\x00"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<16sIQ32s")  # magic, format version, payload length, SHA-256

# dtypes a blob may name: tracejit's array dtypes, ml_dtypes' narrow floats and ints, float0
_FLOAT0 = "float0"
_NUMPY_DTYPES = {d.name: d for d in dtypes._supported if d.isbuiltin == 1}


def _named_dtype(name: str) -> np.dtype | None:
    """The dtype of that name a blob may hold, or None (ml_dtypes is imported for a name not
    NumPy's: core/dtypes.py imports it only when needed)."""
    if name in _NUMPY_DTYPES:
        return _NUMPY_DTYPES[name]
    dtypes.load_ml_dtypes()
    return _ml_dtypes_by_name().get(name)


@functools.cache
def _ml_dtypes_by_name() -> dict[str, np.dtype]:
    return {t.__name__: np.dtype(t) for t in dtypes._CUSTOM_KINDS}  # (bfloat16 among them)


class _Refused(Exception):
    """A blob that is not a valid tracejit export (turned into a ValueError at the top)."""


def _fail(msg: str):
    raise _Refused(msg)


# --- scalars, dtypes, arrays, avals -------------------------------------------------------

def _dtype_name(dtype: np.dtype) -> str:
    if dtype == dtypes.float0:
        return _FLOAT0
    name = np.dtype(dtype).name
    named = _named_dtype(name)
    if named is None or named != dtype:
        raise NotImplementedError(f"serialization of dtype {dtype} is not supported")
    return name


def _dtype(name: Any) -> np.dtype:
    if name == _FLOAT0:
        return dtypes.float0
    dtype = _named_dtype(name) if isinstance(name, str) else None
    if dtype is None:
        _fail(f"unknown dtype {name!r}")
    return dtype


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        _fail("array data is not a base64 string")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        _fail("array data is not valid base64")


def _enc_array(x: np.ndarray) -> dict:
    x = np.asarray(x)
    return {"nd": _dtype_name(x.dtype), "s": list(x.shape),  # (tobytes: C order, any layout)
            "b": "" if x.dtype == dtypes.float0 else _b64(x.tobytes(order="C"))}


def _dec_array(d: dict) -> np.ndarray:
    dtype, shape = _dtype(d.get("nd")), _shape(d.get("s"))
    if dtype == dtypes.float0:
        return np.zeros(shape, dtype)
    data = _unb64(d.get("b"))
    if len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        _fail(f"array data of {len(data)} bytes for {dtype.name}{list(shape)}")
    return np.frombuffer(data, dtype).reshape(shape).copy()


def _shape(s: Any) -> tuple[int, ...]:
    if not isinstance(s, list) or not all(type(d) is int and 0 <= d < 2 ** 40 for d in s):
        _fail(f"bad shape {s!r}")
    return tuple(s)


def _enc_aval(a: ShapedArray) -> list:
    if not isinstance(a, ShapedArray) or type(a) is not ShapedArray:
        raise NotImplementedError(f"serialization of the abstract value {a} is not supported")
    return [_dtype_name(a.dtype), list(a.shape), bool(a.weak_type)]


def _dec_aval(x: Any) -> ShapedArray:
    if not isinstance(x, list) or len(x) != 3 or not isinstance(x[2], bool):
        _fail(f"bad abstract value {x!r}")
    return ShapedArray(_shape(x[1]), _dtype(x[0]), x[2])


# --- params -------------------------------------------------------------------------------

def _class_ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _find_class(ref: Any, what: str) -> type:
    """A class of tracejit's own, already imported, by 'module:qualname' (no import, no other
    package's code)."""
    if not isinstance(ref, str) or ref.count(":") != 1:
        _fail(f"bad {what} reference {ref!r}")
    module, qualname = ref.split(":")
    if not (module == "tracejit" or module.startswith("tracejit.")) or module not in sys.modules:
        _fail(f"{what} {ref!r} is not one of tracejit's")
    obj: Any = sys.modules[module]
    for part in qualname.split("."):
        if not part.isidentifier() or part.startswith("_"):
            _fail(f"bad {what} reference {ref!r}")
        obj = obj.__dict__.get(part) if hasattr(obj, "__dict__") else None
        if obj is None:
            _fail(f"{what} {ref!r} does not exist in this tracejit")
    if not isinstance(obj, type):
        _fail(f"{what} {ref!r} is not a class")
    return obj


def _enc_param(v: Any, where: str) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, enum.Enum):
        return {"enum": _class_ref(type(v)), "name": v.name}
    if type(v) is int:
        return v
    if type(v) is float:
        return {"f": v.hex()}
    if type(v) is complex:
        return {"c": [v.real.hex(), v.imag.hex()]}
    if isinstance(v, np.dtype):
        return {"dtype": _dtype_name(v)}
    if isinstance(v, np.generic):
        return {"ns": _enc_array(np.asarray(v))}
    if isinstance(v, np.ndarray):
        return {"nd": _enc_array(v)}
    if isinstance(v, ClosedJaxpr):
        return {"cj": _enc_jaxpr(v.jaxpr, v.consts)}
    if isinstance(v, Jaxpr):
        return {"j": _enc_jaxpr(v, None)}
    if isinstance(v, ShapedArray):
        return {"aval": _enc_aval(v)}
    if isinstance(v, Primitive) and registry.get(v.name) is v:
        return {"prim": v.name}
    if type(v) is tuple:
        return {"t": [_enc_param(x, where) for x in v]}
    if type(v) is list:
        return {"l": [_enc_param(x, where) for x in v]}
    if isinstance(v, tuple) and _export._is_namedtuple(type(v)) and \
            type(v).__module__.startswith("tracejit."):
        return {"nt": _class_ref(type(v)), "f": [_enc_param(x, where) for x in v]}
    what = "a Python function" if callable(v) else f"of type {type(v).__name__}"
    raise NotImplementedError(f"cannot serialize {where}: its value {v!r} is {what}")


def _dec_param(x: Any, depth: int) -> Any:
    if depth > 200:
        _fail("params nested too deeply")
    if x is None or isinstance(x, (bool, str, int)) and not isinstance(x, float):
        return x
    if not isinstance(x, dict) or len(x) not in (1, 2):
        _fail(f"bad param {str(x)[:80]}")
    tag = next(iter(x))
    val = x[tag]
    if tag == "f":
        return _float(val)
    if tag == "c":
        if not isinstance(val, list) or len(val) != 2:
            _fail("bad complex param")
        return complex(_float(val[0]), _float(val[1]))
    if tag == "dtype":
        return _dtype(val)
    if tag == "ns":
        return _dec_array(val)[()]
    if tag == "nd":
        return _dec_array(val)
    if tag == "cj":
        return _dec_jaxpr(val, depth + 1, closed=True)
    if tag == "j":
        return _dec_jaxpr(val, depth + 1, closed=False)
    if tag == "aval":
        return _dec_aval(val)
    if tag == "prim":
        return _primitive(val)
    if tag in ("t", "l") and isinstance(val, list):
        items = [_dec_param(v, depth + 1) for v in val]
        return tuple(items) if tag == "t" else items
    if tag == "enum":
        cls = _find_class(val, "enum")
        name = x.get("name")
        if not issubclass(cls, enum.Enum) or not isinstance(name, str) or \
                name not in cls.__members__:
            _fail(f"bad enum member {val}.{name}")
        return cls[name]
    if tag == "nt":
        cls = _find_class(val, "namedtuple")
        fields = x.get("f")
        if not _export._is_namedtuple(cls) or not isinstance(fields, list) or \
                len(fields) != len(cls._fields):
            _fail(f"bad namedtuple {val}")
        return cls(*[_dec_param(v, depth + 1) for v in fields])
    _fail(f"unknown param tag {tag!r}")


def _float(text: Any) -> float:
    if not isinstance(text, str):
        _fail("bad float param")
    try:
        return float.fromhex(text)
    except ValueError:
        _fail(f"bad float param {text!r}")


def _primitive(name: Any) -> Primitive:
    if not isinstance(name, str) or name not in registry:
        _fail(f"unknown primitive {name!r} (not one of this tracejit's)")
    return registry[name]


# --- jaxprs -------------------------------------------------------------------------------

def _enc_jaxpr(jaxpr: Jaxpr, consts: list | None) -> dict:
    ids: dict[Var, int] = {}

    def bind(v: Var) -> list:
        ids[v] = len(ids)
        return _enc_aval(v.aval)

    def atom(v) -> Any:
        if isinstance(v, Literal):
            return {"lit": _enc_array(v.val), "a": _enc_aval(v.aval)}
        return ids[v]

    out: dict = {"constvars": [bind(v) for v in jaxpr.constvars],
                 "invars": [bind(v) for v in jaxpr.invars]}
    if consts is not None:
        for c in consts:
            if not isinstance(c, (np.ndarray, np.generic)) and \
                    type(c).__name__ not in ("Array",):
                raise NotImplementedError(f"cannot serialize a constant of type "
                                          f"{type(c).__name__}")
        out["consts"] = [_enc_array(np.asarray(c)) for c in consts]
    eqns = []
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if registry.get(name) is not eqn.primitive:
            raise NotImplementedError(
                f"cannot serialize primitive {name!r}: it is not registered with tracejit "
                "(a user-defined primitive)")
        params = {k: _enc_param(v, f"param {k!r} of primitive {name!r}")
                  for k, v in eqn.params.items()}
        ins = [atom(v) for v in eqn.invars]
        eqns.append({"p": name, "in": ins, "out": [bind(v) for v in eqn.outvars],
                     "params": params})
    out["eqns"] = eqns
    out["outvars"] = [atom(v) for v in jaxpr.outvars]
    return out


def _dec_jaxpr(d: Any, depth: int, closed: bool) -> ClosedJaxpr | Jaxpr:
    if not isinstance(d, dict):
        _fail("bad jaxpr")
    env: list[Var] = []

    def bind(a: Any) -> Var:
        v = Var(_dec_aval(a))
        env.append(v)
        return v

    def atom(x: Any):
        if type(x) is int:
            if not 0 <= x < len(env):
                _fail(f"variable {x} read before it is defined")
            return env[x]
        if isinstance(x, dict) and set(x) == {"lit", "a"}:
            aval = _dec_aval(x["a"])
            val = _dec_array(x["lit"])
            if val.shape != () or val.dtype != aval.dtype:
                _fail("bad literal")
            return Literal(val, aval)
        _fail(f"bad operand {str(x)[:80]}")

    def items(key: str) -> list:
        x = d.get(key)
        if not isinstance(x, list):
            _fail(f"bad jaxpr field {key!r}")
        return x

    constvars = [bind(a) for a in items("constvars")]
    invars = [bind(a) for a in items("invars")]
    eqns = []
    for e in items("eqns"):
        if not isinstance(e, dict) or not isinstance(e.get("params"), dict) or \
                not isinstance(e.get("in"), list) or not isinstance(e.get("out"), list):
            _fail("bad equation")
        prim = _primitive(e.get("p"))
        if prim.name in _export._HOST_CALLBACKS or prim.name in _export._PRIMAL_BODY and \
                prim.name != "checkpoint":  # (never written: export refuses or replaces them)
            _fail(f"primitive {prim.name!r} has no place in an exported program")
        ins = [atom(x) for x in e["in"]]
        params = {str(k): _dec_param(v, depth + 1) for k, v in e["params"].items()}
        outs = [bind(a) for a in e["out"]]
        if not prim.multiple_results and len(outs) != 1:
            _fail(f"equation of {prim.name} with {len(outs)} results")
        eqns.append(Eqn(prim, ins, outs, params))
    outvars = [atom(x) for x in items("outvars")]
    jaxpr = Jaxpr(constvars, invars, outvars, eqns)
    if not closed:
        return jaxpr
    consts = [_dec_array(c) for c in items("consts")]
    if len(consts) != len(constvars) or any(
            c.shape != v.aval.shape or c.dtype != v.aval.dtype for c, v in zip(consts, constvars)):
        _fail("constants do not match their variables")
    return ClosedJaxpr(jaxpr, consts)


def encode_program(closed: ClosedJaxpr) -> bytes:
    """The program alone, as the payload's JSON holds it (`Exported.mlir_module_serialized`)."""
    return json.dumps(_enc_jaxpr(closed.jaxpr, closed.consts), separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


# --- pytree definitions -------------------------------------------------------------------

def _enc_tree(td: PyTreeDef) -> Any:
    kids = [_enc_tree(c) for c in td.children]
    t = td.node_type
    if t is None:
        return "*"
    if t is type(None):
        return {"none": []}
    if t is tuple:
        return {"tuple": kids}
    if t is list:
        return {"list": kids}
    if t is dict:
        for k in td.node_data:
            if not isinstance(k, str):
                raise TypeError("Serialization is supported only for dictionaries with string "
                                f"keys. Found key {k} of type {type(k)}.")
        return {"dict": kids, "keys": list(td.node_data)}
    if t in _export.serialization_registry:
        name, ser = _export.serialization_registry[t]
        aux = ser(td.node_data)
        if not isinstance(aux, (bytes, bytearray)):
            raise ValueError("The custom serialization function for `node_type` must return "
                             f"a `bytes` object. It returned a {type(aux)}.")
        return {"custom": kids, "name": name, "aux": _b64(bytes(aux))}
    raise ValueError(
        "Cannot serialize PyTreeDef containing an "
        f"unregistered type `{t}`. "
        "Use `export.register_pytree_node_serialization` or "
        "`export.register_namedtuple_serialization`.")


def _dec_tree_value(x: Any, depth: int) -> Any:
    """A pytree of placeholder leaves with the structure `x` describes."""
    if depth > 200:
        _fail("pytree nested too deeply")
    if x == "*":
        return 0.0
    if not isinstance(x, dict) or not x or not isinstance(next(iter(x.values())), list):
        _fail(f"bad pytree node {str(x)[:80]}")
    kind = next(iter(x))
    kids = [_dec_tree_value(c, depth + 1) for c in x[kind]]
    if kind == "none" and not kids:
        return None
    if kind == "tuple":
        return tuple(kids)
    if kind == "list":
        return kids
    if kind == "dict":
        keys = x.get("keys")
        if not isinstance(keys, list) or len(keys) != len(kids) or \
                not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
            _fail("bad dict node")
        return dict(zip(keys, kids))
    if kind == "custom":
        name = x.get("name")
        if name not in _export.deserialization_registry:
            raise ValueError(
                "Cannot deserialize a PyTreeDef containing an "
                f"unregistered type `{name}`. "
                "Use `export.register_pytree_node_serialization` or "
                "`export.register_namedtuple_serialization`.")
        _, deser, from_children = _export.deserialization_registry[name]
        return from_children(deser(_unb64(x.get("aux"))), kids)
    _fail(f"unknown pytree node kind {kind!r}")


# --- Exported -----------------------------------------------------------------------------

def _enc_exported(exp: _export.Exported, vjp_order: int) -> dict:
    vjp = None
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError("serialization of an Exported that does not have vjps of "
                             "high-enough order")
        vjp = _enc_exported(exp.vjp(), vjp_order - 1)
    checks = []
    for c in exp.disabled_safety_checks:
        if not isinstance(c, _export.DisabledSafetyCheck):
            raise NotImplementedError(f"serializing DisabledSafetyCheck: {c}")
        checks.append(str(c))
    return {
        "fun_name": exp.fun_name,
        "in_tree": _enc_tree(exp.in_tree), "out_tree": _enc_tree(exp.out_tree),
        "in_avals": [_enc_aval(a) for a in exp.in_avals],
        "out_avals": [_enc_aval(a) for a in exp.out_avals],
        "nr_devices": exp.nr_devices, "platforms": list(exp.platforms),
        "disabled_checks": checks,
        "calling_convention_version": exp.calling_convention_version,
        "module_kept_var_idx": list(exp.module_kept_var_idx),
        "program": _enc_jaxpr(exp._closed.jaxpr, exp._closed.consts),
        "vjp": vjp,
    }


def serialize(exp: _export.Exported, vjp_order: int = 0) -> bytearray:
    payload = json.dumps({"tracejit": __version__, "exported": _enc_exported(exp, vjp_order)},
                         separators=(",", ":"), allow_nan=False).encode("utf-8")
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload), hashlib.sha256(payload).digest())
    return bytearray(header + payload)


def _dec_exported(d: Any, depth: int) -> _export.Exported:
    if depth > 16 or not isinstance(d, dict):
        _fail("bad Exported record")
    need = {"fun_name": str, "in_tree": object, "out_tree": object, "in_avals": list,
            "out_avals": list, "nr_devices": int, "platforms": list, "disabled_checks": list,
            "calling_convention_version": int, "module_kept_var_idx": list, "program": dict}
    for key, typ in need.items():
        if key not in d or not isinstance(d[key], typ) or isinstance(d[key], bool):
            _fail(f"missing or bad field {key!r}")
    version = d["calling_convention_version"]
    if not (_export.minimum_supported_calling_convention_version <= version <=
            _export.maximum_supported_calling_convention_version):
        _fail(f"calling convention version {version} is outside the supported range "
              f"[{_export.minimum_supported_calling_convention_version}.."
              f"{_export.maximum_supported_calling_convention_version}]")
    in_tree = tree_structure(_dec_tree_value(d["in_tree"], 0))
    out_tree = tree_structure(_dec_tree_value(d["out_tree"], 0))
    # (weak types recorded, dropped on loading as JAX's deserialize drops them: the call's
    # results are then strongly typed, as JAX's)
    in_avals = tuple(_dec_aval(a).strip_weak_type() for a in d["in_avals"])
    out_avals = tuple(_dec_aval(a).strip_weak_type() for a in d["out_avals"])
    if len(in_tree.children) != 2 or in_tree.node_type is not tuple or \
            in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        _fail("the argument and result trees do not match their types")
    closed = _dec_jaxpr(d["program"], 0, closed=True)
    try:
        check_jaxpr(closed.jaxpr)
    # (a param the abstract eval cannot read, a wrong type, ...)
    except Exception as e:  # noqa: BLE001
        _fail(f"the program does not type-check: {type(e).__name__}: {e}")
    def data(avals):  # (float0 values are no part of the program; weak types are ignored)
        return [a.strip_weak_type() for a in avals if a.dtype != dtypes.float0]
    if data(closed.in_avals) != data(in_avals) or data(closed.out_avals) != data(out_avals):
        _fail("the program's types differ from the recorded in_avals/out_avals")
    checks = []
    for c in d["disabled_checks"]:
        if not isinstance(c, str) or not (c == "platform" or c.startswith("custom_call:")):
            _fail(f"Cannot deserialize DisabledSafetyCheck {c!r}")
        checks.append(_export.DisabledSafetyCheck(c))
    if not all(isinstance(p, str) for p in d["platforms"]) or \
            not all(type(i) is int for i in d["module_kept_var_idx"]):
        _fail("bad platforms or module_kept_var_idx")
    vjp = d.get("vjp")
    vjp_exp = None if vjp is None else _dec_exported(vjp, depth + 1)
    n_in = len(in_avals)
    return _export.Exported(
        fun_name=d["fun_name"], in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, in_shardings_hlo=(None,) * n_in,
        out_shardings_hlo=(None,) * len(out_avals), nr_devices=d["nr_devices"],
        platforms=tuple(d["platforms"]), ordered_effects=(), unordered_effects=(),
        disabled_safety_checks=tuple(checks), calling_convention_version=version,
        module_kept_var_idx=tuple(d["module_kept_var_idx"]), uses_global_constants=False,
        _get_vjp=None if vjp_exp is None else (lambda _: vjp_exp), _closed=closed)


def deserialize(blob: bytes | bytearray) -> _export.Exported:
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize takes bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if len(blob) < _HEADER.size or not blob.startswith(MAGIC):
        raise ValueError(
            "Cannot deserialize: the data is not a tracejit export (it does not start with "
            f"{MAGIC!r}; a blob serialized by JAX holds StableHLO, which tracejit cannot "
            "load)")
    _, version, length, digest = _HEADER.unpack_from(blob)
    if version != FORMAT_VERSION:
        raise ValueError(f"Cannot deserialize: tracejit export format version {version}; "
                         f"this tracejit reads version {FORMAT_VERSION}")
    payload = blob[_HEADER.size:]
    if len(payload) != length:
        raise ValueError(f"Cannot deserialize: the data is truncated or padded ({len(payload)} "
                         f"bytes after the header, which says {length})")
    if hashlib.sha256(payload).digest() != digest:
        raise ValueError("Cannot deserialize: the data is corrupted (its SHA-256 digest does "
                         "not match)")
    try:
        d = json.loads(payload.decode("utf-8"))
        if not isinstance(d, dict) or "exported" not in d:
            _fail("no Exported record")
        return _dec_exported(d["exported"], 0)
    except _Refused as e:
        raise ValueError(f"Cannot deserialize: malformed tracejit export: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"Cannot deserialize: malformed tracejit export: {e}") from None
