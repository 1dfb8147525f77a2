#!/usr/bin/env python3
"""A transformer block's linear layers through torch.ops.tileforge.mm on a GPU (issue 16's acceptance): per GEMM,
forward and backward errors against float64 within DESIGN.md's bound, and ours against torch.mm per layer shape.

    python3 bench/python/transformer_block.py --out results.json [--dtype bf16] [--reps 50]

The block is a 4096-wide model's attention projections (Q, K, V, O: 4096 -> 4096) and MLP (gate and up:
4096 -> 14336, down: 14336 -> 4096), at batch x sequence 1 x 1, 8 x 128 and 16 x 2048 tokens. Each GEMM is timed
with CUDA events, the L2 flushed (a 256 MB write) before every rep, median of --reps; ours and torch.mm alternate in
one process.
"""
import argparse
import json
import statistics
import sys

import torch

import tileforge
import tileforge.torch  # noqa: F401  (registers torch.ops.tileforge.mm)

LAYERS = {"qkvo": (4096, 4096), "gate_up": (4096, 14336), "down": (14336, 4096)}
TOKENS = {"1x1": 1, "8x128": 1024, "16x2048": 32768}
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def bound_check(got, a, b, dtype):
    """max |got - a@b| / ((K * 2^-24 + 2 eps_out) * (|a| @ |b|) + tiny_out * eps_out) over all elements: at most 1
    passes. The last term is the output type's subnormal spacing: a product below float16's normal range (an outer
    product of two small entries at K = 1) rounds to that absolute grid, not to a relative one."""
    a64, b64 = a.double(), b.double()
    want = a64 @ b64
    fi = torch.finfo(dtype)
    tol = (a.shape[1] * 2.0**-24 + 2 * fi.eps) * (a64.abs() @ b64.abs()) + fi.tiny * fi.eps
    return ((got.double() - want).abs() / tol).max().item()


def time_ms(fn, reps, flush):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        flush.zero_()  # cold L2: every rep reads its operands from HBM
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        return 77
    dtype = DTYPES[args.dtype]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    print(f"| layer | tokens | GEMM | M x N x K | ours ms | torch.mm ms | ratio | error/bound | torch.mm error/bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tokens_name, tokens in TOKENS.items():
        for layer, (k_in, n_out) in LAYERS.items():
            x = (torch.rand(tokens, k_in, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).to(dtype)
            w = (torch.rand(n_out, k_in, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).to(dtype)
            grad = (torch.rand(tokens, n_out, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).to(dtype)
            wt = w.t()  # the layer's product is x @ w^T: a column-major view, read in place
            gemms = {
                "forward": (x, wt),                # y = x w^T:          tokens x n_out x k_in
                "grad_input": (grad, w),           # dx = dy w:          tokens x k_in x n_out
                "grad_weight": (grad.t(), x),      # dw = dy^T x:        n_out x k_in x tokens
            }
            for name, (a, b) in gemms.items():
                ours = torch.ops.tileforge.mm(a, b)
                err = bound_check(ours, a, b, dtype)
                err_torch = bound_check(torch.mm(a, b), a, b, dtype)
                t_ours = time_ms(lambda: torch.ops.tileforge.mm(a, b), args.reps, flush)
                t_torch = time_ms(lambda: torch.mm(a, b), args.reps, flush)
                shape = f"{a.shape[0]}x{b.shape[1]}x{a.shape[1]}"
                row = dict(layer=layer, tokens=tokens_name, gemm=name, shape=shape, dtype=args.dtype,
                           ours_ms=t_ours, torch_ms=t_torch, ratio=t_torch / t_ours, error_over_bound=err,
                           torch_error_over_bound=err_torch, within_bound=err <= 1.0)
                rows.append(row)
                print(f"| {layer} | {tokens_name} | {name} | {shape} | {t_ours:.4f} | {t_torch:.4f} | "
                      f"{t_torch / t_ours:.3f} | {err:.3g} | {err_torch:.3g} |")
    ratios = [r["ratio"] for r in rows]
    geomean = statistics.geometric_mean(ratios)
    print(f"geomean ratio (torch.mm time / ours): {geomean:.3f} over {len(rows)} GEMMs; "
          f"{sum(r['within_bound'] for r in rows)} of {len(rows)} within the error bound")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                           tileforge=tileforge.version(), rows=rows, geomean_ratio=geomean), f, indent=2)
    return 0 if all(r["within_bound"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
