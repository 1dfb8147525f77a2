# Whether tileforge's C++ launch of a triton-family kernel gives the same bits as Triton's own Python launch of the
# same kernel (src/backends/cuda/kernels/triton/gemm.py) with the same constexprs and launch options: random FP16
# operands from torch, C from the C API (libtileforge, TILEFORGE_CUDA_FAMILY=triton, the config pinned with
# tfSetParam) and from Triton's JIT, compared bit for bit. Needs a GPU, torch and Triton.
#   python3 bench/triton/same_bits.py build/libtileforge.so
import ctypes
import os
import sys

os.environ["TILEFORGE_CUDA_FAMILY"] = "triton"
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "src", "backends", "cuda", "kernels", "triton"))

import torch  # noqa: E402
import triton  # noqa: E402
import gemm  # noqa: E402

# (M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, WARPS, STAGES): every size and leading dimension a multiple of 16 or
# of no 8 (Triton's JIT hints only 16, tileforge's request 16 or 8), so both launches compile the same kernel; the
# last two have M, N and K tails.
CASES = [(512, 512, 512, 128, 128, 64, 8, 8, 3), (1024, 768, 2048, 128, 256, 64, 8, 8, 3),
         (256, 384, 1024, 64, 128, 64, 4, 4, 4), (999, 1008, 1104, 64, 128, 128, 8, 4, 4),
         (300, 208, 80, 32, 64, 32, 1, 2, 3)]


def main(lib_path):
    lib = ctypes.CDLL(lib_path)
    lib.tfGetStatusString.restype = ctypes.c_char_p
    lib.tfGetLastErrorMessage.restype = ctypes.c_char_p
    h = ctypes.c_void_p()
    assert lib.tfCreate(ctypes.byref(h)) == 0
    lib.tfSetDevice(h, b"cuda")
    lib.tfUseDatabase(h, 0)
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    torch.manual_seed(14)
    same = 0
    for m, n, k, bm, bn, bk, gm, w, st in CASES:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        c_tf = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        c_py = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        lib.tfClearParams(h)
        for name, value in (("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk), ("GROUP_M", gm), ("WARPS", w),
                            ("STAGES", st)):
            lib.tfSetParam(h, name.encode(), ctypes.c_int64(value))
        rc = lib.tfGemmEx(h, 0, 0, 0, ctypes.c_int64(m), ctypes.c_int64(n), ctypes.c_int64(k), ctypes.byref(one),
                          ctypes.c_void_p(a.data_ptr()), 1, ctypes.c_int64(k), ctypes.c_void_p(b.data_ptr()), 1,
                          ctypes.c_int64(n), ctypes.byref(zero), ctypes.c_void_p(c_tf.data_ptr()), 1,
                          ctypes.c_int64(n), 0)
        if rc != 0:
            print(f"{m}x{n}x{k}: tfGemmEx failed: {lib.tfGetLastErrorMessage(h).decode()}")
            continue
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), 1)
        gemm.tileforge_gemm[grid](a, b, c_py, m, n, k, k, n, n, 0, 0, 0, 1.0, 0.0, BLOCK_M=bm, BLOCK_N=bn,
                                  BLOCK_K=bk, GROUP_M=gm, A_ROW=1, B_ROW=1, EVEN_K=int(k % bk == 0),
                                  HINT_M=int(m % bm == 0), HINT_N=int(n % bn == 0), ALPHA_ONE=1, HAS_BETA=0,
                                  num_warps=w, num_stages=st)
        torch.cuda.synchronize()
        identical = torch.equal(c_tf.view(torch.int16), c_py.view(torch.int16))
        ref = (a.double() @ b.double())
        err = ((c_tf.double() - ref).norm() / ref.norm()).item()
        same += identical
        print(f"{m}x{n}x{k} {bm}x{bn}x{bk} g{gm} w{w} s{st}: {'identical bits' if identical else 'DIFFERENT'}, "
              f"error against float64 {err:.2e}")
    lib.tfDestroy(h)
    print(f"{same} of {len(CASES)} identical")
    return 0 if same == len(CASES) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/libtileforge.so"))
