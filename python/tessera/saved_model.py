"""tf.compat.v1.saved_model.load: a SavedModel's MetaGraph imported into the session's graph
(its functions inlined and TF2 control flow lowered, by the engine's loader), its variables
restored from variables/ and its init op run, as TensorFlow's loader does; returns the
MetaGraph's signatures."""

import types

from tessera import dtypes
from tessera.framework import TensorShape
from tessera.unsupported import module_getattr

tag_constants = types.SimpleNamespace(SERVING="serve", TRAINING="train", GPU="gpu", TPU="tpu")
signature_constants = types.SimpleNamespace(
    DEFAULT_SERVING_SIGNATURE_DEF_KEY="serving_default", PREDICT_METHOD_NAME="tensorflow/serving/predict",
    CLASSIFY_METHOD_NAME="tensorflow/serving/classify", REGRESS_METHOD_NAME="tensorflow/serving/regress",
    PREDICT_INPUTS="inputs", PREDICT_OUTPUTS="outputs")


class TensorInfo:
    """A signature's tensor: its graph name, dtype and shape (a dtype Tessera lacks keeps
    TensorFlow's name, as a string)."""

    def __init__(self, name, dtype, shape):
        self.name = name
        try:
            self.dtype = dtypes.as_dtype(dtype)
        except TypeError:
            self.dtype = dtype
        self.tensor_shape = TensorShape(shape)

    def __repr__(self):
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype!r}, shape={self.tensor_shape})"


class SignatureDef:
    def __init__(self, method_name, inputs, outputs):
        self.method_name = method_name
        self.inputs = inputs
        self.outputs = outputs


class MetaGraphDef:
    """What load returns: `signature_def`, the signatures by key."""

    def __init__(self, tags, signature_def):
        self.meta_info_def = types.SimpleNamespace(tags=list(tags))
        self.signature_def = signature_def


def _infos(tensors, prefix):
    return {t["key"]: TensorInfo(prefix + t["name"], t["dtype"], t["shape"]) for t in tensors}


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    if saver_kwargs:
        raise NotImplementedError(f"tf.compat.v1.saved_model.load({', '.join(saver_kwargs)}) is not supported by "
                                  "Tessera yet")
    graph = sess.graph
    prefix = import_scope + "/" if import_scope else ""
    start = graph._core.num_nodes()
    try:
        plan = graph._core.import_saved_model(str(export_dir), set(tags), prefix)
    finally:
        graph._import_nodes(start)
    assets = {prefix + tensor: path for tensor, path in plan["asset_feeds"]}
    if plan["restore_op"]:
        sess.run(prefix + plan["restore_op"], {**assets, prefix + plan["filename_tensor"]: plan["checkpoint"]})
    if plan["init_op"]:
        sess.run(prefix + plan["init_op"], assets)
    return MetaGraphDef(tags, {s["key"]: SignatureDef(s["method_name"], _infos(s["inputs"], prefix),
                                                      _infos(s["outputs"], prefix)) for s in plan["signatures"]})


loader = types.SimpleNamespace(load=load)
__getattr__ = module_getattr("tf.compat.v1.saved_model")
