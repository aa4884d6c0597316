"""tf.cond and tf.while_loop as TensorFlow 1.x builds them.

A cond's branches take the tensors they use from outside through a Switch on the predicate
(one per tensor and branch), so that only the taken branch runs, and a Merge per output
joins the two. A while loop is a frame: each loop variable enters through an Enter, a
Merge joins it with the body's NextIteration (the back edge, connected once the body is
built), LoopCond decides, a Switch sends each value to the body or to an Exit; tensors
from outside enter as constants of the frame. tf.gradients goes through both: the engine's
gradients of Switch and Merge for a cond, and for a loop a gradient loop that pops, last
iteration first, what the forward loop pushed on stacks (graph/builder/gradients.h)."""

from tessera import dtypes, gen_ops
from tessera.framework import (TensorShape, constant, convert_to_tensor, get_default_graph, name_scope,
                               placeholder_with_default)


class _Context:
    """A cond branch or a while loop while its functions build: the ops made meanwhile
    belong to it, and the tensors they take from outside come in through capture()."""

    def __init__(self, graph):
        self.graph = graph
        self.outer = graph._control_flow_stack[-1] if graph._control_flow_stack else None
        self.pivot = None  # the op that ops without inputs wait on
        self._captured = {}  # outside tensor's name -> its tensor inside
        self._inside = set()  # the names of those inside tensors

    def contains(self, op):
        ctx = getattr(op, "_control_flow_context", None)
        while ctx is not None:
            if ctx is self:
                return True
            ctx = ctx.outer
        return False

    def capture(self, tensor, consumer=None):
        """`tensor` as this context sees it: through _enter() where it is made outside (for
        the op named `consumer`, where that is known)."""
        if self.contains(tensor.op) or tensor.name in self._inside:
            return tensor
        if tensor.name not in self._captured:
            stack = self.graph._control_flow_stack
            stack.pop()  # what brings it in belongs to the enclosing context
            try:
                # ... and waits on nothing the ops being made wait on (TensorFlow's rule too):
                # a wait on this context's pivot would make it dead where the pivot is.
                with self.graph.control_dependencies(None):
                    inside = self._enter(tensor, consumer)
            finally:
                stack.append(self)
            self._captured[tensor.name] = inside
            self._inside.add(inside.name)
        return self._captured[tensor.name]

    def prepare(self, inputs, control, name):
        """The inputs and control inputs of the op `name`, made in this context."""
        inputs = [self.capture(t, name) for t in inputs]
        if not inputs and not any(self.contains(c) for c in control):
            control = control + [self.pivot]
        return inputs, control


class CondContext(_Context):
    """One branch of a cond."""

    def __init__(self, graph, pred, branch, pivot):
        super().__init__(graph)
        self.pred = pred
        self.branch = branch  # 1 for true_fn, 0 for false_fn
        self.pivot = pivot

    def _enter(self, tensor, consumer):
        return gen_ops.switch(tensor, self.pred, name="Switch")[self.branch]

    def prepare(self, inputs, control, name):
        # A variable's reference (an assign's target in a branch) comes in as it is, where
        # TensorFlow passes it through a RefSwitch: the op then waits on the pivot, which is
        # dead in the branch not taken, as a Switch's output would be. (Not in a loop: there
        # the reference would have to enter the loop's frame too.)
        def is_ref(t):
            return t.op.type == "VariableV2"
        if self.outer is not None or not any(is_ref(t) for t in inputs):
            return super().prepare(inputs, control, name)
        inputs = [t if is_ref(t) else self.capture(t, name) for t in inputs]
        if all(is_ref(t) for t in inputs) and not any(self.contains(c) for c in control):
            control = control + [self.pivot]
        return inputs, control


class WhileContext(_Context):
    """A while loop's frame."""

    def __init__(self, graph, frame_name, parallel_iterations):
        super().__init__(graph)
        self.frame_name = frame_name
        self.parallel_iterations = parallel_iterations

    def enter(self, tensor, is_constant):
        """An Enter of `tensor` into the frame, which the frame's ops see as their own."""
        out = gen_ops.enter(tensor, frame_name=self.frame_name, is_constant=is_constant,
                            parallel_iterations=self.parallel_iterations, name="Enter")
        out.op._control_flow_context = self
        return out

    def _enter(self, tensor, consumer):
        if consumer is None:
            return self.enter(tensor, is_constant=True)
        with name_scope(consumer + "/"):  # TensorFlow's name: CONSUMER/Enter
            return self.enter(tensor, is_constant=True)

    def prepare(self, inputs, control, name):
        # A control input from outside the frame would never reach a later iteration; the
        # Enters already wait for what the loop waits for (TensorFlow drops them too).
        return super().prepare(inputs, [c for c in control if self.contains(c)], name)


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
    graph._control_flow_stack.append(ctx)
    try:
        out = fn()
        # Each output waits on the pivot, which the engine's gradient of the Merge follows
        # to the predicate.
        with graph.control_dependencies([pivot.op]):
            leaves = [gen_ops.identity(ctx.capture(convert_to_tensor(v))) for v in _flatten(out)]
    finally:
        graph._control_flow_stack.pop()
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



