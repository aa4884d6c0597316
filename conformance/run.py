#!/usr/bin/env python3
"""Runs every case through TensorFlow's tf.compat.v1 Session and through `tessera run` on the
GraphDef TensorFlow wrote for it, and compares: fetched values (to float tolerance), the
device of every node both report, and whether each errors. Cases are the JSON files in
conformance/cases (imported into TensorFlow, then exported by it) and the graphs
conformance/tf_cases.py builds with TensorFlow's own API (v1 control flow included). Prints
one line per case and a summary; exits 1 when any case differs in a way not listed in
conformance/known_differences.json.

usage: run.py TESSERA_BINARY [CASE.json | TF_CASE_NAME ...]"""
import json, os, subprocess, sys, tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import attr_value_pb2  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

tf1 = tf.compat.v1
HERE = os.path.dirname(os.path.abspath(__file__))
NP_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32,
             "int64": np.int64, "uint8": np.uint8, "bool": np.bool_, "string": object}


def np_value(t):
    data = [float(x) if isinstance(x, str) and t["dtype"] != "string" else x for x in t["data"]]
    if t["dtype"] == "string":
        data = [s.encode() for s in data]
    return np.array(data, dtype=NP_DTYPES[t["dtype"]]).reshape(t.get("shape", []))


def attr_proto(value, attr_type):
    a = attr_value_pb2.AttrValue()
    if attr_type == "type":
        a.type = tf.as_dtype(value).as_datatype_enum
    elif attr_type == "tensor":
        a.tensor.CopyFrom(tf.make_tensor_proto(np_value(value)))
    elif attr_type == "shape":
        a.shape.CopyFrom(tf.TensorShape(value).as_proto())
    elif attr_type == "bool":
        a.b = value
    elif attr_type == "int":
        a.i = value
    elif attr_type == "float":
        a.f = value
    elif attr_type == "string":
        a.s = value.encode()
    elif attr_type == "list(int)":
        a.list.i.extend(value)
    elif attr_type == "list(type)":
        a.list.type.extend(tf.as_dtype(v).as_datatype_enum for v in value)
    else:
        raise ValueError(f"attr type {attr_type}")
    return a


def to_graph_def(graph):
    gd = tf1.GraphDef()
    for n in graph["nodes"]:
        node = gd.node.add()
        node.name, node.op = n["name"], n["op"]
        node.input.extend(n.get("inputs", []))
        node.device = n.get("device", "")
        op_def = op_def_registry.get(n["op"])
        types = {a.name: a.type for a in op_def.attr} if op_def else {}
        for k, v in n.get("attrs", {}).items():
            if k in types:
                node.attr[k].CopyFrom(attr_proto(v, types[k]))
        if n.get("colocate_with"):
            node.attr["_class"].list.s.extend(f"loc:@{c}".encode() for c in n["colocate_with"])
    return gd


