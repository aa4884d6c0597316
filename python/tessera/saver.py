"""tf.compat.v1.train.Saver: variables saved to and restored from TensorFlow's checkpoint
format (a tensor bundle: PREFIX.index and PREFIX.data-00000-of-00001, by the engine's SaveV2
and RestoreV2), which TensorFlow's own Saver and tf.train.load_checkpoint read; and the
"checkpoint" state file beside them that tf.train.latest_checkpoint reads."""

import collections
import os
import re

from tessera import _core, dtypes, errors, gen_ops
from tessera.framework import constant, control_dependencies, get_default_graph
from tessera.graph_io import _import
from tessera.variables import GraphKeys, Variable, global_variables


def _state_path(directory):
    return os.path.join(directory, "checkpoint")


# What TensorFlow's CheckpointState proto holds, by the same field names.
CheckpointState = collections.namedtuple("CheckpointState", "model_checkpoint_path all_model_checkpoint_paths")


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The "checkpoint" file's paths as a CheckpointState, or None where there is none."""
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    latest = re.search(r'^model_checkpoint_path: "(.*)"$', text, re.M)
    kept = re.findall(r'^all_model_checkpoint_paths: "(.*)"$', text, re.M)
    if latest is None:
        return None

    def absolute(p):
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
    return CheckpointState(absolute(latest.group(1)), [absolute(p) for p in kept])


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not os.path.isfile(state[0] + ".index"):
        return None
    return state[0]


def checkpoint_exists(checkpoint_prefix):
    return os.path.isfile(checkpoint_prefix + ".index")


