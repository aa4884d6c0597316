"""tf.data in graph mode: Datasets built from the engine's dataset ops, their elements any
nest of tuples and dicts of tensors, and the TF1 iterators over them
(make_one_shot_iterator, make_initializable_iterator). The end of a dataset is
tf.errors.OutOfRangeError from get_next, as in TensorFlow.

A one-shot iterator starts itself the first time a session runs anything of its graph (the
session runs its MakeIterator once), where TensorFlow's runs a dataset function.
Dataset.map and filter trace their Python functions into graph functions
(function_graph.py), which may use the graph outside only for its constants.
"""

import itertools
import os
import types

import numpy as np

from tessera import dtypes, gen_ops
from tessera.framework import TensorShape, convert_to_tensor, get_default_graph, name_scope
from tessera.function_graph import TracedFunction
from tessera.script_ops import py_func
from tessera.unsupported import module_getattr

AUTOTUNE = -1  # num_parallel_calls: the engine decides
ONE_SHOT_ITERATORS = "tessera_one_shot_iterators"  # a graph collection: (iterator, MakeIterator op)
_iterator_names = itertools.count()


# An element's structure is made of tuples (namedtuples too) and dicts, as in tf.data; a
# list is a value (one tensor), not a structure.
def _flatten(structure):
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _flatten(structure[key])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack(structure, leaves):
    """`leaves` (an iterator) put back into `structure`'s shape."""
    if isinstance(structure, dict):
        return {key: _pack(structure[key], leaves) for key in sorted(structure)}
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[_pack(item, leaves) for item in structure])
    if isinstance(structure, tuple):
        return tuple(_pack(item, leaves) for item in structure)
    return next(leaves)


class _Elements:
    """What a Dataset and its Iterator share: the structure of their elements (`_spec`, a nest
    of (dtype, shape) pairs), seen as TensorFlow's output_types and output_shapes."""

    @property
    def output_types(self):
        return _map_specs(self._spec, lambda t, s: t)

    @property
    def output_shapes(self):
        return _map_specs(self._spec, lambda t, s: s)


