"""A Python function for every op the engine registers, made from its schema at import,
as TensorFlow's gen_*_ops modules are generated: `mat_mul(a, b, transpose_a=False, ...,
name=None)`, snake_case of the op's name, its inputs then its attrs as arguments.

Type attrs that inputs decide (an input "x: T") are inferred from the first Tensor given for
them; Python values given for such inputs become Consts of that type, or TensorFlow's
default (float32, int32) when no Tensor decides it. An op with no outputs returns its
Operation, one output a Tensor, several a list.
"""

import re
import sys

from tessera import _core, dtypes
from tessera.framework import Tensor, convert_to_tensor, get_default_graph

_SNAKE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(op_name):
    """TensorFlow's Python name of an op: MatMul -> mat_mul, Conv2D -> conv2d, AddV2 -> add_v2."""
    return _SNAKE.sub("_", op_name).lower()


def _as_tensor_arg(value):
    """What a Variable (or anything with _as_input_tensor) is as an op's input."""
    return value._as_input_tensor() if hasattr(value, "_as_input_tensor") else value


def _as_ref_arg(value):
    """What a Variable is as a reference input (an Assign's first)."""
    return value._ref() if hasattr(value, "_ref") else value


def apply_op(op_def, args, attrs, name=None):
    """Adds a node of `op_def` whose inputs are args[input name] and attrs the rest."""
    graph = get_default_graph()
    attrs = {k: v for k, v in attrs.items() if v is not None}
    attr_types = {a["name"]: a["type"] for a in op_def["attrs"]}
    # Type attrs the given Tensors decide.
    for arg in op_def["inputs"]:
        if arg["name"] not in args:
            raise TypeError(f"{snake_case(op_def['name'])}() missing required argument '{arg['name']}'")
        value = args[arg["name"]]
        values = list(value) if (arg["number_attr"] or arg["type_list"]) and isinstance(value, (list, tuple)) \
            else [value]
        values = [_as_tensor_arg(v) for v in values]
        if arg["type_attr"] and not arg["type_list"] and arg["type_attr"] not in attrs:
            first = next((v for v in values if isinstance(v, Tensor)), None)
            if first is not None:
                attrs[arg["type_attr"]] = first.dtype
    inputs = []
    for arg in op_def["inputs"]:
        value = args[arg["name"]]
        if arg["type_list"]:
            tensors = [convert_to_tensor(_as_tensor_arg(v)) for v in value]
            attrs.setdefault(arg["type_attr"], [t.dtype for t in tensors])
            inputs.append(tensors)
            continue
        fixed = dtypes.as_dtype(arg["type"]) if arg["type"] else None
        dtype = fixed or attrs.get(arg["type_attr"])
        if arg["number_attr"]:
            tensors = [convert_to_tensor(_as_tensor_arg(v), dtype) for v in value]
            attrs.setdefault(arg["number_attr"], len(tensors))
            if tensors and arg["type_attr"]:
                attrs.setdefault(arg["type_attr"], tensors[0].dtype)
            inputs.append(tensors)
            continue
        value = _as_ref_arg(value) if arg["is_ref"] else _as_tensor_arg(value)
        tensor = convert_to_tensor(value, dtype)
        if arg["type_attr"]:
            attrs.setdefault(arg["type_attr"], tensor.dtype)
        inputs.append(tensor)
    for key in attrs:
        if key not in attr_types and not key.startswith("_"):
            raise TypeError(f"{snake_case(op_def['name'])}() got an unexpected keyword argument '{key}'")
    # As TensorFlow's op_def_library: an op taking a reference goes where its variable is,
    # whatever the device scopes say.
    refs = [t for arg, t in zip(op_def["inputs"], inputs) if arg["is_ref"]]
    if refs:
        with graph.colocate_with(refs[0].op):
            op = graph.create_op(op_def["name"], inputs, attrs, name=name)
    else:
        op = graph.create_op(op_def["name"], inputs, attrs, name=name)
    outputs = op.outputs
    if not op_def["outputs"]:
        return op
    if len(op_def["outputs"]) == 1 and not (op_def["outputs"][0]["number_attr"] or op_def["outputs"][0]["type_list"]):
        return outputs[0]
    return outputs


def _make_function(op_def):
    input_names = [a["name"] for a in op_def["inputs"]]
    attr_names = [a["name"] for a in op_def["attrs"]
                  if not any(a["name"] in (i["type_attr"], i["number_attr"]) for i in op_def["inputs"])]
    positional = input_names + attr_names

    def op_function(*args, name=None, **kwargs):
        if len(args) > len(positional):
            raise TypeError(f"{snake_case(op_def['name'])}() takes {len(positional)} positional arguments but "
                            f"{len(args)} were given")
        bound = dict(zip(positional, args))
        for key, value in kwargs.items():
            if key in bound:
                raise TypeError(f"{snake_case(op_def['name'])}() got multiple values for argument '{key}'")
            bound[key] = value
        inputs = {k: bound.pop(k) for k in input_names if k in bound}
        return apply_op(op_def, inputs, bound, name=name or op_def["name"])

    op_function.__name__ = snake_case(op_def["name"])
    op_function.__qualname__ = op_function.__name__
    op_function.__doc__ = (f"The op {op_def['name']}: inputs {', '.join(input_names) or 'none'}; attrs "
                           f"{', '.join(a['name'] for a in op_def['attrs']) or 'none'}.")
    return op_function


OP_DEFS = {d["name"]: d for d in _core.op_defs()}


class _RawOps:
    """tf.raw_ops: every op by its own name, keyword arguments only."""

    def __init__(self):
        for op_name, op_def in OP_DEFS.items():
            fn = _make_function(op_def)

            def raw(name=None, _fn=fn, **kwargs):
                return _fn(name=name, **kwargs)

            raw.__name__ = op_name
            raw.__doc__ = fn.__doc__
            setattr(self, op_name, raw)


raw_ops = _RawOps()

_module = sys.modules[__name__]
for _name, _def in OP_DEFS.items():
    if not _name.startswith("_"):
        setattr(_module, snake_case(_name), _make_function(_def))
