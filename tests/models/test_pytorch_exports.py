"""Models exported from PyTorch by these tests, loaded in tractile with symbolic dims.

Each model is exported once per module (``torch.onnx.export``) and loaded once; the test then
checks the typed output facts keep the symbols of the exported dynamic axes (``N`` batch, ``T``
time: never concrete, never a fresh ``_u`` symbol) and that one loaded model matches PyTorch's
own outputs and onnxruntime's for several batch sizes and sequence lengths.

Two exporters:

* TorchScript (``dynamo=False``, opset 17, ``dynamic_axes``): what most ONNX files in the wild
  come from. Control flow comes from ``torch.jit.script`` (``if`` on data -> ``If``, a ``for``
  over a tensor-given count with a loop-carried value and a data-dependent ``while`` -> ``Loop``);
  shape arithmetic is ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``.
* dynamo (``dynamo=True``, ``torch.export`` with ``dynamic_shapes``, onnxscript's translation and
  optimizer, its default opset 20): ``torch.cond`` -> ``If``, ``while_loop`` -> ``Loop``; shape
  arithmetic is ``Shape(start, end) -> Concat -> Reshape``. ``torch.export`` specializes the time
  axis of ``nn.LSTM`` / ``nn.GRU`` to the example's length, so those are exported with a dynamic
  batch only.

Checking the facts twice (as exported, and with the outputs' declared shapes removed) shows that
the symbols come from tractile's analysis, not from the file's declarations.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the 'test' extra pins torch==2.13.0)")
onnx = pytest.importorskip("onnx")

from torch import nn  # noqa: E402

import tractile  # noqa: E402

from ..conftest import run_onnxruntime  # noqa: E402

RNG = np.random.default_rng(2024)


# exporters -----------------------------------------------------------------------------------------
def export_torchscript(module, args, input_names, output_names, dynamic_axes):
    """The ONNX model of ``module`` from the TorchScript exporter (opset 17)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=17, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes)
    return onnx.load_from_string(buffer.getvalue())


def export_dynamo(module, args, dynamic_shapes):
    """The ONNX model of ``module`` from the dynamo exporter (needs onnxscript)."""
    pytest.importorskip("onnxscript", reason="the dynamo ONNX exporter needs onnxscript")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, args, dynamo=True, dynamic_shapes=dynamic_shapes, verbose=False)
    return program.model_proto


# models ---------------------------------------------------------------------------------------------
class ScriptedBranch(nn.Module):
    """A data-dependent ``if`` (scripted: an ONNX If)."""

    def forward(self, x):
        if bool(x.sum() > 0):
            y = torch.relu(x) * 2.0
        else:
            y = x - 1.0
        return y


class CondBranch(nn.Module):
    """A data-dependent branch through ``torch.cond`` (dynamo: an ONNX If)."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda v: torch.relu(v) * 2.0, lambda v: v - 1.0, (x,))


class ScriptedLoops(nn.Module):
    """A ``for`` over a count given as a tensor with a loop-carried value, then a ``while`` whose
    condition reads that value (scripted: two ONNX Loops)."""

    def forward(self, x, count):
        acc = torch.zeros_like(x)
        for step in range(int(count)):
            acc = acc * 0.5 + x * float(step)
        doublings = 0
        while bool(acc.abs().sum() < 100.0) and doublings < 8:
            acc = acc * 2.0
            doublings += 1
        return acc


class WhileLoop(nn.Module):
    """``while_loop`` with a carried counter and value (dynamo: an ONNX Loop with a condition)."""

    def forward(self, x, count):
        from torch._higher_order_ops.while_loop import while_loop

        def condition(step, acc):
            return step < count

        def body(step, acc):
            return step + 1, acc * 0.5 + x

        return while_loop(condition, body, (torch.zeros((), dtype=torch.int64), torch.zeros_like(x)))[1]


class Recurrent(nn.Module):
    """A batch-first recurrent layer (``nn.LSTM`` or ``nn.GRU``), then a linear head on every step."""

    def __init__(self, cell, **options):
        super().__init__()
        self.rnn = cell(4, 6, batch_first=True, **options)
        self.head = nn.Linear(6 * (2 if options.get("bidirectional") else 1), 3)

    def forward(self, x):
        y, state = self.rnn(x)
        last = state[0] if isinstance(state, tuple) else state
        return self.head(y), last


class FrameCnn(nn.Module):
    """Per-frame features from a 2-D conv over (time, bins), ``reshape(b, t, -1)``, a linear layer."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.linear = nn.Linear(4 * 8, 10)

    def forward(self, x):  # x: [N, T, 8]
        b, t = x.size(0), x.size(1)
        y = torch.relu(self.conv(x.unsqueeze(1)))  # [N, 4, T, 8]
        return self.linear(y.permute(0, 2, 1, 3).reshape(b, t, -1))


