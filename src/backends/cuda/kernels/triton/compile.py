# Compiles one instance of gemm.py ahead of time through Triton's compiler, for a GPU that need not be present, and
# writes the binary (cubin or hsaco) and what the compiler says about it; the triton family runs this as a
# subprocess only when a kernel is not in tileforge's kernel cache, and launches the binary itself.
#   python3 compile.py --probe          prints {"triton": VERSION, "backends": [...]} or fails with the reason
#   python3 compile.py REQUEST.json     compiles the request (its fields: see compile_one) and prints the metadata
import json
import os
import re
import subprocess
import sys
import time


def probe():
    import triton
    from triton.backends import backends
    print(json.dumps({"triton": triton.__version__, "backends": sorted(backends.keys())}))


def nvidia_resources(cubin_path):
    """Registers, spills (stack and local memory per thread) and static shared memory of the cubin's kernel, from
    the cuobjdump Triton ships."""
    import triton
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    out = subprocess.run([tool, "--dump-resource-usage", cubin_path], capture_output=True, text=True, check=True)

    def field(name):
        m = re.search(r"\b" + name + r":(\d+)", out.stdout)
        return int(m.group(1)) if m else 0
    regs = re.search(r"REG:(\d+)", out.stdout)
    return {"registers": int(regs.group(1)) if regs else -1, "spill_bytes": field("STACK") + field("LOCAL"),
            "static_shared": field("SHARED")}


def amd_resources(amdgcn):
    """VGPRs, spills and LDS from the AMDGPU assembly's metadata."""
    def field(name):
        m = re.search(r"\." + name + r":\s*(\d+)", amdgcn)
        return int(m.group(1)) if m else -1
    return {"registers": field("vgpr_count"), "spill_bytes": max(0, field("vgpr_spill_count")) * 4,
            "static_shared": 0}


def compile_one(req):
    """req: function, signature {arg: type or 'constexpr'}, order [the arguments in order], constexprs {name:
    value}, divisible [[arg name, d]: the argument's value (a pointer's address) is a multiple of d], target {backend, arch, warp_size}, num_warps, num_stages,
    out (the path prefix of the outputs: OUT.bin, OUT.json)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gemm
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = getattr(gemm, req["function"])
    # The arguments in the kernel's order ("order"; a JSON object need not keep it).
    names = req.get("order") or list(req["signature"].keys())
    signature = {n: req["signature"][n] for n in names}
    attrs = {(names.index(a),): [["tt.divisibility", d]] for a, d in req.get("divisible", [])}
    t = req["target"]
    target = GPUTarget(t["backend"], t["arch"], t["warp_size"])
    start = time.perf_counter()
    src = ASTSource(fn=fn, signature=signature, constexprs=req["constexprs"], attrs=attrs)
    kernel = triton.compile(src, target=target,
                            options={"num_warps": req["num_warps"], "num_stages": req["num_stages"]})
    seconds = time.perf_counter() - start
    md = kernel.metadata
    binary_kind = "cubin" if "cubin" in kernel.asm else "hsaco"
    binary = kernel.asm[binary_kind]
    out = req["out"]
    with open(out + ".bin", "wb") as f:
        f.write(binary)
    info = {
        "name": md.name,
        "binary": binary_kind,
        "shared": md.shared,
        "num_warps": md.num_warps,
        "num_stages": md.num_stages,
        "warp_size": getattr(md, "warp_size", t["warp_size"]),
        "global_scratch_size": getattr(md, "global_scratch_size", 0),
        "profile_scratch_size": getattr(md, "profile_scratch_size", 0),
        "triton": triton.__version__,
        "compile_seconds": seconds,
        "wgmma": binary_kind == "cubin" and "wgmma" in kernel.asm.get("ptx", ""),
    }
    info.update(nvidia_resources(out + ".bin") if binary_kind == "cubin" else amd_resources(kernel.asm["amdgcn"]))
    with open(out + ".json", "w") as f:
        json.dump(info, f)
    return info


def main(argv):
    if len(argv) == 2 and argv[1] == "--probe":
        probe()
        return 0
    if len(argv) != 2:
        print("usage: compile.py --probe | REQUEST.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        req = json.load(f)
    print(json.dumps(compile_one(req)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
