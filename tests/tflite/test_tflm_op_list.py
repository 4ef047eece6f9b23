"""Every builtin operator TFLite Micro registers, as data, and what tractile does with each.

The list is the ``Add...`` methods of ``tensorflow/lite/micro/micro_mutable_op_resolver.h`` at
tflite-micro commit ``TFLM_COMMIT``; the types are those its kernels' Prepare and Eval accept
among float32, int8 and int16 (other types where an operator has none of those). Left out: the
signal-processing custom operators (their own issue; ``test_ops_signal.py``), and the vendor
and custom hooks.

The completeness checks: every builtin translates (``formats/tflite`` registry) onto core ops
that have a writer and, unless ``NOT_COMPILED`` says why, a C emitter; every (operator, type)
is run against an oracle (LiteRT's reference kernels, or TFLite Micro where LiteRT lacks the
type) and written back by a test named in ``TESTED_BY`` (the test must build the model and
check it through the writer, and name the type), or is a ``TYPE_GAPS`` entry saying why not.
The cases no other test had are in ``test_tflm_op_cases.py``.
"""
from __future__ import annotations

import importlib
import inspect

import pytest

from tractile.compile.registry import find_emitter
from tractile.formats.tflite.registry import REGISTRY, WRITERS
from tractile.ops import binary, logic, unary
from tractile.ops.activations import Clip, HardSwish, LeakyRelu, PRelu, Relu, Sigmoid, Tanh
from tractile.ops.add_n import AddN
from tractile.ops.array import Concat, Pad, Slice, Split, Transpose
from tractile.ops.cast import Cast
from tractile.ops.control import If
from tractile.ops.control_loop import Loop
from tractile.ops.conv import Conv
from tractile.ops.conv_transpose import ConvTranspose
from tractile.ops.image import Resize
from tractile.ops.indexing import DynamicUpdateSlice, Gather, GatherND
from tractile.ops.layout import DepthToSpace, Expand, SpaceToDepth
from tractile.ops.lstm_projected import ProjectedLstm
from tractile.ops.matmul import MatMul
from tractile.ops.nn import Softmax
from tractile.ops.norm import LpNorm
from tractile.ops.pool import AveragePool, LpPool, MaxPool
from tractile.ops.quant import Dequantize, Quantize
from tractile.ops.reduce import Reduce
from tractile.ops.resource import AssignVariable, CallOnce, ReadVariable, VarHandle
from tractile.ops.scan import CumScan
from tractile.ops.shape import BroadcastShapes, Reshape, Shape, Squeeze, Unsqueeze
from tractile.ops.smooth import Elu
from tractile.ops.sort import ArgReduce
from tractile.ops.svdf import Svdf

TFLM_COMMIT = "90b983c2b3f1480642e040bbd2ddb37b998f3424"

