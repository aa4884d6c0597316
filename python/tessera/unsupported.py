"""What a TensorFlow name that Tessera lacks raises."""


class NotSupportedError(NotImplementedError, AttributeError):
    """A TensorFlow name Tessera lacks: a NotImplementedError naming it, and an AttributeError
    too, so that hasattr() and getattr(tf, name, default) answer as for any missing name."""


def module_getattr(namespace):
    """A module __getattr__ for the TensorFlow namespace `namespace` ("tf.compat.v1.nn")."""
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotSupportedError(f"{namespace}.{name} is not supported by Tessera yet")
    return __getattr__
