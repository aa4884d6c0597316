"""TensorFlow's GraphDefs in and out of a Python graph: tf.GraphDef (the serialized
message), import_graph_def, Graph.as_graph_def, and train.write_graph."""

import json
import os

from tessera.framework import Tensor, get_default_graph


class NodeDef:
    """One node of a GraphDef, read-only: name, op, input ("op", "op:1", "^op"), device and
    attr (its values as Python values: dtypes by name, shapes as lists, tensors as dicts)."""

    def __init__(self, spec):
        self.name = spec["name"]
        self.op = spec["op"]
        self.input = list(spec.get("inputs", []))
        self.device = spec.get("device", "")
        self.attr = dict(spec.get("attrs", {}))

    def __repr__(self):
        return f"NodeDef(name={self.name!r}, op={self.op!r}, input={self.input!r})"


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
