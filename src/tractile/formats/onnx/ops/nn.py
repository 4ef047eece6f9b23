"""ONNX neural-network ops: convolutions, pooling, Gemm, MatMul, normalisations, Softmax family, Dropout,
losses, attention."""
from __future__ import annotations

from ....ops.attention import Attention, RotaryEmbedding
from ....ops.cast import Dropout
from ....ops.causal_conv import CausalConvWithState
from ....ops.conv import Conv, check_group
from ....ops.conv_transpose import ConvTranspose
from ....ops.linear_attention import LinearAttention
from ....ops.loss import REDUCTIONS, NllLoss, SoftmaxCrossEntropy
from ....ops.matmul import Gemm, MatMul
from ....ops.nn import LRN, BatchNorm, BatchNormTraining, Hardmax, Softmax, SwiGLU, TrainingDropout
from ....ops.norm import GroupNorm, InstanceNorm, LayerNorm, LpNorm, MeanVarianceNorm, RmsNorm
from ....ops.pool import AveragePool, GlobalPool, LpPool, MaxPool, MaxUnpool
from ....ops.window import Window
from ..registry import OnnxNode, Translated, onnx_op


def conv_window(node: OnnxNode) -> Window:
    """The window of a Conv-like node (kernel_shape optional: read from the weights)."""
    return _window(node, kernel_required=False)


def _window(node: OnnxNode, kernel_required: bool) -> Window:
    kernel = node.ints("kernel_shape", () if not kernel_required else node.ints("kernel_shape"))
    return Window.make(kernel, node.ints("strides", None), node.ints("dilations", None),
                       node.ints("pads", None), node.string("auto_pad", "NOTSET"),
                       bool(node.int("ceil_mode", 0)))


@onnx_op("Conv", since=1)
def conv(node: OnnxNode):
    return Conv(_window(node, kernel_required=False), check_group(node.int("group", 1)))


@onnx_op("ConvTranspose", since=1)
def conv_transpose(node: OnnxNode):
    return ConvTranspose(conv_window(node), check_group(node.int("group", 1)), node.ints("output_padding", ()),
                         node.ints("output_shape", None))


@onnx_op("MaxPool", since=1)
def max_pool(node: OnnxNode):
    storage_order = node.int("storage_order", 0)
    if storage_order not in (0, 1):
        raise node.error(f"storage_order must be 0 or 1, got {storage_order}")
    return MaxPool(_window(node, kernel_required=True), node.output_wanted(1), storage_order)


onnx_op("MaxUnpool", since=9)(lambda node: MaxUnpool(_window(node, kernel_required=True)))


@onnx_op("LpPool", since=1)
def lp_pool(node: OnnxNode):
    p = node.float("p", 2.0) if node.opset < 11 else node.int("p", 2)
    return LpPool(_window(node, kernel_required=True), int(p))


@onnx_op("GlobalLpPool", since=1)
def global_lp_pool(node: OnnxNode):
    p = node.float("p", 2.0) if node.opset < 11 else node.int("p", 2)
    return GlobalPool("lp", int(p))


@onnx_op("AveragePool", since=1)
def average_pool(node: OnnxNode):
    return AveragePool(_window(node, kernel_required=True), bool(node.int("count_include_pad", 0)))


onnx_op("GlobalAveragePool", since=1)(lambda node: GlobalPool("avg"))
onnx_op("GlobalMaxPool", since=1)(lambda node: GlobalPool("max"))
onnx_op("MatMul", since=1)(lambda node: MatMul())


@onnx_op("Gemm", since=1)
def gemm(node: OnnxNode):
    return Gemm(node.float("alpha", 1.0), node.float("beta", 1.0),
                bool(node.int("transA", 0)), bool(node.int("transB", 0)))


@onnx_op("BatchNormalization", since=1)
def batch_norm(node: OnnxNode):
    if node.opset < 9 and node.int("spatial", 1) != 1:
        raise node.error("BatchNormalization with spatial=0 is not supported")
    if any(node.output_wanted(i) for i in range(1, 5)):
        raise node.error("BatchNormalization's training outputs before opset 14 are not supported")
    return Translated(BatchNorm(node.float("epsilon", 1e-5)), [0, 1, 2, 3, 4])


@onnx_op("BatchNormalization", since=14)
def batch_norm_v14(node: OnnxNode):
    epsilon = node.float("epsilon", 1e-5)
    if not node.int("training_mode", 0):
        if any(node.output_wanted(i) for i in (1, 2)):
            raise node.error("running mean and variance outputs need training_mode=1")
        return Translated(BatchNorm(epsilon), [0, 1, 2, 3, 4])
    op = BatchNormTraining(epsilon, node.float("momentum", 0.9), wanted_outputs(node, 3))
    return Translated(op, [0, 1, 2, 3, 4])


def wanted_outputs(node: OnnxNode, most: int) -> int:
    """How many leading outputs the node uses (at least 1, at most ``most``)."""
    return max([1] + [i + 1 for i in range(most) if node.output_wanted(i)])


@onnx_op("Softmax", since=1)
def softmax_legacy(node: OnnxNode):
    return Softmax(node.int("axis", 1), legacy=True)