class Saver:
    """Saves and restores `var_list` (all global variables by default; a dict maps the names
    in the checkpoint to variables) with TensorFlow 1.x's nodes: save/Const (the path),
    save/SaveV2, save/control_dependency, save/RestoreV2, save/restore_all."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, saver_def=None,
                 builder=None, defer_build=False, allow_empty=False, write_version=2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        if sharded or reshape:
            raise NotImplementedError("tf.compat.v1.train.Saver(sharded=True / reshape=True) is not supported by "
                                      "Tessera yet")
        self._kept = []
        if saver_def is not None:
            # The nodes of a Saver already in the graph (an imported meta graph's).
            graph = get_default_graph()
            self._filename = graph.get_tensor_by_name(saver_def["filename_tensor_name"])
            self._save_tensor = graph.get_tensor_by_name(saver_def["save_tensor_name"])
            self._restore_op = graph.get_operation_by_name(saver_def["restore_op_name"])
            self._max_to_keep = saver_def.get("max_to_keep", max_to_keep)
            graph.add_to_collection(GraphKeys.SAVERS, self)
            return
        if var_list is None:
            var_list = global_variables()
        if isinstance(var_list, dict):
            named = sorted(var_list.items())
        else:
            named = sorted((v.op.name, v) for v in var_list)
        if not named and not allow_empty:
            raise ValueError("No variables to save")
        self._max_to_keep = max_to_keep
        graph = get_default_graph()
        with graph.name_scope(name or "save"):
            self._filename = constant(filename or "model", dtypes.string, name="Const")
            names = constant([n for n, _ in named], dtypes.string, name="SaveV2/tensor_names")
            slices = constant([""] * len(named), dtypes.string, name="SaveV2/shape_and_slices")
            save = gen_ops.save_v2(self._filename, names, slices, [v for _, v in named], name="SaveV2")
            with control_dependencies([save]):
                self._save_tensor = gen_ops.identity(self._filename, name="control_dependency")
            restored = gen_ops.restore_v2(self._filename, names, slices, dtypes=[v.dtype for _, v in named],
                                          name="RestoreV2")
            restored = restored if isinstance(restored, list) else [restored]
            assigns = [gen_ops.assign(v._ref(), r, name="Assign").op for (_, v), r in zip(named, restored)]
            with control_dependencies(assigns):
                self._restore_op = gen_ops.no_op(name="restore_all")
        graph.add_to_collection(GraphKeys.SAVERS, self)

    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        if global_step is not None:
            step = global_step if isinstance(global_step, int) else int(sess.run(global_step))
            save_path = f"{save_path}-{step}"
        directory = os.path.dirname(save_path) or "."
        if not os.path.isdir(directory):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        sess.run(self._save_tensor, {self._filename: save_path})
        if write_state:
            self._remember(save_path, directory, latest_filename)
        if write_meta_graph:
            self.export_meta_graph(f"{save_path}.{meta_graph_suffix}", graph=sess.graph)
        return save_path

    def as_saver_def(self):
        return {"filename_tensor_name": self._filename.name, "save_tensor_name": self._save_tensor.name,
                "restore_op_name": self._restore_op.name, "max_to_keep": self._max_to_keep}

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False, export_scope=None,
                          clear_devices=False, clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False, graph=None):
        return export_meta_graph(filename, graph=graph, saver=self)

    def _remember(self, save_path, directory, latest_filename):
        if save_path in self._kept:
            self._kept.remove(save_path)
        self._kept.append(save_path)
        while self._max_to_keep and len(self._kept) > self._max_to_keep:
            old = self._kept.pop(0)
            for suffix in (".index", ".data-00000-of-00001", ".meta"):
                if os.path.isfile(old + suffix):
                    os.remove(old + suffix)

        def relative(p):
            return os.path.relpath(p, directory) if os.path.dirname(os.path.abspath(p)) == os.path.abspath(
                directory) else p
        lines = [f'model_checkpoint_path: "{relative(save_path)}"'] + [
            f'all_model_checkpoint_paths: "{relative(p)}"' for p in self._kept]
        state = os.path.join(directory, latest_filename or "checkpoint")
        # Written whole then renamed: a reader never sees half a state file.
        with open(state + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(state + ".tmp", state)

    def restore(self, sess, save_path):
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not checkpoint_exists(save_path):
            raise errors.NotFoundError(None, None, f"The passed save_path is not a valid checkpoint: {save_path}")
        sess.run(self._restore_op, {self._filename: save_path})

    @property
    def last_checkpoints(self):
        return list(self._kept)


def _write_atomically(path, data):
    # Written whole then renamed: a reader never sees half a file, and a failed write leaves
    # the one before.
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None, collection_list=None,
                      as_text=False, graph=None, export_scope=None, clear_devices=False,
                      clear_extraneous_savers=False, strip_default_attrs=False, saver=None, **unsupported):
    """The graph as TensorFlow's MetaGraphDef (bytes), with its Saver's node names and its
    variables; written to `filename` where one is given (what Saver.save writes as
    PREFIX.meta)."""
    if as_text or export_scope or unsupported:
        raise NotImplementedError("tf.compat.v1.train.export_meta_graph(as_text / export_scope) is not supported by "
                                  "Tessera yet")
    graph = graph or get_default_graph()
    if saver is None:
        savers = graph.get_collection(GraphKeys.SAVERS)
        saver = savers[-1] if savers else None
    variables = [v._node_names() for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)]
    names = None
    if saver is not None:
        d = saver.as_saver_def()
        names = (d["filename_tensor_name"], d["save_tensor_name"], d["restore_op_name"], d["max_to_keep"])
    data = _core.serialize_meta_graph(graph._core.as_graph_def(False), names, variables)
    if filename:
        _write_atomically(filename, data)
    return data


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Adds a MetaGraphDef's graph (a file PREFIX.meta, or its bytes) to the default graph,
    its variables to the collections; returns a Saver of its saver's nodes (None where it
    had none), which restore() checkpoints into."""
    if kwargs:
        raise NotImplementedError(f"tf.compat.v1.train.import_meta_graph({', '.join(kwargs)}) is not supported by "
                                  "Tessera yet")
    if isinstance(meta_graph_or_file, (bytes, bytearray)):
        data, what = bytes(meta_graph_or_file), "<bytes>"
    else:
        with open(meta_graph_or_file, "rb") as f:
            data, what = f.read(), str(meta_graph_or_file)
    meta = _core.parse_meta_graph(data, what, clear_devices)
    graph = get_default_graph()
    prefix = _import(graph, meta["graph_def"], None, import_scope or "")  # "imp_1/" where "imp/" is taken
    for v in meta["variables"]:
        variable = Variable._from_nodes(graph, v["variable_name"], v["initializer_name"], v["snapshot_name"],
                                        v["initial_value_name"], v["trainable"], prefix)
        graph.add_to_collection(GraphKeys.GLOBAL_VARIABLES, variable)
        if v["trainable"]:
            graph.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, variable)
    if meta["saver"] is None:
        # As TensorFlow: a new Saver of the imported variables, where there are any.
        return Saver() if meta["variables"] else None
    saver_def = {k: (prefix + n if k != "max_to_keep" else n) for k, n in meta["saver"].items()}
    return Saver(saver_def=saver_def)
