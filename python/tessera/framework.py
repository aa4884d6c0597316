"""Graphs, operations and tensors as TensorFlow 1.x's Python builds them.

A Graph holds the engine's graph (tessera._core.Graph), which checks each node against its
op's schema as it is added and infers its outputs' dtypes and shapes; this side keeps what
TensorFlow's Python keeps: names and name scopes, the device, control-dependency and
colocation stacks, and collections. Build a graph from one thread, as in TensorFlow.
"""

import contextlib
import re
import threading
import types

import numpy as np

from tessera import _core, dtypes


class TensorShape:
    """A static shape: a list of dimensions (None where unknown), or None for unknown rank."""

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims._dims
        elif dims is not None:
            dims = [None if d is None or (isinstance(d, int) and d < 0) else int(d) for d in dims]
        self._dims = dims

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return None
        return TensorShape(self._dims[key]) if isinstance(key, slice) else self._dims[key]

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __eq__(self, other):
        try:
            return self._dims == as_shape(other)._dims
        except (TypeError, ValueError):
            return False

    def __repr__(self):
        return f"TensorShape({self._dims})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join(str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


class Tensor:
    """One output of an Operation: `name` is "op:index", as in TensorFlow."""

    __array_priority__ = 100  # NumPy defers to our operators: `ndarray + tensor` is a Tensor

    def __init__(self, op, value_index, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = TensorShape(shape)

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op.graph)
    name = property(lambda self: f"{self._op.name}:{self._value_index}")
    device = property(lambda self: self._op.device)
    shape = property(lambda self: self._shape)

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        self._shape = self._shape.merge_with(shape)
        # The engine's shape inference sees it too, for the ops made from this tensor on.
        if self._shape.dims is not None:
            self.graph._core.refine_output_shape(self._op.name, self._value_index, self._shape.dims)

    def consumers(self):
        return [op for op in self.graph.get_operations() if self in op.inputs]

    def eval(self, feed_dict=None, session=None):
        from tessera.session import default_session_for
        return default_session_for(self.graph, session).run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` instead of "
                        "`if t:`, or tf.cond to run on a tensor's value.")

    def __iter__(self):
        if self._shape.ndims is None or self._shape[0] is None:
            raise TypeError("Cannot iterate over a tensor whose first dimension is unknown.")
        from tessera import array_ops
        return iter(array_ops.unstack(self, num=self._shape[0]))

    def __len__(self):
        raise TypeError(f"len is not well defined for a symbolic Tensor ({self.name}). Use tf.shape.")

    def __array__(self, dtype=None):
        raise TypeError(f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array: run it in a Session.")


class Operation:
    """A node of the graph: its op `type`, inputs, control inputs, device and outputs."""

    def __init__(self, graph, name, op_type, inputs, control_inputs, attrs):
        self._graph = graph
        self._name = name
        self._type = op_type
        self._inputs = inputs
        self._control_inputs = control_inputs
        self._requested_attrs = attrs
        self._device = ""
        self._outputs = []
        self._control_flow_context = None  # the cond branch or while loop it was made in, if any

    graph = property(lambda self: self._graph)
    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    inputs = property(lambda self: list(self._inputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    outputs = property(lambda self: list(self._outputs))

    def values(self):
        return tuple(self._outputs)
    device = property(lambda self: self._device)

    def _update_input(self, index, tensor):
        """Makes input `index` of this Merge come from `tensor`: a loop's back edge."""
        self.graph._core.update_merge_input(self.name, index, tensor.op.name, tensor.value_index)
        self._inputs[index] = tensor

    def _set_device(self, device):
        self._device = _canonical_device(device)

    def get_attr(self, name):
        attrs = self._graph._core.attrs(self._name)
        if name not in attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        from tessera.gen_ops import OP_DEFS
        types = {a["name"]: a["type"] for a in OP_DEFS[self._type]["attrs"]}
        value = attrs[name]
        if types.get(name) == "type":
            return dtypes.as_dtype(value)
        if types.get(name) == "list(type)":
            return [dtypes.as_dtype(v) for v in value]
        if types.get(name) == "string" and isinstance(value, str):
            return value.encode()  # TensorFlow gives string attrs as bytes
        return value

    @property
    def node_def(self):
        """The fields of TensorFlow's NodeDef that device functions read: name, op, device, input."""
        inputs = [t.name for t in self._inputs] + ["^" + c.name for c in self._control_inputs]
        return types.SimpleNamespace(name=self._name, op=self._type, device=self._device, input=inputs)

    def run(self, feed_dict=None, session=None):
        from tessera.session import default_session_for
        default_session_for(self._graph, session).run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Operation '{self._name}' type={self._type}>"


# Device names: "/job:ps/replica:0/task:1/device:GPU:0", or their short forms ("/cpu:0",
# "/gpu:1", "/device:CPU:*").
_DEVICE_FIELD = re.compile(r"^(?:job:(?P<job>[^/]+)|replica:(?P<replica>\d+)|task:(?P<task>\d+)|"
                           r"(?:device:)?(?P<type>[A-Za-z_]+):(?P<index>\d+|\*))$")


def _parse_device(spec):
    """The fields a device string sets, as a dict; ValueError for a malformed one."""
    fields = {}
    for part in (spec or "").split("/"):
        if not part:
            continue
        m = _DEVICE_FIELD.match(part)
        if m is None:
            raise ValueError(f"Invalid device specification '{spec}'")
        for key, value in m.groupdict().items():
            if value is not None:
                fields[key] = value.upper() if key == "type" else value
    return fields


def _format_device(fields):
    out = ""
    for key in ("job", "replica", "task"):
        if key in fields:
            out += f"/{key}:{fields[key]}"
    if "type" in fields:
        out += f"/device:{fields['type']}:{fields.get('index', '*')}"
    return out


def _canonical_device(spec):
    return _format_device(_parse_device(spec)) if spec else ""


class _DefaultGraphStack(threading.local):
    def __init__(self):
        self.stack = []


_default_graph_stack = _DefaultGraphStack()
_global_default_graph = None


def get_default_graph():
    """The graph ops go into: the innermost `as_default()` graph of this thread, or the global one."""
    global _global_default_graph
    if _default_graph_stack.stack:
        return _default_graph_stack.stack[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    global _global_default_graph
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs.")
    _global_default_graph = Graph()


class Graph:
    """tf.Graph: a dataflow graph with TensorFlow 1.x's naming, device, dependency and collection rules."""

    def __init__(self):
        self._core = _core.Graph()
        self._ops = {}
        self._ops_in_order = []
        self._names_in_use = {}
        self._name_stack = ""
        self._device_stack = []          # device strings and functions, outermost first
        self._control_stack = []         # lists of Operations; None clears the outer ones
        self._colocation_stack = []      # Operations
        self._control_flow_stack = []    # control_flow's CondContext and WhileContext, innermost last
        self._py_funcs = []              # the functions of its PyFunc ops (script_ops), kept alive
        self._collections = {}
        self._finalized = False
        self.seed = None

    # Context -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        _default_graph_stack.stack.append(self)
        try:
            yield self
        finally:
            _default_graph_stack.stack.remove(self)

    def unique_name(self, name, mark_as_used=True):
        """`name` under the current name scope, with "_1", "_2", ... where it is taken."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{count}"
                count += 1
            name = f"{name}_{count - 1}"
            if mark_as_used:
                self._names_in_use[key] = 1
        return name

    def get_name_scope(self):
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        old = self._name_stack
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield "" if not new else new + "/"
        finally:
            self._name_stack = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        if not callable(device_name_or_function) and device_name_or_function is not None:
            _parse_device(device_name_or_function)  # a malformed name fails here, where it was written
        self._device_stack.append(device_name_or_function)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            self._control_stack.append(None)
        else:
            ops = []
            for c in control_inputs:
                if not isinstance(c, Operation):
                    c = getattr(c, "op", c)  # a Tensor's or a Variable's
                if not isinstance(c, Operation):
                    raise TypeError(f"Control input must be an Operation or a Tensor: {c!r}")
                ops.append(c)
            self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    def _has_control_dependencies(self):
        """Whether ops made now would wait on control inputs of control_dependencies."""
        for frame in reversed(self._control_stack):
            if frame is None:
                return False
            if frame:
                return True
        return False

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        op = op.op if isinstance(op, Tensor) else getattr(op, "op", op)
        old_devices, old_colocation = self._device_stack, self._colocation_stack
        # As TensorFlow does: the colocation decides the device, so device scopes in force
        # are set aside for its body.
        self._device_stack = []
        self._colocation_stack = ([] if ignore_existing else list(self._colocation_stack)) + (
            [op] if op is not None else [])
        try:
            yield
        finally:
            self._device_stack, self._colocation_stack = old_devices, old_colocation

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    # Ops ---------------------------------------------------------------------------------
    def create_op(self, op_type, inputs, attrs=None, name=None, control_inputs=()):
        """Adds a node of `op_type`; `inputs` are Tensors or lists of Tensors (list args)."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        # A name ending in "/" is a name scope's, already unique (TensorFlow's rule).
        name = name[:-1] if name and name.endswith("/") else self.unique_name(name or op_type)
        flat = []
        for i in inputs:
            flat.extend(i if isinstance(i, (list, tuple)) else [i])
        for t in flat:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input of '{name}' ({op_type}) must be a Tensor, got {t!r}")
        control = []
        for frame in self._control_stack:
            control = [] if frame is None else control + frame
        control += [c for c in control_inputs if c not in control]
        context = self._control_flow_stack[-1] if self._control_flow_stack else None
        if context is not None:
            # In a cond's branch or a loop: what comes from outside comes in through the
            # context's Switch or Enter, and an op with no inputs waits on its pivot (in a
            # function's graph, what comes from the graph outside is copied in).
            flat, control = context.prepare(flat, control, name)
        for t in flat:
            if t.graph is not self:
                raise ValueError(f"Tensor {t.name} must be from the same graph as the op '{name}'.")
        op = Operation(self, name, op_type, flat, control, dict(attrs or {}))
        op._control_flow_context = context
        device = {}
        for spec in self._device_stack:
            if spec is None:
                device = {}
            elif callable(spec):
                op._set_device(_format_device(device))
                device = _parse_device(spec(op) or "")
            else:
                device.update(_parse_device(spec))
        op._set_device(_format_device(device))
        colocate = [c.name for c in self._colocation_stack]
        if self._colocation_stack:
            op._set_device(self._colocation_stack[-1].device)
        types, shapes = self._core.add_node(
            name, op_type, [t.name for t in flat] + ["^" + c.name for c in control], op.device, colocate,
            {k: _attr_value(v) for k, v in (attrs or {}).items()})
        op._outputs = [Tensor(op, i, t, s) for i, (t, s) in enumerate(zip(types, shapes))]
        self._ops[name] = op
        self._ops_in_order.append(op)
        return op

    def _import_nodes(self, start):
        """Makes Operations of the nodes the engine added from node `start` on (a
        gradient's), and takes their names."""
        back_edges = []  # a loop's Merge, made before the NextIteration that feeds it
        for info in self._core.nodes_from(start):
            name = info["name"]
            inputs = []
            for i, input_name in enumerate(info["inputs"]):
                input_name = input_name if ":" in input_name else input_name + ":0"
                if input_name.rsplit(":", 1)[0] in self._ops:
                    inputs.append(self.get_tensor_by_name(input_name))
                else:
                    back_edges.append((name, i, input_name))
                    inputs.append(inputs[0])
            control = [self._ops[c] for c in info["control_inputs"]]
            op = Operation(self, name, info["op"], inputs, control, {})
            op._set_device(info["device"])
            op._outputs = [Tensor(op, i, t, s)
                           for i, (t, s) in enumerate(zip(info["output_types"], info["output_shapes"]))]
            self._ops[name] = op
            self._ops_in_order.append(op)
            # The name and the scopes it is in are taken, as if Python had made them.
            parts = name.lower().split("/")
            for i in range(1, len(parts) + 1):
                self._names_in_use.setdefault("/".join(parts[:i]), 1)
        for name, i, input_name in back_edges:
            self._ops[name]._inputs[i] = self.get_tensor_by_name(input_name)

    def _current_device(self):
        """The device the device strings in force name ("" where a function is among them)."""
        device = {}
        for spec in self._device_stack:
            if spec is None:
                device = {}
            elif callable(spec):
                return ""
            else:
                device.update(_parse_device(spec))
        return _format_device(device)

    def get_operations(self):
        return list(self._ops_in_order)

    def get_operation_by_name(self, name):
        if name not in self._ops:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return self._ops[name]

    def get_tensor_by_name(self, name):
        op_name, _, index = name.partition(":")
        if not index:
            raise ValueError(f"The name '{name}' looks like an Operation name, not a Tensor name (\"op:0\").")
        op = self.get_operation_by_name(op_name)
        if int(index) >= len(op.outputs):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist: '{op_name}' has "
                           f"{len(op.outputs)} outputs.")
        return op.outputs[int(index)]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph.")
            return obj
        if hasattr(obj, "_as_graph_element"):
            return obj._as_graph_element()
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")

    def as_graph_def(self, from_version=None, add_shapes=False):
        """The graph as TensorFlow's GraphDef (graph_io.GraphDef: its serialized message)."""
        from tessera.graph_io import as_graph_def
        return as_graph_def(self)

    def as_json(self):
        """The graph as Tessera's JSON graph, which `tessera run` reads."""
        return self._core.to_json()

    @property
    def version(self):
        return len(self._ops_in_order)

    # Collections -------------------------------------------------------------------------
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for name in [names] if isinstance(names, str) else names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [i for i in items if pattern.match(getattr(i, "name", ""))]

    def get_all_collection_keys(self):
        return list(self._collections)

    def clear_collection(self, name):
        self._collections.pop(name, None)


def _attr_value(v):
    """An attr value as the engine takes it: dtypes and shapes by their plain forms."""
    if isinstance(v, dtypes.DType):
        return v.name
    if isinstance(v, TensorShape):
        return v.dims
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], dtypes.DType):
        return [d.name for d in v]
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], TensorShape):
        return [s.dims for s in v]
    return v


# Conversion of Python values -------------------------------------------------------------
_conversion_functions = []  # (type, fn(value, dtype, name) -> Tensor)


def register_tensor_conversion_function(base_type, conversion_func):
    _conversion_functions.append((base_type, conversion_func))


def _numpy_value(value, dtype):
    """`value` as a NumPy array of `dtype` (a DType or None), with TensorFlow's defaults:
    Python floats become float32 and Python ints int32 (int64 where they do not fit)."""
    if dtype is not None:
        if dtype == dtypes.string:
            return np.array(value, dtype=object)
        array = np.asarray(value)
        target = dtype.as_numpy_dtype
        if array.dtype.kind in "fc" and np.dtype(target).kind in "iub" and not np.all(np.equal(np.mod(array, 1), 0)):
            raise TypeError(f"Expected {dtype.name}, but got {value!r} of type '{type(value).__name__}'.")
        if array.dtype.kind in "OSU" and np.dtype(target).kind != "O":
            raise TypeError(f"Expected {dtype.name}, but got {value!r} of type '{type(value).__name__}'.")
        return array.astype(target, copy=False)
    array = np.asarray(value)
    if array.dtype.kind in "SUO":
        return np.array(value, dtype=object)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return array
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        fits = array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31)
        return array.astype(np.int32) if fits else array
    return array


def contains_tensor(value):
    """Whether `value` is a Tensor (or a Variable) or a list or tuple holding one at any depth."""
    if isinstance(value, Tensor) or hasattr(value, "_as_input_tensor"):
        return True
    return isinstance(value, (list, tuple)) and any(contains_tensor(v) for v in value)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """tf.convert_to_tensor: a Tensor as it is (its dtype checked), anything else as a Const."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                             f"{value.dtype.name}: {value!r}")
        return value
    for base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            return fn(value, dtype, name)
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype={dtype}, name={name})")
    if contains_tensor(value):  # [n, -1] with n a Tensor: packed, as TensorFlow does
        from tessera import array_ops
        return array_ops.stack([convert_to_tensor(v, dtype) for v in value], name=name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name)
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name)


def constant(value, dtype=None, shape=None, name="Const"):
    """tf.constant: `value` (a scalar, nested lists, an array) as a Const of `dtype`, filled
    out to `shape` where a scalar is given one."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    array = _numpy_value(value, dtype)
    if shape is not None:
        shape = list(shape)
        if array.size == 1:
            array = np.full(shape, array.reshape(()).item() if array.dtype != object else array.reshape(())[()],
                            dtype=array.dtype)
        elif list(array.shape) != shape:
            count = int(np.prod(shape, dtype=np.int64))
            flat = array.ravel()
            if 0 < flat.size < count:  # TensorFlow 1.x fills the rest with the last value
                flat = np.concatenate([flat, np.repeat(flat[-1:], count - flat.size)])
            if flat.size != count:
                raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, but got {array.shape}.")
            array = flat.reshape(shape)
    tf_dtype = dtypes.as_dtype(array.dtype) if dtype is None else dtype
    if tf_dtype == dtypes.string:
        array = np.array([v.encode() if isinstance(v, str) else v for v in array.ravel()],
                         dtype=object).reshape(array.shape)
    graph = get_default_graph()
    return graph.create_op("Const", [], {"value": np.asarray(array, order="C"), "dtype": tf_dtype},
                           name=name or "Const").outputs[0]


def placeholder(dtype, shape=None, name=None):
    return get_default_graph().create_op(
        "Placeholder", [], {"dtype": dtypes.as_dtype(dtype), "shape": TensorShape(shape)},
        name=name or "Placeholder").outputs[0]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 (TensorFlow's argument name)
    input = convert_to_tensor(input)
    return get_default_graph().create_op(
        "PlaceholderWithDefault", [input], {"dtype": input.dtype, "shape": TensorShape(shape)},
        name=name or "PlaceholderWithDefault").outputs[0]


# Module-level forms of the default graph's contexts, as tf.* has them.
def name_scope(name, default_name=None, values=None):
    return get_default_graph().name_scope(name if name is not None else default_name)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)
