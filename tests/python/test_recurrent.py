"""RNN, GRU and LSTM on the eigen backend (frameworks/eigen/rnn.cc) against
PyTorch's nn.RNN / nn.GRU / nn.LSTM, both directions at once
(bidirectional), with and without sequence_lens shorter than the sequence:
PyTorch runs those rows as packed sequences, so its outputs past a row's
length are zeros and its final state is the one after the row's last step
(in reverse, the row starts at its own last step), as ONNX defines them.
Rows of length 0, which PyTorch refuses, against the reference kernel.

Backward (frameworks/eigen/rnn_backward.cc): the eigen kernel's own
gradients against float64 finite differences for every cell, direction,
layout, sequence_lens and initial states, and the whole gradient of a
bidirectional GRU / LSTM against torch.autograd."""
import numpy as np
import pytest
import torch

import deep500

S, B, I, H = 7, 4, 5, 6
# ONNX gate order from PyTorch's: LSTM i, f, g, o -> i, o, f, c; GRU r, z, n -> z, r, h.
ORDER = {"RNN": [0], "GRU": [1, 0, 2], "LSTM": [0, 3, 1, 2]}
MODULE = {"RNN": torch.nn.RNN, "GRU": torch.nn.GRU, "LSTM": torch.nn.LSTM}


def onnx_weights(module, op, of=lambda p: p):
    """W, R, B in ONNX's layout; of(parameter) picks what (the parameter, its .grad)."""
    def gates(name):
        t = of(getattr(module, name))
        return torch.cat([t.chunk(len(ORDER[op]))[k] for k in ORDER[op]])

    w, r, b = [], [], []
    for suffix in ("", "_reverse"):
        w.append(gates("weight_ih_l0" + suffix))
        r.append(gates("weight_hh_l0" + suffix))
        b.append(torch.cat([gates("bias_ih_l0" + suffix), gates("bias_hh_l0" + suffix)]))
    return [torch.stack(t).detach().numpy().astype(np.float32) for t in (w, r, b)]


