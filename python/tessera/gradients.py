"""tf.gradients: symbolic differentiation by the engine's gradient functions
(graph/builder/gradients.h), added to the Python graph under a "gradients" name scope."""

from tessera.framework import convert_to_tensor, get_default_graph


def _ancestors(tensors):
    """The ops a gradient of `tensors` can reach: what they depend on through data edges,
    themselves included, stopping at tf.stop_gradient."""
    seen, stack = set(), [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type != "StopGradient":
            stack.extend(i.op for i in op.inputs)
    return seen


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None, unconnected_gradients="none"):
    """d(sum of ys)/d(x) for each x of xs: a Tensor, or None where ys do not depend on x
    (zeros with unconnected_gradients="zero"), as tf.gradients."""
    if stop_gradients:
        raise NotImplementedError("tf.gradients(stop_gradients=...) is not supported by Tessera yet; use "
                                  "tf.stop_gradient in the graph")
    graph = get_default_graph()
    ys = [convert_to_tensor(y) for y in (ys if isinstance(ys, (list, tuple)) else [ys])]
    single = not isinstance(xs, (list, tuple))
    xs = [xs] if single else list(xs)
    x_tensors = [x._ref() if hasattr(x, "_ref") else convert_to_tensor(x) for x in xs]
    grad_ys = None if grad_ys is None else [convert_to_tensor(g) for g in
                                            (grad_ys if isinstance(grad_ys, (list, tuple)) else [grad_ys])]
    reached = _ancestors(ys)
    connected = [i for i, x in enumerate(x_tensors) if x.op in reached]
    out = [None] * len(xs)
    if connected:
        # The engine names the ops "gradients/<op>_grad/...", "gradients_1/..." where
        # "gradients" is taken, under the name scope in force.
        if name != "gradients":
            raise NotImplementedError("tf.gradients(name=...) other than 'gradients' is not supported by Tessera yet")
        start = graph._core.num_nodes()
        try:
            names = graph._core.add_gradients(
                [y.name for y in ys], [x_tensors[i].name for i in connected],
                [g.name for g in grad_ys] if grad_ys else [], graph.get_name_scope(), colocate_gradients_with_ops,
                graph._current_device())
        finally:
            graph._import_nodes(start)
        for i, n in zip(connected, names):
            if n:  # "": only through ops without gradients, None as in TensorFlow
                out[i] = graph.get_tensor_by_name(n if ":" in n else n + ":0")
    if unconnected_gradients == "zero":
        from tessera.array_ops import zeros_like
        out = [zeros_like(x) if g is None else g for x, g in zip(x_tensors, out)]
    return out
