"""TensorFlow TensorList ops."""
