"""torch.ops.tileforge.mm and tileforge.torch.Linear: forward and backward against float64, torch.compile, and on a
GPU the caller's stream. Skips visibly without PyTorch (CI's machines have none) or without a GPU."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="SKIPPED: PyTorch is not installed")
import tileforge.torch  # noqa: E402  (registers torch.ops.tileforge.mm)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def close(got, want64, k, dtype):
    """Within DESIGN.md's bound: (K * f32 eps + 2 output eps) * |a| |b|, taken here from the float64 magnitudes."""
    eps_out = torch.finfo(dtype).eps if dtype != torch.float32 else 2.0**-24
    tol = (k * 2.0**-24 + 2 * eps_out) * want64.abs().amax() * 4 + 1e-30
    err = (got.double() - want64).abs().max().item()
    assert err <= tol, f"max error {err} above {tol}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mm_forward_and_backward_match_float64(device, dtype):
    if device == "cpu" and dtype != torch.float32:
        pytest.skip("SKIPPED: half-precision autograd checked on the GPU")
    g = torch.Generator(device="cpu").manual_seed(7)
    a = (torch.rand(48, 40, generator=g) * 2 - 1).to(device=device, dtype=dtype).requires_grad_()
    b = (torch.rand(40, 56, generator=g) * 2 - 1).to(device=device, dtype=dtype).requires_grad_()
    y = torch.ops.tileforge.mm(a, b)
    close(y, a.double() @ b.double(), 40, dtype)
    grad = (torch.rand(48, 56, generator=g) * 2 - 1).to(device=device, dtype=dtype)
    y.backward(grad)
    close(a.grad, grad.double() @ b.double().t(), 56, dtype)
    close(b.grad, a.double().t() @ grad.double(), 48, dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_is_a_drop_in(device):
    torch.manual_seed(3)
    ref = torch.nn.Linear(64, 32).to(device)
    ours = tileforge.torch.Linear(64, 32).to(device)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(4, 5, 64, device=device)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-4, atol=1e-4)


def test_fake_tensor_and_compile_see_an_opaque_op():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = torch.ops.tileforge.mm(torch.empty(8, 4), torch.empty(4, 6))
    assert y.shape == (8, 6)
    f = torch.compile(lambda a, b: torch.ops.tileforge.mm(a, b) * 2, backend="eager", fullgraph=True)
    a, b = torch.randn(16, 8), torch.randn(8, 12)
    torch.testing.assert_close(f(a, b), (a @ b) * 2, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SKIPPED: no CUDA device")
def test_gemm_runs_on_the_current_stream():
    s = torch.cuda.Stream()
    a = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, 192, device="cuda", dtype=torch.float16)
    with torch.cuda.stream(s):
        out = tileforge.gemm(a, b)
    s.synchronize()
    close(out, a.double() @ b.double(), 128, torch.float16)


def test_mm_refuses_three_dimensions():
    with pytest.raises(ValueError, match="2-D"):
        torch.ops.tileforge.mm(torch.randn(2, 3, 4), torch.randn(4, 5))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="SKIPPED: no CUDA device")
def test_a_product_no_kernel_runs_falls_back_to_torch_with_a_warning():
    a = torch.randn(64, 32, device="cuda", dtype=torch.float32)
    b = torch.randn(32, 48, device="cuda", dtype=torch.float32)
    try:
        tileforge.gemm(a, b)
        pytest.skip("SKIPPED: this GPU's tileforge family runs float32, so nothing falls back")
    except tileforge.Unsupported as e:
        assert "f32" in str(e)
    tileforge.torch._fallbacks_warned.clear()
    with pytest.warns(RuntimeWarning, match="torch.mm computes"):
        y = torch.ops.tileforge.mm(a, b)
    close(y, a.double() @ b.double(), 32, torch.float32)
