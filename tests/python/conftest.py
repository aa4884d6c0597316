"""Each test builds in a graph of its own."""

import pytest

import tessera.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_default_graph():
    tf.reset_default_graph()
    yield
