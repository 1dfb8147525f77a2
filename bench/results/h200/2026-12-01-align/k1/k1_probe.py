#!/usr/bin/env python3
"""Probe: outer products (K = 1) through torch.ops.tileforge.mm in f16 and bf16 with the views autograd makes."""
import sys
import torch
import tileforge
import tileforge.torch  # noqa: F401

torch.manual_seed(0)
for dtype in (torch.float16, torch.bfloat16):
    for m, n in ((4096, 4096), (256, 256), (4096, 14336)):
        x = torch.randn(1, m, device="cuda", dtype=dtype)
        g = torch.randn(1, n, device="cuda", dtype=dtype)
        a = x.t()
        want = a.double() @ g.double()
        for name, aa, bb in (("t-view", a, g), ("contig", a.contiguous(), g)):
            y = torch.ops.tileforge.mm(aa, bb)
            torch.cuda.synchronize()
            err = (y.double() - want).abs()
            bad = (err > want.abs() * 2 ** -7 + 1e-3).nonzero()
            print(dtype, m, n, name, "strides", tuple(aa.stride()), "max err", err.max().item(), "bad", bad.shape[0],
                  "first bad", bad[:4].tolist(), "got", [y[i, j].item() for i, j in bad[:4].tolist()],
                  "want", [want[i, j].item() for i, j in bad[:4].tolist()], flush=True)
