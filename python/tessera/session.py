"""Sessions, as tf.compat.v1.Session: `run(fetches, feed_dict, options, run_metadata)`.

Fetches may be any nest of lists, tuples, dicts and namedtuples of Tensors, Operations,
Variables and names, as TensorFlow's fetch mapper takes them; the result has the same
structure, an Operation's place holding None. Feeds are converted to the fed tensor's dtype
with NumPy and handed to the engine without a copy where already contiguous and of that
dtype. Any number of threads may call `run` on one session at once; the GIL is released
while the step runs. Ctrl-C during a step of the main thread cancels that step (TensorFlow
lets it finish) and raises KeyboardInterrupt; the session stays open.
"""

import json
import threading

import numpy as np

from tessera import _core, dtypes, errors
from tessera.framework import Operation, Tensor, get_default_graph
from tessera.data import ONE_SHOT_ITERATORS
from tessera.graph_io import GraphDef


class GPUOptions:
    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=0.0, visible_device_list="",
                 **unsupported):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list
        if unsupported:
            raise NotImplementedError(f"tf.compat.v1.GPUOptions({', '.join(unsupported)}) is not supported by Tessera")


class OptimizerOptions:
    def __init__(self, do_constant_folding=True, do_common_subexpression_elimination=True, **unused):
        self.do_constant_folding = do_constant_folding
        self.do_common_subexpression_elimination = do_common_subexpression_elimination


class GraphOptions:
    def __init__(self, optimizer_options=None, **unused):
        self.optimizer_options = optimizer_options or OptimizerOptions()


class ConfigProto:
    """tf.compat.v1.ConfigProto's fields that the engine honours."""

    def __init__(self, device_count=None, intra_op_parallelism_threads=0, inter_op_parallelism_threads=0,
                 use_per_session_threads=False, allow_soft_placement=False, log_device_placement=False,
                 gpu_options=None, graph_options=None, operation_timeout_in_ms=0, device_filters=None,
                 **unsupported):
        if unsupported:
            raise NotImplementedError(f"tf.compat.v1.ConfigProto({', '.join(unsupported)}) is not supported by Tessera")
        self.device_count = dict(device_count or {})
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.use_per_session_threads = use_per_session_threads
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.gpu_options = gpu_options or GPUOptions()
        self.graph_options = graph_options or GraphOptions()
        self.operation_timeout_in_ms = operation_timeout_in_ms
        self.device_filters = list(device_filters or [])

    def _to_json(self):
        optimizer = self.graph_options.optimizer_options
        return json.dumps({
            "device_count": self.device_count,
            "intra_op_parallelism_threads": self.intra_op_parallelism_threads,
            "inter_op_parallelism_threads": self.inter_op_parallelism_threads,
            "use_per_session_threads": self.use_per_session_threads,
            "allow_soft_placement": self.allow_soft_placement,
            "log_device_placement": self.log_device_placement,
            "operation_timeout_in_ms": self.operation_timeout_in_ms,
            "device_filters": self.device_filters,
            "gpu_options": {"allow_growth": self.gpu_options.allow_growth,
                            "per_process_gpu_memory_fraction": self.gpu_options.per_process_gpu_memory_fraction,
                            "visible_device_list": self.gpu_options.visible_device_list},
            "graph_options": {"optimizer_options": {
                "do_constant_folding": optimizer.do_constant_folding,
                "do_common_subexpression_elimination": optimizer.do_common_subexpression_elimination}},
        })


class RunOptions:
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level=0, timeout_in_ms=0, output_partition_graphs=False):
        self.trace_level = trace_level
        self.timeout_in_ms = timeout_in_ms
        self.output_partition_graphs = output_partition_graphs


class NodeExecStats:
    """One node's run in a traced step, with tf.compat.v1.NodeExecStats' fields (times in
    microseconds; Tessera times a kernel whole, so op and all times are the same)."""

    def __init__(self, record):
        self.node_name = record["node"]
        self.timeline_label = f"{record['node']} = {record['op']}()"
        self.all_start_micros = record["start_us"]
        self.op_start_rel_micros = 0
        self.op_end_rel_micros = self.all_end_rel_micros = record["end_us"] - record["start_us"]
        self.thread_id = record["thread_id"]


class DeviceStepStats:
    def __init__(self, device):
        self.device = device
        self.node_stats = []


class StepStats:
    """tf.compat.v1.StepStats: `dev_stats`, each device's NodeExecStats in the order they ran."""

    def __init__(self, records=(), chrome_trace=""):
        by_device = {}
        for r in sorted(records, key=lambda r: r["start_us"]):
            by_device.setdefault(r["device"], DeviceStepStats(r["device"])).node_stats.append(NodeExecStats(r))
        self.dev_stats = list(by_device.values())
        self._chrome_trace = chrome_trace


class RunMetadata:
    """What a step reports: `step_stats` with RunOptions(trace_level=FULL_TRACE),
    `partition_graphs` (GraphDefs) with output_partition_graphs, and `placement`, each
    node's device and why (also tessera.placement)."""

    def __init__(self):
        self.placement = []
        self.step_stats = StepStats()
        self.partition_graphs = []


