"""Tessera: a dataflow-graph execution engine with TensorFlow 1.x's graph-mode API.

`import tessera.compat.v1 as tf` gives TensorFlow 1.x's names (tf.compat.v1 in TensorFlow
2.x is the reference); `tessera.placement(sess)` tells where each node of a session's graph
runs and why.
"""

from tessera import dtypes, errors
from tessera.session import placement

__version__ = "0.1.0"
__all__ = ["dtypes", "errors", "placement"]
