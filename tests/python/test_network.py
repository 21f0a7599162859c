"""Level 1 from Python: ONNX models on every executor, inference against
ONNX's test data and backprop against analytic gradients."""
import numpy as np
import pytest

import deep500


@pytest.mark.parametrize("executor", ["reference", "optimized", "backend:onednn,reference"])
@pytest.mark.parametrize("test", ["test_gemm_default_matrix_bias", "test_softmax_example",
                                  "test_conv_with_strides_padding"])
def test_inference_matches_onnx_test_data(onnx_node_test, executor, test):
    path, inputs, expected = onnx_node_test(test)
    model = deep500.Model(path)
    assert len(model.inputs) == len(inputs)
    outputs = deep500.Executor(model, executor).inference(dict(zip(model.inputs, inputs)))
    assert list(outputs) == sorted(model.outputs)
    for name, want in zip(model.outputs, expected):
        np.testing.assert_allclose(outputs[name], want, rtol=1e-5, atol=1e-6)


def mlp_model(path):
    """y = relu(x W1 + b1) W2; loss = sum(y * y) / 2, as an ONNX file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((4, 5)).astype(np.float32)
    b1 = rng.standard_normal(5).astype(np.float32)
    w2 = rng.standard_normal((5, 3)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"]),
             helper.make_node("Mul", ["y", "y"], ["yy"]),
             helper.make_node("ReduceSum", ["yy"], ["s"], keepdims=0),
             helper.make_node("Mul", ["s", "half"], ["loss"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return w1, b1, w2


@pytest.mark.parametrize("executor", ["reference", "optimized"])
def test_backprop_gives_the_analytic_gradients(tmp_path, executor):
    w1, b1, w2 = mlp_model(str(tmp_path / "mlp.onnx"))
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    model = deep500.Model(str(tmp_path / "mlp.onnx"))
    assert set(model.parameters) >= {"w1", "b1", "w2"}
    outputs, grads = deep500.Executor(model, executor).backprop({"x": x}, "loss")
    h = x @ w1 + b1
    r = np.maximum(h, 0)
    y = r @ w2
    dy = y
    dr = dy @ w2.T
    dh = dr * (h > 0)
    np.testing.assert_allclose(outputs["loss"], 0.5 * np.sum(y * y), rtol=1e-5)
    np.testing.assert_allclose(grads["w2"], r.T @ dy, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["w1"], x.T @ dh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["b1"], dh.sum(axis=0), rtol=1e-4, atol=1e-5)


def test_a_missing_or_damaged_model_is_an_error_naming_the_file(tmp_path):
    with pytest.raises(deep500.Error, match="nothing.onnx"):
        deep500.Model(str(tmp_path / "nothing.onnx"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07\x12garbage")
    with pytest.raises(deep500.Error, match="bad.onnx"):
        deep500.Model(str(bad))


def test_a_feed_of_the_wrong_shape_is_an_error(onnx_node_test):
    path, inputs, _ = onnx_node_test("test_gemm_default_matrix_bias")
    model = deep500.Model(path)
    feeds = {name: np.zeros((7, 7), dtype=np.float32) for name in model.inputs}
    with pytest.raises(deep500.Error):
        deep500.Executor(model, "optimized").inference(feeds)
