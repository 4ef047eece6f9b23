"""TensorFlow front end."""
