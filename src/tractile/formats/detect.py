"""Which format a model file is, by its content: ONNX, TFLite, TensorFlow, or what else it looks like."""
from __future__ import annotations

import os

from ..errors import ModelFormatError

#: the formats tractile reads, as help texts name them
FORMATS = "ONNX (.onnx), TFLite (.tflite), TensorFlow (frozen .pb or SavedModel folder)"
READS = "tractile reads ONNX (.onnx), TFLite (.tflite) and TensorFlow (frozen .pb, SavedModel folder) models"


def format_name(kind: str) -> str:
    """A format as a sentence names it: ``"an ONNX"``, ``"a TFLite"``."""
    return {"onnx": "an ONNX", "tflite": "a TFLite", "tf": "a TensorFlow"}.get(kind, f"a {kind}")


def detect_format(source) -> str:
    """``"onnx"``, ``"tflite"`` or ``"tf"`` (a frozen GraphDef, a SavedModel folder) for a path
    or bytes; ``ModelFormatError`` saying what the content looks like when it is none of them.
    Other sources (an ``onnx.ModelProto``) are ONNX."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            if os.path.exists(os.path.join(path, "saved_model.pb")):
                return "tf"
            raise ModelFormatError(f"{path} is a folder, not a model file; {READS}")
        if not os.path.exists(path):
            raise ModelFormatError(f"no such model file: {path}")
        with open(path, "rb") as handle:
            head = handle.read(64)
        where = path
    elif isinstance(source, (bytes, bytearray, memoryview)):
        head, where = bytes(source[:64]), "the model bytes"
    else:
        return "onnx"
    if head[4:8] == b"TFL3":
        return "tflite"
    if _graph_def_head(head):
        return "tf"
    looks = looks_like(head)
    if looks is not None:
        raise ModelFormatError(f"{where} is {looks}, not a model tractile can read; {READS}")
    return "onnx"


def looks_like(head: bytes) -> str | None:
    """What the first bytes of a file say it is, when that is certainly not ONNX."""
    if not head:
        return "empty"
    signatures = {b"PK\x03\x04": "a ZIP archive (a PyTorch .pt or Keras .keras file?)",
                  b"\x89HDF": "an HDF5 file (a Keras .h5 model?)", b"\x80\x02": "a Python pickle",
                  b"%PDF": "a PDF document", b"\x7fELF": "an executable", b"\x89PNG": "a PNG image",
                  b"\xff\xd8\xff": "a JPEG image", b"RIFF": "a RIFF file (WAV audio?)",
                  b"\x93NUMPY": "a NumPy array file"}
    for signature, what in signatures.items():
        if head.startswith(signature):
            return what
    if head[:1] in (b"{", b"[") or head[:5].lower() in (b"<?xml", b"<html") or head[:9].lower() == b"<!doctype":
        return "a text document (JSON, XML or HTML)"
    if len(head) >= 8 and head[4:8] != b"TFL3" and head[4:6] == b"TF":
        return "a FlatBuffer of another schema"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.isprintable() or all(c.isprintable() or c in "\r\n\t" for c in text):
        return "a text file"
    return None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(data) and shift < 35:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at
    return -1, at


def _graph_def_head(head: bytes) -> bool:
    """A GraphDef opens with a NodeDef (field 1) holding a name (field 1) then an op (field 2);
    an ONNX ModelProto never opens with field 1 as bytes (its field 1 is the IR version)."""
    if head[:1] != b"\x0a":
        return False
    _, at = _varint(head, 1)
    if head[at:at + 1] != b"\x0a":
        return False
    name_length, at = _varint(head, at + 1)
    at += name_length
    if name_length < 0 or head[at:at + 1] != b"\x12":
        return False
    op_length, at = _varint(head, at + 1)
    op = head[at:at + op_length]
    return 0 < op_length == len(op) and op.isascii() and op.decode().isidentifier()


def check_model_proto(proto, where: str) -> None:
    """A parsed ModelProto that is really a model: any protobuf parses as an empty one."""
    missing = [what for what, absent in (("graph", not proto.HasField("graph")),
                                         ("IR version", proto.ir_version <= 0),
                                         ("opset import", proto.ir_version >= 3 and not proto.opset_import))
               if absent]
    if missing:
        raise ModelFormatError(f"{where}: parses as protobuf but is not an ONNX model (it has no "
                               f"{', no '.join(missing)}): a TensorFlow .pb or another protobuf? {READS}")
