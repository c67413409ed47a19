"""The few ONNX messages our small scoring graphs need, written as protobuf bytes without importing ``onnx``.

Why: importing ``onnx`` (and ``google.protobuf`` with it) took ~0.35 s, and the first search of every start
at 10,000 templates paid it, only to describe a three-node graph to onnxruntime (measured: a warm start's
first search 0.58 s, 0.34 s of it that import); a start with an empty cache paid it again to build the
MiniLM graph. The tests check that these bytes parse to the very models ``onnx.helper`` builds.

Wire format: each field is a key (field number << 3 | wire type) then a varint (0) or a length and bytes (2).
Field numbers are those of ``onnx.proto``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

# TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7
_ELEM = {np.dtype("float32"): FLOAT, np.dtype("uint8"): UINT8, np.dtype("int8"): INT8, np.dtype("int32"): INT32,
         np.dtype("int64"): INT64}
IR_VERSION = 8  # the IR version that goes with opset 17
_FLOAT_ATTRIBUTE, _INT_ATTRIBUTE, _INTS_ATTRIBUTE = 1, 2, 7  # AttributeProto.AttributeType
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL

Dim = int | str | None  # a fixed size, a named symbolic one, or unknown


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf writes it
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _all(field: int, items: Iterable[bytes]) -> bytes:
    return b"".join(_bytes(field, item) for item in items)


def _attribute(name: str, value: int | float | Sequence[int]) -> bytes:
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, _INT_ATTRIBUTE)
    if isinstance(value, float):  # fixed32, wire type 5
        return _str(1, name) + _varint(2 << 3 | 5) + struct.pack("<f", value) + _int(20, _FLOAT_ATTRIBUTE)
    return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _INTS_ATTRIBUTE)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "",
         **attributes: int | float | Sequence[int]) -> bytes:
    """A NodeProto of ``op`` in ``domain`` (the default one when empty); keyword arguments are its attributes
    (an int, a float, or ints)."""
    return (b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs) + _str(4, op)
            + _all(5, (_attribute(name, value) for name, value in attributes.items()))
            + (_str(7, domain) if domain else b""))


def value(name: str, elem: int, shape: Sequence[Dim]) -> bytes:
    """A ValueInfoProto: a tensor of ``elem`` with ``shape``."""
    dims = (b"" if d is None else _int(1, d) if isinstance(d, int) else _str(2, d) for d in shape)
    tensor_type = _int(1, elem) + _bytes(2, _all(1, dims))
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def tensor(name: str, elem: int, dims: Sequence[int], raw: bytes) -> bytes:
    """A TensorProto initializer holding ``raw`` (little-endian values of ``elem``)."""
    return b"".join(_int(1, d) for d in dims) + _int(2, elem) + _str(8, name) + _bytes(9, raw)


def elem_type(dtype: np.dtype) -> int:
    """The TensorProto.DataType of a numpy dtype (those our graphs use)."""
    return _ELEM[np.dtype(dtype).newbyteorder("=")]


def little_endian(values: np.ndarray) -> bytes:
    """The array's values as ONNX stores them: C order, little-endian."""
    return np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).tobytes()


def array(name: str, values: np.ndarray) -> bytes:
    """:func:`tensor` of a numpy array."""
    return tensor(name, elem_type(values.dtype), values.shape, little_endian(values))


def external_tensor(name: str, elem: int, dims: Sequence[int], location: str, length: int, offset: int = 0) -> bytes:
    """A TensorProto initializer whose data is elsewhere: ``length`` bytes at ``offset`` in the file
    ``location`` beside the model, or given to the session from memory (``add_external_initializers``)."""
    entries = (_str(1, key) + _str(2, val) for key, val in (("location", location), ("offset", str(offset)),
                                                              ("length", str(length))))
    return (b"".join(_int(1, d) for d in dims) + _int(2, elem) + _str(8, name) + _all(13, entries)
            + _int(14, _EXTERNAL))


def model(name: str, nodes: Sequence[bytes], inputs: Sequence[bytes], outputs: Sequence[bytes],
          initializers: Sequence[bytes] = (), opset: int = 17, producer: str = "",
          domains: Sequence[tuple[str, int]] = ()) -> bytes:
    """A serialized ModelProto of one graph, in the default operator set at ``opset`` and the other ``domains``
    (name, version) its nodes use."""
    graph = _all(1, nodes) + _str(2, name) + _all(5, initializers) + _all(11, inputs) + _all(12, outputs)
    opsets = [("", opset), *domains]
    return (_int(1, IR_VERSION) + (_str(2, producer) if producer else b"") + _bytes(7, graph)
            + _all(8, (_str(1, domain) + _int(2, version) for domain, version in opsets)))
