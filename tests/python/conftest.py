"""Shared helpers of the Python tests: random operands and the float64 check with DESIGN.md's error bound."""
import numpy as np
import pytest


def random(shape, dtype, rng):
    # Never zeros: values in [-1, 1) with a sign mix, rounded to the dtype first so the reference sees what the
    # kernel sees.
    return (rng.random(shape) * 2 - 1).astype(dtype)


def check(got, a, b, alpha=1.0, beta=0.0, c0=None, accum_eps=2.0**-24):
    """Every element of got against float64, within (K * accum_eps + output eps) * (|alpha| |a| |b| + |beta c0|)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    want = alpha * (a64 @ b64)
    bound = abs(alpha) * (np.abs(a64) @ np.abs(b64))
    if beta != 0:
        c64 = np.asarray(c0, np.float64)
        want = want + beta * c64
        bound = bound + abs(beta) * np.abs(c64)
    out_eps = float(np.finfo(got.dtype).eps) if got.dtype != np.float32 else 2.0**-24
    k = a.shape[-1]
    tol = (k * accum_eps + 2 * out_eps) * bound + 1e-30
    err = np.abs(np.asarray(got, np.float64) - want)
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert np.all(err <= tol), f"element {worst}: got {got[worst]}, want {want[worst]}, tolerance {tol[worst]}"


@pytest.fixture
def rng():
    return np.random.default_rng(20261201)
