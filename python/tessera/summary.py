"""tf.compat.v1.summary: summary ops, whose outputs are serialized Summary protos, and the
FileWriter that puts them in event files TensorBoard reads (the engine's EventFileWriter)."""

import contextlib
import re
import threading
import time

from tessera import _core, errors, gen_ops
from tessera.framework import Graph, add_to_collections, convert_to_tensor, get_collection, name_scope
from tessera.graph_io import GraphDef
from tessera.unsupported import module_getattr
from tessera.variables import GraphKeys

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def _clean_tag(name):
    """TensorFlow's rule: characters other than letters, digits, '_-/.' become '_', and
    leading slashes go."""
    return None if name is None else _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


@contextlib.contextmanager
def _summary_scope(name, family, values):
    """(tag, scope) as TensorFlow's summary_op_util.summary_scope gives them: the tag is the
    op's scope, behind its family where there is one."""
    name, family = _clean_tag(name), _clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with name_scope(base, values=values) as scope:
        tag = scope.rstrip("/")
        yield (tag if family is None else f"{family}/{tag}"), scope


def _collect(summary, collections):
    add_to_collections(collections if collections is not None else [GraphKeys.SUMMARIES], summary)
    return summary


def scalar(name, tensor, collections=None, family=None):
    with _summary_scope(name, family, [tensor]) as (tag, scope):
        summary = gen_ops.scalar_summary(tags=tag, values=convert_to_tensor(tensor), name=scope)
    return _collect(summary, collections)


def histogram(name, values, collections=None, family=None):
    with _summary_scope(name, family, [values]) as (tag, scope):
        summary = gen_ops.histogram_summary(tag=tag, values=convert_to_tensor(values), name=scope)
    return _collect(summary, collections)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    with _summary_scope(name, family, [tensor]) as (tag, scope):
        summary = gen_ops.image_summary(tag=tag, tensor=convert_to_tensor(tensor), max_images=max_outputs,
                                        name=scope)
    return _collect(summary, collections)


def merge(inputs, collections=None, name=None):
    with name_scope(name, "Merge", inputs):
        summary = gen_ops.merge_summary(inputs=list(inputs), name="MergeSummary")
    if collections:
        add_to_collections(collections, summary)
    return summary


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Every summary in collection `key` merged; None when there is none, as in TensorFlow."""
    summaries = get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None


class Summary:
    """tf.compat.v1.Summary for values a script computes itself:
    `Summary(value=[Summary.Value(tag="accuracy", simple_value=0.9)])`. Only scalar values
    are supported."""

    class Value:
        def __init__(self, tag="", simple_value=0.0, **others):
            if others:
                raise NotImplementedError(f"tf.compat.v1.Summary.Value({', '.join(others)}=...) is not supported by "
                                          "Tessera yet (only tag and simple_value)")
            self.tag = tag
            self.simple_value = simple_value

    def __init__(self, value=()):
        self.value = list(value)

    def SerializeToString(self):  # noqa: N802
        return _core.scalar_summary([(v.tag, float(v.simple_value)) for v in self.value])


class SessionLog:
    """tf.compat.v1.SessionLog: marks a start, stop or checkpoint in an event file."""
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3

    def __init__(self, status=STATUS_UNSPECIFIED, checkpoint_path="", msg=""):
        self.status = status
        self.checkpoint_path = checkpoint_path
        self.msg = msg


class FileWriter:
    """tf.compat.v1.summary.FileWriter: an event file in `logdir` for TensorBoard.

    Events are buffered and written by flush() and close(), when max_queue events wait, and
    every flush_secs by a thread of the writer's own, as TensorFlow's writer does (close()
    stops it). Events added after close() are dropped, as in TensorFlow; reopen() starts a
    new file. Its methods may be called from many threads.
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None, filename_suffix=None,
                 session=None):
        if session is not None:
            raise NotImplementedError("tf.compat.v1.summary.FileWriter(session=...) is not supported by Tessera yet")
        self._logdir = str(logdir)
        self._options = (filename_suffix or "", float(flush_secs), int(max_queue))
        self._lock = threading.Lock()  # closing waits for writes in flight
        self._writer = _core.EventFileWriter(self._logdir, *self._options)
        self._start_flusher()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _start_flusher(self):
        stop = self._stop_flusher = threading.Event()

        def flush_every_flush_secs():
            while not stop.wait(self._options[1]):
                try:
                    self.flush()
                except errors.OpError:
                    return  # the file cannot be written; the next flush() or close() says why
        threading.Thread(target=flush_every_flush_secs, name="FileWriter flush", daemon=True).start()

    def get_logdir(self):
        return self._logdir

    def _call(self, method, *args):
        with self._lock:
            if self._writer is not None:
                getattr(self._writer, method)(*args)

    def add_summary(self, summary, global_step=None):
        """`summary` is what a summary op's run returned (bytes) or a Summary."""
        data = summary.SerializeToString() if hasattr(summary, "SerializeToString") else bytes(summary)
        self._call("add_summary", data, int(global_step or 0), time.time())

    def add_graph(self, graph, global_step=None, graph_def=None):
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        given = graph if graph is not None else graph_def
        if isinstance(given, Graph):
            data = given.as_graph_def().SerializeToString()
        elif isinstance(given, GraphDef) or hasattr(given, "SerializeToString"):
            data = given.SerializeToString()
        else:
            raise TypeError(f"add_graph() needs a tf.Graph or a GraphDef, got {type(given).__name__}")
        self._call("add_graph", data, time.time())

    def add_session_log(self, session_log, global_step=None):
        self._call("add_session_log", int(session_log.status), session_log.checkpoint_path, session_log.msg,
                   int(global_step or 0), time.time())

    def flush(self):
        self._call("flush")

    def close(self):
        self._stop_flusher.set()
        with self._lock:
            if self._writer is not None:
                writer, self._writer = self._writer, None
                writer.close()

    def reopen(self):
        with self._lock:
            if self._writer is not None:
                return
            self._writer = _core.EventFileWriter(self._logdir, *self._options)
        self._start_flusher()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """tf.compat.v1.summary.FileWriterCache: one FileWriter per log folder."""
    _writers = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir):
        with FileWriterCache._lock:
            if str(logdir) not in FileWriterCache._writers:
                FileWriterCache._writers[str(logdir)] = FileWriter(logdir)
            return FileWriterCache._writers[str(logdir)]

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for writer in FileWriterCache._writers.values():
                writer.close()
            FileWriterCache._writers.clear()


__getattr__ = module_getattr("tf.compat.v1.summary")
