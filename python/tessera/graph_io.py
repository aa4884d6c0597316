"""TensorFlow's GraphDefs in and out of a Python graph: tf.GraphDef (the serialized
message), import_graph_def, Graph.as_graph_def, and train.write_graph."""

import json
import os

import numpy as np

from tessera.framework import Tensor, get_default_graph


class NodeDef:
    """One node of a GraphDef, read-only, as TensorFlow's NodeDef: name, op, input ("op",
    "op:1", "^op"), device and attr (AttrValues by name)."""

    def __init__(self, spec):
        self.name = spec["name"]
        self.op = spec["op"]
        self.input = list(spec.get("inputs", []))
        self.device = spec.get("device", "")
        from tessera.gen_ops import OP_DEFS
        kinds = {a["name"]: a["type"] for a in OP_DEFS.get(self.op, {}).get("attrs", [])}
        self.attr = {key: AttrValue(kinds.get(key), value) for key, value in spec.get("attrs", {}).items()}

    def __repr__(self):
        return f"NodeDef(name={self.name!r}, op={self.op!r}, input={self.input!r})"


class TensorShapeProto:
    """A shape as TensorFlow's TensorShapeProto: `dim` (each with `size`, -1 where unknown)
    and `unknown_rank`."""

    class Dim:
        def __init__(self, size):
            self.size = -1 if size is None else size
            self.name = ""

    def __init__(self, dims):
        self.unknown_rank = dims is None
        self.dim = [] if dims is None else [TensorShapeProto.Dim(d) for d in dims]

    def __eq__(self, other):
        return isinstance(other, TensorShapeProto) and self.unknown_rank == other.unknown_rank and \
            [d.size for d in self.dim] == [d.size for d in other.dim]


class TensorProto:
    """A constant as TensorFlow's TensorProto, to read with tf.make_ndarray: `dtype` (the
    DataType number) and `tensor_shape`."""

    def __init__(self, spec):
        from tessera import dtypes
        self._dtype = dtypes.as_dtype(spec["dtype"])
        self._spec = spec
        self.dtype = self._dtype.as_datatype_enum
        self.tensor_shape = TensorShapeProto(spec["shape"])

    def numpy(self):
        data = self._spec["data"]
        if self._dtype.name == "string":
            data = [d.encode() if isinstance(d, str) else d for d in data]
        return np.array(data, dtype=self._dtype.as_numpy_dtype).reshape(self._spec["shape"])


class AttrValue:
    """One attr of a NodeDef as TensorFlow's AttrValue: the field its kind fills (s, i, f,
    b, type, shape, tensor, func or list, whose fields are lists) and WhichOneof("value")."""

    _FIELDS = {"string": "s", "int": "i", "float": "f", "bool": "b", "type": "type", "shape": "shape",
               "tensor": "tensor", "func": "func"}

    def __init__(self, kind, value):
        if kind is None:  # an attr no schema declares ("_class"): its kind by its value
            kind = _kind_of(value)
        self._which = "list" if kind.startswith("list(") else AttrValue._FIELDS[kind]
        self._value = _ListValue(kind[5:-1], value) if self._which == "list" else _field(kind, value)

    def WhichOneof(self, group):  # noqa: N802 (protobuf's name)
        return self._which if group == "value" else None

    def HasField(self, field):  # noqa: N802
        return field == self._which

    def __getattr__(self, field):
        if field in ("s", "i", "f", "b", "type", "shape", "tensor", "func", "list"):
            if field == self._which:
                return self._value
            return _ListValue(None, []) if field == "list" else _default(field)
        raise AttributeError(field)

    def __eq__(self, other):  # a comparison with the plain value, as this package's NodeDefs had
        if isinstance(other, AttrValue):
            return self._which == other._which and self._value == other._value
        from tessera import dtypes
        if self._which == "type":
            try:
                return dtypes.as_dtype(other).as_datatype_enum == self._value
            except TypeError:
                return False
        if self._which == "s" and isinstance(other, str):
            return self._value == other.encode()
        return self._value == other

    def __repr__(self):
        return f"AttrValue({self._which}={self._value!r})"


class _ListValue:
    """AttrValue.list: every field a list, the attr's in its kind's field."""

    def __init__(self, kind, values):
        self._which = AttrValue._FIELDS.get(kind)
        self._values = [_field(kind, v) for v in values] if kind else []

    def __getattr__(self, field):
        if field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
            return self._values if field == self._which else []
        raise AttributeError(field)

    def __eq__(self, other):
        return self._values == (other._values if isinstance(other, _ListValue) else list(other))