F, I8, I16 = "f32", "i8", "i16"
FLOAT, INT8, INT16 = (F,), (F, I8), (F, I8, I16)
#: builtin -> the types TFLite Micro's kernel takes (of float32, int8, int16; else what it takes)
TFLM_BUILTINS: dict[str, tuple[str, ...]] = {
    "ABS": INT16, "ADD": INT16, "ADD_N": INT8, "ARG_MAX": INT8, "ARG_MIN": INT8, "ASSIGN_VARIABLE": FLOAT,
    "AVERAGE_POOL_2D": INT16, "BATCH_MATMUL": INT16, "BATCH_TO_SPACE_ND": INT8, "BROADCAST_ARGS": ("i32",),
    "BROADCAST_TO": INT16, "CALL_ONCE": FLOAT, "CAST": INT16, "CEIL": FLOAT, "CONCATENATION": INT16,
    "CONV_2D": INT16, "COS": FLOAT, "CUMSUM": INT8, "DEPTH_TO_SPACE": INT8, "DEPTHWISE_CONV_2D": INT16,
    "DEQUANTIZE": (I8, I16), "DIV": INT8, "DYNAMIC_UPDATE_SLICE": INT16, "EMBEDDING_LOOKUP": INT8, "ELU": INT8,
    "EQUAL": INT16, "EXP": FLOAT, "EXPAND_DIMS": INT16, "FILL": INT16, "FLOOR": FLOAT, "FLOOR_DIV": FLOAT,
    "FLOOR_MOD": FLOAT, "FULLY_CONNECTED": INT16, "GATHER": INT8, "GATHER_ND": INT8, "GREATER": INT16,
    "GREATER_EQUAL": INT16, "HARD_SWISH": INT8, "IF": INT8, "L2_NORMALIZATION": INT8, "L2_POOL_2D": FLOAT,
    "LEAKY_RELU": INT16, "LESS": INT16, "LESS_EQUAL": INT16, "LOG": FLOAT, "LOGICAL_AND": ("bool",),
    "LOGICAL_NOT": ("bool",), "LOGICAL_OR": ("bool",), "LOGISTIC": INT16, "LOG_SOFTMAX": INT8, "MAXIMUM": INT16,
    "MAX_POOL_2D": INT16, "MIRROR_PAD": INT8, "MEAN": INT16, "MINIMUM": INT16, "MUL": INT16, "NEG": FLOAT,
    "NOT_EQUAL": INT16, "PACK": INT16, "PAD": INT16, "PADV2": INT16, "PRELU": INT16, "QUANTIZE": INT16,
    "READ_VARIABLE": FLOAT, "REDUCE_ALL": ("bool",), "REDUCE_MAX": INT8, "REDUCE_MIN": INT8, "RELU": INT16,
    "RELU6": INT16, "RESHAPE": INT16, "RESIZE_BILINEAR": INT8, "RESIZE_NEAREST_NEIGHBOR": INT16,
    "REVERSE_V2": INT16, "ROUND": FLOAT, "RSQRT": INT8, "SELECT_V2": INT16, "SHAPE": ("i32",), "SIN": FLOAT,
    "SLICE": INT16, "SOFTMAX": INT16, "SPACE_TO_BATCH_ND": INT8, "SPACE_TO_DEPTH": INT8, "SPLIT": INT16,
    "SPLIT_V": INT16, "SQUEEZE": INT16, "SQRT": FLOAT, "SQUARE": FLOAT, "SQUARED_DIFFERENCE": INT16,
    "STRIDED_SLICE": INT16, "SUB": INT16, "SUM": INT16, "SVDF": INT8, "TANH": INT16, "TRANSPOSE_CONV": INT16,
    "TRANSPOSE": INT16, "UNPACK": INT16, "UNIDIRECTIONAL_SEQUENCE_LSTM": INT16, "VAR_HANDLE": FLOAT,
    "WHILE": FLOAT, "ZEROS_LIKE": INT8,
}
#: the resolver's custom operators, left out of this list
LEFT_OUT = {
    **{name: "signal library (own issue; test_ops_signal.py)" for name in (
        "SignalDelay", "SignalEnergy", "SignalFftAutoScale", "SignalFilterBank", "SignalFilterBankLog",
        "SignalFilterBankSquareRoot", "SignalFilterBankSpectralSubtraction", "SignalFramer", "SignalIrfft",
        "SignalOverlapAdd", "SignalPCAN", "SignalRfft", "SignalStacker", "SignalWindow")},
    "ETHOSU": "vendor hook (Arm Ethos-U NPU)", "TFLM_DECODE": "custom hook (TFLite Micro's weight decoding)",
    "CIRCULAR_BUFFER": "custom hook (TFLite Micro's streaming buffer)",
    "TFLite_Detection_PostProcess": "custom hook (object detection post-processing)",
}