class StridedFrameCnn(nn.Module):
    """A conv with stride 2 over time, then ``reshape(b, t', -1)`` with ``t' = y.size(2)``: [N, T, 8] ->
    [N, (T+1)/2, 10] (the exporters compute ``t'`` as ``(T - 1) // 2 + 1`` or read it with Shape)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, stride=(2, 1), padding=1)
        self.linear = nn.Linear(4 * 8, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x.unsqueeze(1)))  # [N, 4, (T+1)/2, 8]
        return self.linear(y.permute(0, 2, 1, 3).reshape(y.size(0), y.size(2), -1))


class FrameDifference(nn.Module):
    """``x[:, 1:] - x[:, :-1]``: [N, T, 8] -> [N, T-1, 8] (slices with symbolic ends)."""

    def forward(self, x):
        return x[:, 1:, :] - x[:, :-1, :]


class Encoder(nn.Module):
    """One ``nn.TransformerEncoderLayer`` (batch first) with a causal mask built from ``x.size(1)``."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

    def forward(self, x):
        steps = x.size(1)
        mask = torch.triu(torch.full((steps, steps), float("-inf")), diagonal=1)
        return self.layer(x, src_mask=mask)


class ImageCnn(nn.Module):
    """Conv, pool, ``x.view(x.size(0), -1)``, then an MLP: [N, 3, 12, 12] -> [N, 10]."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.mlp = nn.Sequential(nn.Linear(6 * 6 * 6, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x):
        y = self.pool(torch.relu(self.conv(x)))
        return self.mlp(y.view(y.size(0), -1))


class TimeFlattenCnn(nn.Module):
    """A 1-D conv over time then ``flatten(1)``: the output width is a product with ``T``."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 2, 3, padding=1)

    def forward(self, x):  # [N, 3, T] -> [N, 2 * T]
        return torch.tanh(self.conv(x)).flatten(1)


# exports, once per module ----------------------------------------------------------------------------
#: one-input cases: module class, example shape, dynamic input axes, output axes named for TorchScript
#: (an output axis left unnamed is declared by the exporter with a name of its own: see
#: test_output_dims_declared_by_the_exporter)
SINGLE_INPUT = {
    "frames": (FrameCnn, (2, 6, 8), {0: "N", 1: "T"}, {0: "N", 1: "T"}),
    "strided": (StridedFrameCnn, (2, 6, 8), {0: "N", 1: "T"}, {0: "N"}),
    "difference": (FrameDifference, (2, 6, 8), {0: "N", 1: "T"}, {0: "N"}),
    "encoder": (Encoder, (2, 6, 8), {0: "N", 1: "T"}, {0: "N", 1: "T"}),
    "image": (ImageCnn, (2, 3, 12, 12), {0: "N"}, {0: "N"}),
    "flatten": (TimeFlattenCnn, (2, 3, 7), {0: "N", 2: "T"}, {0: "N"}),
}
BOUNDS = {"N": (1, 64), "T": (2, 512)}


def dynamo_dims(axes: dict[int, str]) -> dict:
    """``torch.export.Dim`` objects for named axes, with the bounds of ``BOUNDS``."""
    return {axis: torch.export.Dim(name, min=BOUNDS[name][0], max=BOUNDS[name][1]) for axis, name in axes.items()}


