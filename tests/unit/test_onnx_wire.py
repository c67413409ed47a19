"""The scoring graphs written without ``onnx`` (server/library/onnx_wire.py) are the models onnx.helper builds."""

from __future__ import annotations

import numpy as np
import pytest
from image_composer_mcp.server.library import onnx_wire, quantized_mirror, vector_mirror

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _model(name: str, nodes: list, inputs: list, outputs: list, initializer: list | None = None) -> object:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializer)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=onnx_wire.IR_VERSION)


def _top_k() -> object:
    return helper.make_node("TopK", ["allowed", "count"], ["best", "rows"], axis=-1, largest=1, sorted=0)


def test_the_mirror_scan_graph_is_the_one_onnx_helper_builds():
    expected = _model(
        "mirror-scan",
        [helper.make_node("MatMul", ["query", "columns"], ["scores"]),
         helper.make_node("Add", ["scores", "bias"], ["allowed"]), _top_k()],
        [helper.make_tensor_value_info("query", TensorProto.FLOAT, [1, "dims"]),
         helper.make_tensor_value_info("columns", TensorProto.FLOAT, ["dims", "rows"]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1, "rows"]),
         helper.make_tensor_value_info("count", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("best", TensorProto.FLOAT, [1, None]),
         helper.make_tensor_value_info("rows", TensorProto.INT64, [1, None]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, "rows"])])
    ours = onnx.ModelProto.FromString(vector_mirror.scan_model())
    assert ours == expected
    onnx.checker.check_model(ours)


def test_the_quantized_codes_graph_is_the_one_onnx_helper_builds():
    dims, rows = 384, 300_000  # sizes of several varint bytes
    codes = TensorProto()
    codes.name, codes.data_type = "codes", TensorProto.INT8
    codes.dims.extend([dims, rows])
    codes.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "codes"), ("offset", "0"), ("length", str(dims * rows))):
        entry = codes.external_data.add()
        entry.key, entry.value = key, value
    zero = numpy_helper.from_array(np.array(quantized_mirror.QUERY_ZERO_POINT, dtype=np.uint8), "zero")
    expected = _model(
        "quantized-vectors",
        [helper.make_node("MatMulInteger", ["query", "codes", "zero"], ["scores"]),
         helper.make_node("Add", ["scores", "bias"], ["allowed"]), _top_k()],
        [helper.make_tensor_value_info("query", TensorProto.UINT8, [1, dims]),
         helper.make_tensor_value_info("bias", TensorProto.INT32, [1, rows]),
         helper.make_tensor_value_info("count", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("best", TensorProto.INT32, [1, None]),
         helper.make_tensor_value_info("rows", TensorProto.INT64, [1, None])], initializer=[codes, zero])
    assert onnx.ModelProto.FromString(quantized_mirror.codes_model(dims, rows)) == expected


def test_a_written_graph_runs_and_ranks_like_numpy():
    session = ort.InferenceSession(vector_mirror.scan_model(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    query, columns = rng.standard_normal((1, 8), dtype=np.float32), rng.standard_normal((8, 50), dtype=np.float32)
    best, rows, scores = session.run(None, {"query": query, "columns": columns,
                                            "bias": np.zeros((1, 50), dtype=np.float32),
                                            "count": np.array([5], dtype=np.int64)})
    assert np.allclose(scores, query @ columns, atol=1e-5)
    assert sorted(rows[0].tolist()) == sorted(np.argsort(-(query @ columns)[0])[:5].tolist())