@onnx_op("Softmax", since=13)
def softmax(node: OnnxNode):
    return Softmax(node.int("axis", -1))


onnx_op("LogSoftmax", since=1)(lambda node: Softmax(node.int("axis", 1), legacy=True, log=True))
onnx_op("LogSoftmax", since=13)(lambda node: Softmax(node.int("axis", -1), log=True))
onnx_op("Hardmax", since=1)(lambda node: Hardmax(node.int("axis", 1), legacy=True))
onnx_op("Hardmax", since=13)(lambda node: Hardmax(node.int("axis", -1)))
onnx_op("SwiGLU", since=1)(lambda node: SwiGLU(node.float("alpha", 1.0)))


def _stash(node: OnnxNode):
    from ..types import datum_type

    return datum_type(node.int("stash_type", 1), f"{node!r} stash_type")


@onnx_op("LayerNormalization", since=1)
def layer_norm(node: OnnxNode):
    return LayerNorm(node.int("axis", -1), node.float("epsilon", 1e-5), _stash(node), wanted_outputs(node, 3))


@onnx_op("RMSNormalization", since=1)
def rms_norm(node: OnnxNode):
    return RmsNorm(node.int("axis", -1), node.float("epsilon", 1e-5), _stash(node))


@onnx_op("GroupNormalization", since=18)
def group_norm(node: OnnxNode):
    return GroupNorm(node.int("num_groups"), node.float("epsilon", 1e-5), _stash(node),
                     per_group_params=node.opset < 21)


onnx_op("InstanceNormalization", since=1)(lambda node: InstanceNorm(epsilon=node.float("epsilon", 1e-5)))
onnx_op("MeanVarianceNormalization", since=1)(
    lambda node: MeanVarianceNorm(node.ints("axes", (0, 2, 3))))
onnx_op("LpNormalization", since=1)(lambda node: LpNorm(node.int("axis", -1), node.int("p", 2)))


def _reduction(node: OnnxNode) -> str:
    reduction = node.string("reduction", "mean")
    if reduction not in REDUCTIONS:
        raise node.error(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    return reduction


def _ignore_index(node: OnnxNode):
    return node.int("ignore_index", None) if node.has("ignore_index") else None


@onnx_op("NegativeLogLikelihoodLoss", since=12)
def nll_loss(node: OnnxNode):
    return NllLoss(_reduction(node), _ignore_index(node))


@onnx_op("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy(node: OnnxNode):
    return SoftmaxCrossEntropy(_reduction(node), _ignore_index(node), node.output_wanted(1))


@onnx_op("Dropout", since=1)
def dropout(node: OnnxNode):
    return Translated(Dropout(with_mask=node.output_wanted(1)), [0])


@onnx_op("Dropout", since=12)
def dropout_v12(node: OnnxNode):
    if not node.present(2):
        return Translated(Dropout(with_mask=node.output_wanted(1)), [0])
    op = TrainingDropout(node.int("seed", None) if node.has("seed") else None, node.present(1),
                         node.output_wanted(1))
    return Translated(op, [i for i in range(3) if node.present(i)])


@onnx_op("LRN", since=1)
def lrn(node: OnnxNode):
    return LRN(node.int("size"), node.float("alpha", 1e-4), node.float("beta", 0.75), node.float("bias", 1.0))


@onnx_op("Attention", since=23)
def attention(node: OnnxNode):
    from ..types import datum_type

    present = [i for i in range(7) if node.present(i)]
    if node.present(4) != node.present(5):
        raise node.error("past_key and past_value must be given together")
    precision = node.int("softmax_precision", 0)
    scale = node.float("scale", 0.0) if node.has("scale") else None
    outputs = wanted_outputs(node, 4)
    mode = node.int("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        raise node.error(f"qk_matmul_output_mode must be 0 to 3, got {mode}")
    op = Attention(node.int("q_num_heads", 0) or None, node.int("kv_num_heads", 0) or None, scale,
                   bool(node.int("is_causal", 0)), node.float("softcap", 0.0), mode,
                   datum_type(precision, f"{node!r} softmax_precision") if precision else None,
                   node.int("left_window_size", -1), node.int("right_window_size", -1),
                   node.present(3), node.present(4), node.present(6), outputs)
    return Translated(op, present)


@onnx_op("RotaryEmbedding", since=23)
def rotary_embedding(node: OnnxNode):
    return RotaryEmbedding(bool(node.int("interleaved", 0)), node.int("num_heads", 0),
                           node.int("rotary_embedding_dim", 0), node.present(3))


@onnx_op("LinearAttention", since=1)
def linear_attention(node: OnnxNode):
    op = LinearAttention(node.int("q_num_heads"), node.int("kv_num_heads"),
                         node.string("update_rule", "gated_delta"), node.float("scale", 0.0),
                         node.present(3), node.present(4), node.present(5))
    return Translated(op, [i for i in range(6) if node.present(i)])


@onnx_op("CausalConvWithState", since=1)
def causal_conv_with_state(node: OnnxNode):
    op = CausalConvWithState(node.string("activation", "none"), node.present(2), node.present(3))
    return Translated(op, [i for i in range(4) if node.present(i)])