def _build(name: str):
    """(module, ONNX model) of a case named "<model>-<exporter>"."""
    case, exporter = name.rsplit("-", 1)
    torch.manual_seed(0)
    if case in SINGLE_INPUT:
        cls, shape, axes, output_axes = SINGLE_INPUT[case]
        module, example = cls().eval(), (torch.randn(*shape),)
        if exporter == "torchscript":
            return module, export_torchscript(module, example, ["x"], ["y"], {"x": axes, "y": output_axes})
        return module, export_dynamo(module, example, {"x": dynamo_dims(axes)})
    if case in ("lstm", "gru"):
        cell, options = (nn.LSTM, {"num_layers": 2}) if case == "lstm" else (nn.GRU, {"bidirectional": True})
        example = (torch.randn(2, 5, 4),)
        if exporter == "torchscript":
            module = Recurrent(cell, **options).eval()
            return module, export_torchscript(module, example, ["x"], ["y", "state"],
                                              {"x": {0: "N", 1: "T"}, "y": {0: "N", 1: "T"}, "state": {1: "N"}})
        module = Recurrent(cell).eval()
        return module, export_dynamo(module, example, {"x": dynamo_dims({0: "N"})})
    example = (torch.randn(3, 4),) if case == "if" else (torch.randn(3, 4), torch.tensor(3))
    if exporter == "torchscript":
        module = torch.jit.script(ScriptedBranch() if case == "if" else ScriptedLoops())
        return module, export_torchscript(module, example, ["x", "count"][:len(example)], ["y"], {"x": {0: "N"}})
    module = CondBranch() if case == "if" else WhileLoop()
    shapes = {"x": dynamo_dims({0: "N"})} | ({} if case == "if" else {"count": None})
    return module, export_dynamo(module, example, shapes)


_CACHE: dict[str, tuple] = {}


def without_output_shapes(proto):
    """A copy of ``proto`` whose graph outputs declare no shape (what tractile finds is its own)."""
    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    for output in bare.graph.output:
        output.type.tensor_type.ClearField("shape")
    return bare


def exported(name: str):
    """(module, ONNX model as exported, its output facts when the outputs declare no shape), built once."""
    if name not in _CACHE:
        module, proto = _build(name)
        _CACHE[name] = (module, proto, [str(f) for f in tractile.load(without_output_shapes(proto)).output_facts])
    return _CACHE[name]