class Dataset(_Elements):
    """A dataset: the engine's variant tensor, and the structure of its elements (a nest of
    (dtype, shape) pairs)."""

    def __init__(self, variant, element_spec):
        self._variant = variant
        self._spec = element_spec

    # Where elements come from ---------------------------------------------------------------
    @staticmethod
    def _from_components(op, structure, slice_rows):
        leaves = [convert_to_tensor(t) for t in _flatten(structure)]
        shapes = [TensorShape(t.shape[1:] if slice_rows else t.shape) for t in leaves]
        variant = op(leaves, output_shapes=shapes)
        return Dataset(variant, _pack(structure, iter([(t.dtype, s) for t, s in zip(leaves, shapes)])))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None):
        """The elements a Python generator yields, run by the step (a py_func): each start of
        an iterator calls generator(*args) anew, with args' values; a yielded value is
        converted to output_types and checked against output_shapes, as in TensorFlow."""
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_signature is not None:
            raise NotImplementedError("Dataset.from_generator(output_signature=...) is not supported by Tessera yet; "
                                      "output_types and output_shapes are")
        if output_types is None:
            raise TypeError("The `output_types` argument must be specified.")
        spec = _zip_structure(output_types, output_shapes)
        specs = _flatten_specs(spec)
        state = _GeneratorState(generator, spec)
        args = [convert_to_tensor(a) for a in (args or ())]
        with name_scope(None, "from_generator"):
            starts = Dataset.from_tensors(tuple(args) if args else 0)

            def start(*arg_values):
                return py_func(state.start, list(arg_values) if args else [], dtypes.int64, name="start")

            def elements(generator_id):
                def step(i):
                    values = py_func(state.next, [i], [t for t, _ in specs], name="next")
                    for value, (_, shape) in zip(values, specs):
                        value.set_shape(shape)
                    return _pack(_map_specs(spec, lambda t, sh: None), iter(values))

                return Dataset.from_tensors(generator_id).repeat().map(step)

            return starts.map(start).flat_map(elements)

    @staticmethod
    def from_tensor_slices(tensors):
        with name_scope(None, "TensorSliceDataset"):
            return Dataset._from_components(gen_ops.tensor_slice_dataset, tensors, True)

    @staticmethod
    def from_tensors(tensors):
        with name_scope(None, "TensorDataset"):
            return Dataset._from_components(gen_ops.tensor_dataset, tensors, False)

    @staticmethod
    def range(*args):
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
        variant = gen_ops.range_dataset(*[convert_to_tensor(v, dtypes.int64) for v in (start, stop, step)],
                                        output_types=[dtypes.int64], output_shapes=[TensorShape([])])
        return Dataset(variant, (dtypes.int64, TensorShape([])))

    @staticmethod
    def zip(datasets):
        parts = _flatten(datasets)
        specs = [s for d in parts for s in _flatten_specs(d._spec)]
        variant = gen_ops.zip_dataset([d._variant for d in parts], output_types=[t for t, _ in specs],
                                      output_shapes=[s for _, s in specs])
        return Dataset(variant, _pack(datasets, iter([d._spec for d in parts])))

    # Transformations ------------------------------------------------------------------------
    def _types_and_shapes(self):
        specs = _flatten_specs(self._spec)
        return {"output_types": [t for t, _ in specs], "output_shapes": [s for _, s in specs]}

    def _like(self, variant, spec=None):
        return Dataset(variant, self._spec if spec is None else spec)

    def batch(self, batch_size, drop_remainder=False):
        rows = batch_size if drop_remainder and isinstance(batch_size, int) else None
        spec = _map_specs(self._spec, lambda t, s: (t, TensorShape([rows] + (s.dims or [])) if s.dims is not None
                                                     else TensorShape(None)))
        specs = _flatten_specs(spec)
        variant = gen_ops.batch_dataset_v2(self._variant, convert_to_tensor(batch_size, dtypes.int64),
                                           convert_to_tensor(drop_remainder, dtypes.bool),
                                           output_types=[t for t, _ in specs], output_shapes=[s for _, s in specs])
        return self._like(variant, spec)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False):
        """Batches of elements padded to one shape per component: padded_shapes' (None where a
        dimension takes the batch's longest), by default each component's own with its unknown
        dimensions padded; with padding_values (0, or b"" for strings, by default)."""
        specs = _flatten_specs(self._spec)
        shapes = [s for _, s in specs] if padded_shapes is None else [
            TensorShape(p) for p in _flatten_as(self._spec, padded_shapes)]
        values = [None] * len(specs) if padding_values is None else _flatten_as(self._spec, padding_values)
        if any(sh.dims is None for sh in shapes):
            raise ValueError("padded_batch needs every component's rank: give padded_shapes")
        rows = batch_size if drop_remainder and isinstance(batch_size, int) else None
        with name_scope(None, "PaddedBatchDataset"):
            padded = [convert_to_tensor([-1 if d is None else d for d in sh.dims], dtypes.int64) for sh in shapes]
            pads = [convert_to_tensor((b"" if t == dtypes.string else 0) if v is None else v, t)
                    for (t, _), v in zip(specs, values)]
            out_shapes = [TensorShape([rows] + list(sh.dims)) for sh in shapes]
            variant = gen_ops.padded_batch_dataset_v2(
                self._variant, convert_to_tensor(batch_size, dtypes.int64), padded, pads,
                convert_to_tensor(drop_remainder, dtypes.bool), output_shapes=out_shapes)
        spec = _pack(_map_specs(self._spec, lambda t, sh: None), iter([(t, sh) for (t, _), sh in
                                                                       zip(specs, out_shapes)]))
        return self._like(variant, spec)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        graph_seed = get_default_graph().seed
        seed, seed2 = (0, 0) if seed is None and graph_seed is None else (graph_seed or 87654321, seed or 0)
        variant = gen_ops.shuffle_dataset(
            self._variant, convert_to_tensor(buffer_size, dtypes.int64), convert_to_tensor(seed, dtypes.int64),
            convert_to_tensor(seed2, dtypes.int64),
            reshuffle_each_iteration=True if reshuffle_each_iteration is None else reshuffle_each_iteration,
            **self._types_and_shapes())
        return self._like(variant)

    def repeat(self, count=None):
        return self._like(gen_ops.repeat_dataset(self._variant, convert_to_tensor(-1 if count is None else count,
                                                                                  dtypes.int64),
                                                 **self._types_and_shapes()))

    def take(self, count):
        return self._like(gen_ops.take_dataset(self._variant, convert_to_tensor(count, dtypes.int64),
                                               **self._types_and_shapes()))

    def skip(self, count):
        return self._like(gen_ops.skip_dataset(self._variant, convert_to_tensor(count, dtypes.int64),
                                               **self._types_and_shapes()))

    def prefetch(self, buffer_size):
        return self._like(gen_ops.prefetch_dataset(self._variant, convert_to_tensor(buffer_size, dtypes.int64),
                                                   **self._types_and_shapes()))

    def cache(self, filename=""):
        return self._like(gen_ops.cache_dataset(self._variant, convert_to_tensor(filename, dtypes.string),
                                                **self._types_and_shapes()))

    def _trace(self, fn, what):
        """`fn` traced on one element: a tuple element is spread over its arguments, as in
        tf.data; returns the TracedFunction."""
        structure = _map_specs(self._spec, lambda t, s: None)

        def call(args):
            element = _pack(structure, iter(args))
            out = fn(*element) if type(element) is tuple else fn(element)
            return tuple(out) if isinstance(out, list) else out  # tf.data takes a list for a tuple

        return TracedFunction(call, _flatten_specs(self._spec), what, _flatten)

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """map_func(element) for each element, in order; num_parallel_calls elements at once
        (AUTOTUNE: as many as the engine's pool runs)."""
        with name_scope(None, "MapDataset"):
            traced = self._trace(map_func, "tf.data.Dataset.map")
            spec = _pack(traced.outputs, iter([(t.dtype, t.shape) for t in traced.rets]))
            specs = _flatten_specs(spec)
            kwargs = {"f": traced.attr_value(), "output_types": [t for t, _ in specs],
                      "output_shapes": [sh for _, sh in specs]}
            if num_parallel_calls is None:
                variant = gen_ops.map_dataset(self._variant, **kwargs)
            else:
                variant = gen_ops.parallel_map_dataset(
                    self._variant, convert_to_tensor(num_parallel_calls, dtypes.int32), **kwargs)
        return self._like(variant, spec)

    def flat_map(self, map_func):
        """The elements of the datasets map_func(element) returns, one dataset after another."""
        return self.interleave(map_func, cycle_length=1, block_length=1)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None):
        """The elements of the datasets map_func(element) returns: cycle_length of them open
        at once, block_length elements from each in turn."""
        with name_scope(None, "InterleaveDataset"):
            inner = []

            def variant_of(*element):
                dataset = map_func(*element)
                if not isinstance(dataset, Dataset):
                    raise TypeError(f"`map_func` must return a `Dataset` object. Got {type(dataset)}")
                inner.append(dataset)
                return dataset._variant

            traced = self._trace(variant_of, "tf.data.Dataset.interleave")
            cycle = AUTOTUNE if cycle_length is None else cycle_length
            if cycle == AUTOTUNE:
                cycle = os.cpu_count() or 1  # as TensorFlow: the cores there are
            variant = gen_ops.interleave_dataset(
                self._variant, convert_to_tensor(cycle, dtypes.int64),
                convert_to_tensor(1 if block_length is None else block_length, dtypes.int64),
                f=traced.attr_value(), **inner[0]._types_and_shapes())
        return self._like(variant, inner[0]._spec)

    def filter(self, predicate):
        """The elements for which predicate(element) is true."""
        with name_scope(None, "FilterDataset"):
            traced = self._trace(predicate, "tf.data.Dataset.filter")
            if len(traced.rets) != 1 or traced.rets[0].dtype != dtypes.bool or \
                    traced.rets[0].shape.ndims not in (None, 0):
                raise ValueError("`predicate` return type must be convertible to a scalar boolean tensor. Was "
                                 f"{[(t.dtype.name, str(t.shape)) for t in traced.rets]}.")
            variant = gen_ops.filter_dataset(self._variant, predicate=traced.attr_value(),
                                             **self._types_and_shapes())
        return self._like(variant)

    # TF1 iterators --------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        iterator = Iterator._make(self)
        get_default_graph().add_to_collection(ONE_SHOT_ITERATORS, iterator.initializer)
        return iterator

    def make_initializable_iterator(self, shared_name=None):
        return Iterator._make(self, shared_name)


