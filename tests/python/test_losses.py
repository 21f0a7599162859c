"""SoftmaxCrossEntropyLoss on the eigen backend (frameworks/eigen/losses.cc)
against PyTorch's cross_entropy and log_softmax: class scores [N, C] and
per-pixel scores [N, C, H, W], reduction mean and sum, ignore_index; its
backward against float64 finite differences and against torch.autograd."""
import numpy as np
import pytest
import torch

import deep500


def case(shape, seed=0, dtype=np.float32, ignore=None):
    rng = np.random.default_rng(seed)
    scores = (3 * rng.standard_normal(shape)).astype(dtype)
    labels = rng.integers(0, shape[1], size=(shape[0],) + tuple(shape[2:])).astype(np.int64)
    if ignore is not None:
        labels.flat[::3] = ignore
    return scores, labels


@pytest.mark.parametrize("shape", [(6, 10), (2, 5, 7, 9)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("ignore", [None, 1, -100])
def test_matches_pytorch(shape, reduction, ignore):
    scores, labels = case(shape, ignore=ignore)
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    spec = deep500.op("SoftmaxCrossEntropyLoss", outputs=2, **attrs)
    loss, log_prob = deep500.run_operator(spec, [scores, labels], "eigen")
    s = torch.from_numpy(scores).double()
    want = torch.nn.functional.cross_entropy(
        s, torch.from_numpy(labels), reduction=reduction,
        ignore_index=-100 if ignore is None else ignore)
    np.testing.assert_allclose(loss, want.numpy(), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(log_prob, torch.log_softmax(s, 1).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_backward_matches_finite_differences(reduction):
    scores, labels = case((3, 4, 5), seed=1, dtype=np.float64, ignore=2)
    spec = deep500.op("SoftmaxCrossEntropyLoss", reduction=reduction, ignore_index=2)
    verdict = deep500.check_gradient(spec, [scores, labels], "eigen")
    assert verdict["passed"], verdict
    assert verdict["inputs"][0]["status"] == "passed", verdict


def test_backward_matches_pytorch_autograd(tmp_path):
    import onnx.numpy_helper
    from onnx import helper, TensorProto
    scores, labels = case((4, 6, 3, 5), seed=2)
    nodes = [helper.make_node("Mul", ["x", "w"], ["s"]),
             helper.make_node("SoftmaxCrossEntropyLoss", ["s", "labels"], ["loss"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("labels", TensorProto.INT64, labels.shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(scores, "x"),
         onnx.numpy_helper.from_array(np.ones(1, np.float32), "w")])
    path = str(tmp_path / "sce.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    executor = deep500.Executor(deep500.Model(path), "backend:eigen,reference")
    _, grads = executor.backprop({"labels": labels}, "loss")
    x = torch.from_numpy(scores).double().requires_grad_()
    torch.nn.functional.cross_entropy(x, torch.from_numpy(labels)).backward()
    np.testing.assert_allclose(grads["x"], x.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_class_weights_are_left_to_the_reference():
    scores, labels = case((6, 10))
    spec = deep500.op("SoftmaxCrossEntropyLoss")
    with pytest.raises(deep500.Error, match="class weights run on the reference backend"):
        deep500.run_operator(spec, [scores, labels, np.ones(10, np.float32)], "eigen")


def test_a_target_out_of_range_is_an_error_naming_its_position():
    scores, labels = case((6, 10))
    labels[4] = 12
    with pytest.raises(deep500.Error, match=r"target value 12 at position 4 is out of range"):
        deep500.run_operator(deep500.op("SoftmaxCrossEntropyLoss"), [scores, labels], "eigen")