def run_tensorflow(case, graph):
    cfg = case["config"]
    config = tf1.ConfigProto(device_count=cfg.get("device_count", {}),
                             allow_soft_placement=cfg.get("allow_soft_placement", False),
                             inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    g = tf1.Graph()
    try:
        with g.as_default():
            tf1.import_graph_def(to_graph_def(graph), name="")
            fetches = [g.get_tensor_by_name(f if ":" in f else f + ":0") for f in case["fetch"]]
            targets = [g.get_operation_by_name(t) for t in case["targets"]]
            feeds = {g.get_tensor_by_name(k if ":" in k else k + ":0"): np_value(v)
                     for k, v in case["feeds"].items()}
        with tf1.Session(graph=g, config=config) as sess:
            md = tf1.RunMetadata()
            out = sess.run(fetches + targets, feed_dict=feeds,
                           options=tf1.RunOptions(output_partition_graphs=True), run_metadata=md)
    except Exception as e:  # any TF error is the "error" outcome
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
    devices = {n.name: n.device for pg in md.partition_graphs for n in pg.node}
    return {"values": out[:len(fetches)], "devices": devices}


def tensorflow_graphdef(graph_def, tmp):
    """The GraphDef as TensorFlow itself writes it after importing `graph_def`, or None when
    TensorFlow refuses the graph (the case then runs from its JSON)."""
    g = tf1.Graph()
    try:
        with g.as_default():
            tf1.import_graph_def(graph_def, name="")
    except Exception:  # noqa: BLE001 -- any refusal: the case is about that error
        return None
    path = os.path.join(tmp, "graph.pb")
    with open(path, "wb") as f:
        f.write(g.as_graph_def().SerializeToString())
    return path


def run_tessera(binary, case, tmp, gpath=None):
    if gpath is None:
        gpath = os.path.join(tmp, "graph.json")
        json.dump(case["graph"], open(gpath, "w"))
    cpath = os.path.join(tmp, "config.json")
    json.dump(case["config"], open(cpath, "w"))
    args = [binary, "run", gpath, "--config", cpath]
    if case["fetch"]:
        args += ["--fetch", ",".join(case["fetch"])]
    if case["targets"]:
        args += ["--target", ",".join(case["targets"])]
    for name, t in case["feeds"].items():
        p = os.path.join(tmp, f"feed_{len(args)}.json")
        json.dump(t if isinstance(t, dict) else tensor_json(t), open(p, "w"))
        args += ["--feed", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    values = json.loads(r.stdout)
    placed = subprocess.run([binary, "place", gpath, "--config", cpath], capture_output=True, text=True)
    devices = {p["node"]: p["device"] for p in json.loads(placed.stdout)} if placed.returncode == 0 else {}
    return {"values": values, "devices": devices}


def tensor_json(a):
    a = np.asarray(a)
    kind = "string" if a.dtype.kind in "SOU" else tf.as_dtype(a.dtype).name
    kind = {"float": "float32", "double": "float64", "half": "float16"}.get(kind, kind)
    data = [x.decode() if isinstance(x, bytes) else x for x in a.ravel().tolist()]
    return {"dtype": kind, "shape": list(a.shape), "data": data}


def same_value(ours, theirs):
    want = np.asarray(theirs)
    got = np_value(ours)
    if got.shape != want.shape:
        return f"shape {list(got.shape)} vs TF {list(want.shape)}"
    if want.dtype.kind in "fc":
        if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6, equal_nan=True):
            return f"values {got.ravel().tolist()} vs TF {want.ravel().tolist()}"
    elif not np.array_equal(got, want):
        return f"values {got.ravel().tolist()} vs TF {want.ravel().tolist()}"
    if tf.as_dtype(want.dtype if want.dtype != object else tf.string).name.replace("float", "float") != ours["dtype"] \
            and not (ours["dtype"] == "string" and want.dtype == object):
        return f"dtype {ours['dtype']} vs TF {want.dtype}"
    return None


def compare(case, ours, theirs):
    if "error" in ours or "error" in theirs:
        if "error" in ours and "error" in theirs:
            return None
        return f"Tessera {'errors' if 'error' in ours else 'runs'}, TF {'errors' if 'error' in theirs else 'runs'}" + \
            f" ({ours.get('error') or theirs.get('error')})"
    for name, theirs_v in zip(case["fetch"], theirs["values"]):
        why = same_value(ours["values"][name], theirs_v)
        if why:
            return f"{name}: {why}"
    for node, dev in theirs["devices"].items():
        if node in ours["devices"] and ours["devices"][node] != dev:
            return f"{node} placed on {ours['devices'][node]}, TF {dev}"
    return None


def run_json_case(binary, path):
    case = json.load(open(path))
    with tempfile.TemporaryDirectory() as tmp:
        gpath = os.path.join(tmp, "graph.json")
        json.dump(case["graph"], open(gpath, "w"))
        exported = subprocess.run([binary, "export", gpath], capture_output=True, text=True)
        resolved = json.loads(exported.stdout) if exported.returncode == 0 else case["graph"]
        pb = tensorflow_graphdef(to_graph_def(resolved), tmp)
        ours = run_tessera(binary, case, tmp, pb)
    theirs = run_tensorflow(case, resolved)
    return compare(case, ours, theirs), "pb" if pb else "json"


def run_tf_case(binary, name, build):
    """A graph TensorFlow builds: TF runs it, then Tessera runs the GraphDef TF wrote."""
    g = tf1.Graph()
    with g.as_default():
        spec = build()
    # Feeds in the placeholders' own dtypes, which a Python number need not be.
    spec["feeds"] = {k: np.asarray(v, dtype=g.get_tensor_by_name(k).dtype.as_numpy_dtype)
                     for k, v in spec.get("feeds", {}).items()}
    case = {"fetch": spec["fetch"], "targets": spec.get("targets", []), "feeds": spec["feeds"],
            "config": spec.get("config", {"device_count": {"CPU": 1}})}
    config = tf1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    try:
        with tf1.Session(graph=g, config=config) as sess:
            out = sess.run(spec["fetch"] + case["targets"], feed_dict=spec.get("feeds", {}))
        theirs = {"values": out[:len(spec["fetch"])], "devices": {}}
    except Exception as e:  # noqa: BLE001 -- any TF error is the "error" outcome
        theirs = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.pb")
        with open(path, "wb") as f:
            f.write(g.as_graph_def().SerializeToString())
        ours = run_tessera(binary, case, tmp, path)
    return compare(case, ours, theirs)


def main():
    binary = sys.argv[1]
    sys.path.insert(0, HERE)
    import tf_cases  # noqa: E402 -- needs TF's v1 mode, set up on import
    asked = sys.argv[2:]
    json_paths = [a for a in asked if a.endswith(".json")] if asked else \
        sorted(os.path.join(HERE, "cases", f) for f in os.listdir(os.path.join(HERE, "cases")))
    tf_names = [a for a in asked if not a.endswith(".json")] if asked else sorted(tf_cases.CASES)
    known = json.load(open(os.path.join(HERE, "known_differences.json")))
    failures = total = 0
    runs = [(os.path.splitext(os.path.basename(p))[0], lambda p=p: run_json_case(binary, p)) for p in json_paths]
    runs += [(n, lambda n=n: (run_tf_case(binary, n, tf_cases.CASES[n]), "tf")) for n in tf_names]
    for name, run in runs:
        why, source = run()
        status = "same" if why is None else ("known" if name in known else "DIFF")
        failures += status == "DIFF"
        total += 1
        print(f"{status:5} {name:40} [{source:4}] {why or ''}{' -- ' + known[name] if status == 'known' else ''}")
    print(f"{total - failures} of {total} cases match TensorFlow {tf.__version__} "
          f"(or differ as known_differences.json explains)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
