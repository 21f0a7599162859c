"""Level 0 from Python: operators run and checked on every backend, against
ONNX's own test data."""
import numpy as np
import pytest

import deep500


def test_backends_include_the_reference_and_the_built_ones():
    assert "reference" in deep500.backends()
    assert set(deep500.built_backends()) <= set(deep500.backends())


@pytest.mark.parametrize("backend", ["reference", "onednn"])
def test_conv_matches_onnx_test_data(onnx_node_test, backend):
    _, inputs, (expected,) = onnx_node_test("test_conv_with_strides_padding")
    spec = deep500.op("Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    (y,) = deep500.run_operator(spec, inputs, backend)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "onednn", "eigen"])
def test_matmul_matches_onnx_test_data(onnx_node_test, backend):
    _, inputs, (expected,) = onnx_node_test("test_matmul_2d")
    (y,) = deep500.run_operator(deep500.op("MatMul"), inputs, backend)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_optional_inputs_are_none():
    x = np.array([[-3.0, 0.5, 4.0]], dtype=np.float32)
    (y,) = deep500.run_operator(deep500.op("Clip", opset=13), [x, None, np.float32(1.0)])
    np.testing.assert_array_equal(y, [[-3.0, 0.5, 1.0]])


def test_check_operator_compares_a_backend_with_the_reference():
    rng = np.random.default_rng(0)
    inputs = [rng.random((2, 3, 8, 8), dtype=np.float32), rng.random((4, 3, 3, 3), dtype=np.float32)]
    r = deep500.check_operator(deep500.op("Conv", pads=[1, 1, 1, 1]), inputs, "onednn")
    assert r["passed"], r
    assert r["status"] == "passed" and r["max_abs_error"] < 1e-4
    assert r["implementation"].startswith("onednn:")


def test_op_check_runs_the_cli_checks_on_every_backend():
    spec = deep500.op("Conv", pads=[1, 1, 1, 1])
    r = deep500.op_check(spec, ["x:float32:1x3x6x6", "w:float32:4x3x3x3"], ["reference", "onednn"],
                         grad=True, seed=3)
    assert r["ok"] and r["failed"] == 0, r
    assert r["passed"] == 4, r  # forward and gradient on both backends
    checks = r["problems"][0]["checks"]
    assert [(c["backend"], c["kind"]) for c in checks] == [
        ("reference", "forward"), ("reference", "gradient"),
        ("onednn", "forward"), ("onednn", "gradient")]
    forward = checks[2]["lines"][0]
    assert forward["status"] == "passed" and 0 <= forward["max_abs_error"] < 1e-4, forward
    assert checks[3]["lines"][0]["check"] == "gradient (ref)"  # float32 only: against the reference
    with pytest.raises(deep500.Error, match="no_such"):
        deep500.op_check(spec, ["x:float32:1x3x6x6", "w:float32:4x3x3x3"], ["no_such"])


def test_bad_attributes_and_shapes_are_errors_with_the_cli_messages():
    x = np.zeros((1, 3), dtype=np.float32)
    with pytest.raises(deep500.Error, match="Relu has no attribute 'alpha'"):
        deep500.run_operator(deep500.op("Relu", alpha=2.0), [x])
    with pytest.raises(deep500.Error, match="NoSuchOp"):
        deep500.run_operator(deep500.op("NoSuchOp"), [x])
    with pytest.raises(deep500.Error, match="MatMul"):
        deep500.run_operator(deep500.op("MatMul"), [x, x])


def test_benchmark_operator_times_every_backend_and_pass():
    # reference then oneDNN, forward and backward, each first run isolated in
    # a child process: this once hung (a oneDNN kernel made before fork()
    # kept the parent's thread count).
    spec = deep500.op("Conv", pads=[1, 1, 1, 1])
    r = deep500.benchmark_operator(spec, ["x:float32:1x8x16x16", "w:float32:8x8x3x3"],
                                   ["reference", "onednn"], backward=True, min_reps=5,
                                   min_time=0.01)
    assert r["errors"] == 0 and not r["interrupted"], r["log"]
    rows = {(x["labels"]["backend"], x["labels"]["pass"]) for x in r["results"]}
    assert rows == {(b, p) for b in ("reference", "onednn") for p in ("forward", "backward")}
    for x in r["results"]:
        assert x["statistics"]["median"] > 0 and x["statistics"]["n"] >= 5


def test_benchmark_operator_reports_device_timer_and_percent_of_peak():
    spec = deep500.op("Gemm")
    r = deep500.benchmark_operator(spec, ["a:float32:64x64", "b:float32:64x64"], ["onednn"],
                                   min_reps=5, min_time=0.01, cache="cold",
                                   include_transfers=True)
    assert r["errors"] == 0, r["log"]
    (x,) = r["results"]  # a host backend: no row with transfers
    assert x["device"] == "host" and x["timer"] == "steady_clock"
    assert x["settings"]["cache"] == "cold"
    assert 0 < x["percent_of_peak"]["flops"] < 200, x["percent_of_peak"]
    assert x["transfers"]["copies"] == 0
    with pytest.raises(deep500.Error, match="cache"):
        deep500.benchmark_operator(spec, ["a:float32:4x4", "b:float32:4x4"], cache="warm")


def test_devices_lists_the_gpus_the_driver_reports():
    import os
    gpus = os.listdir("/proc/driver/nvidia/gpus") if os.path.isdir("/proc/driver/nvidia/gpus") \
        else []
    devices = deep500.devices()
    assert len(devices) == (len(gpus) if "cudnn" in deep500.built_backends() else 0)
    for i, d in enumerate(devices):
        assert d["device"] == f"cuda:{i}" and d["name"] and d["driver"], d


def test_misuse_of_operators_is_an_error_not_a_crash_or_garbage():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(deep500.Error, match="--backend|backend.*onenn|onenn"):
        deep500.check_operator(deep500.op("Relu"), [x], "onenn")  # a typo, not "skipped"
    with pytest.raises(deep500.Error, match="onenn"):
        deep500.run_operator(deep500.op("Relu"), [x], "onenn")
    add = deep500.Operator(deep500.op("Add"), [x, x], "reference")
    with pytest.raises(deep500.Error, match="forward takes 2 inputs"):
        add.forward([x])  # used to crash the interpreter
    with pytest.raises(deep500.Error, match="created for float32\\[2,3\\]"):
        add.forward([np.ones((3, 2), np.float32), x])
    assert add.forward([x, x])[0].tolist() == (2 * x).tolist()
    relu = deep500.Operator(deep500.op("Relu"), [x], "onednn")
    with pytest.raises(deep500.Error, match="input 0 is float64"):
        relu.forward([x.astype(np.float64)])  # used to read float64 bytes as float32


def test_a_communicator_kept_after_in_process_ranks_fails_instead_of_crashing():
    kept = []
    deep500.in_process_ranks(2, lambda c: kept.append(c))
    with pytest.raises(deep500.Error, match="group ended when in_process_ranks returned"):
        kept[0].barrier()  # used to crash the interpreter (SIGSEGV)
    with pytest.raises(deep500.Error, match="at most 604800 seconds"):
        deep500.in_process_ranks(2, lambda c: c.barrier(), timeout_seconds=1e300)  # used to hang
