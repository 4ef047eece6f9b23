"""TensorFlow image resizing (ResizeBilinear, ResizeNearestNeighbor)."""
