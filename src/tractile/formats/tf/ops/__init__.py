"""TensorFlow op translations, one module per family (imported for their registrations)."""
from . import array, control, image, layout, math, nn, nn3d, quant, reduce, tensor_list  # noqa: F401
