"""tileforge from Python: GEMMs on DLPack arrays (NumPy on the CPU, PyTorch and CuPy on the GPU), and the tool's
plan, tune and bench as dicts.

    import numpy as np, tileforge
    a = np.random.rand(256, 128).astype(np.float32)
    b = np.random.rand(128, 64).astype(np.float32)
    c = tileforge.gemm(a, b)                     # a new array; or out=..., alpha=..., beta=...

Arrays are read and written where they are (row- or column-major, transposed views included): nothing is copied.
On a GPU the GEMM is enqueued on the caller's current stream (PyTorch's or CuPy's) and the call returns.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Iterable, Mapping, Sequence

from . import _core

__all__ = ["Unsupported", "gemm", "prepare", "Plan", "plan", "tune", "bench", "devices", "version", "cli_path"]
__version__ = _core.version()

# A valid problem that no tileforge kernel runs on its device (for example float32 on a GPU whose family takes only
# float16 and bfloat16): a RuntimeError, raised apart so that a caller can fall back for exactly this case.
Unsupported = _core.Unsupported


def version() -> str:
    """The library's version string."""
    return _core.version()


# ---- arrays -----------------------------------------------------------------------------------------------------

def _framework(x: Any) -> str:
    module = type(x).__module__.split(".")[0]
    return module if module in ("numpy", "torch", "cupy") else "other"


def _stream_of(x: Any) -> int:
    """The caller's current CUDA stream for x's framework (0: the legacy default stream, and on the CPU)."""
    kind = _framework(x)
    if kind == "torch" and x.is_cuda:
        import torch

        return torch.cuda.current_stream(x.device).cuda_stream
    if kind == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0


def _empty_like_product(a: Any, b: Any, dtype: Any | None) -> Any:
    """A row-major output for a @ b in a's framework, on a's device: (..., M, N)."""
    shape = tuple(a.shape[:-1]) + (b.shape[-1],)
    if len(b.shape) == 3 and len(a.shape) == 2:
        shape = (b.shape[0],) + shape
    kind = _framework(a)
    if kind == "torch":
        import torch

        return torch.empty(shape, dtype=dtype or a.dtype, device=a.device)
    if kind == "cupy":
        import cupy

        return cupy.empty(shape, dtype=dtype or a.dtype)
    if kind == "numpy":
        import numpy

        return numpy.empty(shape, dtype=dtype or a.dtype)
    raise TypeError(f"out is required for arrays of type {type(a).__name__} (allowed: NumPy, PyTorch, CuPy arrays, "
                    "or any DLPack array with out= given)")


def _settings(profile: str | None, set: Mapping[str, int] | Iterable[tuple[str, int]] | None, threads: int,
              db: str | None, no_db: bool, deterministic: bool) -> dict:
    pins = list(set.items()) if isinstance(set, Mapping) else list(set or [])
    return dict(profile=profile or "", set=[(str(k), int(v)) for k, v in pins], threads=int(threads), db=db or "",
                no_db=bool(no_db), deterministic=bool(deterministic))


def gemm(a: Any, b: Any, out: Any | None = None, *, alpha: float = 1.0, beta: float = 0.0, accum: str | None = None,
         out_dtype: Any | None = None, stream: int | None = None, profile: str | None = None,
         set: Mapping[str, int] | None = None, threads: int = 0, db: str | None = None, no_db: bool = False,
         deterministic: bool = True) -> Any:
    """out = alpha * a @ b + beta * out with tileforge's own kernels, on the arrays' device.

    a is (M, K) or (batch, M, K), b (K, N) or (batch, K, N), out (M, N) or (batch, M, N); each row- or column-major
    (transposed views are fine). Inputs float32, float16 or bfloat16 (a and b alike); out the inputs' dtype or
    float32. out=None makes a row-major one (out_dtype, default a's dtype) in a's framework. accum: 'f32' (default)
    or 'f16' (f16 inputs). stream: a CUDA stream handle as an int (default: the caller's current stream). profile,
    set (pinned parameters), threads, db and no_db are the tool's --profile, --set, --threads, --db and --no-db;
    deterministic=False is its --nondeterministic (float-atomic split-K sums allowed where faster).
    Raises ValueError naming a bad argument, TypeError for an unsupported dtype, Unsupported (a RuntimeError) when no tileforge kernel runs the
    problem on its device, RuntimeError when a kernel fails.
    """
    if out is None:
        if beta != 0:
            raise ValueError(f"beta = {beta} with out=None (allowed: beta = 0, or an out array to scale)")
        out = _empty_like_product(a, b, out_dtype)
    _core.gemm(a, b, out, alpha=float(alpha), beta=float(beta), accum=accum,
               stream=_stream_of(a) if stream is None else int(stream),
               **_settings(profile, set, threads, db, no_db, deterministic))
    return out


