"""PRelu on the eigen backend (frameworks/eigen/binary.cc: the slope
broadcast to X over contiguous blocks) against PyTorch's prelu, per channel
and shared slopes, and its backward against float64 finite differences."""
import numpy as np
import pytest
import torch

import deep500


def case(x_shape, slope_shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, x_shape).astype(dtype),
            rng.uniform(-0.5, 0.5, slope_shape).astype(dtype))


@pytest.mark.parametrize("x_shape,slope_shape", [((2, 5, 4, 6), (5, 1, 1)), ((3, 7), (1,)),
                                                  ((2, 4, 9), (9,)), ((2, 3, 4, 5), (2, 3, 4, 5))])
def test_matches_pytorch(x_shape, slope_shape):
    x, slope = case(x_shape, slope_shape)
    (y,) = deep500.run_operator(deep500.op("PRelu"), [x, slope], "eigen")
    xt, st = torch.from_numpy(x), torch.from_numpy(slope)
    np.testing.assert_allclose(y, torch.where(xt < 0, st * xt, xt).numpy(), rtol=1e-6)
    if slope_shape == (5, 1, 1):
        want = torch.nn.functional.prelu(xt, st.reshape(5)).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-6)


@pytest.mark.parametrize("x_shape,slope_shape", [((2, 5, 4, 6), (5, 1, 1)), ((3, 7), (1,)),
                                                  ((2, 4, 9), (9,))])
def test_backward_matches_finite_differences(x_shape, slope_shape):
    x, slope = case(x_shape, slope_shape, np.float64, seed=1)
    verdict = deep500.check_gradient(deep500.op("PRelu"), [x, slope], "eigen")
    assert verdict["passed"] and verdict["method"] == "finite differences", verdict
    assert [row["index"] for row in verdict["inputs"] if row["status"] == "passed"] == [0, 1]


def test_a_slope_larger_than_x_is_an_error_naming_both_shapes():
    """Refused by the eigen kernel (its output would be the broadcast shape);
    the reference then names the shapes."""
    x, slope = case((3, 1), (3, 4))
    with pytest.raises(deep500.Error, match=r"slope .* has shape \[3,4\], which does not "
                                            r"broadcast to X \[3,1\]"):
        deep500.run_operator(deep500.op("PRelu"), [x, slope], "eigen")
