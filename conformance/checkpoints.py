#!/usr/bin/env python3
"""Checkpoints both ways, through TensorFlow's own saver graphs. TensorFlow builds a graph of
one variable per dtype a checkpoint holds and a tf.compat.v1.train.Saver over them (plain,
and sharded: SaveV2 under a temporary prefix, ShardedFilename, StringJoin,
MergeV2Checkpoints); Tessera imports that GraphDef through the C API and runs the Saver's
own save and restore ops:
  Tessera writes, TensorFlow reads: tf.train.load_checkpoint gives every value exactly;
  TensorFlow writes, Tessera reads: Tessera restores into fresh variables and saves again,
  and TensorFlow reads back what it wrote.
A dtype Tessera lacks (int8) must fail the import with an error naming it. Tessera runs in
a child process that never imports TensorFlow: the two link different protobuf libraries,
which one process cannot hold.

usage: checkpoints.py BUILD_DIR OUT_DIR"""
import ctypes, json, os, shutil, subprocess, sys

STRING = 7  # tessera_dtype TESSERA_STRING


def values(seed):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    return {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f64": rng.standard_normal(5),
        "f16": rng.standard_normal(6).astype(np.float16),
        "bf16": rng.standard_normal(4).astype(tf.bfloat16.as_numpy_dtype),
        "i32": rng.integers(-2**31, 2**31 - 1, 7, dtype=np.int32),
        "i64": rng.integers(-2**62, 2**62, 3, dtype=np.int64),
        "u8": rng.integers(0, 255, 9, dtype=np.uint8),
        "b": rng.integers(0, 2, 4).astype(bool),
        "s": np.array([b"", b"tessera", bytes(rng.integers(0, 255, 300, dtype=np.uint8))]),
        "scalar": np.float32(seed),
    }


class Tessera:
    def __init__(self, build):
        self.lib = ctypes.CDLL(os.path.join(build, "c_api", "libtessera_c.so"))
        L = self.lib
        L.tessera_status_new.restype = ctypes.c_void_p
        L.tessera_status_code.argtypes = [ctypes.c_void_p]
        L.tessera_status_message.argtypes = [ctypes.c_void_p]
        L.tessera_status_message.restype = ctypes.c_char_p
        L.tessera_graph_import_graphdef.restype = ctypes.c_void_p
        L.tessera_graph_import_graphdef.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
        L.tessera_session_new.restype = ctypes.c_void_p
        L.tessera_session_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        L.tessera_tensor_new.restype = ctypes.c_void_p
        L.tessera_tensor_new.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_void_p]
        L.tessera_tensor_set_string.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t,
                                                ctypes.c_void_p]
        L.tessera_session_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                          ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p),
                                          ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_void_p]
        self.status = L.tessera_status_new()

    def check(self, what):
        if self.lib.tessera_status_code(self.status) != 0:
            raise RuntimeError(f"{what}: {self.lib.tessera_status_message(self.status).decode()}")

    def session(self, graph_def):
        data = graph_def.SerializeToString()
        g = self.lib.tessera_graph_import_graphdef(data, len(data), self.status)
        self.check("import")
        s = self.lib.tessera_session_new(g, None, self.status)
        self.check("session")
        return s

    def run(self, session, targets, feeds=None):
        feeds = feeds or {}
        names = (ctypes.c_char_p * max(1, len(feeds)))(*[k.encode() for k in feeds])
        tensors = (ctypes.c_void_p * max(1, len(feeds)))()
        for i, value in enumerate(feeds.values()):
            tensors[i] = self.lib.tessera_tensor_new(STRING, None, 0, self.status)
            self.lib.tessera_tensor_set_string(tensors[i], 0, value.encode(), len(value.encode()), self.status)
        tgts = (ctypes.c_char_p * len(targets))(*[t.encode() for t in targets])
        self.lib.tessera_session_run(session, names, tensors, len(feeds), None, None, 0, tgts, len(targets),
                                     self.status)


def tessera_side(build, graph_path, steps):
    """Runs `steps` ([[targets], {feed: string}]) in one Tessera session on the GraphDef at
    graph_path; prints the first error and exits 1."""
    t = Tessera(build)
    with open(graph_path, "rb") as f:
        data = f.read()
    g = t.lib.tessera_graph_import_graphdef(data, len(data), t.status)
    t.check("import")
    s = t.lib.tessera_session_new(g, None, t.status)
    t.check("session")
    for targets, feeds in steps:
        t.run(s, targets, feeds)
        t.check(f"running {targets}")


