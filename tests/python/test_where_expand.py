"""The eigen backend's Where and Expand (frameworks/eigen/elementwise.cc:
broadcast blocks, any fixed-size element type) against NumPy's where and
broadcast_to, over broadcast patterns and element types; gradients against
float64 finite differences."""
import numpy as np
import pytest

import deep500

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_, np.uint8, np.float16]


def values(shape, dtype, seed):
    v = np.random.default_rng(seed).uniform(-5, 5, size=shape)
    return (v > 0) if dtype == np.bool_ else v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [
    [(3, 4), (3, 4), (3, 4)], [(4,), (2, 3, 4), ()], [(2, 1, 5), (1, 4, 5), (5,)],
    [(1, 1, 8, 8), (2, 4, 8, 8), ()], [(6, 1), (6, 1), (6, 1)], [(), (2, 3), (2, 3)]])
def test_where_matches_numpy(dtype, shapes):
    c = values(shapes[0], np.bool_, 0)
    a, b = values(shapes[1], dtype, 1), values(shapes[2], dtype, 2)
    (y,) = deep500.run_operator(deep500.op("Where"), [c, a, b], "eigen")
    expected = np.where(c, a, b)
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,target", [
    ((3, 1), (3, 4)), ((4,), (2, 3, 4)), ((1,), (5, 6)), ((2, 1, 3), (2, 4, 3)),
    ((1, 8), (3, 1, 8)), ((2, 3), (2, 3)), ((3, 1), (1, 5))])
def test_expand_matches_numpy(dtype, shape, target):
    x = values(shape, dtype, 3)
    (y,) = deep500.run_operator(deep500.op("Expand"), [x, np.array(target, np.int64)], "eigen")
    expected = x * np.ones(target, dtype=x.dtype) if dtype != np.bool_ else \
        np.broadcast_to(x, np.broadcast_shapes(shape, target))
    np.testing.assert_array_equal(y, np.broadcast_to(x, expected.shape))


@pytest.mark.parametrize("shape,target", [((3, 1), (3, 4)), ((4,), (2, 3, 4)), ((1,), (5, 6)),
                                          ((2, 1, 3), (2, 4, 3)), ((2, 3), (2, 3))])
def test_expand_gradient_matches_finite_differences(shape, target):
    r = deep500.check_gradient(deep500.op("Expand"), [values(shape, np.float64, 4),
                                                      np.array(target, np.int64)], "eigen")
    assert r["passed"] and r["method"] == "finite differences", r
    assert r["inputs"][0]["status"] == "passed", r


@pytest.mark.parametrize("shapes", [
    [(3, 4), (3, 4), (4,)], [(4,), (2, 3, 4), ()], [(2, 1, 5), (1, 4, 5), (5,)],
    [(1, 1, 8, 8), (2, 4, 8, 8), (2, 1, 1, 1)], [(), (2, 3), (2, 3)]])
def test_where_gradient_matches_finite_differences(shapes):
    c = values(shapes[0], np.bool_, 5)
    r = deep500.check_gradient(deep500.op("Where"), [c, values(shapes[1], np.float64, 6),
                                                     values(shapes[2], np.float64, 7)], "eigen")
    assert r["passed"] and r["method"] == "finite differences", r
    assert [row["index"] for row in r["inputs"] if row["status"] == "passed"] == [1, 2], r
