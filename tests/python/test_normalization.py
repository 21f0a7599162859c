"""The normalization family's kernels (the eigen backend's one kernel over a
normalized axis set, frameworks/eigen/normalization.cc, and the reference
kernels) against NumPy: InstanceNormalization, MeanVarianceNormalization
over several axis sets and LpNormalization (p 1 and 2) along every axis.
Gradients against float64 finite differences (InstanceNormalization's
computed by the eigen kernel itself, the others by the reference)."""
import numpy as np
import pytest

import deep500


def data(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(dtype)


def instance_norm(x, scale, bias, eps):
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    c = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean) / np.sqrt(var + eps) * scale.reshape(c) + bias.reshape(c)


def mvn(x, axes):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    return (x - mean) / (np.sqrt(((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)) + 1e-9)


def lp_norm(x, axis, p):
    return x / np.power(np.power(np.abs(x), p).sum(axis=axis, keepdims=True), 1.0 / p)


BACKENDS = ["eigen", "reference"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 4, 7), (3, 2, 2, 3, 2), (2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_instance_normalization(backend, shape, dtype):
    x, scale, bias = data(shape, dtype), data(shape[1], dtype, 1), data(shape[1], dtype, 2)
    (y,) = deep500.run_operator(deep500.op("InstanceNormalization", epsilon=1e-3),
                                [x, scale, bias], backend)
    expected = instance_norm(x.astype(np.float64), scale.astype(np.float64),
                             bias.astype(np.float64), 1e-3)
    np.testing.assert_allclose(y, expected, rtol=1e-4 if dtype == np.float32 else 1e-10,
                               atol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axes", [[0, 2, 3], [2, 3], [1], [0, 1, 2, 3], [3], [1, 2]])
def test_mean_variance_normalization(backend, axes):
    x = data((2, 3, 4, 5))
    (y,) = deep500.run_operator(deep500.op("MeanVarianceNormalization", axes=axes), [x], backend)
    np.testing.assert_allclose(y, mvn(x, axes), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization(backend, axis, p):
    x = data((3, 4, 5))
    (y,) = deep500.run_operator(deep500.op("LpNormalization", axis=axis, p=p), [x], backend)
    np.testing.assert_allclose(y, lp_norm(x, axis, p), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec,inputs", [
    (deep500.op("InstanceNormalization"), lambda: [data((2, 3, 4)), data(3, seed=1),
                                                   data(3, seed=2)]),
    (deep500.op("InstanceNormalization", epsilon=0.01),
     lambda: [data((3, 4, 5, 6)), data(4, seed=1), data(4, seed=2)]),
    (deep500.op("LpNormalization", axis=1, p=1), lambda: [data((2, 3, 4))]),
    (deep500.op("LpNormalization", axis=0, p=2), lambda: [data((2, 3, 4))]),
])
def test_gradients_match_finite_differences(spec, inputs):
    r = deep500.check_gradient(spec, inputs(), "eigen")
    assert r["passed"] and r["method"] == "finite differences", r


def test_p_other_than_1_or_2_is_refused_naming_it():
    with pytest.raises(deep500.Error, match="p must be 1 or 2"):
        deep500.run_operator(deep500.op("LpNormalization", p=3), [data((2, 3))], "eigen")
