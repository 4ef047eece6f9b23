"""C emitters, one module per op family; importing this package registers them all."""
from . import array, dense, fused, shape, stream  # noqa: F401