_MAX_PLANS = 64  # a session's remembered step plans; more, and it starts again

# The fetch mapper ---------------------------------------------------------------------------
def _flatten_fetches(fetches, graph, out):
    """Appends each leaf of `fetches` to `out` as a Tensor or Operation; returns a function
    that rebuilds the structure from the leaves' values."""
    if isinstance(fetches, dict):
        rebuilders = {k: _flatten_fetches(v, graph, out) for k, v in fetches.items()}
        return lambda values: type(fetches)((k, r(values)) for k, r in rebuilders.items())
    if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):  # namedtuple
        rebuilders = [_flatten_fetches(v, graph, out) for v in fetches]
        return lambda values: type(fetches)(*[r(values) for r in rebuilders])
    if isinstance(fetches, (list, tuple)):
        rebuilders = [_flatten_fetches(v, graph, out) for v in fetches]
        return lambda values: type(fetches)(r(values) for r in rebuilders)
    if fetches is None:
        raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
    try:
        element = graph.as_graph_element(fetches._as_fetch() if hasattr(fetches, "_as_fetch") else fetches)
    except (KeyError, ValueError) as e:
        message = e.args[0] if e.args else e
        raise ValueError(f"Fetch argument {fetches!r} cannot be interpreted as a Tensor. ({message})") from None
    index = len(out)
    out.append(element)
    return lambda values: values[index]


_NEST = object()  # in _fetch_key's keys of nests, so that no fetches equal one


def _fetch_key(fetches):
    """A hashable stand-in for `fetches`' structure and leaves (TypeError where a leaf is
    not hashable): a leaf is its own key."""
    if isinstance(fetches, dict):
        return (_NEST, type(fetches), tuple((k, _fetch_key(v)) for k, v in fetches.items()))
    if isinstance(fetches, (list, tuple)):
        return (_NEST, type(fetches), tuple(_fetch_key(v) for v in fetches))
    hash(fetches)
    return fetches


def _feed_array(tensor, dtype, value):
    """`value`, which the Step did not take as it is, as the array fed to `tensor`: of NumPy
    dtype `dtype` (None: strings), C-contiguous and aligned, or TensorFlow's error."""
    if isinstance(value, Tensor):
        raise TypeError(f"The value of a feed cannot be a tf.Tensor object ({value.name}). Acceptable feed values "
                        "include Python scalars, strings, lists, numpy ndarrays.")
    if dtype is None:
        array = np.array(value, dtype=object)
    else:
        try:
            array = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as e:
            raise type(e)(f"Cannot feed {value!r} to Tensor '{tensor.name}' of dtype {tensor.dtype.name}: {e}") \
                from None
        array = np.require(array, requirements="CA")  # a copy only where not contiguous or aligned
    if not tensor.shape.is_compatible_with(array.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor {tensor.name}, which has shape "
                         f"{tensor.shape}")
    return array


class _DeviceAttributes:
    def __init__(self, name):
        self.name = name
        self.device_type = name.rsplit("/device:", 1)[-1].split(":")[0]

    def __repr__(self):
        return f"_DeviceAttributes({self.name}, {self.device_type})"


