"""Quantized arithmetic: the integer recipes core ops follow when their inputs are quantized.

``fixedpoint`` (TFLite's and gemmlowp's fixed point, vectorised on int64), ``functions``
(fixed-point exp, logistic, tanh, reciprocal, log), ``output`` (the requantizing output stage
of matmuls and convolutions), ``common`` (scales, zero points, ranges, quantizing a value,
the prepared-recipe protocol).
"""
