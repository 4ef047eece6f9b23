"""TensorFlow TensorList ops (TF2 while loops: Keras LSTM/GRU, tf.TensorArray) onto
``ops/tensor_list.py``."""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....ops import tensor_list as tl
from ..registry import TfNode, Translated, tf_op


def element_shape(node: TfNode, index: int) -> tuple[int, ...] | None:
    """The element shape input: -1 dims unknown, None for an unknown rank (a -1 scalar)."""
    value = node.const(index)
    if value is None:
        return None
    value = np.asarray(value).reshape(-1) if np.asarray(value).ndim else np.asarray(value)
    if value.ndim == 0:
        return None if int(value) == -1 else (int(value),)
    return tuple(int(v) for v in value)


@tf_op("TensorListReserve")
def reserve(node: TfNode):
    return Translated(tl.TensorListReserve(node.type("element_dtype"), element_shape(node, 0)), [1])


@tf_op("EmptyTensorList")
def empty(node: TfNode):
    return Translated(tl.TensorListReserve(node.type("element_dtype"), element_shape(node, 0)), [])


tf_op("TensorListFromTensor")(lambda node: Translated(tl.TensorListFromTensor(), [0]))
tf_op("TensorListSetItem")(lambda node: Translated(tl.TensorListSetItem(
    node.bool("resize_if_index_out_of_bounds", False)), [0, 1, 2]))
tf_op("TensorListLength")(lambda node: tl.TensorListLength())
tf_op("TensorListPushBack")(lambda node: tl.TensorListPushBack())


@tf_op("TensorListGetItem")
def get_item(node: TfNode):
    return Translated(tl.TensorListGetItem(node.type("element_dtype"), element_shape(node, 2)), [0, 1])


@tf_op("TensorListStack")
def stack(node: TfNode):
    return Translated(tl.TensorListStack(node.type("element_dtype"), element_shape(node, 1)), [0])


@tf_op("TensorListElementShape")
def get_element_shape(node: TfNode):
    return tl.TensorListElementShape(node.type("shape_type", DatumType.I32))


@tf_op("TensorListGather")
def gather(node: TfNode):
    return Translated(tl.TensorListGather(node.type("element_dtype"), element_shape(node, 2)), [0, 1])


tf_op("TensorListScatterIntoExistingList")(lambda node: Translated(tl.TensorListScatterIntoExistingList(), [0, 1, 2]))
tf_op("TensorListSplit")(lambda node: Translated(tl.TensorListSplit(), [0, 2]))


@tf_op("TensorListConcatV2")
def concat(node: TfNode):
    return Translated(tl.TensorListConcat(node.type("element_dtype"), element_shape(node, 1)), [0])
