"""RoiAlign on the eigen backend (frameworks/eigen/roi_align.cc: each box's
sampling points and corners worked out once, every channel a weighted
gather) against torchvision's roi_align (avg; aligned=True is half_pixel,
aligned=False output_half_pixel), with sampling ratios fixed and adaptive,
boxes reaching outside the image; max mode against the reference kernel
(checked by ONNX's node tests)."""
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
