"""tractile as an ONNX backend (``onnx.backend.base.Backend``).

    import tractile.backend
    rep = tractile.backend.prepare(model_proto)        # load, analyse, optimize
    outputs = rep.run([x])                              # or run_model(model_proto, [x])
    onnx.backend.test.BackendTest(tractile.backend, __name__)

Inputs whose datum type or rank the model leaves open are typed from the first values
given; the model is then analysed and optimized once per distinct input signature.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, defs, helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from .errors import TractileError
from .formats.onnx import load_onnx
from .runtime.state import order_inputs


class TractileRep(BackendRep):
    """A prepared model: ``run(inputs)`` gives the outputs as a named tuple."""

    def __init__(self, model: ModelProto):
        self.proto = model
        loaded = load_onnx(model)
        self.input_names = loaded.input_names()
        self.output_names = loaded.output_names()
        self._open = [i for i, fact in enumerate(loaded.input_facts) if not fact.is_complete()]
        self._typed: dict = {}
        if not self._open:
            self._typed[()] = loaded.into_optimized()

    def _model_for(self, inputs: list) -> Any:
        signature = tuple(_signature(inputs[i]) for i in self._open)
        typed = self._typed.get(signature)
        if typed is None:
            loaded = load_onnx(self.proto)
            for index in self._open:
                if isinstance(inputs[index], np.ndarray):
                    loaded.set_input_fact(index, inputs[index])
            typed = loaded.into_optimized()
            self._typed[signature] = typed
        return typed

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Run on ``inputs`` (a list in input order, a dict by name, or one array)."""
        inputs, _ = order_inputs(self.input_names, inputs)
        outputs = self._model_for(inputs).run(inputs)
        return namedtupledict("Outputs", self.output_names)(*outputs)


def _signature(value) -> Any:
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.ndim)
    return type(value).__name__


class TractileBackend(Backend):
    """The ONNX backend API over tractile (CPU only)."""

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> TractileRep:
        """Load, analyse and optimize ``model`` (tractile's own checks and errors, not onnx.checker's)."""
        if not cls.supports_device(device):
            raise TractileError(f"tractile runs on the CPU, not on {device}")
        return TractileRep(model)

    @classmethod
    def run_model(cls, model: ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple] | None = None, **kwargs: Any) -> tuple[Any, ...]:
        """Run one node on ``inputs`` (arrays for its present inputs, in order)."""
        if isinstance(inputs, Mapping):
            inputs = [inputs[name] for name in node.input if name]
        values = [np.asarray(v) for v in inputs]
        names = [name for name in node.input if name]
        if len(values) != len(names):
            raise TractileError(f"node {node.op_type} reads {len(names)} input(s), {len(values)} given")
        graph_inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                        for name, v in zip(names, values)]
        graph_outputs = [helper.make_empty_tensor_value_info(name) for name in node.output if name]
        graph = helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs)
        domain = node.domain or ""
        opset = kwargs.get("opset_version") or defs.onnx_opset_version()
        opsets = [helper.make_opsetid("", opset if not domain else defs.onnx_opset_version())]
        if domain and domain != "ai.onnx":
            opsets.append(helper.make_opsetid(domain, opset))
        model = helper.make_model(graph, opset_imports=opsets)
        return TractileRep(model).run(values)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU


prepare = TractileBackend.prepare
run_model = TractileBackend.run_model
run_node = TractileBackend.run_node
supports_device = TractileBackend.supports_device
is_compatible = TractileBackend.is_compatible
