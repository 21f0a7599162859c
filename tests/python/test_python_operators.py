"""Operators written in Python: registered under a backend name, checked
like a C++ kernel (forward against a reference function, backward against
finite differences), and used inside an ONNX network by every executor."""
import numpy as np
import pytest

import deep500


class Swish:
    """y = x * sigmoid(beta * x), with its analytic gradient."""

    def __init__(self, beta=1.0):
        self.beta = float(beta)  # text from op(...) (as `deep500 op --attr`), a float in a model

    def forward(self, inputs):
        (x,) = inputs
        return [x / (1 + np.exp(-self.beta * x))]

    def backward(self, grad_outputs, inputs, outputs):
        (dy,), (x,) = grad_outputs, inputs
        s = 1 / (1 + np.exp(-self.beta * x))
        return [dy * (s + self.beta * x * s * (1 - s))]


class Broken:
    def forward(self, inputs):
        raise ValueError("this operator always fails")


deep500.register_operator("Swish", Swish, domain="com.example", backend="python")
deep500.register_operator("Broken", Broken, domain="com.example", backend="python")


def swish_reference(inputs):
    (x,) = inputs
    return [x * (1 / (1 + np.exp(-x)))]


def inputs():
    return [np.random.default_rng(0).standard_normal((3, 5)).astype(np.float64)]


def test_forward_check_against_a_reference_function_passes():
    spec = deep500.op("Swish", domain="com.example")
    r = deep500.check_operator(spec, inputs(), "python", reference=swish_reference)
    assert r["passed"], r
    assert r["implementation"] == "python:Swish"


def test_gradient_check_against_finite_differences_passes():
    r = deep500.check_gradient(deep500.op("Swish", domain="com.example"), inputs(), "python")
    assert r["passed"], r
    assert r["inputs"][0]["status"] == "passed" and r["inputs"][0]["max_rel_error"] < 1e-5
    # Every element of this small input, and one random direction over all of them.
    assert r["method"] == "finite differences", r
    assert r["inputs"][0]["checked_elements"] == inputs()[0].size, r
    assert r["inputs"][0]["directional_checked"] and r["inputs"][0]["directional_rel_error"] < 1e-6


def test_a_float32_backend_is_held_to_the_reference_backward():
    """oneDNN computes in float32 only: its Conv backward is compared with the
    reference's, the reference checked against float64 finite differences."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 16, 12, 12)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    r = deep500.check_gradient(deep500.op("Conv", pads=[1, 1, 1, 1]), [x, w], "onednn")
    assert r["passed"] and r["method"] == "reference backward", r
    assert r["compared_inputs"] == 2 and r["reference_check"]["passed"], r
    assert all(i["directional_checked"] for i in r["reference_check"]["inputs"]), r


def test_a_wrong_gradient_fails_the_check():
    class WrongSwish(Swish):
        def backward(self, grad_outputs, inputs, outputs):
            return [2 * super().backward(grad_outputs, inputs, outputs)[0]]
    deep500.register_operator("WrongSwish", WrongSwish, domain="com.example", backend="python")
    r = deep500.check_gradient(deep500.op("WrongSwish", domain="com.example"), inputs(),
                               "python")
    assert not r["passed"] and r["status"] == "FAILED", r


def test_attributes_reach_the_constructor():
    x = np.array([1.0, -2.0], dtype=np.float32)
    (y,) = deep500.run_operator(deep500.op("Swish", domain="com.example", beta=2.0), [x], "python")
    np.testing.assert_allclose(y, x / (1 + np.exp(-2 * x)), rtol=1e-6)


def test_a_python_exception_is_an_error_naming_the_node():
    with pytest.raises(deep500.Error) as e:
        deep500.run_operator(deep500.op("Broken", domain="com.example"), [np.zeros(2)], "python")
    assert str(e.value) == ("node 'Broken' (com.example.Broken, opset 17): Python forward raised "
                            "ValueError: this operator always fails")


def swish_network(path):
    """logits = Swish(x W) W2, loss = sum(logits^2) / 2, as an ONNX file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    w2 = rng.standard_normal((6, 2)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Swish", ["h"], ["s"], domain="com.example"),
             helper.make_node("MatMul", ["s", "w2"], ["y"]),
             helper.make_node("ReduceSumSquare", ["y"], ["ss"], keepdims=0),
             helper.make_node("Mul", ["ss", "half"], ["loss"])]
    graph = helper.make_graph(
        nodes, "swish_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2]),
         helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example", 1)])
    onnx.save(model, path)
    return w, w2


@pytest.mark.parametrize("executor", ["reference", "optimized"])
def test_a_network_with_the_python_operator_infers_and_backprops(tmp_path, executor):
    w, w2 = swish_network(str(tmp_path / "swish.onnx"))
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    model = deep500.Model(str(tmp_path / "swish.onnx"))
    run = deep500.Executor(model, executor)
    h = x @ w
    sig = 1 / (1 + np.exp(-h))
    s = h * sig
    y = s @ w2
    np.testing.assert_allclose(run.inference({"x": x})["y"], y, rtol=1e-5, atol=1e-6)
    _, grads = run.backprop({"x": x}, "loss")
    dh = (y @ w2.T) * (sig + h * sig * (1 - sig))
    np.testing.assert_allclose(grads["w2"], s.T @ y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["w"], x.T @ dh, rtol=1e-4, atol=1e-5)
