#!/usr/bin/env python3
"""PyTorch's side of bench/gpu_bench.cc's CNN rows: the seeds' CNN at batch 128, float32,
one batch held on the GPU, RMSprop as Keras has it. Prints one JSON line with training and
inference images/s, eager, and training with the step captured as a CUDA graph. Run on the
same GPU as gpu_bench, beside it."""
import json, time

import torch
import torch.nn as nn

BATCH = 128


def model():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 5 * 5, 64), nn.ReLU(),
                         nn.Linear(64, 10)).cuda()


def rate(step, steps):
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return BATCH * steps / (time.perf_counter() - start)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    x = torch.rand(BATCH, 1, 28, 28, device="cuda")
    y = torch.arange(BATCH, device="cuda") % 10
    m = model()
    opt = torch.optim.RMSprop(m.parameters(), lr=1e-3, alpha=0.9, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss_fn(m(x), y).backward()
        opt.step()

    train = rate(train_step, 500)
    with torch.no_grad():
        infer = rate(lambda: m(x).argmax(1), 2000)

    # The same step captured once and replayed (PyTorch's whole-network CUDA graph recipe);
    # a captured optimizer keeps its step count on the GPU.
    opt = torch.optim.RMSprop(m.parameters(), lr=1e-3, alpha=0.9, eps=1e-7, capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train_step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn(m(x), y).backward()
        opt.step()
    captured = rate(graph.replay, 2000)
    print(json.dumps({"torch": torch.__version__, "train_images_per_s": round(train),
                      "inference_images_per_s": round(infer), "captured_train_images_per_s": round(captured)}))


if __name__ == "__main__":
    main()
