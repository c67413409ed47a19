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


def test_attributes_and_arrays_are_the_ones_onnx_helper_makes():
    ours = onnx.NodeProto.FromString(onnx_wire.node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1,
                                                    epsilon=1e-12))
    assert ours == helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-12)
    ours = onnx.NodeProto.FromString(onnx_wire.node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3]))
    assert ours == helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3])
    ours = onnx.NodeProto.FromString(onnx_wire.node("BiasGelu", ["x", "b"], ["y"], "com.microsoft"))
    assert ours == helper.make_node("BiasGelu", ["x", "b"], ["y"], domain="com.microsoft")
    model = onnx.ModelProto.FromString(onnx_wire.model("m", [], [], [], domains=[("com.microsoft", 1)]))
    assert list(model.opset_import) == [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    for values in (np.arange(12, dtype=np.float32).reshape(3, 4) / 7, np.array([1, 2], dtype=np.int64),
                   np.array(-1e9, dtype=np.float32), np.array([128], dtype=np.uint8)):
        assert onnx.TensorProto.FromString(onnx_wire.array("t", values)) == numpy_helper.from_array(values, "t")



def _weights_path():
    from image_composer_mcp.server.library import embed_local

    if embed_local.local_model_missing() is not None:
        pytest.skip("the packaged MiniLM is not installed (make install)")
    return embed_local._find_packaged_model_dir() / "model.safetensors"


def test_the_encoder_graph_is_valid_and_its_weights_file_holds_every_initializer(tmp_path):
    from image_composer_mcp.server.library import embed_onnx
    from safetensors.numpy import load_file

    path = _weights_path()
    inline = onnx.ModelProto.FromString(embed_onnx._build_graph(load_file(str(path)), 12))
    onnx.checker.check_model(inline, full_check=True)
    assert {(o.domain, o.version) for o in inline.opset_import} == {("", 17), (embed_onnx.CONTRIB, 1)}
    assert sum(n.domain == embed_onnx.CONTRIB for n in inline.graph.node) == 6 * 4 + 1  # see _build_graph
    standard = onnx.ModelProto.FromString(embed_onnx._build_graph(load_file(str(path)), 12, fused=False))
    onnx.checker.check_model(standard, full_check=True)
    assert {n.domain for n in standard.graph.node} == {""} and len(standard.graph.node) > 3 * len(inline.graph.node)
    target = tmp_path / "minilm-test.onnx"
    embed_onnx._save_graph(load_file(str(path)), 12, target)
    saved = onnx.load(str(target))  # reads the tensors back from minilm-test.data at their offsets
    assert len(inline.graph.initializer) == len(saved.graph.initializer) > 80
    for a, b in zip(inline.graph.initializer, saved.graph.initializer, strict=True):
        assert a.name == b.name and np.array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))
    assert inline.graph.node == saved.graph.node
    external = [t for t in onnx.load(str(target), load_external_data=False).graph.initializer if t.data_location]
    assert len(external) > 50 and all(int(dict((e.key, e.value) for e in t.external_data)["offset"]) % 4096 == 0
                                      for t in external)
