"""The eigen backend's reductions (frameworks/eigen/reduce.cc: one kernel,
each element transformed, combined and finished) and the reference's
against NumPy over several axis sets, with and without keepdims; gradients
against float64 finite differences."""
import numpy as np
import pytest

import deep500

NUMPY = {
    "ReduceSum": lambda x, a, k: x.sum(axis=a, keepdims=k),
    "ReduceMean": lambda x, a, k: x.mean(axis=a, keepdims=k),
    "ReduceMax": lambda x, a, k: x.max(axis=a, keepdims=k),
    "ReduceMin": lambda x, a, k: x.min(axis=a, keepdims=k),
    "ReduceL1": lambda x, a, k: np.abs(x).sum(axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt((x * x).sum(axis=a, keepdims=k)),
    "ReduceSumSquare": lambda x, a, k: (x * x).sum(axis=a, keepdims=k),
    "ReduceLogSum": lambda x, a, k: np.log(x.sum(axis=a, keepdims=k)),
    "ReduceLogSumExp": lambda x, a, k: np.log(np.exp(x).sum(axis=a, keepdims=k)),
}


def data(shape=(2, 3, 4, 5), seed=0, op=None):
    x = np.random.default_rng(seed).uniform(-2, 2, size=shape)
    return np.abs(x) + 0.1 if op == "ReduceLogSum" else x  # LogSum of positive sums


@pytest.mark.parametrize("backend", ["eigen", "reference"])
@pytest.mark.parametrize("op", ["ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                "ReduceLogSum", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes", [[1], [3], [0, 2], [1, 2, 3], [0, 1, 2, 3]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_forward_matches_numpy(backend, op, axes, keepdims):
    x = data(op=op)
    (y,) = deep500.run_operator(deep500.op(op, axes=axes, keepdims=keepdims), [x], backend)
    np.testing.assert_allclose(y, NUMPY[op](x, tuple(axes), bool(keepdims)), rtol=1e-12)


@pytest.mark.parametrize("op", sorted(NUMPY))
@pytest.mark.parametrize("axes", [[1], [3], [0, 2], [1, 2, 3]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_gradients_match_finite_differences(op, axes, keepdims):
    """The eigen kernel's own backward, all nine reductions."""
    if op == "ReduceSum":  # axes an input since opset 13
        spec, inputs = deep500.op(op, keepdims=keepdims), [data(), np.array(axes)]
    else:
        spec, inputs = deep500.op(op, axes=axes, keepdims=keepdims), [data(op=op)]
    r = deep500.check_gradient(spec, inputs, "eigen")
    assert r["passed"] and r["method"] == "finite differences", r
    assert r["inputs"][0]["status"] == "passed" and r["inputs"][0]["checked_elements"] > 0, r


def test_log_sum_exp_is_stable_and_keeps_infinities():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 0.0], [-1000.0, -1001.0]])
    (y,) = deep500.run_operator(deep500.op("ReduceLogSumExp", axes=[1], keepdims=0), [x], "eigen")
    np.testing.assert_allclose(y[[0, 3]], [1000 + np.log(2), -1000 + np.log1p(np.exp(-1))])
    assert y[1] == -np.inf and y[2] == np.inf
