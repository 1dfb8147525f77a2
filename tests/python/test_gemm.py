"""tileforge.gemm and tileforge.Plan on NumPy arrays (the CPU): every layout and order, batches, dtypes, in place,
and each bad argument named."""
import numpy as np
import pytest

import tileforge
from conftest import check, random


@pytest.mark.parametrize("a_order", ["C", "F"])
@pytest.mark.parametrize("b_order", ["C", "F"])
@pytest.mark.parametrize("c_order", ["C", "F"])
def test_every_storage_order_matches_float64(rng, a_order, b_order, c_order):
    a = np.asarray(random((37, 29), np.float32, rng), order=a_order)
    b = np.asarray(random((29, 43), np.float32, rng), order=b_order)
    c0 = np.asarray(random((37, 43), np.float32, rng), order=c_order)
    out = c0.copy(order=c_order)
    assert tileforge.gemm(a, b, out, alpha=1.5, beta=-0.5) is out
    check(out, a, b, alpha=1.5, beta=-0.5, c0=c0)


def test_transposed_views_are_read_in_place(rng):
    at = random((29, 37), np.float32, rng)  # a = at.T: a column-major view, no copy
    b = random((29, 50), np.float32, rng)
    check(tileforge.gemm(at.T, b), at.T, b)


def test_padded_leading_dimensions(rng):
    big_a = random((40, 64), np.float32, rng)
    big_b = random((32, 80), np.float32, rng)
    a, b = big_a[:33, :31], big_b[:31, :45]  # rows 64 and 80 apart
    out_big = np.full((40, 60), np.nan, np.float32)
    out = out_big[:33, :45]
    tileforge.gemm(a, b, out)
    check(out, a, b)
    assert np.isnan(out_big[33:, :]).all() and np.isnan(out_big[:, 45:]).all()  # nothing outside out is written


def test_half_inputs_with_float32_and_half_outputs(rng):
    a = random((64, 96), np.float16, rng)
    b = random((96, 40), np.float16, rng)
    check(tileforge.gemm(a, b, out_dtype=np.float32), a, b)
    check(tileforge.gemm(a, b), a, b)


def test_batches(rng):
    a = random((3, 21, 17), np.float32, rng)
    b = random((3, 17, 19), np.float32, rng)
    out = tileforge.gemm(a, b)
    assert out.shape == (3, 21, 19)
    for i in range(3):
        check(out[i], a[i], b[i])


def test_a_plan_runs_on_new_operands(rng):
    a, b = random((50, 20), np.float32, rng), random((20, 30), np.float32, rng)
    out = np.empty((50, 30), np.float32)
    plan = tileforge.Plan(a, b, out, no_db=True)
    assert plan.device == "cpu" and plan.config and plan.source == "planner" and plan.reason
    for _ in range(3):
        a2, b2 = random(a.shape, np.float32, rng), random(b.shape, np.float32, rng)
        plan.run(a2, b2, out)
        check(out, a2, b2)
    with pytest.raises(ValueError, match="what the plan was prepared for"):
        plan.run(a[:40], b, out[:40])


def test_the_nondeterministic_policy_is_an_option(rng):
    # deterministic=False allows float-atomic sums where a GPU family has them; the CPU's results stay exact.
    a, b = random((33, 70), np.float32, rng), random((70, 45), np.float32, rng)
    check(tileforge.gemm(a, b, deterministic=False), a, b)
    out = np.empty((33, 45), np.float32)
    plan = tileforge.Plan(a, b, out, no_db=True, deterministic=False)
    plan.run(a, b, out)
    check(out, a, b)


def test_bad_arguments_are_named(rng):
    a, b = random((8, 6), np.float32, rng), random((6, 5), np.float32, rng)
    with pytest.raises(ValueError, match="a's columns == b's rows"):
        tileforge.gemm(a, a)
    with pytest.raises(ValueError, match="out is 5 x 5"):
        tileforge.gemm(a, b, np.empty((5, 5), np.float32))
    with pytest.raises(TypeError, match="allowed: float32, float16, bfloat16"):
        tileforge.gemm(a.astype(np.int32), b.astype(np.int32), np.empty((8, 5), np.int32))
    with pytest.raises(TypeError, match="same dtype"):
        tileforge.gemm(a, b.astype(np.float16))
    with pytest.raises(ValueError, match="neither its rows nor its columns are contiguous"):
        tileforge.gemm(random((8, 12), np.float32, rng)[:, ::2], b)
    with pytest.raises(ValueError, match="beta"):
        tileforge.gemm(a, b, beta=1.0)
    with pytest.raises(ValueError, match="accum"):
        tileforge.gemm(a, b, accum="f64")
    with pytest.raises(ValueError, match="NO_SUCH"):
        tileforge.gemm(a, b, set={"NO_SUCH": 1})
    out = np.empty((8, 5), np.float32)
    with pytest.raises(ValueError, match="overlaps"):
        big = random((8, 8), np.float32, rng)
        tileforge.gemm(big[:, :6], b, big[:, :5])
    assert out.shape == (8, 5)


def test_unsupported_is_a_runtime_error_apart():
    # Callers fall back on exactly this class (tileforge.torch does); it stays catchable as a RuntimeError.
    assert issubclass(tileforge.Unsupported, RuntimeError)
    assert tileforge.Unsupported is not RuntimeError
