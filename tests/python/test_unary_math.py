"""The eigen backend's other element-wise functions (frameworks/eigen/
unary_math.cc) against NumPy, inside each function's domain, with the ONNX
attribute defaults and given values; gradients (the reference's backward)
against float64 finite differences."""
import numpy as np
import pytest

import deep500

SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875


def F32(v):
    return float(np.float32(v))

CASES = [  # op, attributes, NumPy, input range
    ("Sin", {}, np.sin, (-3, 3)), ("Cos", {}, np.cos, (-3, 3)), ("Tan", {}, np.tan, (-1.2, 1.2)),
    ("Asin", {}, np.arcsin, (-0.99, 0.99)), ("Acos", {}, np.arccos, (-0.99, 0.99)),
    ("Atan", {}, np.arctan, (-5, 5)), ("Sinh", {}, np.sinh, (-3, 3)),
    ("Cosh", {}, np.cosh, (-3, 3)), ("Asinh", {}, np.arcsinh, (-5, 5)),
    ("Acosh", {}, np.arccosh, (1.01, 5)), ("Atanh", {}, np.arctanh, (-0.99, 0.99)),
    ("Softsign", {}, lambda x: x / (1 + np.abs(x)), (-4, 4)),
    ("Selu", {}, lambda x: SELU_GAMMA * np.where(x > 0, x, SELU_ALPHA * (np.exp(x) - 1)), (-3, 3)),
    ("Selu", {"alpha": 2.0, "gamma": 3.0}, lambda x: 3 * np.where(x > 0, x, 2 * (np.exp(x) - 1)),
     (-3, 3)),
    ("Celu", {"alpha": 0.5}, lambda x: np.maximum(0, x) + np.minimum(0, 0.5 * (np.exp(x / 0.5) - 1)),
     (-3, 3)),
    # ONNX float attributes are float32: 0.2 is float32(0.2).
    ("HardSigmoid", {}, lambda x: np.clip(F32(0.2) * x + 0.5, 0, 1), (-4, 4)),
    ("HardSigmoid", {"alpha": 0.5, "beta": 0.1}, lambda x: np.clip(0.5 * x + F32(0.1), 0, 1),
     (-4, 4)),
    ("ThresholdedRelu", {"alpha": 0.7}, lambda x: np.where(x > 0.7, x, 0), (-2, 2)),
]


@pytest.mark.parametrize("op,attrs,numpy,span", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy(op, attrs, numpy, span, dtype):
    x = np.random.default_rng(0).uniform(*span, size=(3, 17)).astype(dtype)
    (y,) = deep500.run_operator(deep500.op(op, **attrs), [x], "eigen")
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, numpy(x.astype(np.float64)), rtol=tol, atol=tol)


@pytest.mark.parametrize("op,attrs,numpy,span", [c for c in CASES if c[0] != "ThresholdedRelu"])
def test_gradients_match_finite_differences(op, attrs, numpy, span):
    x = np.random.default_rng(1).uniform(*span, size=(2, 5))
    r = deep500.check_gradient(deep500.op(op, **attrs), [x], "eigen")
    assert r["passed"], r
