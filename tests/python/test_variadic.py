"""Sum, Mean, Max and Min of several inputs on the eigen backend
(frameworks/eigen/variadic.cc: broadcast blocks, one fold per block)
against NumPy, over broadcast patterns and one to four inputs; gradients
against float64 finite differences."""
import numpy as np
import pytest

import deep500

NUMPY = {"Sum": lambda xs: np.sum(np.broadcast_arrays(*xs), axis=0),
         "Mean": lambda xs: np.mean(np.broadcast_arrays(*xs), axis=0),
         "Max": lambda xs: np.max(np.broadcast_arrays(*xs), axis=0),
         "Min": lambda xs: np.min(np.broadcast_arrays(*xs), axis=0)}
SHAPES = [[(3, 8)], [(3, 8), (3, 8)], [(2, 3, 8), (8,), ()], [(4, 1, 6), (1, 5, 6), (6,), (4, 5, 6)]]


@pytest.mark.parametrize("op", list(NUMPY))
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy(op, shapes, dtype):
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-3, 3, size=s).astype(dtype) for s in shapes]
    (y,) = deep500.run_operator(deep500.op(op), xs, "eigen")
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(y, NUMPY[op](xs), rtol=tol, atol=tol)


@pytest.mark.parametrize("op", list(NUMPY))
def test_gradients_match_finite_differences(op):
    rng = np.random.default_rng(1)
    r = deep500.check_gradient(deep500.op(op), [rng.uniform(-3, 3, (2, 4)),
                                                rng.uniform(-3, 3, (4,))], "eigen")
    assert r["passed"], r