def in_tessera(build, graph_def, steps, out):
    path = os.path.join(out, "graph.pb")
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    r = subprocess.run([sys.executable, __file__, "--tessera", build, path, json.dumps(steps)],
                       capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def saver_graph(init_values, sharded, extra=None):
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        variables = {k: tf.compat.v1.Variable(v, name=k) for k, v in {**init_values, **(extra or {})}.items()}
        saver = tf.compat.v1.train.Saver(variables, sharded=sharded)
        init = tf.compat.v1.global_variables_initializer()
    return g, saver.as_saver_def(), init.name


def same(a, b):
    """Equal dtypes, shapes and bits (strings as bytes, whatever numpy array holds them)."""
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "OS" or b.dtype.kind in "OS":
        return a.shape == b.shape and [bytes(x) for x in a.flat] == [bytes(x) for x in b.flat]
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def main():
    if sys.argv[1] == "--tessera":
        try:
            tessera_side(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        except RuntimeError as e:
            print(e)
            return 1
        return 0
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf
    build, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    failures = 0

    def expect_ok(rc, text, what):
        nonlocal failures
        if rc != 0:
            print(f"FAIL {what}: {text}")
            failures += 1
        return rc == 0

    for sharded in (False, True):
        kind = "sharded" if sharded else "plain"
        before = failures
        want = values(1)
        g, saver_def, init = saver_graph(want, sharded)
        filename = saver_def.filename_tensor_name.split(":")[0]
        save = saver_def.save_tensor_name.split(":")[0]
        # Tessera writes with TensorFlow's save graph; TensorFlow reads.
        written = os.path.join(out, f"tessera_{kind}", "ckpt")
        if expect_ok(*in_tessera(build, g.as_graph_def(), [[[init], {}], [[save], {filename: written}]], out),
                     f"{kind}: Tessera's save"):
            reader = tf.train.load_checkpoint(written)
            for name, value in want.items():
                got = reader.get_tensor(name)
                if not same(got, np.asarray(value)):
                    print(f"FAIL {kind}: TensorFlow read {name} = {got!r} from Tessera's checkpoint, wrote {value!r}")
                    failures += 1
        # TensorFlow writes; Tessera restores into variables that start elsewhere, saves again.
        tf_prefix = os.path.join(out, f"tf_{kind}", "ckpt")
        os.makedirs(os.path.dirname(tf_prefix))
        g2, saver_def2, init2 = saver_graph(values(2), sharded)
        with tf.compat.v1.Session(graph=g2) as sess:
            sess.run(init2)
            tf.compat.v1.train.Saver(saver_def=saver_def2).save(sess, tf_prefix, write_meta_graph=False,
                                                                write_state=False)
        again = os.path.join(out, f"tessera_again_{kind}", "ckpt")
        steps = [[[init], {}], [[saver_def.restore_op_name], {filename: tf_prefix}], [[save], {filename: again}]]
        if expect_ok(*in_tessera(build, g.as_graph_def(), steps, out), f"{kind}: Tessera's restore and save"):
            reader = tf.train.load_checkpoint(again)
            for name, value in values(2).items():
                if not same(reader.get_tensor(name), np.asarray(value)):
                    print(f"FAIL {kind}: {name} did not survive TensorFlow -> Tessera -> TensorFlow")
                    failures += 1
        print(f"{kind} saver: {len(want)} variables of every dtype, both ways: {'ok' if failures == before else 'FAILED'}")
    # `tessera train --checkpoint` writes what TensorFlow loads.
    prefix = os.path.join(out, "cnn", "ckpt")
    os.makedirs(os.path.dirname(prefix))
    subprocess.run([os.path.join(build, "tools", "tessera"), "train", "--epochs", "1", "--train-limit", "256",
                    "--test-limit", "64", "--no-progress", "--checkpoint", prefix], check=True, capture_output=True)
    shapes = dict(tf.train.list_variables(prefix))
    if shapes.get("conv2d/kernel") != [3, 3, 1, 32] or shapes.get("dense_1/bias") != [10]:
        print(f"FAIL: TensorFlow lists {shapes} in `tessera train`'s checkpoint")
        failures += 1
    else:
        print(f"tessera train --checkpoint: TensorFlow loads its {len(shapes)} variables")
    # A dtype Tessera lacks is refused by name; nothing crashes.
    g, saver_def, init = saver_graph({}, False, {"i8": np.array([1, -2], dtype=np.int8)})
    rc, text = in_tessera(build, g.as_graph_def(), [[[init], {}]], out)
    if rc == 0 or "DT_INT8" not in text:
        print(f"FAIL: a graph of int8 variables should be refused naming DT_INT8, got: {text!r}")
        failures += 1
    else:
        print(f"int8: refused ({text.splitlines()[0]})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
