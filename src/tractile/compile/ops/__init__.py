"""C emitters, one module per op family; importing this package registers them all."""
from . import array, conv, dense, elementwise, fused, pool, quantize, recurrent, reduce, rnn, shape, signal, softmax, stream  # noqa: F401