class _GeneratorState:
    """The generators of one from_generator dataset, by id: one per iterator start, dropped
    when it ends, or when 64 newer ones run."""

    _kept = 64

    def __init__(self, generator, spec):
        self._generator, self._spec = generator, spec
        self._running = {}  # by id, oldest first
        self._ids = itertools.count()

    def start(self, *args):
        generator_id = next(self._ids)
        self._running[generator_id] = iter(self._generator(*args))
        # One an iterator left unfinished (re-initialized, or stopped early) is dropped once
        # newer ones are many: more iterators than that of one dataset at once are unusual.
        while len(self._running) > self._kept:
            del self._running[next(iter(self._running))]
        return np.int64(generator_id)

    def next(self, generator_id):
        generator_id = int(generator_id)
        try:
            value = next(self._running[generator_id])
        except StopIteration:
            del self._running[generator_id]
            raise
        out = []
        for leaf, (dtype, shape) in zip(_flatten_as(self._spec, value), _flatten_specs(self._spec)):
            try:
                array = np.asarray(leaf, dtype=object if dtype == dtypes.string else dtype.as_numpy_dtype)
            except (TypeError, ValueError) as e:
                raise TypeError(f"`generator` yielded an element that could not be converted to the expected type. "
                                f"The expected type was {dtype.name}, but the yielded element was {leaf}.") from e
            if not shape.is_compatible_with(array.shape):
                raise ValueError(f"`generator` yielded an element of shape {array.shape} where an element of shape "
                                 f"{shape} was expected.")
            out.append(array)
        return out


