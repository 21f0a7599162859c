"""GridSample on the eigen backend (frameworks/eigen/grid_sample.cc: taps
computed once per location, every channel a gather) and on the reference,
against PyTorch's grid_sample: bilinear and nearest, every padding mode,
align_corners on and off, grids reaching outside the input; bicubic on the
reference. (GridSample has no backward on any backend yet.)"""
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
