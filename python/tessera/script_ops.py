"""tf.py_func and tf.numpy_function: a Python function that the step runs on NumPy arrays
(the engine's PyFunc op, whose kernel calls _call here with the GIL held).

As in TensorFlow, the graph keeps the function alive and the registry only names it; the
values it returns must have the declared dtypes (a float64 for a float32 is an error
naming the op), and the exception it raises fails the step as TensorFlow maps it:
StopIteration and IndexError are OutOfRangeError, ValueError and TypeError
InvalidArgumentError, anything else UnknownError."""

import atexit
import itertools
import weakref

import numpy as np

from tessera import dtypes, gen_ops
from tessera.framework import convert_to_tensor, get_default_graph

_functions = weakref.WeakValueDictionary()  # token -> function
_tokens = itertools.count()


@atexit.register
def _let_go():
    """Lets go of the functions before the interpreter tears modules down: a function holds
    its module's globals, which may hold the session and graph that hold it."""
    for keeper in list(_functions.values()):
        keeper.function = None


def _call(token, args):
    """What the PyFunc kernel runs: the function `token` names, on `args`; its results as
    C-contiguous arrays (object arrays for strings)."""
    function = _functions.get(token)
    if function is None:
        raise ValueError(f"The Python function of {token} is gone: its graph was deleted")
    results = function(*args)
    if results is None:
        return []
    if not isinstance(results, (list, tuple)):
        results = [results]
    out = []
    for value in results:
        array = np.asarray(value, order="C")
        if array.dtype.kind in "SU":
            array = array.astype(object)
        out.append(array)
    return out


class _Keeper:
    """A function held by its graph: bound methods and lambdas live as long as it does."""

    def __init__(self, function):
        self.function = function

    def __call__(self, *args):
        return self.function(*args)


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 (TensorFlow's argument name)
    """func(*arrays of inp's values) in the step: a Tensor for a single Tout, else a list."""
    single = not isinstance(Tout, (list, tuple))
    types = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    graph = get_default_graph()
    token = f"pyfunc_{next(_tokens)}"
    keeper = _Keeper(func)
    graph._py_funcs.append(keeper)
    _functions[token] = keeper
    result = gen_ops.py_func([convert_to_tensor(x) for x in inp], token=token, Tout=types, name=name or "PyFunc")
    if not types:  # the op itself, to run for what the function does
        return graph.get_operations()[-1]
    outputs = result if isinstance(result, list) else [result]
    return outputs[0] if single else outputs


def numpy_function(func, inp, Tout, stateful=True, name=None):  # noqa: N803 (TensorFlow's argument name)
    return py_func(func, inp, Tout, stateful, name)
