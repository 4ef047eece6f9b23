"""The output arguments of TensorFlow ops, for writing FunctionDef bodies.

A FunctionDef names a node's output as ``node:output_arg:index`` (``"add:z:0"``), so raising a
frame into functions needs each op's output argument names. The table covers the ops inference
graphs contain; it was generated from TensorFlow's op registry and the tests check it there.
An argument spec is ``name`` (one tensor), ``name*attr`` (as many as the int attribute ``attr``
says) or ``name@attr`` (one per type in the type-list attribute ``attr``).
"""
from __future__ import annotations

_OUTPUT_ARGS: dict[str, str | tuple[str, ...]] = {
    "output": (
        "All Angle Any ArgMax ArgMin AvgPool AvgPool3D BatchMatMul BatchMatMulV2 BatchMatMulV3 BatchToSpaceND "
        "BiasAdd BiasAddV1 Bitcast BroadcastTo Bucketize CheckNumerics Cholesky ClipByValue Concat ConcatV2 "
        "Conj Const Conv2D Conv2DBackpropInput Conv3D Conv3DBackpropInputV2 DepthToSpace "
        "DepthwiseConv2dNative DepthwiseConv2dNativeBackpropInput Dequantize Dilation2D Einsum EnsureShape "
        "ExpandDims FFT Fill Gather GatherNd GatherV2 IFFT IRFFT Identity Imag L2Loss LRN LinSpace "
        "MatrixDeterminant MatrixDiag MatrixDiagV3 MatrixInverse MatrixSetDiag Max MaxPool MaxPool3D "
        "MaxPoolV2 Mean Mfcc Min MirrorPad Multinomial OneHot Pack Pad PadV2 Placeholder "
        "PlaceholderWithDefault PreventGradient Print Prod QuantizeAndDequantizeV2 QuantizeAndDequantizeV3 "
        "QuantizeAndDequantizeV4 RFFT RandomStandardNormal RandomUniform RandomUniformInt Range Rank Real "
        "Reshape Reverse ReverseSequence ReverseV2 Roll ScatterNd SegmentMax SegmentMean SegmentMin "
        "SegmentProd SegmentSum Select SelectV2 Shape Size Slice Snapshot SpaceToBatchND SpaceToDepth Squeeze "
        "StopGradient StridedSlice StringJoin Sum TensorScatterAdd TensorScatterUpdate Tile "
        "UnsortedSegmentMax UnsortedSegmentMin UnsortedSegmentProd UnsortedSegmentSum"
    ),
    "y": (
        "Abs Acos Acosh Asin Asinh Atan Atanh BesselI0e BesselI1e Cast Ceil ComplexAbs Cos Cosh Digamma Erf "
        "Erfc Exp Expm1 Floor Inv InvertPermutation IsFinite IsInf IsNan Lgamma Log Log1p LogicalNot Neg "
        "OnesLike Reciprocal Rint Round Rsqrt Sigmoid Sign Sin Sinh Sqrt Square Tan Tanh Transpose ZerosLike"
    ),
    "z": (
        "Add AddV2 ApproximateEqual Atan2 Betainc BitwiseAnd BitwiseOr BitwiseXor Div DivNoNan Equal FloorDiv "
        "FloorMod Greater GreaterEqual Igamma Igammac LeftShift Less LessEqual LogicalAnd LogicalOr Maximum "
        "Minimum Mod Mul MulNoNan NotEqual Pow RealDiv RightShift SquaredDifference Sub TruncateDiv "
        "TruncateMod Xdivy Xlog1py"
    ),
    "activations": "Elu LeakyRelu Relu Relu6 Selu Softplus Softsign",
    "output_handle": (
        "TensorListFromTensor TensorListPushBack TensorListResize TensorListScatterIntoExistingList "
        "TensorListScatterV2 TensorListSetItem TensorListSplit"
    ),
    "output@Tout": "If PartitionedCall StatefulPartitionedCall StatelessIf",
    "resized_images": "ResizeArea ResizeBicubic ResizeBilinear ResizeNearestNeighbor",
    "i cs f o ci co h": "BlockLSTM BlockLSTMV2 LSTMBlockCell",
    "out": "Complex Cumprod Cumsum",
    "output@T": "IdentityN StatelessWhile While",
    "outputs": "FakeQuantWithMinMaxArgs FakeQuantWithMinMaxVars FakeQuantWithMinMaxVarsPerChannel",
    "handle": "EmptyTensorList TensorListReserve",
    "output output_min output_max": "QuantizeV2 Requantize",
    "output*num_split": "Split SplitV",
    "y batch_mean batch_variance reserve_space_1 reserve_space_2": "FusedBatchNorm FusedBatchNormV2",
    "backprops": "Relu6Grad",
    "band": "MatrixBandPart",
    "diagonal": "MatrixDiagPart",
    "element_shape": "TensorListElementShape",
    "index": "Where",
    "item": "TensorListGetItem",
    "length": "TensorListLength",
    "logsoftmax": "LogSoftmax",
    "loss backprop": "SoftmaxCrossEntropyWithLogits",
    "merged": "DynamicStitch",
    "offset*N": "ConcatOffset",
    "output argmax": "MaxPoolWithArgmax",
    "output output_h output_c reserve_space": "CudnnRNN",
    "output output_h output_c reserve_space host_reserved": "CudnnRNNV3",
    "output*N": "ShapeN",
    "output*num": "Unpack",
    "output_handle tensor": "TensorListPopBack",
    "outputs*num_partitions": "DynamicPartition",
    "precision": "InTopKV2",
    "product": "MatMul",
    "q r": "Qr",
    "r u c h": "GRUBlockCell",
    "r0": "BroadcastArgs",
    "r0 r1": "BroadcastGradientArgs",
    "s u v": "Svd",
    "selected_indices": "NonMaxSuppressionV3",
    "selected_indices selected_scores valid_outputs": "NonMaxSuppressionV5",
    "selected_indices valid_outputs": "NonMaxSuppressionV4",
    "softmax": "Softmax",
    "spectrogram": "AudioSpectrogram",
    "sum": "AddN",
    "tensor": "TensorListStack",
    "tensor lengths": "TensorListConcatV2",
    "value": "ReadVariableOp",
    "values": "TensorListGather",
    "values indices": "TopKV2",
    "y batch_mean batch_variance reserve_space_1 reserve_space_2 reserve_space_3": "FusedBatchNormV3",
    "y idx": "Unique",
}

#: op name -> its output argument specs
OUTPUT_ARGS: dict[str, tuple[str, ...]] = {
    op: tuple(spec.split()) for spec, ops in _OUTPUT_ARGS.items()
    for op in ("".join(ops) if isinstance(ops, tuple) else ops).split()
}
