"""Format detection by content: files that are not ONNX, TFLite or TensorFlow say what they look like."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
from onnx import ModelProto

import tractile
from tractile.errors import ModelFormatError, TractileError


@pytest.mark.parametrize("content,says", [
    (b"", "empty"),
    (b"name,value\n1,2\n", "text file"),
    (b'{"format": "keras"}', "text document"),
    (b"\x89HDF\r\n\x1a\n" + bytes(56), "HDF5"),
    (b"\x93NUMPY\x01\x00" + bytes(40), "NumPy array"),
])
def test_files_of_other_formats_say_what_they_are(tmp_path, content, says):
    path = tmp_path / "model.onnx"
    path.write_bytes(content)
    with pytest.raises(ModelFormatError, match=says) as raised:
        tractile.load(path)
    assert "tractile reads ONNX" in str(raised.value)
    with pytest.raises(ModelFormatError, match=says):
        tractile.load(content)


def test_a_zip_archive_and_a_folder_are_named(tmp_path):
    archive = tmp_path / "model.pt"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("data.pkl", b"x")
    with pytest.raises(ModelFormatError, match="ZIP archive"):
        tractile.load(archive)
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"")
    with pytest.raises(TractileError, match="SavedModel|tensorboard"):  # a TensorFlow SavedModel folder
        tractile.load(saved)
    with pytest.raises(ModelFormatError, match="a folder"):
        tractile.load(tmp_path)


def test_a_protobuf_that_is_not_a_model_is_refused(tmp_path):
    empty = ModelProto()
    empty.ir_version = 8
    with pytest.raises(ModelFormatError, match="no graph, no opset import"):
        tractile.load(empty.SerializeToString())
    np.save(tmp_path / "x.npy", np.zeros(2))
    with pytest.raises(ModelFormatError, match="NumPy"):
        tractile.load(tmp_path / "x.npy")
