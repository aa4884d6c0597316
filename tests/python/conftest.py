"""Each test builds in a graph of its own."""

import pytest

import tessera.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_default_graph():
    tf.reset_default_graph()
    yield


@pytest.fixture(scope="session")
def fashion():
    """Fashion-MNIST (Debian's dataset-fashion-mnist): the first 6000 training images and
    2000 test images, scaled to [0, 1], with int64 labels."""
    import gzip

    import numpy as np

    def load(kind, count):
        root = "/usr/share/datasets/fashion-mnist"
        with gzip.open(f"{root}/{kind}-images-idx3-ubyte.gz") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)[:count]
        with gzip.open(f"{root}/{kind}-labels-idx1-ubyte.gz") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)[:count]
        return images.astype(np.float32) / 255.0, labels.astype(np.int64)

    return load("train", 6000), load("t10k", 2000)
