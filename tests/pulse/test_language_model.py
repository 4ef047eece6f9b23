"""An LSTM language model exported from PyTorch streams token by token: its embedding Gather takes
the streamed token ids as indices, and the final states (hn, cn) are dropped with ``outputs=``."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import tractile
from tractile.cli.main import main

from .helpers import stream

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the 'test' extra pins it)")
onnx = pytest.importorskip("onnx")

VOCABULARY, LENGTH = 50, 23


@pytest.fixture(scope="module")
def language_model(tmp_path_factory):
    class TinyLanguageModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(VOCABULARY, 16)
            self.lstm = torch.nn.LSTM(16, 24)
            self.head = torch.nn.Linear(24, VOCABULARY)

        def forward(self, tokens):
            y, (hn, cn) = self.lstm(self.embed(tokens))
            return self.head(y), hn, cn

    torch.manual_seed(0)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(TinyLanguageModel().eval(), (torch.zeros(5, 1, dtype=torch.int64),), buffer,
                          dynamo=False, opset_version=17, input_names=["tokens"],
                          output_names=["logits", "hn", "cn"], dynamic_axes={"tokens": {0: "T"}, "logits": {0: "T"}})
    path = tmp_path_factory.mktemp("lm") / "lm.onnx"
    path.write_bytes(buffer.getvalue())
    return path


def test_the_logits_stream_token_by_token(language_model):
    model = tractile.load(language_model, inputs={"tokens": "T,1,i64"})
    tokens = np.random.default_rng(3).integers(0, VOCABULARY, (LENGTH, 1)).astype(np.int64)
    expected = model.run({"tokens": tokens})["logits"]
    for pulse in (1, 4):
        pulsed = model.pulse("T", pulse, outputs=["logits"])
        assert pulsed.model.output_names() == ["logits"] and pulsed.delays == [0]
        got, = stream(pulsed, [tokens])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    by_position = model.pulse("T", 1, outputs=[0])
    assert by_position.model.output_names() == ["logits"]


def test_final_states_are_refused_with_the_way_to_drop_them(language_model):
    model = tractile.load(language_model, inputs={"tokens": "T,1,i64"})
    with pytest.raises(tractile.AnalysisError, match=r"describes the end of the sequence") as refused:
        model.pulse("T", 1)
    # only the outputs that can stream are suggested: hn and cn both describe the end of the sequence
    message = str(refused.value)
    assert "outputs=['logits'])" in message and "--outputs logits " in message, message
    assert "'cn'" not in message and "'hn'" not in message.split("keep the other outputs")[1], message
    with pytest.raises(tractile.TractileError, match="no output named 'h0'.*logits, hn, cn"):
        model.pulse("T", 1, outputs=["h0"])


def test_the_command_line_keeps_the_outputs_it_is_told(language_model, tmp_path, capsys):
    tokens = np.random.default_rng(4).integers(0, VOCABULARY, (LENGTH, 1)).astype(np.int64)
    np.save(tmp_path / "tokens.npy", tokens)
    assert main(["stream", str(language_model), "-i", "T,1,i64", "--input", str(tmp_path / "tokens.npy"),
                 "--pulse", "3", "--outputs", "logits", "--check"]) == 0
    out = capsys.readouterr().out
    assert "output logits" in out and "hn" not in out and "matches the batch model on all 1 output" in out, out


def test_a_gather_of_a_streamed_table_is_refused():
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("table", TensorProto.FLOAT, ["T", 4]),
                               helper.make_tensor_value_info("ids", TensorProto.INT64, ["T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(tractile.AnalysisError, match="both streamed"):
        model.pulse("T", 1)