def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, name=None, maximum_iterations=None, return_same_structure=False):
    """Repeats body while cond holds: `cond(*vars)` a scalar bool, `body(*vars)` new vars of
    the same structure, dtypes and shapes (or shapes within `shape_invariants`); at most
    `maximum_iterations` times where given; up to `parallel_iterations` iterations at once."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    graph = get_default_graph()
    with name_scope(name, "while"):
        if not isinstance(loop_vars, (list, tuple)):
            loop_vars = [loop_vars]
        if maximum_iterations is not None:
            limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if limit.shape.ndims not in (None, 0):
                raise ValueError(f"maximum_iterations must be a scalar, saw shape: {limit.shape}")
            user_cond, user_body = cond, body

            def cond(i, lv):
                return gen_ops.logical_and(gen_ops.less(i, limit), user_cond(*lv))

            def body(i, lv):
                return i + 1, user_body(*lv)

            loop_vars = (constant(0, dtype=limit.dtype, name="iteration_counter"), loop_vars)
            if shape_invariants is not None:
                shape_invariants = (TensorShape([]), shape_invariants)
        flat = [convert_to_tensor(v) for v in _flatten(loop_vars)]
        if not flat:
            raise ValueError("No loop variables provided")
        invariants = [None] * len(flat) if shape_invariants is None else _flatten_like(loop_vars, shape_invariants)
        if len(invariants) != len(flat):
            raise ValueError(f"shape_invariants has {len(invariants)} shapes for {len(flat)} loop variables")
        for v, shape in zip(flat, invariants):
            if shape is not None and not v.shape.is_compatible_with(shape):
                raise ValueError(f"The shape invariant specified for {v.name} is not compatible with the initial "
                                 f"shape of the loop variable. It enters the loop with shape {v.shape}, but the "
                                 f"specified shape invariant is {shape}.")
        # A variable with an invariant enters with that shape, so that the loop's static
        # shapes, here and in the engine, allow what the iterations make.
        initial = flat
        flat = [v if shape is None else placeholder_with_default(v, shape) for v, shape in zip(flat, invariants)]
        ctx = WhileContext(graph, graph.unique_name("while_context"), parallel_iterations)
        enters = [ctx.enter(v, is_constant=False) for v in flat]
        graph._control_flow_stack.append(ctx)
        try:
            merges = [gen_ops.merge([e, e], name="Merge")[0] for e in enters]
            ctx.pivot = merges[0].op
            pred = convert_to_tensor(cond(*_pack(loop_vars, iter(merges))))
            if pred.dtype != dtypes.bool or pred.shape.ndims not in (None, 0):
                raise ValueError(f"cond must return a scalar bool tensor, got {pred.dtype.name} of shape {pred.shape}")
            loop_cond = gen_ops.loop_cond(pred, name="LoopCond")
            switches = [gen_ops.switch(m, loop_cond, name="Switch") for m in merges]
            body_vars = [gen_ops.identity(sw[1], name="Identity") for sw in switches]
            ctx.pivot = body_vars[0].op
            result = body(*_pack(loop_vars, iter(body_vars)))
            if len(loop_vars) == 1 and not isinstance(result, (list, tuple, dict)):
                result = [result]
            nexts = [convert_to_tensor(v) for v in _flatten(result)]
            if len(nexts) != len(merges):
                raise ValueError(f"body returned {len(nexts)} tensors for {len(merges)} loop variables")
            for m, n, v in zip(merges, nexts, initial):
                if n.dtype != m.dtype:
                    raise TypeError(f"Loop variable {m.name} enters the loop as {m.dtype.name} but the body makes "
                                    f"{n.dtype.name}")
                if not n.shape.is_compatible_with(m.shape) or n.shape.ndims is None and m.shape.ndims is not None:
                    raise ValueError(f"Input tensor '{v.name}' enters the loop with shape {m.shape}, but "
                                     f"has shape {n.shape} after one iteration. To allow the shape to vary across "
                                     "iterations, use the `shape_invariants` argument of tf.while_loop to specify "
                                     "a less-specific shape.")
                m.op._update_input(1, gen_ops.next_iteration(ctx.capture(n), name="NextIteration"))
        finally:
            graph._control_flow_stack.pop()
        exits = [gen_ops.exit(sw[0], name="Exit") for sw in switches]
    if not back_prop:  # no gradient goes through the loop, as in TensorFlow
        from tessera.array_ops import stop_gradient
        exits = [stop_gradient(e) for e in exits]
    # The results in the structure the body returned, one tensor in all as itself: TensorFlow's.
    out = _pack(result, iter(exits))
    if maximum_iterations is not None:
        out = out[1]
    single = len(_flatten(out)) == 1 and isinstance(out, (list, tuple)) and not return_same_structure
    return out[0] if single else out


def _flatten_like(structure, shapes):
    """The shapes of `shapes`, which has `structure`'s nesting with a shape per tensor."""
    if isinstance(structure, dict):
        return [s for key in sorted(structure) for s in _flatten_like(structure[key], shapes[key])]
    if isinstance(structure, (list, tuple)):
        if len(structure) != len(shapes):
            raise ValueError("shape_invariants must have the structure of loop_vars")
        return [s for item, shape in zip(structure, shapes) for s in _flatten_like(item, shape)]
    return [shapes if isinstance(shapes, TensorShape) else TensorShape(shapes)]
