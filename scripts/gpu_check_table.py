#!/usr/bin/env python3
"""The ratio table of scripts/gpu_check.sh: reads the rounds' benchmark JSON (gpu_bench,
gpu_replication_bench, bench/torch_cnn_gpu.py) from OUT and prints, for each goal of the GPU
issue, Tessera's figure, its peer's and their ratio, each the median over the rounds of the
ratio within one round (the peers ran beside Tessera in the same round)."""
import json
import statistics
import sys
from pathlib import Path


def load_rounds(out, rounds):
    """One dict per complete round: benchmark name -> its entry, and 'torch' -> PyTorch's line."""
    result = []
    for r in range(1, rounds + 1):
        entries = {}
        for bench in ("gpu_bench", "gpu_replication_bench"):
            path = out / f"{bench}.{r}.json"
            if path.exists():
                for b in json.loads(path.read_text())["benchmarks"]:
                    if "error_message" not in b:
                        entries[b["name"].split("/")[0]] = b  # "BM_X/real_time" -> "BM_X"
        torch = out / f"torch.{r}.json"
        if torch.exists() and torch.read_text().strip():
            entries["torch"] = json.loads(torch.read_text().strip().splitlines()[-1])
        result.append(entries)
    return result


def counter(entry, key):
    return entry.get(key) if entry else None


# (what, Tessera's benchmark and counter, the peer's, how to compare, goal)
ROWS = [
    ("MatMul 4096 fp32, TFLOP/s", ("BM_MatMul4096_Session", "TFLOP/s"), ("BM_MatMul4096_Cublas", "TFLOP/s"),
     "ratio", ">= 0.95x cuBLAS"),
    ("1,000-op chain, us per op", ("BM_OpChain1000_Session", "us/op"), ("BM_OpChain1000_BareLaunch", "us/op"),
     "difference", "<= launch + 2 us"),
    ("100-convolution chain, us per convolution", ("BM_ConvChain100_Session", "us/op"),
     ("BM_ConvChain100_Cudnn", "us/op"), "difference", ""),
    ("64 MiB CPU->GPU->CPU, GB/s", ("BM_Transfer64MiB_SendRecv", "GB/s"), ("BM_Transfer64MiB_PinnedMemcpy", "GB/s"),
     "ratio", ""),
    ("CNN training b128, images/s", ("BM_CnnTrainStep_Gpu", "images/s"), ("torch", "train_images_per_s"),
     "ratio", ">= 1x PyTorch eager"),
    ("CNN training captured, images/s", ("BM_CnnTrainStep_GpuCaptured", "images/s"),
     ("torch", "captured_train_images_per_s"), "ratio", ">= 0.8x PyTorch CUDA graph"),
    ("CNN inference b128, images/s", ("BM_CnnInference_Gpu", "images/s"), ("torch", "inference_images_per_s"),
     "ratio", ""),
    ("all-reduce 64 MiB, 2 logical GPUs, GB/s", ("BM_AllReduce64MiB_TwoLogicalGpus", "GB/s"),
     ("BM_DeviceToDeviceCopy64MiB_Cuda", "GB/s"), "ratio", ">= 0.5x device copy"),
    ("CNN training mirrored over 2 logical GPUs", ("BM_CnnTrain_MirroredOverTwoLogicalGpus", "images/s"),
     ("BM_CnnTrain_OneLogicalGpu", "images/s"), "ratio", ">= 0.9x one GPU"),
]


def show(value):
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def main():
    out, rounds = Path(sys.argv[1]), int(sys.argv[2])
    data = load_rounds(out, rounds)
    print(f"| what | Tessera | beside it | Tessera vs beside (median of {rounds} rounds) | goal |")
    print("| --- | --- | --- | --- | --- |")
    for what, (ours, our_key), (peer, peer_key), compare, goal in ROWS:
        pairs = [(counter(d.get(ours), our_key), counter(d.get(peer), peer_key)) for d in data]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if not pairs:
            print(f"| {what} | - | - | not measured | {goal} |")
            continue
        if compare == "ratio":
            figure = f"{statistics.median(a / b for a, b in pairs):.2f}x"
        else:
            figure = f"{statistics.median(a - b for a, b in pairs):+.2f}"
        mine = statistics.median(a for a, _ in pairs)
        theirs = statistics.median(b for _, b in pairs)
        label = "PyTorch" if peer == "torch" else peer.removeprefix("BM_")
        print(f"| {what} | {show(mine)} | {label}: {show(theirs)} | {figure} | {goal} |")
    if data and "torch" in data[-1]:
        print(f"PyTorch {data[-1]['torch'].get('torch')}")


if __name__ == "__main__":
    main()
