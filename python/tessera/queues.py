"""TF1's input queues: FIFOQueue, RandomShuffleQueue and PaddingFIFOQueue over the engine's
queue ops; and the threads that feed them: train.Coordinator, QueueRunner,
add_queue_runner and start_queue_runners."""

import sys
import threading

from tessera import dtypes, errors, gen_ops
from tessera.framework import TensorShape, convert_to_tensor, get_default_graph, name_scope
from tessera.variables import GraphKeys


class QueueBase:
    def __init__(self, handle, component_types, shapes, names):
        self._handle = handle
        self._dtypes = component_types
        self._shapes = shapes
        self._names = names

    queue_ref = property(lambda self: self._handle)
    dtypes = property(lambda self: list(self._dtypes))
    shapes = property(lambda self: list(self._shapes))
    names = property(lambda self: self._names)
    name = property(lambda self: self._handle.op.name)

    def _components(self, vals):
        if self._names is not None:
            if not isinstance(vals, dict):
                raise ValueError("Queue has names; enqueue a dict of them.")
            vals = [vals[n] for n in self._names]
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components, got {len(vals)}")
        return [convert_to_tensor(v, t) for v, t in zip(vals, self._dtypes)]

    def _result(self, components):
        components = components if isinstance(components, list) else [components]
        if self._names is not None:
            return dict(zip(self._names, components))
        return components[0] if len(components) == 1 else components

    def enqueue(self, vals, name=None):
        return gen_ops.queue_enqueue_v2(self._handle, self._components(vals), name=name or "enqueue")

    def enqueue_many(self, vals, name=None):
        return gen_ops.queue_enqueue_many_v2(self._handle, self._components(vals), name=name or "enqueue_many")

    def _dequeued(self, op, n, name):
        out = op(self._handle, n, component_types=self._dtypes, name=name) if n is not None else \
            op(self._handle, component_types=self._dtypes, name=name)
        out = out if isinstance(out, list) else [out]
        for tensor, shape in zip(out, self._shapes):
            if shape is not None:
                tensor.set_shape(shape if n is None else TensorShape([None] + shape.dims))
        return self._result(out)

    def dequeue(self, name=None):
        return self._dequeued(gen_ops.queue_dequeue_v2, None, name or "dequeue")

    def dequeue_many(self, n, name=None):
        return self._dequeued(gen_ops.queue_dequeue_many_v2, convert_to_tensor(n, dtypes.int32),
                              name or "dequeue_many")

    def dequeue_up_to(self, n, name=None):
        return self._dequeued(gen_ops.queue_dequeue_up_to_v2, convert_to_tensor(n, dtypes.int32),
                              name or "dequeue_up_to")

    def close(self, cancel_pending_enqueues=False, name=None):
        return gen_ops.queue_close_v2(self._handle, cancel_pending_enqueues=cancel_pending_enqueues,
                                      name=name or "close")

    def size(self, name=None):
        return gen_ops.queue_size_v2(self._handle, name=name or "size")


def _queue_attrs(types, shapes, names):
    types = [dtypes.as_dtype(t) for t in (types if isinstance(types, (list, tuple)) else [types])]
    if shapes is not None:
        shapes = [TensorShape(s) for s in (shapes if isinstance(shapes, (list, tuple)) and shapes and
                                           isinstance(shapes[0], (list, tuple, TensorShape)) else [shapes])]
    if names is not None and len(names) != len(types):
        raise ValueError("Queue names and dtypes differ in length")
    return types, shapes


class FIFOQueue(QueueBase):
    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"):  # noqa: A002
        types, shapes = _queue_attrs(dtypes, shapes, names)
        handle = gen_ops.fifo_queue_v2(component_types=types, shapes=shapes or [], capacity=capacity,
                                       shared_name=shared_name or "", name=name)
        super().__init__(handle, types, shapes or [None] * len(types), names)


