"""The few ONNX messages our small scoring graphs need, written as protobuf bytes without importing ``onnx``.

Why: importing ``onnx`` (and ``google.protobuf`` with it) took ~0.35 s, and the first search of every start
at 10,000 templates paid it, only to describe a three-node graph to onnxruntime (measured: a warm start's
first search 0.58 s, 0.34 s of it that import). The MiniLM graph is still built with ``onnx``, once per
weights, and loaded from its file after that. A test checks that these bytes parse to the very model
``onnx.helper`` builds.

Wire format: each field is a key (field number << 3 | wire type) then a varint (0) or a length and bytes (2).
Field numbers are those of ``onnx.proto``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7
IR_VERSION = 8  # the IR version that goes with opset 17
_ATTRIBUTE_INT = 2  # AttributeProto.AttributeType.INT
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


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], **ints: int) -> bytes:
    """A NodeProto in the default domain; keyword arguments are its integer attributes."""
    attributes = (_str(1, name) + _int(3, value) + _int(20, _ATTRIBUTE_INT) for name, value in ints.items())
    return (b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs) + _str(4, op)
            + _all(5, attributes))


def value(name: str, elem: int, shape: Sequence[Dim]) -> bytes:
    """A ValueInfoProto: a tensor of ``elem`` with ``shape``."""
    dims = (b"" if d is None else _int(1, d) if isinstance(d, int) else _str(2, d) for d in shape)
    tensor_type = _int(1, elem) + _bytes(2, _all(1, dims))
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def tensor(name: str, elem: int, dims: Sequence[int], raw: bytes) -> bytes:
    """A TensorProto initializer holding ``raw`` (little-endian values of ``elem``)."""
    return b"".join(_int(1, d) for d in dims) + _int(2, elem) + _str(8, name) + _bytes(9, raw)


def external_tensor(name: str, elem: int, dims: Sequence[int], location: str, length: int) -> bytes:
    """A TensorProto initializer whose data the session is given from memory (``add_external_initializers``)."""
    entries = (_str(1, key) + _str(2, val) for key, val in (("location", location), ("offset", "0"),
                                                              ("length", str(length))))
    return (b"".join(_int(1, d) for d in dims) + _int(2, elem) + _str(8, name) + _all(13, entries)
            + _int(14, _EXTERNAL))


def model(name: str, nodes: Sequence[bytes], inputs: Sequence[bytes], outputs: Sequence[bytes],
          initializers: Sequence[bytes] = (), opset: int = 17) -> bytes:
    """A serialized ModelProto of one graph, in the default operator set at ``opset``."""
    graph = _all(1, nodes) + _str(2, name) + _all(5, initializers) + _all(11, inputs) + _all(12, outputs)
    return _int(1, IR_VERSION) + _bytes(7, graph) + _bytes(8, _str(1, "") + _int(2, opset))
