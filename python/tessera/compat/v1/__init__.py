"""tf.compat.v1 on Tessera: `import tessera.compat.v1 as tf` in a TensorFlow 1.x script.

A name TensorFlow has and Tessera does not yet raises NotImplementedError naming it, rather
than an AttributeError from deep inside a script.
"""

import types as _types

from tessera import __version__ as _tessera_version
from tessera import errors
from tessera.array_ops import (abs, add, add_n, arg_max, arg_min, argmax, argmin, broadcast_to, cast, concat, cos,
                               div, divide, einsum, ensure_shape, equal, erf, exp, expand_dims, fill, floordiv,
                               floormod, gather, greater, greater_equal, group, identity, identity_n, less,
                               less_equal, log, logical_and, logical_not, logical_or, matmul, maximum, minimum,
                               multiply, negative, no_op, not_equal, one_hot, ones, ones_like, pad, pow, range,
                               reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, reshape, rsqrt, shape,
                               sigmoid, sin, size, slice, split, sqrt, square, squared_difference, squeeze, stack,
                               strided_slice,
                               stop_gradient, subtract, tanh, tile, to_float, transpose, unstack, where, zeros,
                               zeros_like)
from tessera.control_flow import cond, while_loop
from tessera.dtypes import (DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half, int32, int64,
                            string, uint8)
from tessera.framework import (Graph, Operation, Tensor, TensorShape, add_to_collection, add_to_collections,
                               colocate_with, constant, control_dependencies, convert_to_tensor, device,
                               get_collection, get_collection_ref, get_default_graph, name_scope, placeholder,
                               placeholder_with_default, register_tensor_conversion_function,
                               reset_default_graph)
from tessera import data, layers, losses, nn, saved_model, summary, train
from tessera.gen_ops import raw_ops
from tessera.gradients import gradients
from tessera.graph_io import GraphDef, import_graph_def, make_ndarray
from tessera.unsupported import module_getattr
from tessera.math_ops import clip_by_global_norm, clip_by_norm, clip_by_value, global_norm
from tessera.queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from tessera.script_ops import numpy_function, py_func
from tessera.random_ops import random_normal, random_uniform, set_random_seed, truncated_normal
from tessera.session import (ConfigProto, GPUOptions, GraphOptions, InteractiveSession, OptimizerOptions,
                             RunMetadata, RunOptions, Session, get_default_session)
from tessera.summary import SessionLog, Summary
from tessera.variable_scope import (AUTO_REUSE, constant_initializer, get_variable, get_variable_scope,
                                    glorot_uniform_initializer, ones_initializer, random_normal_initializer,
                                    random_uniform_initializer, truncated_normal_initializer, variable_scope,
                                    zeros_initializer)
from tessera.variables import (GraphKeys, Variable, assign, assign_add, assign_sub, global_variables,
                               global_variables_initializer, is_variable_initialized, local_variables,
                               local_variables_initializer, trainable_variables, variables_initializer)

truediv = divide
mod = floormod
__version__ = _tessera_version

initialize_all_variables = global_variables_initializer


def disable_eager_execution():
    """Graph mode is the only mode: nothing to disable."""


def disable_v2_behavior():
    """TensorFlow 1.x's behaviour is the only one: nothing to disable."""


def disable_control_flow_v2():
    """Control flow is TensorFlow 1.x's (Switch, Merge, loop frames) already: nothing to do."""


def enable_eager_execution(*args, **kwargs):
    raise NotImplementedError("tf.compat.v1.enable_eager_execution: Tessera runs graphs only")


def executing_eagerly():
    return False


def _namespace(name, members):
    """A module of TensorFlow's namespace `name` holding `members`; other names raise
    NotImplementedError naming them."""
    module = _types.ModuleType(name)
    module.__dict__.update(members)
    module.__getattr__ = module_getattr(name)
    return module


math = _namespace("tf.compat.v1.math", {
    "add": add, "subtract": subtract, "multiply": multiply, "divide": divide, "truediv": divide, "pow": pow,
    "maximum": maximum, "minimum": minimum, "negative": negative, "square": square, "sqrt": sqrt, "rsqrt": rsqrt,
    "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid, "erf": erf, "abs": abs,
    "reduce_sum": reduce_sum, "reduce_mean": reduce_mean, "reduce_max": reduce_max, "reduce_min": reduce_min,
    "reduce_prod": reduce_prod, "argmax": argmax, "argmin": argmin, "equal": equal, "not_equal": not_equal,
    "less": less, "less_equal": less_equal, "greater": greater, "greater_equal": greater_equal,
    "logical_and": logical_and, "logical_or": logical_or, "logical_not": logical_not, "floordiv": floordiv,
    "floormod": floormod, "squared_difference": squared_difference, "add_n": add_n})

__getattr__ = module_getattr("tf.compat.v1")
