"""Plain data across the boundary between a student's kernel and the grader's checker.

Everything that crosses from the student's process to the checker (and back) is *plain
data*: numbers, strings, bytes, lists, tuples, dicts, NumPy arrays of numbers, torch
tensors, dtypes, and the package's own frozen dataclasses (a ``GPUSpec``, a layout, a
descriptor), rebuilt from their fields. Never a pickle, and never an object whose methods
would run on the other side: a student's return value whose ``__eq__`` or ``__array__``
lies is refused here, with a message that says what was expected.

``encode(obj) -> (tree, buffers)``   a JSON-able tree and the raw bytes of arrays
``decode(tree, buffers)``            the value back; refuses anything outside the format
``roundtrip(obj)``                   decode(encode(obj)): what the other side would see
``send(sock, tree, buffers)``, ``recv(sock)``   one framed message on a stream socket
``WireError``                        a value that is not plain data, or a malformed message

Limits bound what a hostile sender can make the receiver do: nesting depth, the size of
the tree, the number and total size of buffers; an array's bytes must match its shape.
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import math
import struct
from types import MappingProxyType
from typing import Any, Callable

import numpy as np

MAX_DEPTH = 64
MAX_TREE_BYTES = 16 << 20          # the JSON part of one message
MAX_BUFFER_BYTES = 1 << 31         # all arrays of one message together
MAX_BUFFERS = 100_000

# NumPy dtypes that cross (little-endian): booleans, integers, floats, complex numbers.
_NP_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"}
# torch dtypes, and the NumPy dtype of the same size their bits travel as.
_TORCH_BITS = {"bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32",
               "int64": "int64", "float16": "float16", "float32": "float32", "float64": "float64",
               "complex64": "complex64", "complex128": "complex128",
               "bfloat16": "uint16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8",
               "float8_e4m3fnuz": "uint8", "float8_e5m2fnuz": "uint8", "uint16": "uint16", "uint32": "uint32",
               "uint64": "uint64"}


class WireError(ValueError):
    """A value that cannot cross as plain data, or a message that breaks the format."""


def _describe(obj: Any) -> str:
    kind = type(obj)
    return f"a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else f"a {kind.__name__}"


def _torch():
    import sys
    return sys.modules.get("torch")


def _is_gpudl_class(cls: type) -> bool:
    """A value type of the package (a GPUSpec, a layout, a descriptor). The grader's own types
    (``gpudl.grading``: a check's outcome, a raised exception's record) never cross: a student
    who returned one could pass for an exception they never raised."""
    module = getattr(cls, "__module__", "")
    return module.split(".")[0] == "gpudl" and not module.startswith("gpudl.grading")


# --- encoding ------------------------------------------------------------------------------

def encode(obj: Any, *, extra: Callable[[Any], Any] | None = None) -> tuple[Any, list[bytes]]:
    """``obj`` as (a JSON-able tree, a list of byte buffers). ``extra(obj)`` may encode objects
    the format does not know (the student's functions, as handles); it returns a tree node or
    raises ``WireError``."""
    buffers: list[bytes] = []

    def buf(data: bytes) -> int:
        buffers.append(data)
        return len(buffers) - 1

    def enc(x: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"nested more than {MAX_DEPTH} levels deep")
        if x is None or isinstance(x, bool):
            return x
        if isinstance(x, str):
            return str.__str__(x)
        if isinstance(x, enum.Enum):
            if not _is_gpudl_class(type(x)):
                raise WireError(_describe(x))
            return {"__enum__": f"{type(x).__module__}:{type(x).__qualname__}", "name": x.name}
        if isinstance(x, int) and not isinstance(x, np.integer):
            return int.__index__(x)
        if isinstance(x, float) and not isinstance(x, np.floating):
            v = float.__float__(x)
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(x, complex):
            return {"__complex__": [enc(x.real, depth + 1), enc(x.imag, depth + 1)]}
        if isinstance(x, bytes):
            return {"__bytes__": buf(bytes(x))}
        if isinstance(x, np.generic):
            return {"__npscalar__": enc(np.asarray(x), depth + 1)}
        if isinstance(x, np.ndarray):
            if x.dtype.kind == "O" or x.dtype.name not in _NP_DTYPES:
                raise WireError(f"a NumPy array of dtype {x.dtype} (numbers only)")
            a = x.astype(x.dtype.newbyteorder("<"), copy=False)
            return {"__ndarray__": {"dtype": x.dtype.name, "shape": list(x.shape), "buf": buf(a.tobytes(order="C"))}}
        torch = _torch()
        if torch is not None:
            if isinstance(x, torch.Tensor):
                return {"__tensor__": _enc_tensor(x, buf)}
            if isinstance(x, torch.dtype):
                return {"__torch_dtype__": str(x).removeprefix("torch.")}
            if isinstance(x, torch.device):
                return {"__torch_device__": str(x)}
        if isinstance(x, np.dtype):
            return {"__np_dtype__": x.name}
        if isinstance(x, type) and issubclass(x, np.generic):
            return {"__np_dtype__": np.dtype(x).name}
        if isinstance(x, list):
            return [enc(v, depth + 1) for v in x]
        if isinstance(x, tuple) and type(x) is tuple:
            return {"__tuple__": [enc(v, depth + 1) for v in x]}
        if isinstance(x, (dict, MappingProxyType)) and type(x) in (dict, MappingProxyType):
            return {"__dict__": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
        if isinstance(x, range):
            return {"__range__": [x.start, x.stop, x.step]}
        if isinstance(x, slice):
            return {"__slice__": [enc(x.start, depth + 1), enc(x.stop, depth + 1), enc(x.step, depth + 1)]}
        if dataclasses.is_dataclass(x) and not isinstance(x, type) and _is_gpudl_class(type(x)):
            fields = {f.name: enc(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x) if f.init}
            return {"__dataclass__": f"{type(x).__module__}:{type(x).__qualname__}", "fields": fields}
        if extra is not None:
            return extra(x)
        raise WireError(_describe(x))

    tree = enc(obj, 0)
    return tree, buffers


def _enc_tensor(t: Any, buf: Callable[[bytes], int]) -> dict[str, Any]:
    name = str(t.dtype).removeprefix("torch.")
    if name not in _TORCH_BITS:
        raise WireError(f"a torch tensor of dtype {t.dtype}")
    if t.is_sparse or t.layout != _torch().strided:
        raise WireError(f"a torch tensor with layout {t.layout} (dense tensors only)")
    host = t.detach().to("cpu").contiguous()
    bits = host.view(getattr(_torch(), _TORCH_BITS[name])) if _TORCH_BITS[name] != name else host
    data = bits.numpy().astype(np.dtype(_TORCH_BITS[name]).newbyteorder("<"), copy=False).tobytes()
    return {"dtype": name, "shape": list(t.shape), "stride": list(t.stride()), "device": t.device.type,
            "requires_grad": bool(t.requires_grad), "buf": buf(data)}


# --- decoding ------------------------------------------------------------------------------

def decode(tree: Any, buffers: list[bytes] | tuple[bytes, ...] = (), *,
           extra: Callable[[str, Any], Any] | None = None, device: str | None = None) -> Any:
    """The value of an encoded ``tree``. ``extra(key, node)`` decodes the tags ``encode``'s
    ``extra`` made. Tensors go to ``device`` ("cpu" or "cuda"; default: where they came from
    when that device exists here, else the CPU)."""
    if len(buffers) > MAX_BUFFERS:
        raise WireError(f"{len(buffers)} buffers in one message")

    def take(index: Any) -> bytes:
        if type(index) is not int or not 0 <= index < len(buffers):
            raise WireError(f"a reference to buffer {index!r} that is not there")
        return buffers[index]

    def dec(x: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"nested more than {MAX_DEPTH} levels deep")
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, list):
            return [dec(v, depth + 1) for v in x]
        if not isinstance(x, dict) or len(x) < 1:
            raise WireError(f"an unknown node {type(x).__name__}")
        key = next(iter(x))
        val = x[key]
        if key == "__float__":
            if val not in ("nan", "inf", "-inf"):
                raise WireError(f"a float {val!r}")
            return float(val)
        if key == "__complex__":
            return complex(float(dec(val[0], depth + 1)), float(dec(val[1], depth + 1)))
        if key == "__bytes__":
            return bytes(take(val))
        if key == "__tuple__":
            return tuple(dec(v, depth + 1) for v in _list(val))
        if key == "__dict__":
            out = {}
            for pair in _list(val):
                k, v = _list(pair, 2)
                k = dec(k, depth + 1)
                if isinstance(k, (list, dict, bytearray)):
                    raise WireError("an unhashable dict key")
                out[k] = dec(v, depth + 1)
            return out
        if key == "__ndarray__":
            return _dec_array(val, take)
        if key == "__npscalar__":
            arr = dec(val, depth + 1)
            if not isinstance(arr, np.ndarray) or arr.shape != ():
                raise WireError("a NumPy scalar that is not 0-d")
            return arr[()]
        if key == "__tensor__":
            return _dec_tensor(val, take, device)
        if key == "__torch_dtype__":
            torch = _import_torch()
            if val not in _TORCH_BITS:
                raise WireError(f"a torch dtype {val!r}")
            return getattr(torch, val)
        if key == "__torch_device__":
            return _import_torch().device(str(val))
        if key == "__np_dtype__":
            if val not in _NP_DTYPES:
                raise WireError(f"a NumPy dtype {val!r}")
            return np.dtype(val)
        if key == "__range__":
            a, b, c = (int(v) for v in _list(val, 3))
            return range(a, b, c)
        if key == "__slice__":
            return slice(*(dec(v, depth + 1) for v in _list(val, 3)))
        if key == "__enum__":
            cls = _gpudl_class(val)
            if not issubclass(cls, enum.Enum):
                raise WireError(f"{val} is not an enum")
            return cls[str(x.get("name"))]
        if key == "__dataclass__":
            cls = _gpudl_class(val)
            if not dataclasses.is_dataclass(cls):
                raise WireError(f"{val} is not a dataclass")
            fields = x.get("fields")
            if not isinstance(fields, dict):
                raise WireError("a dataclass without fields")
            allowed = {f.name for f in dataclasses.fields(cls) if f.init}
            if set(fields) - allowed:
                raise WireError(f"unknown fields {sorted(set(fields) - allowed)} for {val}")
            try:
                return cls(**{k: dec(v, depth + 1) for k, v in fields.items()})
            except (TypeError, ValueError) as exc:
                raise WireError(f"an invalid {cls.__name__}: {exc}") from None
        if extra is not None:
            return extra(key, x)
        raise WireError(f"an unknown tag {key!r}")

    return dec(tree, 0)


def _list(val: Any, n: int | None = None) -> list:
    if not isinstance(val, list) or (n is not None and len(val) != n):
        raise WireError("a malformed list")
    return val


def _gpudl_class(path: Any) -> type:
    if not isinstance(path, str) or ":" not in path:
        raise WireError(f"a class name {path!r}")
    module, _, qual = path.partition(":")
    if module.split(".")[0] != "gpudl" or module.startswith("gpudl.grading"):
        raise WireError(f"a class that is not one of the package's values: {path}")
    try:
        obj: Any = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise WireError(f"an unknown class {path}") from None
    if not isinstance(obj, type):
        raise WireError(f"{path} is not a class")
    return obj


def _import_torch():
    import torch
    return torch


def _shape(val: Any) -> tuple[int, ...]:
    shape = tuple(_list(val))
    if any(type(d) is not int or d < 0 for d in shape):
        raise WireError(f"a shape {shape}")
    return shape


def _dec_array(meta: Any, take: Callable[[Any], bytes]) -> np.ndarray:
    if not isinstance(meta, dict) or meta.get("dtype") not in _NP_DTYPES:
        raise WireError(f"an array of dtype {meta.get('dtype') if isinstance(meta, dict) else '?'}")
    dtype = np.dtype(meta["dtype"]).newbyteorder("<")
    shape = _shape(meta.get("shape"))
    data = take(meta.get("buf"))
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise WireError(f"an array of shape {shape} with {len(data)} bytes")
    return np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="), copy=True)


def _dec_tensor(meta: Any, take: Callable[[Any], bytes], device: str | None) -> Any:
    torch = _import_torch()
    if not isinstance(meta, dict) or meta.get("dtype") not in _TORCH_BITS:
        raise WireError("a tensor of an unknown dtype")
    name = meta["dtype"]
    shape = _shape(meta.get("shape"))
    bits = _dec_array({"dtype": _TORCH_BITS[name], "shape": list(shape), "buf": meta.get("buf")}, take)
    t = torch.from_numpy(bits)
    if _TORCH_BITS[name] != name:
        t = t.view(getattr(torch, name))
    want = device or meta.get("device", "cpu")
    if want != "cpu" and not (want == "cuda" and torch.cuda.is_available()):
        want = "cpu"
    stride = tuple(_list(meta.get("stride", list(t.stride()))))
    if len(stride) == len(shape) and stride != t.stride() and all(type(s) is int and s >= 0 for s in stride):
        try:
            strided = torch.empty_strided(shape, stride, dtype=t.dtype, device=want)
            strided.copy_(t)
            t = strided
        except RuntimeError:
            t = t.to(want)
    else:
        t = t.to(want)
    if meta.get("requires_grad") and t.is_floating_point():
        t.requires_grad_(True)
    return t


def roundtrip(obj: Any, *, extra: Callable[[Any], Any] | None = None,
              extra_decode: Callable[[str, Any], Any] | None = None, device: str | None = None) -> Any:
    """What the other side of the boundary would receive for ``obj``."""
    tree, buffers = encode(obj, extra=extra)
    tree = json.loads(json.dumps(tree, allow_nan=False))
    return decode(tree, buffers, extra=extra_decode, device=device)


# --- framing on a stream socket ------------------------------------------------------------

_HEAD = struct.Struct("<QI")      # tree bytes, number of buffers


def send(sock: Any, tree: Any, buffers: list[bytes] = ()) -> None:
    """Write one message: its tree as JSON, then each buffer with its length."""
    body = json.dumps(tree, allow_nan=False, separators=(",", ":")).encode()
    sock.sendall(_HEAD.pack(len(body), len(buffers)) + body)
    for b in buffers:
        sock.sendall(struct.pack("<Q", len(b)))
        sock.sendall(b)


def _read_exact(sock: Any, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: Any, *, max_buffer_bytes: int = MAX_BUFFER_BYTES) -> tuple[Any, list[bytes]]:
    """Read one message written by ``send``; a message over the limits raises ``WireError``."""
    size, count = _HEAD.unpack(_read_exact(sock, _HEAD.size))
    if size > MAX_TREE_BYTES or count > MAX_BUFFERS:
        raise WireError(f"a message of {size} bytes and {count} buffers is over the limits")
    try:
        tree = json.loads(_read_exact(sock, size))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"a message that is not JSON: {exc}") from None
    buffers, total = [], 0
    for _ in range(count):
        (n,) = struct.unpack("<Q", _read_exact(sock, 8))
        total += n
        if total > max_buffer_bytes:
            raise WireError(f"buffers of more than {max_buffer_bytes} bytes in one message")
        buffers.append(_read_exact(sock, n))
    return tree, buffers
