"""TensorFlow's compatibility namespaces: `tessera.compat.v1` is tf.compat.v1."""
