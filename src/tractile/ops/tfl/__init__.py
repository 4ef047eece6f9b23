"""TFLite-semantics kernels (NHWC layouts, TFLite's integer arithmetic), one module per family.

These ops are what :func:`tractile.formats.tflite.load_tflite` builds; ``fixedpoint`` holds
the integer helpers they share.
"""
