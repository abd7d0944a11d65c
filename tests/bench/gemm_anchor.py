#!/usr/bin/python3
"""gemm_anchor.py: what one core can do at the model's matrix shapes.

The machine-limit anchor of bench_ddp.sh (issue 27). For each Linear layer of
the char GPT (per block: qkv d -> 3d, proj d -> d, fc1 d -> m*d, fc2 m*d -> d;
then the head d -> vocab), with T = batch x context tokens, times the three
GEMMs a training step runs on it, as torch.mm on one thread (OpenBLAS sgemm,
the same library both PyTorch's DDP and dtlab call):
    forward       Y  = X  W^T    (T x in) (in x out)     2 T in out FLOPs
    grad input    dX = dY W      (T x out) (out x in)    2 T in out FLOPs
    grad weight   dW = dY^T X    (out x T) (T x in)      2 T in out FLOPs
The anchor is their total FLOPs over their total time: the step's GEMM rate
if nothing else cost anything. Also reported: a 1024^3 sgemm, the core's
rate on a shape that suits it.

Usage: gemm_anchor.py [--d-model 128] [--layers 4] [--mlp-ratio 4] [--vocab 128]
                      [--context 64] [--batch 16] [--repeats 20] [--json OUT]
"""
import argparse
import json
import sys
import time

import torch


def best_seconds(fn, repeats):
    fn()  # warm-up (allocations, OpenBLAS buffers)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--mlp-ratio", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args(argv)
    for name in ("d_model", "layers", "mlp_ratio", "vocab", "context", "batch", "repeats"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    torch.set_num_threads(1)
    torch.manual_seed(0)

    d, m, T = args.d_model, args.mlp_ratio, args.batch * args.context
    block = [(d, 3 * d), (d, d), (d, m * d), (m * d, d)]
    shapes = block * args.layers + [(d, args.vocab)]
    flops = 0.0
    seconds = 0.0
    for fan_in, fan_out in shapes:
        x = torch.randn(T, fan_in)
        w = torch.randn(fan_out, fan_in)
        dy = torch.randn(T, fan_out)
        for fn in (lambda: torch.mm(x, w.t()), lambda: torch.mm(dy, w), lambda: torch.mm(dy.t(), x)):
            seconds += best_seconds(fn, args.repeats)
            flops += 2.0 * T * fan_in * fan_out
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    square = 2.0 * 1024**3 / best_seconds(lambda: torch.mm(a, b), max(3, args.repeats // 4))
    result = {
        "model_gemm_gflops": flops / seconds / 1e9,  # the anchor
        "square_1024_gflops": square / 1e9,
        "gemm_flops_per_step": flops,
        "tokens": T,
        "shapes": shapes,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    print(f"model-shape GEMMs: {result['model_gemm_gflops']:.1f} GFLOP/s on one core "
          f"({flops / 1e9:.2f} GFLOP per step in {seconds * 1e3:.1f} ms); 1024^3 sgemm: "
          f"{result['square_1024_gflops']:.1f} GFLOP/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
