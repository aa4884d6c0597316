#!/usr/bin/env python3
"""SavedModel inference: Tessera beside TensorFlow 2.21 (the same SavedModel, its signature
called in a tf.function) and ONNX Runtime (the model converted by tf2onnx), on Keras's
applications (random weights, 224x224) and a small Transformer encoder, at batch 1 and 32
with 1 and 2 threads. Every measurement is a process of its own, so each engine's load to
first answer is timed from process start and its thread counts are set before it starts;
rounds interleave the engines. Prints one JSON line per measurement, then a table of ratios.

usage: saved_model_peers.py BUILD_DIR OUT_DIR [--rounds 3] [--min-time 1] [--models a,b]
       saved_model_peers.py --worker tensorflow|onnxruntime MODEL_PATH BATCH THREADS MIN_TIME"""
import json, os, statistics, subprocess, sys, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODELS = ["mobilenet_v2", "resnet50", "efficientnet_b0", "densenet121", "transformer"]


def seconds_since_process_start():
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_mb():
    """VmHWM: getrusage's ru_maxrss would carry over the parent's peak across fork and exec."""
    with open("/proc/self/status") as f:
        return round(int(next(l for l in f if l.startswith("VmHWM:")).split()[1]) / 1024, 1)


def random_input(shape, integer, batch):
    import numpy as np
    rng = np.random.default_rng(1)
    dims = [d if d is not None and d >= 0 else (batch if i == 0 else 1) for i, d in enumerate(shape)]
    return rng.integers(0, 10, dims).astype(np.int32) if integer else rng.standard_normal(dims).astype(np.float32)


def timed(run, min_time):
    run()
    first_answer = seconds_since_process_start()
    times, begin = [], time.perf_counter()
    while len(times) < 5 or time.perf_counter() - begin < min_time:
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return first_answer, statistics.median(times), len(times)


def worker(engine, path, batch, threads, min_time):
    if engine == "tensorflow":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        loaded = tf.saved_model.load(path)  # the signature holds its variables only weakly
        signature = loaded.signatures["serving_default"]
        (key, spec), = signature.structured_input_signature[1].items()
        x = tf.constant(random_input(spec.shape.as_list(), spec.dtype.is_integer, batch))
        call = tf.function(lambda x: signature(**{key: x}))
        run = lambda: [v.numpy() for v in call(x).values()]
    else:
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        spec = session.get_inputs()[0]
        shape = [d if isinstance(d, int) else None for d in spec.shape]
        feed = {spec.name: random_input(shape, "int" in spec.type, batch)}
        run = lambda: session.run(None, feed)
    first_answer, median, runs = timed(run, min_time)
    print(json.dumps({"engine": engine, "batch": batch, "threads": threads, "first_answer_s": round(first_answer, 4),
                      "median_s": round(median, 6), "runs": runs,
                      "peak_rss_mb": peak_rss_mb()}))


def export(name, out):
    """The SavedModel (model.export) and its ONNX conversion, made once under `out`."""
    path = os.path.join(out, name)
    if not os.path.exists(os.path.join(path, "saved_model.pb")):
        import keras
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
        from keras_models import transformer
        keras.utils.set_random_seed(1)
        make = {
            "mobilenet_v2": lambda: keras.applications.MobileNetV2(weights=None),
            "resnet50": lambda: keras.applications.ResNet50(weights=None),
            "efficientnet_b0": lambda: keras.applications.EfficientNetB0(weights=None),
            "densenet121": lambda: keras.applications.DenseNet121(weights=None),
            "transformer": transformer,
        }[name]
        make().export(path, verbose=False)
    onnx = path + ".onnx"
    if not os.path.exists(onnx):
        r = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", path, "--output", onnx,
                            "--opset", "17"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"tf2onnx could not convert {name}: {r.stderr.strip().splitlines()[-1]}", file=sys.stderr)
            return path, None
    import onnxruntime as ort
    try:
        ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    except Exception as e:  # tf2onnx wrote a model ONNX Runtime refuses (the Transformer's Erfc)
        print(f"ONNX Runtime cannot load tf2onnx's {name}: {str(e).splitlines()[0][:300]}", file=sys.stderr)
        return path, None
    return path, onnx


def measure(command):
    r = subprocess.run(command, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv):
    if argv[0] == "--worker":
        return worker(argv[1], argv[2], int(argv[3]), int(argv[4]), float(argv[5]))
    build, out = argv[0], argv[1]
    options = dict(zip(argv[2::2], argv[3::2]))
    rounds, min_time = int(options.get("--rounds", 3)), options.get("--min-time", "1")
    models = options.get("--models", ",".join(MODELS)).split(",")
    os.makedirs(out, exist_ok=True)
    paths = {name: export(name, out) for name in models}
    results = []
    for round_ in range(rounds):
        for name in models:
            path, onnx = paths[name]
            for batch in (1, 32):
                for threads in (1, 2):
                    commands = {
                        "tessera": [os.path.join(build, "bench", "saved_model_bench"), path, "--batch", str(batch),
                                    "--threads", str(threads), "--min-time", min_time],
                        "tensorflow": [sys.executable, __file__, "--worker", "tensorflow", path, str(batch),
                                       str(threads), min_time],
                    }
                    if onnx:
                        commands["onnxruntime"] = [sys.executable, __file__, "--worker", "onnxruntime", onnx,
                                                   str(batch), str(threads), min_time]
                    for engine, command in commands.items():
                        r = dict(measure(command), engine=engine, model=name, round=round_)
                        print(json.dumps(r), flush=True)
                        results.append(r)
    table(results)


def table(results):
    def median(model, engine, batch, threads, field):
        values = [r[field] for r in results if (r["model"], r["engine"], r["batch"], r["threads"]) ==
                  (model, engine, batch, threads)]
        return statistics.median(values) if values else None

    print("\n| model | batch | threads | Tessera ms | TensorFlow ms | vs TF | ONNX Runtime ms | vs ORT |")
    print("|---|---|---|---|---|---|---|---|")
    for model in dict.fromkeys(r["model"] for r in results):
        for batch in (1, 32):
            for threads in (1, 2):
                t, tf, ort = (median(model, e, batch, threads, "median_s") for e in ("tessera", "tensorflow", "onnxruntime"))
                ort_cells = f"{ort * 1e3:.2f} | {ort / t:.2f}x" if ort else "- | -"
                print(f"| {model} | {batch} | {threads} | {t * 1e3:.2f} | {tf * 1e3:.2f} | {tf / t:.2f}x | {ort_cells} |")
    print("\n| model (batch 1, 1 thread) | load to first answer: Tessera s | TensorFlow s | ratio | peak RSS: Tessera MB | TensorFlow MB | ratio |")
    print("|---|---|---|---|---|---|---|")
    for model in dict.fromkeys(r["model"] for r in results):
        ft, ftf = (median(model, e, 1, 1, "first_answer_s") for e in ("tessera", "tensorflow"))
        rt, rtf = (median(model, e, 1, 1, "peak_rss_mb") for e in ("tessera", "tensorflow"))
        print(f"| {model} | {ft:.2f} | {ftf:.2f} | {ft / ftf:.2f}x | {rt:.0f} | {rtf:.0f} | {rt / rtf:.2f}x |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
