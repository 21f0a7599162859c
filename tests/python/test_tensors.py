"""Tensors to and from NumPy: every dtype both ways, layouts, errors."""
import numpy as np
import pytest

import deep500

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          "uint16", "uint32", "uint64", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips(dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    y = deep500.as_tensor(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)


def test_non_contiguous_arrays_are_copied_in_order():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(deep500.as_tensor(x.T), x.T)
    np.testing.assert_array_equal(deep500.as_tensor(x[:, ::2]), x[:, ::2])


def test_scalars_lists_and_strings():
    assert deep500.as_tensor(2.5).shape == () and deep500.as_tensor(2.5) == 2.5
    np.testing.assert_array_equal(deep500.as_tensor([[1, 2], [3, 4]]), [[1, 2], [3, 4]])
    s = deep500.as_tensor(np.array([["a", "bc"], ["", "déf"]]))
    assert s.dtype == object and s.tolist() == [["a", "bc"], ["", "déf"]]


def test_an_unsupported_dtype_is_an_error_naming_it():
    with pytest.raises(deep500.Error, match="complex128 has no deep500 element type"):
        deep500.as_tensor(np.zeros(2, dtype=np.complex128))


def test_outputs_never_alias_the_callers_arrays():
    x = np.arange(4, dtype=np.float32)
    (y,) = deep500.run_operator(deep500.op("Identity"), [x])
    np.testing.assert_array_equal(y, x)
    assert not np.shares_memory(x, y)
    y[0] = 100  # outputs are writable arrays of their own
    assert x[0] == 0