#: builtin -> the core op classes its translation wires
CORE_OPS: dict[str, tuple[type, ...]] = {
    "ABS": (unary.Abs,), "ADD": (binary.Add,), "ADD_N": (binary.Add, AddN), "ARG_MAX": (ArgReduce,),
    "ARG_MIN": (ArgReduce,), "ASSIGN_VARIABLE": (AssignVariable,), "AVERAGE_POOL_2D": (AveragePool,),
    "BATCH_MATMUL": (MatMul,), "BATCH_TO_SPACE_ND": (Reshape, Transpose, Slice), "BROADCAST_ARGS": (BroadcastShapes,),
    "BROADCAST_TO": (Expand,), "CALL_ONCE": (CallOnce,), "CAST": (Cast,), "CEIL": (unary.Ceil,),
    "CONCATENATION": (Concat,), "CONV_2D": (Conv,), "COS": (unary.Cos,), "CUMSUM": (CumScan,),
    "DEPTH_TO_SPACE": (DepthToSpace,), "DEPTHWISE_CONV_2D": (Conv,), "DEQUANTIZE": (Dequantize,),
    "DIV": (binary.Div,), "DYNAMIC_UPDATE_SLICE": (DynamicUpdateSlice,), "EMBEDDING_LOOKUP": (Gather,),
    "ELU": (Elu,), "EQUAL": (logic.Equal,), "EXP": (unary.Exp,), "EXPAND_DIMS": (Unsqueeze,), "FILL": (Expand,),
    "FLOOR": (unary.Floor,), "FLOOR_DIV": (binary.Div, unary.Floor), "FLOOR_MOD": (binary.Mod,),
    "FULLY_CONNECTED": (MatMul,), "GATHER": (Gather,), "GATHER_ND": (GatherND,), "GREATER": (logic.Greater,),
    "GREATER_EQUAL": (logic.GreaterOrEqual,), "HARD_SWISH": (HardSwish,), "IF": (If,), "L2_NORMALIZATION": (LpNorm,),
    "L2_POOL_2D": (LpPool,), "LEAKY_RELU": (LeakyRelu,), "LESS": (logic.Less,), "LESS_EQUAL": (logic.LessOrEqual,),
    "LOG": (unary.Log,), "LOGICAL_AND": (logic.And,), "LOGICAL_NOT": (logic.Not,), "LOGICAL_OR": (logic.Or,),
    "LOGISTIC": (Sigmoid,), "LOG_SOFTMAX": (Softmax,), "MAXIMUM": (binary.Max,), "MAX_POOL_2D": (MaxPool,),
    "MIRROR_PAD": (Pad,), "MEAN": (Reduce,), "MINIMUM": (binary.Min,), "MUL": (binary.Mul,), "NEG": (unary.Neg,),
    "NOT_EQUAL": (logic.NotEqual,), "PACK": (Unsqueeze, Concat), "PAD": (Pad,), "PADV2": (Pad,), "PRELU": (PRelu,),
    "QUANTIZE": (Quantize,), "READ_VARIABLE": (ReadVariable,), "REDUCE_ALL": (Reduce,), "REDUCE_MAX": (Reduce,),
    "REDUCE_MIN": (Reduce,), "RELU": (Relu,), "RELU6": (Clip,), "RESHAPE": (Reshape,), "RESIZE_BILINEAR": (Resize,),
    "RESIZE_NEAREST_NEIGHBOR": (Resize,), "REVERSE_V2": (Slice,), "ROUND": (unary.Round,), "RSQRT": (unary.Rsqrt,),
    "SELECT_V2": (logic.Where,), "SHAPE": (Shape,), "SIN": (unary.Sin,), "SLICE": (Slice,), "SOFTMAX": (Softmax,),
    "SPACE_TO_BATCH_ND": (Pad, Reshape, Transpose), "SPACE_TO_DEPTH": (SpaceToDepth,), "SPLIT": (Split,),
    "SPLIT_V": (Split,), "SQUEEZE": (Squeeze,), "SQRT": (unary.Sqrt,), "SQUARE": (binary.Mul,),
    "SQUARED_DIFFERENCE": (binary.SquaredDifference,), "STRIDED_SLICE": (Slice, Squeeze, Unsqueeze),
    "SUB": (binary.Sub,), "SUM": (Reduce,), "SVDF": (Svdf,), "TANH": (Tanh,), "TRANSPOSE_CONV": (ConvTranspose,),
    "TRANSPOSE": (Transpose,), "UNPACK": (Split, Squeeze), "UNIDIRECTIONAL_SEQUENCE_LSTM": (ProjectedLstm,),
    "VAR_HANDLE": (VarHandle,), "WHILE": (Loop,), "ZEROS_LIKE": (Shape, Expand),
}
#: builtins whose core ops have no C emitter, and why
NOT_COMPILED = {
    "SHAPE": "folded into a constant when the shapes are known, as every compiled model's are",
    "BROADCAST_ARGS": "folded into a constant when the shapes are known, as every compiled model's are",
    "ZEROS_LIKE": "its SHAPE is folded when the shapes are known; the broadcast compiles",
}

