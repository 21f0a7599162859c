"""DepthToSpace and SpaceToDepth on the onednn backend (frameworks/onednn/
transpose.cc: one strided copy of the input's 6-D view) against PyTorch's
pixel_shuffle / pixel_unshuffle (DepthToSpace CRD, SpaceToDepth) and NumPy's
reshape-transpose of the ONNX definition (DCR), forward and backward."""
import numpy as np
import pytest
import torch

import deep500


def x_of(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def dcr(x, b):  # the ONNX definition of DepthToSpace, mode DCR
    n, c, h, w = x.shape
    t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return t.reshape(n, c // (b * b), h * b, w * b)


@pytest.mark.parametrize("b,shape", [(2, (2, 8, 3, 5)), (3, (1, 18, 4, 4)), (1, (2, 3, 4, 5))])
def test_depth_to_space_matches_the_onnx_definition_and_pytorch(b, shape):
    x = x_of(shape)
    (y,) = deep500.run_operator(deep500.op("DepthToSpace", blocksize=b), [x], "onednn")
    np.testing.assert_array_equal(y, dcr(x, b))
    (y,) = deep500.run_operator(deep500.op("DepthToSpace", blocksize=b, mode="CRD"), [x],
                                "onednn")
    np.testing.assert_array_equal(y, torch.nn.functional.pixel_shuffle(torch.from_numpy(x), b))


@pytest.mark.parametrize("b,shape", [(2, (2, 3, 4, 6)), (3, (1, 2, 9, 6))])
def test_space_to_depth_matches_the_onnx_definition(b, shape):
    x = x_of(shape)
    (y,) = deep500.run_operator(deep500.op("SpaceToDepth", blocksize=b), [x], "onednn")
    n, c, h, w = shape
    want = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    np.testing.assert_array_equal(y, want.reshape(n, c * b * b, h // b, w // b))
    # The inverse of DepthToSpace DCR.
    (back,) = deep500.run_operator(deep500.op("DepthToSpace", blocksize=b), [y], "onednn")
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("op,attrs,shape", [("DepthToSpace", {}, (2, 8, 3, 5)),
                                            ("DepthToSpace", {"mode": "CRD"}, (2, 8, 3, 5)),
                                            ("SpaceToDepth", {}, (2, 3, 4, 6))])
def test_backward_matches_the_reference(op, attrs, shape):
    verdict = deep500.check_gradient(deep500.op(op, blocksize=2, **attrs), [x_of(shape, 1)],
                                     "onednn")
    assert verdict["passed"] and verdict["method"] == "reference backward", verdict
    assert verdict["implementation"].startswith("onednn:"), verdict


def test_indivisible_channels_are_an_error_naming_the_node():
    with pytest.raises(deep500.Error, match="channels 6 must be divisible by blocksize"):
        deep500.run_operator(deep500.op("DepthToSpace", blocksize=2), [x_of((1, 6, 2, 2))],
                             "onednn")
