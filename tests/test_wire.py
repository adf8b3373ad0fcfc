"""gpudl.grading.wire: plain data across the boundary, and nothing else."""
from __future__ import annotations

import json
import math
import socket
import threading

import numpy as np
import pytest
import torch

from gpudl import hardware
from gpudl.grading import wire


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2**80, 1.5, float("inf"), complex(1, -2), "naïve", b"\x00\xff",
    [1, [2, (3, "x")]], (), {"a": 1, 2: [3.0], (4, 5): None}, range(1, 10, 3), slice(1, None, 2),
])
def test_plain_values_come_back_equal(value):
    assert wire.roundtrip(value) == value
    assert type(wire.roundtrip(value)) is type(value)


def test_nan_comes_back_nan():
    assert math.isnan(wire.roundtrip(float("nan")))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "float64", "complex64"])
def test_arrays_keep_dtype_shape_and_values(dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    b = wire.roundtrip(a[:, ::2])                      # a strided view crosses as its values
    assert b.dtype == a.dtype and b.shape == (2, 2, 4) and np.array_equal(b, a[:, ::2])
    assert repr(wire.roundtrip(np.float32(1.25))) == repr(np.float32(1.25))
    assert wire.roundtrip(np.zeros((0, 3))).shape == (0, 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.float8_e4m3fn])
def test_tensors_keep_dtype_strides_and_bits(dtype):
    t = torch.randn(3, 5).to(dtype).t()                # transposed: strides (1, 5)
    back = wire.roundtrip(t)
    assert back.dtype == t.dtype and back.shape == t.shape and back.stride() == t.stride()
    assert torch.equal(back.view(torch.uint8) if dtype.itemsize == 1 else back.float(),
                       t.view(torch.uint8) if dtype.itemsize == 1 else t.float())


def test_the_packages_values_cross_and_rebuild_validated():
    spec = hardware.SPECS["V100"]
    assert wire.roundtrip(spec) == spec
    assert wire.roundtrip(torch.float16) is torch.float16 and wire.roundtrip(np.dtype("float32")) == np.float32
    tree, bufs = wire.encode(spec)
    tree["fields"]["sms"] = -1                          # a spec a student made up fails its own validation
    with pytest.raises(wire.WireError, match="invalid GPUSpec"):
        wire.decode(tree, bufs)


class Liar:
    def __eq__(self, other):
        return True

    def __array__(self, dtype=None):
        return np.ones(3)


@pytest.mark.parametrize("value", [Liar(), object(), lambda: 1, np.array([Liar()], dtype=object), {"k": [Liar()]},
                                   {1, 2}])
def test_objects_with_behaviour_never_cross(value):
    with pytest.raises(wire.WireError):
        wire.encode(value)


@pytest.mark.parametrize("tree", [
    {"__dataclass__": "os:system", "fields": {}},                 # not the package's
    {"__dataclass__": "gpudl.grading.boundary:Raised", "fields": {}},   # the grader's own
    {"__ndarray__": {"dtype": "object", "shape": [1], "buf": 0}},
    {"__ndarray__": {"dtype": "float32", "shape": [1000], "buf": 0}},   # bytes do not match the shape
    {"__ndarray__": {"dtype": "float32", "shape": [-1], "buf": 0}},
    {"__bytes__": 5},
    {"__torch_dtype__": "not_a_dtype"},
    {"__mystery__": 1},
    {"__float__": "1e400"},
])
def test_malformed_or_hostile_trees_are_refused(tree):
    with pytest.raises(wire.WireError):
        wire.decode(tree, [b"\x00" * 4])


def test_nesting_beyond_the_limit_is_refused():
    deep = []
    node = deep
    for _ in range(wire.MAX_DEPTH + 5):
        node.append([])
        node = node[0]
    with pytest.raises(wire.WireError, match="nested"):
        wire.encode(deep)


def test_framed_messages_cross_a_socket_and_oversized_ones_are_refused():
    a, b = socket.socketpair()
    tree, bufs = wire.encode({"x": np.arange(1000.0), "s": "hi"})
    threading.Thread(target=wire.send, args=(a, tree, bufs)).start()
    got, got_bufs = wire.recv(b)
    assert np.array_equal(wire.decode(got, got_bufs)["x"], np.arange(1000.0))
    threading.Thread(target=wire.send, args=(a, tree, bufs)).start()
    with pytest.raises(wire.WireError, match="buffers of more than"):
        wire.recv(b, max_buffer_bytes=100)
    a.close(), b.close()
    c, d = socket.socketpair()
    c.sendall(wire._HEAD.pack(wire.MAX_TREE_BYTES + 1, 0))
    with pytest.raises(wire.WireError, match="over the limits"):
        wire.recv(d)
    c.sendall(wire._HEAD.pack(3, 0) + b"{x}")
    with pytest.raises(wire.WireError, match="not JSON"):
        wire.recv(d)


def test_a_tree_is_json():
    tree, _ = wire.encode({"a": [1.0, float("nan")], "t": torch.ones(2)})
    json.dumps(tree, allow_nan=False)
