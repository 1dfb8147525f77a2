# Compiles the triton family's kernel over a product of configs for one target (no GPU needed) and writes what the
# compiler reported (shared memory, registers, spills) as CSV: the data the family's resource model is fitted to.
#   python3 bench/triton/resource_sweep.py --target cuda:90 --out sweep.csv [--dtype f16] [--aligned 1]
import argparse
import csv
import itertools
import json
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "src", "backends", "cuda", "kernels", "triton"))
import compile as tfc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="cuda:90", help="cuda:90, cuda:80 or hip:gfx942")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--aligned", type=int, default=1, help="1: leading dimensions and pointers multiples of 16")
    ap.add_argument("--blocks", default="32,64,128,256")
    ap.add_argument("--block-k", default="32,64,128")
    ap.add_argument("--warps", default="2,4,8")
    ap.add_argument("--stages", default="2,3,4,5")
    a = ap.parse_args()
    backend, arch = a.target.split(":")
    target = {"backend": backend, "arch": int(arch) if backend == "cuda" else arch,
              "warp_size": 32 if backend == "cuda" else 64}
    ty = {"f16": "*fp16", "bf16": "*bf16"}[a.dtype]
    sig = {"a_ptr": ty, "b_ptr": ty, "c_ptr": ty, "M": "i32", "N": "i32", "K": "i32", "lda": "i32", "ldb": "i32",
           "ldc": "i32", "stride_a": "i64", "stride_b": "i64", "stride_c": "i64", "alpha": "fp32", "beta": "fp32"}
    for c in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "A_ROW", "B_ROW", "EVEN_K", "HINT_M", "HINT_N",
              "ALPHA_ONE", "HAS_BETA"):
        sig[c] = "constexpr"
    div = [[n, 16] for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "lda", "ldb", "ldc", "stride_a", "stride_b",
                             "stride_c")] if a.aligned else []
    blocks = [int(x) for x in a.blocks.split(",")]
    rows = []
    tmp = tempfile.mkdtemp()
    for bm, bn, bk, w, s in itertools.product(blocks, blocks, [int(x) for x in a.block_k.split(",")],
                                              [int(x) for x in a.warps.split(",")],
                                              [int(x) for x in a.stages.split(",")]):
        req = {"function": "tileforge_gemm", "signature": sig,
               "constexprs": {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "A_ROW": True,
                              "B_ROW": True, "EVEN_K": bool(a.aligned), "HINT_M": bool(a.aligned),
                              "HINT_N": bool(a.aligned), "ALPHA_ONE": True, "HAS_BETA": False},
               "divisible": div, "target": target, "num_warps": w, "num_stages": s, "out": os.path.join(tmp, "k")}
        row = {"bm": bm, "bn": bn, "bk": bk, "warps": w, "stages": s}
        try:
            info = tfc.compile_one(req)
            row.update(shared=info["shared"], registers=info["registers"], spill_bytes=info["spill_bytes"],
                       wgmma=int(info.get("wgmma", False)), seconds=round(info["compile_seconds"], 3), error="")
        except Exception as e:  # a config the compiler refuses is data too
            row.update(shared=-1, registers=-1, spill_bytes=-1, wgmma=0, seconds=0, error=str(e).splitlines()[0][:120])
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(a.out, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        wr.writeheader()
        wr.writerows(rows)


if __name__ == "__main__":
    main()