T, E, L, R, S, U = ("tests/tflite/test_ops_array.py", "tests/tflite/test_ops_elementwise.py",
                    "tests/tflite/test_ops_logic.py", "tests/tflite/test_ops_reduce.py",
                    "tests/tflite/test_ops_spatial.py", "tests/tflite/test_ops_unary.py")
AL, D = "tests/tflite/test_ops_array_layout.py", "tests/tflite/test_ops_dense.py"
HERE = "tests/tflite/test_tflm_op_cases.py"
BINARY = (f"{E}::test_float_binary_broadcast", f"{E}::test_int8_binary_every_pair",
          f"{E}::test_int16_and_uint8_binary")
COMPARE = (f"{L}::test_comparisons_broadcast", f"{L}::test_quantized_comparisons_every_pair",
           f"{L}::test_int16_and_bool_comparisons")
ACTIVATION = (f"{E}::test_float_activation", f"{E}::test_int8_activation_every_value", f"{E}::test_int16_activation")
LAYOUT = (f"{AL}::test_shape_and_layout_ops",)
FLOAT_UNARY = (f"{U}::test_float_unary",)
VARIABLES = ("tests/tflite/test_resource_variables.py::test_call_once_initialises_variables_once_and_they_persist_"
             "across_runs",)
#: builtin -> tests that build it, run it against an oracle and write it back
TESTED_BY: dict[str, tuple[str, ...]] = {
    "ABS": FLOAT_UNARY + (f"{U}::test_quantized_abs",), "ADD": BINARY,
    "ADD_N": (f"{L}::test_add_n", f"{L}::test_int8_add_n_matches_tflite_micro"),
    "ARG_MAX": (f"{AL}::test_arg_max_and_min",), "ARG_MIN": (f"{AL}::test_arg_max_and_min",),
    "ASSIGN_VARIABLE": VARIABLES, "AVERAGE_POOL_2D": (f"{S}::test_pooling",),
    "BATCH_MATMUL": (f"{D}::test_float_batch_matmul_broadcasts", f"{D}::test_quantized_batch_matmul"),
    "BATCH_TO_SPACE_ND": (f"{AL}::test_space_to_batch_and_back",),
    "BROADCAST_ARGS": (f"{AL}::test_fill_broadcast_args_shape_and_zeros_like",), "BROADCAST_TO": LAYOUT,
    "CALL_ONCE": VARIABLES, "CAST": (f"{U}::test_cast",), "CEIL": FLOAT_UNARY,
    "CONCATENATION": (f"{T}::test_concatenation",),
    "CONV_2D": (f"{S}::test_conv_2d", f"{S}::test_float_convolutions"), "COS": FLOAT_UNARY,
    "CUMSUM": (f"{AL}::test_cumsum", f"{AL}::test_int8_cumsum_matches_tflite_micro"), "DEPTH_TO_SPACE": LAYOUT,
    "DEPTHWISE_CONV_2D": (f"{S}::test_depthwise_conv_2d", f"{S}::test_float_convolutions"),
    "DEQUANTIZE": (f"{U}::test_dequantize",), "DIV": BINARY,
    "DYNAMIC_UPDATE_SLICE": (f"{AL}::test_dynamic_update_slice",), "EMBEDDING_LOOKUP": (f"{D}::test_embedding_lookup",),
    "ELU": (f"{U}::test_float_activations", f"{U}::test_quantized_activations_every_value"), "EQUAL": COMPARE,
    "EXP": FLOAT_UNARY, "EXPAND_DIMS": LAYOUT, "FILL": (f"{AL}::test_fill_broadcast_args_shape_and_zeros_like",),
    "FLOOR": FLOAT_UNARY, "FLOOR_DIV": (f"{L}::test_floor_div_and_mod",),
    "FLOOR_MOD": (f"{L}::test_floor_div_and_mod",),
    "FULLY_CONNECTED": (f"{D}::test_float_fully_connected", f"{D}::test_int8_fully_connected_matches_litert",
                        f"{D}::test_int16x8_fully_connected"),
    "GATHER": (f"{T}::test_gather",), "GATHER_ND": LAYOUT + (f"{AL}::test_gather_nd_at_run_time_indices",),
    "GREATER": COMPARE, "GREATER_EQUAL": COMPARE, "HARD_SWISH": ACTIVATION[:2],
    "IF": ("tests/tflite/test_control_flow.py::test_if_float_takes_either_branch",
           "tests/tflite/test_control_flow.py::test_if_int8_branches"),
    "L2_NORMALIZATION": (f"{U}::test_l2_normalization",), "L2_POOL_2D": (f"{S}::test_pooling",),
    "LEAKY_RELU": ACTIVATION, "LESS": COMPARE, "LESS_EQUAL": COMPARE, "LOG": FLOAT_UNARY,
    "LOGICAL_AND": (f"{L}::test_logical_binary",), "LOGICAL_NOT": (f"{L}::test_logical_not",),
    "LOGICAL_OR": (f"{L}::test_logical_binary",),
    "LOGISTIC": ACTIVATION[:2] + (f"{U}::test_int16_logistic_and_tanh",),
    "LOG_SOFTMAX": (f"{E}::test_float_log_softmax", f"{E}::test_int8_log_softmax"),
    "MAXIMUM": BINARY[:1] + (f"{E}::test_int8_maximum_minimum_every_pair", f"{HERE}::test_int16_maximum_and_minimum"),
    "MAX_POOL_2D": (f"{S}::test_pooling",), "MIRROR_PAD": LAYOUT,
    "MEAN": (f"{R}::test_reductions", f"{R}::test_signed_mean_and_max"),
    "MINIMUM": BINARY[:1] + (f"{E}::test_int8_maximum_minimum_every_pair", f"{HERE}::test_int16_maximum_and_minimum"),
    "MUL": BINARY, "NEG": FLOAT_UNARY, "NOT_EQUAL": COMPARE, "PACK": LAYOUT, "PAD": (f"{T}::test_pad_and_padv2",),
    "PADV2": (f"{T}::test_pad_and_padv2",), "PRELU": (f"{E}::test_prelu",), "QUANTIZE": (f"{U}::test_quantize",),
    "READ_VARIABLE": VARIABLES, "REDUCE_ALL": (f"{R}::test_other_reductions",),
    "REDUCE_MAX": (f"{R}::test_reductions", f"{R}::test_signed_mean_and_max"),
    "REDUCE_MIN": (f"{R}::test_other_reductions",), "RELU": ACTIVATION, "RELU6": ACTIVATION,
    "RESHAPE": LAYOUT, "RESIZE_BILINEAR": (f"{S}::test_resize",), "RESIZE_NEAREST_NEIGHBOR": (f"{S}::test_resize",),
    "REVERSE_V2": LAYOUT, "ROUND": FLOAT_UNARY, "RSQRT": FLOAT_UNARY + (f"{U}::test_quantized_rsqrt",),
    "SELECT_V2": (f"{L}::test_select_v2_broadcasts",),
    "SHAPE": (f"{AL}::test_fill_broadcast_args_shape_and_zeros_like",), "SIN": FLOAT_UNARY,
    "SLICE": (f"{T}::test_slice", f"{HERE}::test_int16_slicing"),
    "SOFTMAX": (f"{HERE}::test_float_and_int8_softmax", f"{U}::test_int16_softmax"),
    "SPACE_TO_BATCH_ND": (f"{AL}::test_space_to_batch_and_back",), "SPACE_TO_DEPTH": LAYOUT, "SPLIT": LAYOUT,
    "SPLIT_V": LAYOUT, "SQUEEZE": LAYOUT, "SQRT": FLOAT_UNARY, "SQUARE": (f"{U}::test_square_is_a_product",),
    "SQUARED_DIFFERENCE": BINARY[:2] + (f"{E}::test_int16_squared_difference_matches_tflite_micro",),
    "STRIDED_SLICE": (f"{T}::test_strided_slice", f"{HERE}::test_int16_slicing"),
    "SUB": BINARY, "SUM": (f"{R}::test_reductions", f"{R}::test_signed_sum_matches_tflite_micro"),
    "SVDF": (f"{HERE}::test_float_and_int8_svdf",),
    "TANH": ACTIVATION[:2] + (f"{U}::test_int16_logistic_and_tanh",), "TRANSPOSE_CONV": (f"{S}::test_transpose_conv",),
    "TRANSPOSE": LAYOUT, "UNPACK": LAYOUT,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": ("tests/tflite/test_lstm_variants.py::test_int8_lstm_matches_builtin_ref",
                                     "tests/tflite/test_lstm_layer_norm.py::test_float_layer_norm_lstm_matches_"
                                     "builtin_ref",
                                     "tests/tflite/test_lstm_16x8.py::test_int16_lstm_matches_tflite_micro"),
    "VAR_HANDLE": VARIABLES, "WHILE": ("tests/tflite/test_control_flow.py::test_while_with_static_shapes",),
    "ZEROS_LIKE": (f"{AL}::test_fill_broadcast_args_shape_and_zeros_like",),
}
#: (builtin, type) TFLite Micro runs that tractile does not, and why
TYPE_GAPS: dict[tuple[str, str], str] = {}
#: what a test must call to check a built model against an oracle through the writer
ROUND_TRIPS = ("check_model(", "check_file(", "_check(", "_check_and_compile(", "write_model(")
#: how a test names a type: a type string, or the type's name in its own name or NumPy's
TYPE_NAMES = {F: ('"f32"', "'f32'", "float32", "_float_"), I8: ('"i8"', "'i8'", "int8"),
              I16: ('"i16"', "'i16'", "int16"), "i32": ('"i32"', "int32"), "bool": ('"bool"', "bool")}