def _flatten_as(spec, value):
    """`value`'s leaves, taken as `spec` nests them (a tuple of it may come as a list)."""
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], dtypes.DType):
        return [value]
    if isinstance(spec, dict):
        if not isinstance(value, dict) or sorted(value) != sorted(spec):
            raise TypeError(f"`generator` yielded an element {value!r} of another structure than {spec}")
        return [leaf for key in sorted(spec) for leaf in _flatten_as(spec[key], value[key])]
    if not isinstance(value, (tuple, list)) or len(value) != len(spec):
        raise TypeError(f"`generator` yielded an element {value!r} of another structure than {spec}")
    return [leaf for s, v in zip(spec, value) for leaf in _flatten_as(s, v)]


def _flatten_specs(spec):
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], dtypes.DType):
        return [spec]
    if isinstance(spec, dict):
        return [leaf for key in sorted(spec) for leaf in _flatten_specs(spec[key])]
    return [leaf for item in spec for leaf in _flatten_specs(item)]  # a tuple


def _zip_structure(output_types, output_shapes):
    """The spec of output_types' structure, each dtype with its shape from output_shapes (a
    shape where the structure has a dtype; unknown where none is given)."""
    if isinstance(output_types, dtypes.DType):
        return (output_types, TensorShape(output_shapes) if output_shapes is not None else TensorShape(None))
    if isinstance(output_types, dict):
        return {k: _zip_structure(t, None if output_shapes is None else output_shapes[k])
                for k, t in output_types.items()}
    shapes = [None] * len(output_types) if output_shapes is None else list(output_shapes)
    if len(shapes) != len(output_types):
        raise ValueError(f"output_shapes {output_shapes} does not match the structure of output_types {output_types}")
    items = [_zip_structure(t, sh) for t, sh in zip(output_types, shapes)]
    return type(output_types)(*items) if hasattr(output_types, "_fields") else tuple(items)


