"""tf.compat.v1.train: the optimizers (minimize, compute_gradients, apply_gradients) with
TensorFlow 1.x's slot variables and names, and the global step."""

from tessera import array_ops, dtypes, gen_ops
from tessera.unsupported import module_getattr
from tessera.framework import Tensor, colocate_with, control_dependencies, convert_to_tensor, get_default_graph
from tessera.cluster import ClusterSpec, Server, replica_device_setter  # noqa: F401 (tf.train's)
from tessera.gradients import gradients
from tessera.graph_io import write_graph  # noqa: F401 (tf.train's)
from tessera.math_ops import exponential_decay  # noqa: F401 (tf.train's)
from tessera.queues import Coordinator, QueueRunner, add_queue_runner, start_queue_runners  # noqa: F401
from tessera.saver import Saver, checkpoint_exists, get_checkpoint_state, latest_checkpoint  # noqa: F401 (tf.train's)
from tessera.saver import export_meta_graph, import_meta_graph  # noqa: F401 (tf.train's)
from tessera.variables import GraphKeys, Variable, trainable_variables


def get_global_step(graph=None):
    steps = (graph or get_default_graph()).get_collection(GraphKeys.GLOBAL_STEP)
    return steps[0] if steps else None


def create_global_step(graph=None):
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return Variable(0, trainable=False, dtype=dtypes.int64, name="global_step",
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    return get_global_step(graph) or create_global_step(graph)


class Optimizer:
    """What the optimizers share: gradients of the loss by the engine, one update op per
    variable (the engine's Apply* kernels on the variable's reference), grouped."""

    def __init__(self, use_locking, name):
        self._use_locking = use_locking
        self._name = name
        self._slots = {}  # (slot name, variable) -> Variable

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list, gate_gradients, aggregation_method,
                                                colocate_gradients_with_ops, grad_loss)
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(f"No gradients provided for any variable, check your graph for ops that do not "
                             f"support gradients, between variables {[v.name for _, v in grads_and_vars]} and "
                             f"loss {loss!r}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=1, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        var_list = list(var_list) if var_list is not None else trainable_variables()
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(loss, var_list, grad_ys=grad_loss, colocate_gradients_with_ops=colocate_gradients_with_ops)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        graph = get_default_graph()
        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            self._create_non_slots([v for _, v in grads_and_vars])
            updates = []
            for grad, var in grads_and_vars:
                with graph.name_scope("update_" + var.op.name), colocate_with(var):
                    updates.append(self._apply_dense(grad, var).op)
            finish = self._finish(updates, scope[:-1])
            if global_step is None:
                return finish
            with control_dependencies([finish]), colocate_with(global_step):
                return gen_ops.assign_add(global_step._ref(), convert_to_tensor(1, global_step.dtype),
                                          name=scope[:-1]).op

    # For the optimizers ----------------------------------------------------------------
    def _prepare(self):
        pass

    def _create_non_slots(self, var_list):
        pass

    def _finish(self, update_ops, name):
        with control_dependencies(update_ops):
            return gen_ops.no_op(name=name)

    def _zeros_slot(self, var, slot_name, suffix=""):
        return self._slot(var, slot_name, suffix, array_ops.zeros)

    def _slot(self, var, slot_name, suffix, fill):
        """The slot `slot_name` (TensorFlow's: "m", "momentum", ...) of `var`, made the first
        time as fill(shape, dtype), named VAR/OPTIMIZER{suffix} as TensorFlow names it."""
        key = (slot_name, var)
        if key not in self._slots:
            graph = get_default_graph()
            # Slots wait on nothing, even where minimize() runs under control_dependencies
            # (batch norm's UPDATE_OPS), as TensorFlow's slot_creator has it.
            with graph.control_dependencies(None), graph.name_scope(None), graph.name_scope(var.op.name + "/"), \
                    colocate_with(var):
                self._slots[key] = Variable(fill(var.shape.as_list(), var.dtype), trainable=False,
                                            name=self._name + suffix)
        return self._slots[key]

    def get_slot(self, var, name):
        return self._slots.get((name, var))

    def get_slot_names(self):
        return sorted({name for name, _ in self._slots})

    def variables(self):
        """The optimizer's own variables, as TensorFlow lists them: what it keeps beside the
        slots (Adam's beta powers), then the slots."""
        return list(getattr(self, "_powers", None) or ()) + list(self._slots.values())

    def _tensor(self, value, var, name):
        return convert_to_tensor(value, var.dtype, name=name) if not isinstance(value, Tensor) else \
            array_ops.cast(value, var.dtype)


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._lr = learning_rate

    def _apply_dense(self, grad, var):
        return gen_ops.apply_gradient_descent(var, self._tensor(self._lr, var, "learning_rate"), grad,
                                              use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False):
        super().__init__(use_locking, name)
        self._lr, self._momentum, self._nesterov = learning_rate, momentum, use_nesterov

    def _apply_dense(self, grad, var):
        accum = self._zeros_slot(var, "momentum")
        return gen_ops.apply_momentum(var, accum, self._tensor(self._lr, var, "learning_rate"), grad,
                                      self._tensor(self._momentum, var, "momentum"),
                                      use_locking=self._use_locking, use_nesterov=self._nesterov)


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon
        self._powers = None

    def _create_non_slots(self, var_list):
        # TensorFlow 1.x keeps beta1^t and beta2^t as two variables beside the first one.
        if self._powers is None:
            graph = get_default_graph()
            first = min(var_list, key=lambda v: v.op.name)
            with graph.name_scope(None), colocate_with(first):
                self._powers = (Variable(float(self._beta1), trainable=False, name="beta1_power", dtype=first.dtype),
                                Variable(float(self._beta2), trainable=False, name="beta2_power", dtype=first.dtype))

    def _apply_dense(self, grad, var):
        m, v = self._zeros_slot(var, "m"), self._zeros_slot(var, "v", "_1")
        b1, b2 = self._powers
        return gen_ops.apply_adam(var, m, v, array_ops.cast(b1, var.dtype), array_ops.cast(b2, var.dtype),
                                  self._tensor(self._lr, var, "learning_rate"), self._tensor(self._beta1, var, "beta1"),
                                  self._tensor(self._beta2, var, "beta2"), self._tensor(self._epsilon, var, "epsilon"),
                                  grad, use_locking=self._use_locking)

    def _finish(self, update_ops, name):
        b1, b2 = self._powers
        with control_dependencies(update_ops), colocate_with(b1):
            u1 = b1.assign(b1 * self._beta1, use_locking=self._use_locking)
            u2 = b2.assign(b2 * self._beta2, use_locking=self._use_locking)
        with control_dependencies(update_ops + [u1.op, u2.op]):
            return gen_ops.no_op(name=name)


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False, name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr, self._initial = learning_rate, initial_accumulator_value

    def _apply_dense(self, grad, var):
        # ApplyAdagrad in the ops it is made of: the squares summed, each step scaled by them.
        initial = self._initial
        accumulator = self._slot(var, "accumulator", "",
                                 lambda shape, dtype: array_ops.fill(shape, convert_to_tensor(initial, dtype)))
        summed = accumulator.assign_add(gen_ops.square(grad), use_locking=self._use_locking)
        step = self._tensor(self._lr, var, "learning_rate") * grad * gen_ops.rsqrt(summed)
        return var.assign_sub(step, use_locking=self._use_locking)


class RMSPropOptimizer(Optimizer):
    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False, centered=False,
                 name="RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum, self._epsilon = learning_rate, decay, momentum, epsilon
        self._centered = centered

    def _apply_dense(self, grad, var):
        lr = self._tensor(self._lr, var, "learning_rate")
        decay, momentum = self._tensor(self._decay, var, "decay"), self._tensor(self._momentum, var, "momentum")
        epsilon = self._tensor(self._epsilon, var, "epsilon")
        if not self._centered:
            # TensorFlow starts the mean square at ones.
            ms, mom = self._slot(var, "rms", "", array_ops.ones), self._zeros_slot(var, "momentum", "_1")
            return gen_ops.apply_rms_prop(var, ms, mom, lr, decay, momentum, epsilon, grad,
                                          use_locking=self._use_locking)
        # Centered: the mean gradient's square comes off the mean square, as TensorFlow's
        # ApplyCenteredRMSProp, here in the ops it is made of.
        ms = self._slot(var, "rms", "", array_ops.ones)
        mg, mom = self._zeros_slot(var, "mg", "_1"), self._zeros_slot(var, "momentum", "_2")
        locking = self._use_locking
        mg_t = mg.assign(mg * decay + (1.0 - decay) * grad, use_locking=locking)
        ms_t = ms.assign(ms * decay + (1.0 - decay) * gen_ops.square(grad), use_locking=locking)
        mom_t = mom.assign(mom * momentum + lr * grad * gen_ops.rsqrt(ms_t - gen_ops.square(mg_t) + epsilon),
                           use_locking=locking)
        return var.assign_sub(mom_t, use_locking=locking)


__getattr__ = module_getattr("tf.compat.v1.train")