class PaddingFIFOQueue(QueueBase):
    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"):  # noqa: A002
        types, shapes = _queue_attrs(dtypes, shapes, names)
        handle = gen_ops.padding_fifo_queue_v2(component_types=types, shapes=shapes, capacity=capacity,
                                               shared_name=shared_name or "", name=name)
        super().__init__(handle, types, shapes, names)


class RandomShuffleQueue(QueueBase):
    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,  # noqa: A002
                 shared_name=None, name="random_shuffle_queue"):
        types, shapes = _queue_attrs(dtypes, shapes, names)
        graph_seed = get_default_graph().seed
        seed, seed2 = (0, 0) if seed is None and graph_seed is None else (graph_seed or 87654321, seed or 0)
        handle = gen_ops.random_shuffle_queue_v2(component_types=types, shapes=shapes or [], capacity=capacity,
                                                 min_after_dequeue=min_after_dequeue, seed=seed, seed2=seed2,
                                                 shared_name=shared_name or "", name=name)
        super().__init__(handle, types, shapes or [None] * len(types), names)


class Coordinator:
    """tf.train.Coordinator: threads poll should_stop(); the first exception reported with
    request_stop(ex) stops them all and is raised again by join()."""

    def __init__(self, clean_stop_exception_types=None):
        self._clean = tuple(clean_stop_exception_types or (errors.OutOfRangeError,))
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exc_info = None
        self._registered = []

    def request_stop(self, ex=None):
        with self._lock:
            if ex is not None and self._exc_info is None:
                info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(info[0], self._clean):
                    self._exc_info = info
            self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def clear_stop(self):
        with self._lock:
            self._stop.clear()
            self._exc_info = None

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    def register_thread(self, thread):
        self._registered.append(thread)

    def stop_on_exception(self):
        coord = self

        class _Guard:
            def __enter__(self):
                return self

            def __exit__(self, kind, value, tb):
                if kind is not None:
                    coord.request_stop((kind, value, tb))
                return True
        return _Guard()

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        threads = list(dict.fromkeys(list(threads or []) + self._registered))
        # Until every thread ends or a stop is asked for; then the stragglers get the grace.
        while any(t.is_alive() for t in threads) and not self._stop.wait(0.05):
            pass
        for t in threads:
            t.join(stop_grace_period_secs)
        live = [t.name for t in threads if t.is_alive()]
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info[1].with_traceback(self._exc_info[2])
        if live and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: {' '.join(live)}")

    @property
    def joined(self):
        return self._stop.is_set()


class QueueRunner:
    """Runs each of `enqueue_ops` in a thread of its own until the coordinator stops or the
    input ends (OutOfRangeError), then closes the queue; stopping cancels what is blocked."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None):
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops or [])
        with name_scope(None), name_scope(queue.name + "/") if queue is not None else name_scope(None):
            self._close_op = close_op if close_op is not None else queue.close()
            self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))

    def _run(self, sess, op, coord, remaining):
        try:
            while coord is None or not coord.should_stop():
                try:
                    sess.run(op)
                except (errors.OutOfRangeError, errors.CancelledError):
                    with remaining[1]:
                        remaining[0] -= 1
                        if remaining[0] == 0:
                            sess.run(self._close_op)
                    return
        except Exception:  # noqa: BLE001 (reported to the coordinator, as TensorFlow does)
            if coord is None:
                raise
            coord.request_stop(sys.exc_info())

    def _cancel_on_stop(self, sess, coord):
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except errors.OpError:
            pass

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        remaining = [len(self._enqueue_ops), threading.Lock()]
        threads = [threading.Thread(target=self._run, args=(sess, op, coord, remaining), daemon=daemon,
                                    name=f"QueueRunner-{i}") for i, op in enumerate(self._enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._cancel_on_stop, args=(sess, coord), daemon=True,
                                            name="QueueRunnerCancel"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=GraphKeys.QUEUE_RUNNERS):
    from tessera.session import get_default_session
    sess = sess or get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered.")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
