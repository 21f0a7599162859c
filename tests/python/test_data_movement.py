"""Concat, Split and Gather on the eigen backend (frameworks/eigen/
data_movement.cc: row copies of any fixed-size element type) against
NumPy's concatenate, split and take, along every axis, with negative
indices and empty parts; gradients against float64 finite differences."""
import numpy as np
import pytest

import deep500

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_, np.float16, np.uint8]


def values(shape, dtype, seed=0):
    v = np.random.default_rng(seed).uniform(-5, 5, size=shape)
    return (v > 0) if dtype == np.bool_ else v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_matches_numpy(dtype, axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i, s in enumerate(shapes):
        s[axis] = i + 1 if axis != 0 else 2 * i + 1
    xs = [values(s, dtype, k) for k, s in enumerate(shapes)]
    (y,) = deep500.run_operator(deep500.op("Concat", axis=axis), xs, "eigen")
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=axis))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis,sizes", [(0, [1, 3]), (1, [2, 0, 1]), (2, None), (-1, [4])])
def test_split_matches_numpy(dtype, axis, sizes):
    x = values((4, 3, 4), dtype)
    inputs = [x] if sizes is None else [x, np.array(sizes, np.int64)]
    parts = 2 if sizes is None else len(sizes)
    ys = deep500.run_operator(deep500.op("Split", axis=axis, outputs=parts), inputs, "eigen")
    cuts = np.cumsum(sizes)[:-1] if sizes is not None else 2
    for y, e in zip(ys, np.split(x, cuts, axis=axis)):
        np.testing.assert_array_equal(y, e)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("index_type", [np.int64, np.int32])
def test_gather_matches_numpy(dtype, axis, index_type):
    x = values((5, 4, 3), dtype)
    n = x.shape[axis]
    idx = np.array([[0, n - 1], [-1, 1], [2 % n, -n]], dtype=index_type)
    (y,) = deep500.run_operator(deep500.op("Gather", axis=axis), [x, idx], "eigen")
    np.testing.assert_array_equal(y, np.take(x, idx, axis=axis))


def test_out_of_range_index_is_an_error_naming_it():
    with pytest.raises(deep500.Error, match=r"Gather index 5 is out of range \[-5, 4\]"):
        deep500.run_operator(deep500.op("Gather"), [values((5, 2), np.float32),
                                                    np.array([1, 5], np.int64)], "eigen")


@pytest.mark.parametrize("spec,inputs", [
    (deep500.op("Concat", axis=1), [values((2, 3), np.float64, 1), values((2, 2), np.float64, 2)]),
    (deep500.op("Gather", axis=1), [values((3, 4), np.float64, 3), np.array([3, 0, 3], np.int64)]),
])
def test_gradients_match_finite_differences(spec, inputs):
    r = deep500.check_gradient(spec, inputs, "eigen")
    assert r["passed"], r