def _test_function(reference: str):
    path, name = reference.split("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    function = getattr(module, name, None)
    assert function is not None, f"{reference} does not exist"
    return function


def _text(function) -> str:
    marks = [repr(mark.args) for mark in getattr(function, "pytestmark", [])]
    return inspect.getsource(function) + "".join(marks)


def test_the_list_holds_the_resolvers_builtins_and_no_custom_operator():
    assert len(TFLM_BUILTINS) == 100 and not set(TFLM_BUILTINS) & set(LEFT_OUT)
    assert set(TFLM_BUILTINS) == set(CORE_OPS) == set(TESTED_BY)
    assert all(types for types in TFLM_BUILTINS.values())


@pytest.mark.parametrize("opcode", sorted(TFLM_BUILTINS))
def test_every_builtin_translates_onto_core_ops_that_are_written_and_compiled(opcode):
    translation = REGISTRY.get(opcode)
    assert translation is not None, f"{opcode} has no translation"
    source = inspect.getsource(importlib.import_module(translation.__module__))
    for cls in CORE_OPS[opcode]:
        assert cls.__name__ in source, f"{opcode}'s translation module never names {cls.__name__}"
        assert any(base in WRITERS for base in cls.__mro__), f"{cls.__name__} ({opcode}) has no TFLite writer"
    missing = [cls.__name__ for cls in CORE_OPS[opcode] if find_emitter(cls.__new__(cls)) is None]
    if opcode in NOT_COMPILED:
        assert missing, f"{opcode} compiles now: drop it from NOT_COMPILED"
    else:
        assert not missing, f"{opcode}: {missing} have no C emitter"


@pytest.mark.parametrize("opcode", sorted(TFLM_BUILTINS))
def test_every_type_is_run_against_an_oracle_and_written_back(opcode):
    functions = [_test_function(reference) for reference in TESTED_BY[opcode]]
    for function in functions:
        assert any(call in inspect.getsource(function) for call in ROUND_TRIPS), \
            f"{function.__name__} does not check its model through the writer"
    texts = "".join(_text(function) for function in functions)
    for dtype in TFLM_BUILTINS[opcode]:
        named = any(name in texts for name in TYPE_NAMES[dtype])
        if (opcode, dtype) in TYPE_GAPS:
            assert not named, f"{opcode} {dtype} is tested now: drop it from TYPE_GAPS"
        else:
            assert named, f"no test of {opcode} on {dtype}"
