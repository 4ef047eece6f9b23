"""Typed access to a NodeDef's attributes (``AttrValue``): ints, floats, bools, strings, types,
shapes, tensors, function names and lists of them, with defaults; every error names the node
and the attribute."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...datum import DatumType
from ...errors import ModelFormatError
from .proto import datum_type, shape_dims, tensor_to_array

REQUIRED: Any = object()


class Attrs:
    """The attributes of one node: ``attrs.int("axis", 0)``, ``attrs.type("T")``, ``attrs.ints("strides")``."""

    def __init__(self, attr_map, label: str):
        self._map = attr_map
        self.label = label

    def error(self, message: str) -> ModelFormatError:
        return ModelFormatError(f"{self.label}: {message}")

    def has(self, name: str) -> bool:
        return name in self._map

    def _value(self, name: str, kind: str, default):
        if name not in self._map:
            if default is REQUIRED:
                raise self.error(f"missing required attribute {name!r}")
            return None
        value = self._map[name]
        which = value.WhichOneof("value")
        if which != kind:
            raise self.error(f"attribute {name!r} should be {_KINDS[kind]}, got {_KINDS.get(which, which)}")
        return getattr(value, kind)

    def _list(self, name: str, field: str, default):
        if name not in self._map:
            if default is REQUIRED:
                raise self.error(f"missing required attribute {name!r}")
            return None
        value = self._map[name]
        which = value.WhichOneof("value")
        if which != "list":
            raise self.error(f"attribute {name!r} should be a list, got {_KINDS.get(which, which)}")
        return list(getattr(value.list, field))

    def int(self, name: str, default=REQUIRED) -> int:
        value = self._value(name, "i", default)
        return default if value is None else int(value)

    def float(self, name: str, default=REQUIRED) -> float:
        value = self._value(name, "f", default)
        return default if value is None else float(value)

    def bool(self, name: str, default=REQUIRED) -> bool:
        value = self._value(name, "b", default)
        return default if value is None else bool(value)

    def string(self, name: str, default=REQUIRED) -> str:
        value = self._value(name, "s", default)
        return default if value is None else value.decode("utf-8", errors="replace")

    def type(self, name: str, default=REQUIRED) -> DatumType:
        value = self._value(name, "type", default)
        return default if value is None else datum_type(value, f"{self.label} attribute {name!r}")

    def raw_type(self, name: str, default=REQUIRED) -> int:
        """The DataType number, for types tractile has no datum for (resources, variants)."""
        value = self._value(name, "type", default)
        return default if value is None else int(value)

    def shape(self, name: str, default=REQUIRED) -> tuple[int, ...] | None:
        """A shape: -1 for unknown dims, None for an unknown rank."""
        value = self._value(name, "shape", default)
        return default if value is None else shape_dims(value)

    def tensor(self, name: str, default=REQUIRED) -> np.ndarray:
        value = self._value(name, "tensor", default)
        return default if value is None else tensor_to_array(value, f"{self.label} attribute {name!r}")

    def func(self, name: str, default=REQUIRED) -> str:
        """The name of the function a ``func`` attribute calls."""
        value = self._value(name, "func", default)
        return default if value is None else value.name

    def ints(self, name: str, default=REQUIRED) -> tuple[int, ...]:
        values = self._list(name, "i", default)
        return default if values is None else tuple(int(v) for v in values)

    def floats(self, name: str, default=REQUIRED) -> tuple[float, ...]:
        values = self._list(name, "f", default)
        return default if values is None else tuple(float(v) for v in values)

    def strings(self, name: str, default=REQUIRED) -> tuple[str, ...]:
        values = self._list(name, "s", default)
        return default if values is None else tuple(v.decode("utf-8", errors="replace") for v in values)

    def types(self, name: str, default=REQUIRED) -> tuple[DatumType, ...]:
        values = self._list(name, "type", default)
        if values is None:
            return default
        return tuple(datum_type(v, f"{self.label} attribute {name!r}") for v in values)

    def raw_types(self, name: str, default=REQUIRED) -> tuple[int, ...]:
        values = self._list(name, "type", default)
        return default if values is None else tuple(int(v) for v in values)

    def shapes(self, name: str, default=REQUIRED) -> tuple[tuple[int, ...] | None, ...]:
        values = self._list(name, "shape", default)
        return default if values is None else tuple(shape_dims(v) for v in values)


_KINDS = {"i": "an int", "f": "a float", "b": "a bool", "s": "a string", "type": "a type", "shape": "a shape",
          "tensor": "a tensor", "list": "a list", "func": "a function", "placeholder": "a placeholder",
          None: "empty"}