def pytorch_run(module, x, lens):
    xt = torch.from_numpy(x)
    with torch.no_grad():
        if lens is None:
            y, state = module(xt)
        else:
            packed = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lens),
                                                             enforce_sorted=False)
            y, state = module(packed)
            y = torch.nn.utils.rnn.pad_packed_sequence(y, total_length=S)[0]
    h = state[0] if isinstance(state, tuple) else state
    # PyTorch's Y is [S, B, 2H]; ONNX's [S, 2, B, H].
    return y.reshape(S, B, 2, H).permute(0, 2, 1, 3).numpy(), h.numpy()


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("lens", [None, [7, 3, 1, 5]])
def test_matches_pytorch(op, lens):
    torch.manual_seed(0)
    module = MODULE[op](I, H, bidirectional=True)
    x = np.random.default_rng(1).standard_normal((S, B, I)).astype(np.float32)
    inputs = [x] + onnx_weights(module, op)
    if lens is not None:
        inputs.append(np.array(lens, dtype=np.int32))
    attrs = {"linear_before_reset": 1} if op == "GRU" else {}
    spec = deep500.op(op, hidden_size=H, direction="bidirectional", outputs=2, **attrs)
    y, yh = deep500.run_operator(spec, inputs, "eigen")
    want_y, want_h = pytorch_run(module, x, lens)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(yh, want_h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_an_empty_sequence_keeps_its_initial_state_as_the_reference(op):
    """Length 0 (PyTorch refuses it): outputs zeros, final state = initial state."""
    torch.manual_seed(0)
    module = MODULE[op](I, H, bidirectional=True)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((S, B, I)).astype(np.float32)
    h0 = rng.standard_normal((2, B, H)).astype(np.float32)
    lens = np.array([0, 7, 2, 0], np.int32)
    inputs = [x] + onnx_weights(module, op) + [lens, h0]
    attrs = {"linear_before_reset": 1} if op == "GRU" else {}
    spec = deep500.op(op, hidden_size=H, direction="bidirectional", outputs=2, **attrs)
    y, yh = deep500.run_operator(spec, inputs, "eigen")
    ref_y, ref_h = deep500.run_operator(spec, inputs, "reference")
    np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(yh, ref_h, rtol=1e-5, atol=1e-6)
    assert not y[:, :, 0].any() and np.array_equal(yh[:, 0], h0[:, 0])


def test_a_length_past_the_sequence_is_an_error_naming_it():
    module = torch.nn.GRU(I, H, bidirectional=True)
    x = np.zeros((S, B, I), np.float32)
    spec = deep500.op("GRU", hidden_size=H, direction="bidirectional", linear_before_reset=1)
    with pytest.raises(deep500.Error, match="sequence length 9 outside"):
        deep500.run_operator(spec, [x] + onnx_weights(module, "GRU") +
                             [np.array([7, 9, 1, 1], np.int32)], "eigen")


@pytest.mark.parametrize("op,attrs", [("RNN", {}), ("GRU", {"linear_before_reset": 0}),
                                      ("GRU", {"linear_before_reset": 1}), ("LSTM", {})])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout,lens", [(0, None), (0, [3, 0, 2]), (1, [1, 3, 3])])
def test_backward_matches_finite_differences(op, attrs, direction, layout, lens):
    """X, W, R, B and the initial states, every output's gradient seeded."""
    s, b, i, h = 3, 3, 4, 5
    dirs = 2 if direction == "bidirectional" else 1
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (s, b, i) if layout == 0 else (b, s, i))
    state = (dirs, b, h) if layout == 0 else (b, dirs, h)
    inputs = [x, rng.uniform(-0.6, 0.6, (dirs, g * h, i)), rng.uniform(-0.6, 0.6, (dirs, g * h, h)),
              rng.uniform(-0.3, 0.3, (dirs, 2 * g * h)),
              np.array(lens if lens else [s] * b, np.int32), rng.uniform(-1, 1, state)]
    if op == "LSTM":
        inputs.append(rng.uniform(-1, 1, state))
    spec = deep500.op(op, hidden_size=h, direction=direction, layout=layout,
                      outputs=3 if op == "LSTM" else 2, **attrs)
    verdict = deep500.check_gradient(spec, inputs, "eigen")
    assert verdict["passed"], verdict
    assert verdict["method"] == "finite differences"
    checked = {row["index"] for row in verdict["inputs"]
               if row["status"] == "passed" and row["checked_elements"] > 0}
    assert checked == {0, 1, 2, 3, 5} | ({6} if op == "LSTM" else set()), verdict


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_backward_matches_pytorch_autograd(tmp_path, op):
    """The whole gradient of a bidirectional layer (X, W, R, B) through a
    model whose loss weighs Y and Y_h, against torch.autograd."""
    import onnx.numpy_helper
    from onnx import helper, TensorProto
    torch.manual_seed(3)
    module = MODULE[op](I, H, bidirectional=True)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((S, B, I)).astype(np.float32)
    wy = rng.standard_normal((S, 2, B, H)).astype(np.float32)
    wh = rng.standard_normal((2, B, H)).astype(np.float32)
    w, r, b = onnx_weights(module, op)
    attrs = {"linear_before_reset": 1} if op == "GRU" else {}
    nodes = [helper.make_node(op, ["x", "W", "R", "B"], ["y", "yh"], hidden_size=H,
                              direction="bidirectional", **attrs),
             helper.make_node("Mul", ["y", "wy"], ["py"]),
             helper.make_node("Mul", ["yh", "wh"], ["ph"]),
             helper.make_node("ReduceSum", ["py"], ["ly"], keepdims=0),
             helper.make_node("ReduceSum", ["ph"], ["lh"], keepdims=0),
             helper.make_node("Add", ["ly", "lh"], ["loss"])]
    constants = {"x": x, "W": w, "R": r, "B": b, "wy": wy, "wh": wh}
    graph = helper.make_graph(
        nodes, "g", [], [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(v, k) for k, v in constants.items()])
    path = str(tmp_path / "rnn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    executor = deep500.Executor(deep500.Model(path), "backend:eigen,reference")
    _, grads = executor.backprop({}, "loss")

    xt = torch.from_numpy(x).requires_grad_()
    y, state = module(xt)
    hn = state[0] if isinstance(state, tuple) else state
    y = y.reshape(S, B, 2, H).permute(0, 2, 1, 3)
    ((y * torch.from_numpy(wy)).sum() + (hn * torch.from_numpy(wh)).sum()).backward()
    want = dict(zip("WRB", onnx_weights(module, op, of=lambda p: p.grad)))
    want["x"] = xt.grad.numpy()
    for name in "xWRB":
        np.testing.assert_allclose(grads[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