class _Func:
    def __init__(self, name):
        self.name = name
        self.attr = {}


def _field(kind, value):
    from tessera import dtypes
    if kind == "string":
        return value.encode() if isinstance(value, str) else bytes(value)
    if kind == "type":
        return dtypes.as_dtype(value).as_datatype_enum
    if kind == "shape":
        return TensorShapeProto(value)
    if kind == "tensor":
        return TensorProto(value)
    if kind == "func":  # a dataset's function comes as its body, without a name
        return _Func(value.get("name", "") if isinstance(value, dict) else value)
    return value


def _kind_of(value):
    if isinstance(value, list):
        return f"list({_kind_of(value[0]) if value else 'int'})"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "tensor" if "dtype" in value and "data" in value else "func"
    if value is None:
        return "shape"  # an unknown shape
    return {int: "int", float: "float"}.get(type(value), "string")


def _default(field):
    return {"s": b"", "i": 0, "f": 0.0, "b": False, "type": 0, "shape": TensorShapeProto([]),
            "tensor": None, "func": None}[field]


def make_ndarray(tensor):
    """tf.make_ndarray: a NumPy array of a NodeDef's tensor attr."""
    if not isinstance(tensor, TensorProto):
        raise TypeError(f"make_ndarray takes a TensorProto (node.attr['value'].tensor), got {type(tensor)}")
    return tensor.numpy()


class GraphDef:
    """tf.compat.v1.GraphDef as a serialized message: ParseFromString and
    SerializeToString, which is what scripts do with one, and its nodes to read (`node`,
    NodeDefs in the graph's order); other fields are not exposed."""

    def __init__(self, data=b""):
        self._data = bytes(data)
        self._nodes = None

    def ParseFromString(self, data):  # noqa: N802 (protobuf's name)
        self._data = bytes(data)
        self._nodes = None
        return len(self._data)

    @property
    def node(self):
        if self._nodes is None:
            from tessera import _core
            graph = _core.Graph()
            graph.import_graph_def(self._data, "", {})
            self._nodes = tuple(NodeDef(n) for n in json.loads(graph.to_json())["nodes"])
        return self._nodes

    def SerializeToString(self):  # noqa: N802
        return self._data

    @classmethod
    def FromString(cls, data):  # noqa: N802
        return cls(data)

    def __getattr__(self, name):
        from tessera.unsupported import NotSupportedError
        raise NotSupportedError(f"tf.compat.v1.GraphDef.{name} is not supported by Tessera yet (it holds the "
                                "serialized message only)")


def as_graph_def(graph):
    return GraphDef(graph._core.as_graph_def(False))


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Adds `graph_def`'s nodes to the default graph under the name scope `name` ("import"
    by default; "" for none), feeding `input_map`'s tensors where the imported graph's are
    named; returns `return_elements` ("op" or "op:0" names) as Operations and Tensors."""
    graph = get_default_graph()
    data = graph_def.SerializeToString() if hasattr(graph_def, "SerializeToString") else bytes(graph_def)
    prefix = _import(graph, data, input_map, name)
    if return_elements is None:
        return None
    return [graph.as_graph_element(prefix + element) for element in return_elements]


def _import(graph, data, input_map, name):
    """Adds the serialized GraphDef `data` to `graph` under the name scope `name` (None:
    "import"; "": none); returns the prefix its nodes took ("import_1/", "outer/import/")."""
    mapping = {}
    for key, value in (input_map or {}).items():
        if not isinstance(value, Tensor):
            raise TypeError(f"input_map values must be Tensors; {key!r} maps to {value!r}")
        mapping[key if ":" in key or key.startswith("^") else key + ":0"] = value.name
    if name == "":
        prefix = ""
    else:
        with graph.name_scope(name or "import") as scope:
            prefix = scope
    start = graph._core.num_nodes()
    try:
        graph._core.import_graph_def(data, prefix, mapping)
    finally:
        graph._import_nodes(start)
    return prefix


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a graph (or a GraphDef) to logdir/name, as text or binary; returns the path."""
    graph = graph_or_graph_def if hasattr(graph_or_graph_def, "_core") else None
    if graph is not None:
        data = graph._core.as_graph_def(as_text)
    elif as_text:
        scratch = type(get_default_graph())()
        with scratch.as_default():
            import_graph_def(graph_or_graph_def, name="")
        data = scratch._core.as_graph_def(True)
    else:
        data = graph_or_graph_def.SerializeToString()
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    return path
