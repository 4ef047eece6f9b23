"""TensorFlow "tensor bundles" (a SavedModel's ``variables/``): read without TensorFlow.

``variables.index`` is a LevelDB-style table (sorted key/value blocks, an index block, a footer)
whose values are ``BundleEntryProto`` messages saying where each tensor's bytes are in the
``variables.data-NNNNN-of-MMMMM`` shards. Both message types are tiny, so they are decoded here
from the protobuf wire format; Snappy-compressed blocks are decompressed here too.
"""
from __future__ import annotations

import os
import struct

import numpy as np

from ...datum import DatumType
from ...errors import ModelFormatError
from .proto import datum_type

_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48


def _varint(data: bytes, at: int, where: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ModelFormatError(f"{where}: truncated or malformed varint at byte {at}")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at


def wire_fields(data: bytes, where: str) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a protobuf message: ints for varint and fixed fields,
    bytes for length-delimited ones."""
    fields: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at, where)
        number, kind = key >> 3, key & 7
        value: int | bytes
        if kind == 0:
            value, at = _varint(data, at, where)
        elif kind == 1:
            value, at = int.from_bytes(data[at:at + 8], "little"), at + 8
        elif kind == 5:
            value, at = int.from_bytes(data[at:at + 4], "little"), at + 4
        elif kind == 2:
            length, at = _varint(data, at, where)
            value, at = data[at:at + length], at + length
        else:
            raise ModelFormatError(f"{where}: unsupported protobuf wire type {kind}")
        if at > len(data):
            raise ModelFormatError(f"{where}: truncated protobuf message")
        fields.append((number, value))
    return fields


def _snappy(data: bytes, where: str) -> bytes:
    length, at = _varint(data, 0, where)
    out = bytearray()
    while at < len(data):
        tag = data[at]
        at += 1
        kind = tag & 3
        if kind == 0:
            size = tag >> 2
            if size >= 60:
                extra = size - 59
                size = int.from_bytes(data[at:at + extra], "little")
                at += extra
            out += data[at:at + size + 1]
            at += size + 1
            continue
        if kind == 1:
            size, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | data[at]
            at += 1
        elif kind == 2:
            size, offset = 1 + (tag >> 2), int.from_bytes(data[at:at + 2], "little")
            at += 2
        else:
            size, offset = 1 + (tag >> 2), int.from_bytes(data[at:at + 4], "little")
            at += 4
        if offset <= 0 or offset > len(out):
            raise ModelFormatError(f"{where}: corrupt Snappy block")
        for _ in range(size):  # copies may overlap what they produce
            out.append(out[-offset])
    if len(out) != length:
        raise ModelFormatError(f"{where}: Snappy block decompresses to {len(out)} bytes, not {length}")
    return bytes(out)


def _block(data: bytes, handle: bytes, where: str) -> bytes:
    offset, at = _varint(handle, 0, where)
    size, _ = _varint(handle, at, where)
    if offset + size + 5 > len(data):
        raise ModelFormatError(f"{where}: a block runs past the end of the file")
    content, kind = data[offset:offset + size], data[offset + size]
    if kind == 1:
        return _snappy(content, where)
    if kind != 0:
        raise ModelFormatError(f"{where}: unknown block compression {kind}")
    return content


def _entries(block: bytes, where: str):
    if len(block) < 4:
        raise ModelFormatError(f"{where}: block too short")
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * restarts
    at, key = 0, b""
    while at < end:
        shared, at = _varint(block, at, where)
        fresh, at = _varint(block, at, where)
        size, at = _varint(block, at, where)
        key = key[:shared] + block[at:at + fresh]
        at += fresh
        yield key, block[at:at + size]
        at += size


def read_table(path: str) -> dict[bytes, bytes]:
    """Every key and value of a LevelDB-style table file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ModelFormatError(f"cannot read {path}: {error}") from None
    if len(data) < _FOOTER or struct.unpack_from("<Q", data, len(data) - 8)[0] != _MAGIC:
        raise ModelFormatError(f"{path}: not a TensorFlow table file (bad footer)")
    footer = data[-_FOOTER:]
    _, at = _varint(footer, 0, path)  # metaindex handle: offset then size
    _, at = _varint(footer, at, path)
    table: dict[bytes, bytes] = {}
    for _, handle in _entries(_block(data, footer[at:], path), path):
        for key, value in _entries(_block(data, handle, path), path):
            table[key] = value
    return table


class TensorBundle:
    """The tensors of a checkpoint prefix (``.../variables/variables``), read on demand."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.entries = read_table(prefix + ".index")
        header = dict(wire_fields(self.entries.get(b"", b""), f"{prefix}.index header"))
        self.shards = int(header.get(1, 1) or 1)
        if int(header.get(2, 0)):
            raise ModelFormatError(f"{prefix}: big-endian checkpoints are not supported")
        self._data: dict[int, bytes] = {}

    def keys(self) -> list[str]:
        return [k.decode("utf-8", errors="replace") for k in self.entries if k]

    def _shard(self, index: int) -> bytes:
        if index not in self._data:
            path = f"{self.prefix}.data-{index:05d}-of-{self.shards:05d}"
            try:
                with open(path, "rb") as handle:
                    self._data[index] = handle.read()
            except OSError as error:
                raise ModelFormatError(f"cannot read checkpoint shard {path}: {error}") from None
        return self._data[index]

    def tensor(self, key: str) -> np.ndarray:
        """The tensor stored under ``key``; ModelFormatError if there is none."""
        raw = self.entries.get(key.encode("utf-8"))
        where = f"{self.prefix} tensor {key!r}"
        if raw is None:
            raise ModelFormatError(f"{self.prefix}: the checkpoint has no tensor {key!r}")
        fields = wire_fields(raw, where)
        values = dict(fields)
        if any(number == 7 for number, _ in fields):
            raise ModelFormatError(f"{where}: partitioned (sliced) variables are not supported")
        dtype = datum_type(int(values.get(1, 0)), where)
        dims = [int(v) for n, v in wire_fields(values.get(2, b""), where) if n == 2 for k, v in
                wire_fields(v, where) if k == 1]  # type: ignore[arg-type]
        offset, size = int(values.get(4, 0)), int(values.get(5, 0))
        data = self._shard(int(values.get(3, 0)))[offset:offset + size]
        if len(data) != size:
            raise ModelFormatError(f"{where}: the data shard is shorter than the index says")
        if dtype == DatumType.STRING:
            return _strings(data, dims, where)
        count = int(np.prod(dims, dtype=np.int64))
        if size != count * dtype.np.itemsize:
            raise ModelFormatError(f"{where}: {size} bytes for a {dtype} tensor of shape {dims}")
        return np.frombuffer(data, dtype=dtype.np.newbyteorder("<")).astype(dtype.np).reshape(dims)


def _strings(data: bytes, dims: list[int], where: str) -> np.ndarray:
    count = int(np.prod(dims, dtype=np.int64))
    lengths, at = [], 0
    for _ in range(count):
        length, at = _varint(data, at, where)
        lengths.append(length)
    at += 4  # a checksum of the lengths
    items = []
    for length in lengths:
        items.append(data[at:at + length])
        at += length
    return np.array(items, dtype=object).reshape(dims)


def bundle_prefix(saved_model_dir: str) -> str | None:
    """The checkpoint prefix of a SavedModel folder, None if it has no variables."""
    prefix = os.path.join(saved_model_dir, "variables", "variables")
    return prefix if os.path.exists(prefix + ".index") else None
