"""tileforge as a PyTorch operator: torch.ops.tileforge.mm (autograd and torch.compile aware) and a Linear layer.

    import torch, tileforge.torch
    y = torch.ops.tileforge.mm(x, w)             # x @ w with tileforge's kernels, on x's device and current stream
    layer = tileforge.torch.Linear(4096, 4096)   # nn.Linear whose product goes through torch.ops.tileforge.mm

A product no tileforge kernel runs on its device (tileforge.Unsupported: float32 on an sm90 GPU, for one) is computed
by torch.mm instead, with a warning the first time each (device type, dtype) falls back: a drop-in layer must not
fail where nn.Linear works, and the warning keeps the vendor's result from passing for ours.
"""
from __future__ import annotations

import warnings

import torch

from . import Unsupported
from . import gemm as _gemm

_fallbacks_warned: set[tuple[str, torch.dtype]] = set()


def _product(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    try:
        _gemm(a, b, out)
    except Unsupported as e:
        key = (a.device.type, a.dtype)
        if key not in _fallbacks_warned:
            _fallbacks_warned.add(key)
            warnings.warn(f"tileforge::mm: torch.mm computes {a.dtype} on {a.device.type}, not tileforge ({e})",
                          RuntimeWarning, stacklevel=3)
        torch.mm(a, b, out=out)

__all__ = ["mm", "Linear"]


@torch.library.custom_op("tileforge::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D a (M, K) and b (K, N): float32, float16 or bfloat16, row- or column-major (transposed views are
    read in place); the result is row-major, in a's dtype."""
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"tileforge::mm takes 2-D tensors (allowed: a (M, K), b (K, N)); got {a.dim()}-D and "
                         f"{b.dim()}-D")
    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    if a.shape[0] and b.shape[1]:
        if a.shape[1] == 0:
            out.zero_()
        else:
            _product(a.detach(), b.detach(), out)
    return out


@mm.register_fake
def _(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Shape and dtype only, so that torch.compile traces through the call as one opaque op.
    torch._check(a.dim() == 2 and b.dim() == 2)
    torch._check(a.shape[1] == b.shape[0])
    return a.new_empty((a.shape[0], b.shape[1]))


def _setup_context(ctx, inputs, output):
    a, b = inputs
    ctx.save_for_backward(a, b)


def _backward(ctx, grad):
    # d(a @ b)/da = grad @ b^T and d/db = a^T @ grad: the transposes are views that tileforge reads column-major.
    a, b = ctx.saved_tensors
    grad_a = mm(grad, b.t()) if ctx.needs_input_grad[0] else None
    grad_b = mm(a.t(), grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


mm.register_autograd(_backward, setup_context=_setup_context)


class Linear(torch.nn.Linear):
    """A drop-in for torch.nn.Linear (same parameters, same state dict) whose product is torch.ops.tileforge.mm."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        y = torch.ops.tileforge.mm(rows, self.weight.t())
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)
