# Triton peer for the tuner's timing target: a cold autotune of the classic grouped Triton GEMM over the 17
# configurations of Triton's tutorial, with an empty Triton cache, timed from the first call to its return.
#
#   python3 bench/peers/triton_autotune.py [MxNxK ...]      (default 4096x4096x4096; FP16 in, FP32 accumulate)
#
# Prints one JSON line per shape: seconds of the cold autotune, the chosen config, and its TFLOP/s afterwards.
# Each shape runs in a process of its own with an empty Triton cache, so that every shape's autotune compiles its
# 17 configs (in one process, a later shape would find the earlier shapes' kernels compiled).
import json
import os
import subprocess
import sys
import tempfile
import time

if len(sys.argv) > 2 and not os.environ.get("TILEFORGE_AUTOTUNE_ONE_SHAPE"):
    env = dict(os.environ, TILEFORGE_AUTOTUNE_ONE_SHAPE="1")
    sys.exit(max(subprocess.run([sys.executable, os.path.abspath(__file__), shape], env=env).returncode
                 for shape in sys.argv[1:]))

# An empty cache before triton is imported, so that every configuration is compiled during the timed call.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tileforge-triton-cache-")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps): the tutorial's list for CUDA.
TUTORIAL_CONFIGS = [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
                    (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
                    (128, 256, 64, 4, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 8), (64, 64, 64, 4, 4),
                    (128, 128, 64, 3, 4), (64, 128, 64, 4, 4), (256, 128, 64, 4, 8), (128, 256, 64, 5, 8),
                    (128, 128, 128, 3, 8)]


def configs():
    return [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GM": 8}, num_stages=s, num_warps=w)
            for bm, bn, bk, s, w in TUTORIAL_CONFIGS]


@triton.autotune(configs=configs(), key=["M", "N", "K"])
@triton.jit
def grouped_gemm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GM * tiles_n
    first_m = (pid // per_group) * GM
    rows = min(tiles_m - first_m, GM)
    pm = first_m + (pid % per_group) % rows
    pn = (pid % per_group) // rows
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * sam + rk[None, :] * sak
    pb = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(pa, mask=rk[None, :] < K - k * BK, other=0.0)
        y = tl.load(pb, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BK * sak
        pb += BK * sbk
    cm = pm * BM + tl.arange(0, BM)
    cn = pn * BN + tl.arange(0, BN)
    tl.store(c + cm[:, None] * scm + cn[None, :] * scn, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))


def run(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    grouped_gemm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def main():
    shapes = sys.argv[1:] or ["4096x4096x4096"]
    for text in shapes:
        M, N, K = (int(x) for x in text.split("x"))
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        torch.cuda.synchronize()
        t0 = time.time()
        run(a, b, c)
        torch.cuda.synchronize()
        seconds = time.time() - t0
        ms = triton.testing.do_bench(lambda: run(a, b, c), warmup=25, rep=100, return_mode="median")
        print(json.dumps({"shape": [M, N, K], "cold_autotune_seconds": round(seconds, 3), "configs": len(TUTORIAL_CONFIGS),
                          "best": str(grouped_gemm.best_config), "tflops": round(2.0 * M * N * K / ms / 1e9, 1),
                          "triton": triton.__version__}), flush=True)


if __name__ == "__main__":
    main()
