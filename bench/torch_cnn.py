#!/usr/bin/env python3
"""The training demo's CNN in PyTorch, for bench/cnn_side_by_side.sh: the same model,
Glorot-uniform kernels and zero biases, RMSprop (lr 1e-3, alpha 0.9, eps 1e-7, as Keras),
batch 128, float32, 1 or more threads. Data is decoded into memory first; epochs time the
training loop only. Prints one JSON line: images/s per epoch, test accuracy, inference
images/s at batch 128 and peak RSS. Needs torch and numpy (Debian's python3-torch)."""
import argparse, gzip, json, os, resource, sys, time

import numpy as np
import torch
import torch.nn as nn


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def load(d, split):
    x = torch.from_numpy(idx(f"{d}/{split}-images-idx3-ubyte.gz").astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(idx(f"{d}/{split}-labels-idx1-ubyte.gz").astype(np.int64))
    return x.contiguous(), y


def model():
    m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 10))
    for layer in m:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    d = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    xtr, ytr = load(d, "train")
    xte, yte = load(d, "t10k")
    m = model()
    opt = torch.optim.RMSprop(m.parameters(), lr=1e-3, alpha=0.9, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    out = {"peer": "pytorch", "version": torch.__version__, "threads": a.threads, "epochs": []}
    for epoch in range(a.epochs):
        order = torch.randperm(xtr.shape[0])
        start = time.perf_counter()
        for i in range(0, xtr.shape[0], 128):
            batch = order[i:i + 128]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(m(xtr[batch]), ytr[batch])
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - start
        with torch.no_grad():
            m.eval()
            correct = sum((m(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, 10000, 1000))
            m.train()
        out["epochs"].append({"images_per_s": xtr.shape[0] / seconds, "test_accuracy": correct / 10000})
    with torch.no_grad():
        m.eval()
        n = (xte.shape[0] // 128) * 128
        for i in range(0, 10 * 128, 128):
            m(xte[i:i + 128])
        rates = []
        for _ in range(3):
            start = time.perf_counter()
            for i in range(0, n, 128):
                m(xte[i:i + 128])
            rates.append(n / (time.perf_counter() - start))
    out["inference_images_per_s"] = sorted(rates)[1]
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
