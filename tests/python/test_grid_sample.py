"""GridSample on the eigen backend (frameworks/eigen/grid_sample.cc: taps
computed once per location, every channel a gather) and on the reference,
against PyTorch's grid_sample: bilinear and nearest, every padding mode,
align_corners on and off, grids reaching outside the input; bicubic on the
reference. Backward (bilinear and nearest, to X and the grid, both
backends' own) against float64 finite differences with grids reaching
outside the input, where the padding modes clamp or mirror, and against
torch.autograd."""
import numpy as np
import pytest
import torch

import deep500


def case(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(2, 3, 7, 9)).astype(dtype)
    grid = rng.uniform(-1.3, 1.3, size=(2, 5, 6, 2)).astype(dtype)  # some points outside
    return x, grid


def torch_grid_sample(x, grid, mode, padding, align):
    return torch.nn.functional.grid_sample(torch.from_numpy(x).double(),
                                           torch.from_numpy(grid).double(), mode=mode,
                                           padding_mode=padding, align_corners=align).numpy()


@pytest.mark.parametrize("backend,mode", [("eigen", "bilinear"), ("eigen", "nearest"),
                                          ("reference", "bilinear"), ("reference", "bicubic")])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_matches_pytorch(backend, mode, padding, align):
    x, grid = case()
    spec = deep500.op("GridSample", mode=mode, padding_mode=padding, align_corners=align)
    (y,) = deep500.run_operator(spec, [x, grid], backend)
    np.testing.assert_allclose(y, torch_grid_sample(x, grid, mode, padding, bool(align)),
                               rtol=1e-5, atol=1e-5)


def test_bicubic_is_left_to_the_reference():
    x, grid = case()
    with pytest.raises(deep500.Error, match="bicubic GridSample runs on the reference backend"):
        deep500.run_operator(deep500.op("GridSample", mode="bicubic"), [x, grid], "eigen")


@pytest.mark.parametrize("backend", ["reference", "eigen"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_backward_matches_finite_differences(backend, mode, padding, align):
    x, grid = case(seed=3, dtype=np.float64)
    spec = deep500.op("GridSample", mode=mode, padding_mode=padding, align_corners=align)
    verdict = deep500.check_gradient(spec, [x, grid], backend)
    assert verdict["passed"], verdict
    assert [row["index"] for row in verdict["inputs"]] == [0, 1]
    assert all(row["status"] == "passed" and row["checked_elements"] > 0
               for row in verdict["inputs"]), verdict


@pytest.mark.parametrize("executor", ["reference", "backend:eigen,reference"])
def test_backward_matches_pytorch_autograd_through_a_model(tmp_path, executor):
    """The whole gradient, not a sample: a one-node model's backprop against
    torch.autograd of grid_sample (reflection padding, grid outside)."""
    import onnx.numpy_helper
    from onnx import helper, TensorProto
    x, grid = case(seed=4, dtype=np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode="bilinear",
                            padding_mode="reflection", align_corners=0)
    loss = helper.make_node("ReduceSum", ["yw"], ["loss"], keepdims=0)
    weights = np.random.default_rng(5).uniform(-1, 1, (2, 3, 5, 6)).astype(np.float32)
    mul = helper.make_node("Mul", ["y", "w"], ["yw"])
    graph = helper.make_graph(
        [node, mul, loss], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(weights, "w"), onnx.numpy_helper.from_array(grid, "grid")])
    path = str(tmp_path / "grid.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), path)
    _, grads = deep500.Executor(deep500.Model(path), executor).backprop({"x": x}, "loss")
    xt = torch.from_numpy(x).double().requires_grad_()
    gt = torch.from_numpy(grid).double().requires_grad_()
    y = torch.nn.functional.grid_sample(xt, gt, padding_mode="reflection", align_corners=False)
    (y * torch.from_numpy(weights).double()).sum().backward()
    np.testing.assert_allclose(grads["grid"], gt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["w"], y.detach().numpy(), rtol=1e-4, atol=1e-5)