def _map_specs(spec, fn):
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], dtypes.DType):
        return fn(*spec)
    if isinstance(spec, dict):
        return {key: _map_specs(value, fn) for key, value in spec.items()}
    if hasattr(spec, "_fields"):
        return type(spec)(*[_map_specs(item, fn) for item in spec])
    return tuple(_map_specs(item, fn) for item in spec)


class Iterator(_Elements):
    """tf.compat.v1.data.Iterator: `initializer` (re)starts it on its dataset; `get_next()`
    is the next element, in the dataset's structure."""

    @staticmethod
    def _make(dataset, shared_name=None):
        specs = _flatten_specs(dataset._spec)
        handle = gen_ops.iterator(shared_name=shared_name or f"iterator_{next(_iterator_names)}",
                                  output_types=[t for t, _ in specs], output_shapes=[s for _, s in specs])
        return Iterator(handle, gen_ops.make_iterator(dataset._variant, handle), dataset._spec)

    def __init__(self, handle, initializer, spec):
        self._handle, self._initializer, self._spec = handle, initializer, spec

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """An iterator of no dataset yet: make_initializer(dataset) points it at any dataset of
        this structure (the train/validation switch of TF1 scripts)."""
        spec = _zip_structure(output_types, output_shapes)
        specs = _flatten_specs(spec)
        handle = gen_ops.iterator(shared_name=shared_name or f"iterator_{next(_iterator_names)}",
                                  output_types=[t for t, _ in specs], output_shapes=[s for _, s in specs])
        return Iterator(handle, None, spec)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        """The iterator a fed string names (what string_handle() gave): one get_next() that
        reads from whichever iterator of this structure the step's feed chooses."""
        spec = _zip_structure(output_types, output_shapes)
        specs = _flatten_specs(spec)
        handle = gen_ops.iterator_from_string_handle(string_handle, output_types=[t for t, _ in specs],
                                                     output_shapes=[s for _, s in specs])
        return Iterator(handle, None, spec)

    def string_handle(self, name=None):
        """This iterator's handle as a string, to feed to a from_string_handle() iterator."""
        return gen_ops.iterator_to_string_handle(self._handle, name=name or "IteratorToStringHandle")

    def make_initializer(self, dataset, name=None):
        mine, theirs = _flatten_specs(self._spec), _flatten_specs(dataset._spec)
        if [t for t, _ in mine] != [t for t, _ in theirs] or not all(
                a.is_compatible_with(b) for (_, a), (_, b) in zip(mine, theirs)):
            raise TypeError(f"Expected output types {self.output_types} and shapes {self.output_shapes}, got a "
                            f"dataset of {dataset.output_types} and {dataset.output_shapes}")
        return gen_ops.make_iterator(dataset._variant, self._handle, name=name or "MakeIterator")

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def get_next(self, name=None):
        specs = _flatten_specs(self._spec)
        components = gen_ops.iterator_get_next(self._handle, output_types=[t for t, _ in specs],
                                               output_shapes=[s for _, s in specs], name=name or "IteratorGetNext")
        components = components if isinstance(components, list) else [components]
        for tensor, (_, shape) in zip(components, specs):
            tensor.set_shape(shape)
        return _pack(_map_specs(self._spec, lambda t, s: None), iter(components))


experimental = types.ModuleType("tf.compat.v1.data.experimental")
experimental.AUTOTUNE = AUTOTUNE
experimental.__getattr__ = module_getattr("tf.compat.v1.data.experimental")


def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


__getattr__ = module_getattr("tf.compat.v1.data")