class Plan:
    """A GEMM prepared once for arrays shaped like the examples (shapes, strides, dtypes, device), run many times."""

    def __init__(self, a: Any, b: Any, out: Any, *, alpha: float = 1.0, beta: float = 0.0, accum: str | None = None,
                 stream: int | None = None, profile: str | None = None, set: Mapping[str, int] | None = None,
                 threads: int = 0, db: str | None = None, no_db: bool = False, deterministic: bool = True):
        self._plan = _core.Plan(a, b, out, alpha=float(alpha), beta=float(beta), accum=accum,
                                stream=_stream_of(a) if stream is None else int(stream),
                                **_settings(profile, set, threads, db, no_db, deterministic))

    def run(self, a: Any, b: Any, out: Any, stream: int | None = None) -> Any:
        self._plan.run(a, b, out, stream=_stream_of(a) if stream is None else int(stream))
        return out

    config = property(lambda self: self._plan.config, doc="the kernel that runs: 'sm90 BLOCK_M=128 ...'")
    device = property(lambda self: self._plan.device, doc="'cpu' or 'cuda:N'")
    source = property(lambda self: self._plan.source, doc="'db-exact', 'planner', 'pinned', ...")
    reason = property(lambda self: self._plan.reason, doc="why this config, in one line")
    notes = property(lambda self: list(self._plan.notes), doc="what the caller should know (a nominal peak)")
    workspace_bytes = property(lambda self: self._plan.workspace_bytes)

    def __repr__(self) -> str:
        return f"tileforge.Plan({self.config} on {self.device}, {self.source})"


def prepare(a: Any, b: Any, out: Any, **kwargs: Any) -> Plan:
    """Plan(a, b, out, **kwargs): chosen and compiled once; plan.run(a, b, out) then goes straight to the kernel."""
    return Plan(a, b, out, **kwargs)


# ---- the tool's commands as dicts ---------------------------------------------------------------------------------

def cli_path() -> str:
    """The tileforge tool these functions run: $TILEFORGE_CLI, else the one installed with this package, else PATH."""
    env = os.environ.get("TILEFORGE_CLI")
    if env:
        return env
    bundled = os.path.join(os.path.dirname(__file__), "bin", "tileforge")
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("tileforge")
    if found:
        return found
    raise FileNotFoundError("the tileforge tool was not found (allowed: $TILEFORGE_CLI, the package's bin/tileforge, "
                            "or tileforge on PATH)")


def _shape_args(shape: str | Sequence[int] | None) -> list[str]:
    if shape is None:
        return []
    if not isinstance(shape, str):
        if len(shape) != 3:
            raise ValueError(f"shape = {shape!r} (allowed: (M, N, K) or 'MxNxK')")
        shape = "x".join(str(int(x)) for x in shape)
    return ["--shape", shape]


def _options(options: Mapping[str, Any]) -> list[str]:
    """Keyword arguments as the tool's options: dtype='f16' -> --dtype f16, no_db=True -> --no-db,
    set={'BLOCK_M': 128} -> --set BLOCK_M=128."""
    args: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif key == "set":
            pins = value.items() if isinstance(value, Mapping) else value
            for name, v in pins:
                args += ["--set", f"{name}={int(v)}"]
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def _run_json(command: str, args: list[str], timeout: float | None) -> Any:
    proc = subprocess.run([cli_path(), command, *args, "--format", "json"], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"tileforge {command} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def plan(shape: str | Sequence[int] | None = None, *, timeout: float | None = None, **options: Any) -> dict:
    """`tileforge plan --format json` as a dict: plan(shape=(4096, 4096, 4096), dtype='f16', profile='h200')."""
    return _run_json("plan", _shape_args(shape) + _options(options), timeout)


def bench(shape: str | Sequence[int] | None = None, *, timeout: float | None = None, **options: Any) -> Any:
    """`tileforge bench --format json`: the report in the bench schema (schemas/bench.schema.json)."""
    return _run_json("bench", _shape_args(shape) + _options(options), timeout)


def tune(shape: str | Sequence[int] | None = None, *, timeout: float | None = None, **options: Any) -> Any:
    """`tileforge tune --format json`: the search's report, its winner stored in the tuning DB."""
    return _run_json("tune", _shape_args(shape) + _options(options), timeout)


def devices(*, timeout: float | None = None) -> Any:
    """`tileforge devices --format json`: the devices present and their chip records (measures the host once)."""
    return _run_json("devices", [], timeout)
