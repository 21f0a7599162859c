"""RoiAlign on the eigen backend (frameworks/eigen/roi_align.cc: each box's
sampling points and corners worked out once, every channel a weighted
gather) against torchvision's roi_align (avg; aligned=True is half_pixel,
aligned=False output_half_pixel), with sampling ratios fixed and adaptive,
boxes reaching outside the image; max mode against the reference kernel
(checked by ONNX's node tests). Backward to X (the eigen kernel's is the
reference's) against float64 finite differences and, for avg, against
torchvision's autograd."""
import numpy as np
import pytest
import torch
import torchvision

import deep500

BOXES = np.array([[1.0, 1.5, 9.0, 6.0], [0.0, 0.0, 15.0, 11.0], [-3.0, 4.0, 5.5, 14.0],
                  [6.2, 2.1, 6.9, 2.4]], dtype=np.float32)
BATCH = np.array([0, 1, 1, 0], dtype=np.int64)


def image(dtype=np.float32):
    return np.random.default_rng(0).uniform(-1, 1, size=(2, 3, 12, 16)).astype(dtype)


@pytest.mark.parametrize("half_pixel", [True, False])
@pytest.mark.parametrize("sampling", [0, 2])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_avg_matches_torchvision(half_pixel, sampling, scale):
    x = image()
    mode = "half_pixel" if half_pixel else "output_half_pixel"
    spec = deep500.op("RoiAlign", opset=16, output_height=3, output_width=4,
                      sampling_ratio=sampling, spatial_scale=scale,
                      coordinate_transformation_mode=mode)
    (y,) = deep500.run_operator(spec, [x, BOXES, BATCH], "eigen")
    rois = torch.cat([torch.from_numpy(BATCH).float()[:, None], torch.from_numpy(BOXES)], 1)
    expected = torchvision.ops.roi_align(torch.from_numpy(x).double(), rois.double(), (3, 4),
                                         spatial_scale=scale, sampling_ratio=sampling,
                                         aligned=half_pixel).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sampling", [0, 3])
def test_max_matches_the_reference(sampling):
    x = image(np.float64)
    spec = deep500.op("RoiAlign", opset=16, mode="max", output_height=2, output_width=2,
                      sampling_ratio=sampling)
    (fast,) = deep500.run_operator(spec, [x, BOXES.astype(np.float64), BATCH], "eigen")
    (ref,) = deep500.run_operator(spec, [x, BOXES.astype(np.float64), BATCH], "reference")
    np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-12)


def test_a_batch_index_out_of_range_is_an_error_naming_it():
    with pytest.raises(deep500.Error, match=r"batch_indices\[1\] = 5 is out of range"):
        deep500.run_operator(deep500.op("RoiAlign", opset=16),
                             [image(), BOXES[:2], np.array([0, 5], np.int64)], "eigen")


@pytest.mark.parametrize("backend", ["reference", "eigen"])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sampling", [0, 2])
def test_backward_matches_finite_differences(backend, mode, sampling):
    x = image(np.float64)
    spec = deep500.op("RoiAlign", opset=16, mode=mode, output_height=3, output_width=2,
                      sampling_ratio=sampling)
    verdict = deep500.check_gradient(spec, [x, BOXES.astype(np.float64), BATCH], backend)
    assert verdict["passed"], verdict
    rows = {row["index"]: row["status"] for row in verdict["inputs"]}
    assert rows[0] == "passed", verdict  # boxes and indices carry no gradient


def test_avg_backward_matches_torchvision_autograd(tmp_path):
    import onnx.numpy_helper
    from onnx import helper, TensorProto
    x = image()
    weights = np.random.default_rng(6).uniform(-1, 1, (4, 3, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "one"], ["xs"]),
             helper.make_node("RoiAlign", ["xs", "rois", "batch"], ["y"], output_height=3,
                              output_width=4, sampling_ratio=2, coordinate_transformation_mode=
                              "half_pixel"),
             helper.make_node("Mul", ["y", "w"], ["yw"]),
             helper.make_node("ReduceSum", ["yw"], ["loss"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("rois", TensorProto.FLOAT, BOXES.shape)],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(weights, "w"), onnx.numpy_helper.from_array(x, "x"),
         onnx.numpy_helper.from_array(np.ones(1, np.float32), "one"),
         onnx.numpy_helper.from_array(BATCH, "batch")])
    path = str(tmp_path / "roi.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), path)
    _, grads = deep500.Executor(deep500.Model(path), "reference").backprop({"rois": BOXES},
                                                                           "loss")
    xt = torch.from_numpy(x).double().requires_grad_()
    rois = torch.cat([torch.from_numpy(BATCH).double()[:, None], torch.from_numpy(BOXES).double()],
                     1)
    y = torchvision.ops.roi_align(xt, rois, (3, 4), sampling_ratio=2, aligned=True)
    (y * torch.from_numpy(weights).double()).sum().backward()
    np.testing.assert_allclose(grads["x"], xt.grad.numpy(), rtol=1e-4, atol=1e-6)
