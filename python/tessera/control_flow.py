"""tf.cond as TensorFlow 1.x builds it: each branch's ops take the tensors they use from
outside through a Switch on the predicate (made once per tensor and branch), so that only
the taken branch runs, and a Merge per output joins the two. Gradients through a cond are
not there yet (the engine has no gradient for Switch and Merge): tf.gradients says so,
naming the op."""

from tessera import dtypes, gen_ops
from tessera.framework import convert_to_tensor, get_default_graph, name_scope


class CondContext:
    """One branch of a cond while its function builds: the ops made meanwhile belong to it."""

    def __init__(self, graph, pred, branch, pivot):
        self.graph = graph
        self.pred = pred
        self.branch = branch  # 1 for true_fn, 0 for false_fn
        self.pivot = pivot    # an op of the branch that ops without inputs depend on
        self.outer = graph._cond_stack[-1] if graph._cond_stack else None
        self._switches = {}

    def contains(self, op):
        ctx = getattr(op, "_cond_context", None)
        while ctx is not None:
            if ctx is self:
                return True
            ctx = ctx.outer
        return False

    def capture(self, tensor):
        """`tensor` as the branch sees it: through a Switch where it is made outside."""
        if self.contains(tensor.op):
            return tensor
        if tensor.name not in self._switches:
            stack = self.graph._cond_stack
            stack.pop()  # the Switch belongs to the enclosing context, not to the branch
            try:
                switch = gen_ops.switch(tensor, self.pred, name="Switch")
            finally:
                stack.append(self)
            self._switches[tensor.name] = switch[self.branch]
        return self._switches[tensor.name]


def _flatten(structure):
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack(structure, leaves):
    if isinstance(structure, dict):
        return {key: _pack(structure[key], leaves) for key in sorted(structure)}
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[_pack(item, leaves) for item in structure])
    if isinstance(structure, (list, tuple)):
        return type(structure)(_pack(item, leaves) for item in structure)
    return next(leaves)


def _branch(graph, pred, branch, pivot, fn):
    ctx = CondContext(graph, pred, branch, pivot.op)
    graph._cond_stack.append(ctx)
    try:
        out = fn()
        leaves = [gen_ops.identity(ctx.capture(convert_to_tensor(v))) for v in _flatten(out)]
    finally:
        graph._cond_stack.pop()
    return out, leaves


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None):
    """true_fn() where pred is true, false_fn() where it is false; both must return the same
    structure of tensors, of matching dtypes."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable.")
    graph = get_default_graph()
    with name_scope(name, "cond"):
        pred = convert_to_tensor(pred, dtypes.bool)
        switch = gen_ops.switch(pred, pred)
        pivot_true = gen_ops.identity(switch[1], name="switch_t")
        pivot_false = gen_ops.identity(switch[0], name="switch_f")
        structure, true_leaves = _branch(graph, pred, 1, pivot_true, true_fn)
        _, false_leaves = _branch(graph, pred, 0, pivot_false, false_fn)
        if len(true_leaves) != len(false_leaves):
            raise ValueError("true_fn and false_fn must return the same number of tensors")
        merged = []
        for t, f in zip(true_leaves, false_leaves):
            if t.dtype != f.dtype:
                raise ValueError(f"Outputs of true_fn and false_fn must have the same type: {t.dtype.name}, "
                                 f"{f.dtype.name}")
            merged.append(gen_ops.merge([f, t], name="Merge")[0])
        if not isinstance(structure, (list, tuple, dict)) and not strict:
            return merged[0]
        return _pack(structure, iter(merged))