class Session:
    """tf.compat.v1.Session over a graph (the default graph when none is given)."""

    def __init__(self, target="", graph=None, config=None):
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config or ConfigProto()
        self._session = _core.Session(self._graph._core, target, self._config._to_json())
        self._closed = False
        self._default_context = None
        self._started = set()  # the one-shot iterators this session has started
        self._iterators_seen = 0  # how many there were when it last looked
        self._start_lock = threading.Lock()
        self._plans = {}  # _plan's, by fetches and feed keys
        if self._config.log_device_placement:
            print("Device mapping:")
            for record in self._session.placement():
                print(f"{record['node']}: ({record['op']}): {record['device']}")

    graph = property(lambda self: self._graph)
    graph_def = property(lambda self: self._graph.as_graph_def())

    def list_devices(self):
        """The session's devices, each with `name` and `device_type` as TensorFlow's."""
        return [_DeviceAttributes(name) for name in self._session.devices()]

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function running `fetches` with its arguments fed to `feed_list`, in order."""
        feed_list = list(feed_list or [])

        def call(*args, **kwargs):
            if len(args) != len(feed_list):
                raise TypeError(f"The callable takes {len(feed_list)} feed values, got {len(args)}")
            options = kwargs.pop("options", None) if accept_options else None
            run_metadata = kwargs.pop("run_metadata", None) if accept_options else None
            if kwargs:
                raise TypeError(f"Unexpected arguments: {', '.join(kwargs)}")
            return self.run(fetches, dict(zip(feed_list, args)) or None, options, run_metadata)
        return call

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        # A training loop's steps find their plan here, by _fetch_key's key of a leaf or of a
        # flat list or tuple of leaves; other fetches in _plan.
        kind = type(fetches)
        key = (_NEST, kind, tuple(fetches)) if kind is list or kind is tuple else fetches
        try:
            rebuild, step = self._plans[key, tuple(feed_dict) if feed_dict else ()]
        except (KeyError, TypeError):
            rebuild, step = self._plan(fetches, feed_dict)
        if len(self._graph._collections.get(ONE_SHOT_ITERATORS, ())) != self._iterators_seen:
            self._start_one_shot_iterators()
        try:
            if options is None and run_metadata is None:
                return rebuild(step.run(feed_dict))
            return rebuild(self._run_with(options, run_metadata, feed_dict, step))
        except errors.OpError as e:
            if e.op is None and e.node_name is not None:  # the node the engine named, as TF's error has it
                e._op = self._graph._ops.get(e.node_name)
            raise

    def _run_with(self, options, run_metadata, feed_dict, step):
        timeout = options.timeout_in_ms if options is not None else 0
        trace = options is not None and options.trace_level != RunOptions.NO_TRACE
        partitions = options is not None and options.output_partition_graphs
        if run_metadata is not None and (trace or partitions):
            leaves, report = step.run_traced(feed_dict, timeout, trace, partitions)
            run_metadata.step_stats = StepStats(report["step_stats"], report["chrome_trace"])
            run_metadata.partition_graphs = [GraphDef.FromString(g) for g in report["partition_graphs"]]
        else:
            leaves = step.run(feed_dict, timeout)
        if run_metadata is not None:
            run_metadata.placement = self._session.placement()
        return leaves

    def _plan(self, fetches, feed_dict):
        """What a step of these fetches and feed keys runs: the function rebuilding the
        fetches' structure from their leaves' values, and the engine's Step, which takes the
        feed dict's values and gives the leaves' values. Remembered for the next step with the
        same fetches and keys, as a training loop's are; the graph may grow, but what it has
        stays."""
        feed_keys = tuple(feed_dict) if feed_dict else ()
        try:
            key = (_fetch_key(fetches), feed_keys)
            plan = self._plans.get(key)
        except TypeError:  # something unhashable in the fetches
            key, plan = None, None
        if plan is not None:
            return plan
        leaves = []
        rebuild = _flatten_fetches(fetches, self._graph, leaves)
        fetch_names, targets, where = [], [], []
        for leaf in leaves:
            if isinstance(leaf, Operation):
                targets.append(leaf.name)
                where.append(-1)
            else:
                if leaf.name not in fetch_names:
                    fetch_names.append(leaf.name)
                where.append(fetch_names.index(leaf.name))
        feeds, converters = [], []
        for k in feed_keys:
            tensor = self._graph.as_graph_element(k._as_feed() if hasattr(k, "_as_feed") else k)
            if not isinstance(tensor, Tensor):
                raise TypeError(f"Cannot interpret feed_dict key as Tensor: {k!r} is an Operation.")
            dtype = None if tensor.dtype == dtypes.string else np.dtype(tensor.dtype.as_numpy_dtype)
            dims = tensor.shape.dims
            feeds.append((tensor.name, -1 if dtype is None else dtype.num,
                          None if dims is None else [-1 if d is None else d for d in dims]))
            converters.append((tensor, dtype))
        step = self._session.prepare(feeds, lambda i, value: _feed_array(*converters[i], value), fetch_names,
                                     targets, where)
        plan = (rebuild, step)
        if key is not None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _start_one_shot_iterators(self):
        # A one-shot iterator starts itself on the first step that could use it (data.py);
        # run() looks no further than the collection's length.
        collection = self._graph._collections.get(ONE_SHOT_ITERATORS, ())
        with self._start_lock:  # threads stepping at once start each iterator once
            pending = [op for op in self._graph.get_collection(ONE_SHOT_ITERATORS) if op not in self._started]
            if pending:
                self._session.prepare([], None, [], [op.name for op in pending], []).run(None)
                self._started.update(pending)
            self._iterators_seen = len(collection)

    def close(self):
        if not self._closed:
            self._session.close()
            self._closed = True

    def __enter__(self):
        self._default_context = self.as_default()
        self._default_context.__enter__()
        return self

    def __exit__(self, *exc):
        self._default_context.__exit__(*exc)
        self.close()

    def as_default(self):
        return _DefaultSession(self)

    def _placement(self):
        return self._session.placement()


class InteractiveSession(Session):
    """A Session that makes itself the default when made, for shells and notebooks."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._default_context = self.as_default()
        self._default_context.__enter__()

    def close(self):
        super().close()
        if self._default_context is not None:
            self._default_context.__exit__(None, None, None)
            self._default_context = None


class _SessionStack(threading.local):
    def __init__(self):
        self.stack = []


_session_stack = _SessionStack()


class _DefaultSession:
    def __init__(self, session):
        self._session = session

    def __enter__(self):
        _session_stack.stack.append(self._session)
        return self._session

    def __exit__(self, *exc):
        if self._session in _session_stack.stack:
            _session_stack.stack.remove(self._session)


def get_default_session():
    return _session_stack.stack[-1] if _session_stack.stack else None


def default_session_for(graph, session):
    """`session`, or the default one; as Tensor.eval, an error when neither runs `graph`."""
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is different from "
                         "the session's graph.")
    return session


def placement(session):
    """Where each node of the session's graph runs and why: dicts of node, op, device, reason
    and detail, in node order."""
    return session._placement()
