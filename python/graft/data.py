"""Datasets: Fashion-MNIST from Debian's dataset-fashion-mnist package."""
from . import _graft


def load_fashion_mnist(path="/usr/share/datasets/fashion-mnist"):
    """{"train_images": u8 [60000, 28, 28], "train_labels": i32 [60000], "test_images", "test_labels"}."""
    return _graft.load_fashion_mnist(path)