def torch_outputs(module, feeds: list[np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = module(*[torch.from_numpy(f) for f in feeds])
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def check(name: str, feeds_list, expected_facts, rtol=1e-5, atol=1e-5, declared_outputs=True):
    """Facts as expected (symbolic, no fresh symbols), found by analysis alone and with the exporter's
    output declarations (unless ``declared_outputs`` is False); tractile == PyTorch == onnxruntime on
    every feed, all run by one loaded model."""
    module, proto, analysed_facts = exported(name)
    assert analysed_facts == expected_facts, f"{name}: output facts without declared shapes {analysed_facts}"
    model = tractile.load(proto if declared_outputs else without_output_shapes(proto))
    facts = [str(f) for f in model.output_facts]
    assert facts == expected_facts, f"{name}: output facts {facts}"
    assert not any("_u" in f for f in facts)
    for feeds in feeds_list:
        ours = model.run(list(feeds))
        reference = torch_outputs(module, feeds)
        theirs = run_onnxruntime(proto, list(feeds))
        assert len(ours) == len(reference) == len(theirs)
        for got, want, other in zip(ours, reference, theirs):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
            np.testing.assert_allclose(got, other, rtol=rtol, atol=atol)


def f32(*shape, offset=0.0):
    return (RNG.standard_normal(shape) + offset).astype(np.float32)


# tests ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_data_dependent_if(exporter):
    """Both branches taken (the sign of the sum decides) by one model, for batches 1, 3 and 7."""
    feeds = [[f32(1, 4, offset=2.0)], [f32(3, 4, offset=-2.0)], [f32(7, 4, offset=1.0)], [f32(7, 4, offset=-1.0)]]
    check(f"if-{exporter}", feeds, ["N,4,f32"])


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_loops_with_data_dependent_trip_counts(exporter):
    """Trip counts from an input (0, 2, 6 iterations) and, scripted, a while on the carried value."""
    feeds = [[f32(2, 4), np.array(count, np.int64)] for count in (0, 2, 6)] + [[f32(5, 4), np.array(3, np.int64)]]
    check(f"loop-{exporter}", feeds, ["N,4,f32"])


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_batch_first_recurrent_torchscript(cell):
    """nn.LSTM (2 layers) and nn.GRU (bidirectional), batch first, dynamic N and T (TorchScript exporter)."""
    feeds = [[f32(1, 3, 4)], [f32(4, 9, 4)], [f32(2, 1, 4)]]
    check(f"{cell}-torchscript", feeds, ["N,T,3,f32", "2,N,6,f32"])  # 2 layers; 2 directions


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_batch_first_recurrent_dynamo(cell):
    """nn.LSTM and nn.GRU from the dynamo exporter: dynamic N (torch.export fixes T to the example's 5)."""
    feeds = [[f32(1, 5, 4)], [f32(6, 5, 4)]]
    check(f"{cell}-dynamo", feeds, ["N,5,3,f32", "1,N,6,f32"])


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_cnn_frames_reshape_batch_and_time(exporter):
    """``reshape(b, t, -1)`` after a conv: Shape -> Gather -> Concat -> Reshape keeps N and T."""
    feeds = [[f32(1, 2, 8)], [f32(3, 11, 8)], [f32(2, 40, 8)]]
    check(f"frames-{exporter}", feeds, ["N,T,10,f32"])


def test_transformer_encoder_dynamo():
    """A causal transformer encoder layer (dynamo exporter; the TorchScript exporter writes the example's
    sequence length into nn.MultiheadAttention's reshapes, so its file fails on other lengths in
    onnxruntime too)."""
    feeds = [[f32(1, 3, 8)], [f32(4, 10, 8)]]
    check("encoder-dynamo", feeds, ["N,T,8,f32"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_cnn_image_view_batch(exporter):
    """``x.view(x.size(0), -1)`` after conv and pool, then an MLP: N,10."""
    feeds = [[f32(1, 3, 12, 12)], [f32(5, 3, 12, 12)]]
    check(f"image-{exporter}", feeds, ["N,10,f32"])


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_flatten_over_time(exporter):
    """``flatten(1)`` over [N, 2, T]: the output width is the symbolic product 2*T."""
    feeds = [[f32(1, 3, 2)], [f32(4, 3, 13)]]
    check(f"flatten-{exporter}", feeds, ["N,2*T,f32"])


def test_strided_time_reshape_torchscript():
    """A stride-2 conv over T, then ``reshape(b, y.size(2), -1)``: analysis finds N,(T+1)/2,10 (the
    TorchScript exporter's declared output dim "Addy_dim_1" is left out, see the test below)."""
    feeds = [[f32(1, 2, 8)], [f32(3, 11, 8)], [f32(2, 40, 8)]]
    check("strided-torchscript", feeds, ["N,(T+1)/2,10,f32"], declared_outputs=False)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_frame_difference_slices(exporter):
    """Slices ``1:`` and ``:-1`` over T: analysis finds N,T-1,8 (declared output shapes left out, see below)."""
    feeds = [[f32(1, 2, 8)], [f32(3, 11, 8)]]
    check(f"difference-{exporter}", feeds, ["N,T-1,8,f32"], declared_outputs=False)


@pytest.mark.parametrize("name, facts", [("strided-torchscript", "N,(T+1)/2,10,f32"),
                                         ("difference-torchscript", "N,T-1,8,f32"),
                                         ("difference-dynamo", "N,T-1,8,f32")])
def test_output_dims_declared_by_the_exporter(name, facts):
    """As exported: the TorchScript exporter names output axes missing from ``dynamic_axes`` itself
    (only the output uses the name); dynamo declares derived dims as expressions ("T - 1")."""
    _, proto, _ = exported(name)
    assert str(tractile.load(proto).output_fact(0)) == facts


def test_strided_time_reshape_dynamo():
    """The dynamo export of the stride-2 model: the frame count is computed from Shape with Add/Div."""
    feeds = [[f32(1, 2, 8)], [f32(3, 11, 8)]]
    check("strided-dynamo", feeds, ["N,(T+1)/2,10,f32"])
