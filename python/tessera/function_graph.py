"""Graph functions made from Python: a Python function traced into a graph of its own, in
the form the func attrs of the engine's ops take (tf.data's map and filter functions).

The engine's functions take no captured inputs, so a traced function may use the graph
outside only for its constants, which are copied in; anything else from outside is a
NotImplementedError naming the tensor and what wanted it.
"""

from tessera.framework import Graph, constant, convert_to_tensor, get_default_graph, placeholder


class _FunctionContext:
    """The context a function's graph is traced in (framework.Graph.create_op asks it about
    every op's inputs)."""

    def __init__(self, graph, what):
        self.graph = graph
        self.what = what
        self.outer = None
        self._copies = {}  # a constant outside's name -> its copy inside

    def contains(self, op):
        return op.graph is self.graph

    def prepare(self, inputs, control, name):
        # A wait on an op outside means nothing inside: the function runs per element.
        return [self.capture(t) for t in inputs], [c for c in control if c.graph is self.graph]

    def capture(self, tensor, consumer=None):
        if tensor.graph is self.graph:
            return tensor
        if tensor.name not in self._copies:
            if tensor.op.type != "Const":
                raise NotImplementedError(
                    f"{self.what}: the function uses {tensor.name} ({tensor.op.type}) of the graph outside it; "
                    "Tessera's dataset functions may take only that graph's constants")
            stack = self.graph._control_flow_stack
            stack.pop()
            try:
                self._copies[tensor.name] = constant(tensor.op.get_attr("value"), dtype=tensor.dtype,
                                                     name=tensor.op.name.rsplit("/", 1)[-1])
            finally:
                stack.append(self)
        return self._copies[tensor.name]


class TracedFunction:
    """`fn` traced: `outputs` as fn returned them (Tensors of `graph`), `rets` flattened."""

    def __init__(self, fn, arg_specs, what, flatten):
        """`arg_specs` are the (dtype, shape) of the arguments, made Placeholders arg_0, ...;
        `fn` gets those Placeholders as a list; `flatten` makes its result a list of leaves."""
        self.graph = Graph()
        self.graph.seed = get_default_graph().seed
        # The py_funcs it calls live as long as the graph it is traced for.
        self.graph._py_funcs = get_default_graph()._py_funcs
        with self.graph.as_default():
            self.args = [placeholder(dtype, shape, name=f"arg_{i}") for i, (dtype, shape) in enumerate(arg_specs)]
            context = _FunctionContext(self.graph, what)
            self.graph._control_flow_stack.append(context)
            try:
                self.outputs = fn(self.args)
                self.rets = [context.capture(convert_to_tensor(v)) for v in flatten(self.outputs)]
            finally:
                self.graph._control_flow_stack.pop()

    def attr_value(self):
        """What an op's func attr takes: the body, its argument Placeholders, its results."""
        return (self.graph._core, [a.op.name for a in self.args], [r.name for r in self.rets])
