"""Figure 13.2: which regime a step is in (overhead, memory or compute), and which fix
helps there: fusing, a CUDA graph, an fp8 matmul.

The step: one n x n by n x n matmul (bf16; fp8 inputs with a bf16 output when switched
on), then k unary elementwise ops on its n^2-element bf16 output, on one GPU.
  matmul        2n^3 FLOPs; 2 x n^2 inputs and n^2 output (bytes from `transformer`)
  elementwise   each reads and writes n^2 elements (lesson 3); fused: one kernel for all k
  a kernel's GPU time g = max(FLOPs / peak, bytes / bandwidth) (lesson 2's roofline)
Launches (3.6 µs of CPU time each): without a graph the CPU launches kernel i in
[iL, (i+1)L] and the GPU runs it from max((i+1)L, end of kernel i-1); with a CUDA graph
one launch L starts all the kernels, which then run back to back, each at least 1 µs
(the GPU-side minimum of a kernel in a graph). The step ends with its last kernel.
Shares: compute = the g of compute-bound kernels, memory = the g of memory-bound ones,
overhead = the rest of the step (the GPU waiting for launches, or a graph's minimum).
Fusing removes k - 1 launches as well as 2(k - 1) n^2 elements of HBM traffic, so it
helps in the overhead regime too.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, time_readout
from gpuviz.data.hardware import DEFAULT_GPU, gpu
from gpuviz.models.kernels import DTYPE_BYTES, US, fusion_bytes_per_element
from gpuviz.models.transformer import BF16_BYTES, matmul_cost

LAUNCH_US = 3.6  # CPU time per launch (the same as figure 3.1's default)
GRAPH_MIN_US = 1.0  # a kernel's GPU-side minimum inside a CUDA graph
N_MIN, N_MAX = 64, 32768
CURVE_POINTS = 121  # sizes on the curves, evenly spaced in log n
SHARE_BARS = 31  # sizes in the lower chart's stacked bars
PARTS = ("overhead", "memory", "compute")
FIXES = ("fuse", "cuda_graph", "fp8")
FIX_NAMES = {"fuse": "Fuse", "cuda_graph": "CUDA graph", "fp8": "fp8 matmul"}


@dataclass(frozen=True)
class Steps:
    """Step times and their parts (s) over sizes n (arrays of one shape)."""

    n: np.ndarray
    time: np.ndarray
    overhead: np.ndarray
    memory: np.ndarray
    compute: np.ndarray
    kernels: int

    def part(self, name: str) -> np.ndarray:
        return getattr(self, name)


def kernel_gpu_times(n: np.ndarray, k: int, fuse: bool, fp8: bool
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(compute time, memory time) in seconds of each kernel of the step, in order."""
    g = gpu(DEFAULT_GPU)
    bandwidth = g.hbm_bandwidth
    n = np.asarray(n, dtype=float)
    flops, bf16_bytes = matmul_cost(n, n, n, BF16_BYTES)
    if fp8:  # inputs in fp8, the output still bf16
        matmul_bytes = (2 * DTYPE_BYTES["fp8"] + BF16_BYTES) * n * n
        peak = g.peak_flops("fp8")
    else:
        matmul_bytes, peak = bf16_bytes, g.peak_flops("bf16")
    kernels = [(flops / peak, matmul_bytes / bandwidth)]
    unfused, fused = fusion_bytes_per_element(k, "unary", BF16_BYTES)
    elementwise = [(np.zeros_like(n), n * n * fused / bandwidth)] if fuse else \
        [(np.zeros_like(n), n * n * unfused / bandwidth)] * k
    return kernels + elementwise


def step_times(n: np.ndarray, k: int, fuse: bool, cuda_graph: bool, fp8: bool) -> Steps:
    """The step's time and its overhead, memory and compute parts (module docstring)."""
    n = np.asarray(n, dtype=float)
    launch = LAUNCH_US * US
    kernels = kernel_gpu_times(n, k, fuse, fp8)
    end = np.full_like(n, launch)  # the first kernel can start once launched
    memory, compute = np.zeros_like(n), np.zeros_like(n)
    for i, (c, m) in enumerate(kernels):
        busy = np.maximum(c, m)
        if cuda_graph:
            end = end + np.maximum(busy, GRAPH_MIN_US * US)
        else:
            end = np.maximum(end, (i + 1) * launch) + busy
        compute = compute + np.where(c >= m, busy, 0.0)
        memory = memory + np.where(c >= m, 0.0, busy)
    return Steps(n, end, end - memory - compute, memory, compute, len(kernels))


@functools.cache
def sweep(sizes: str, k: int, fuse: bool, cuda_graph: bool, fp8: bool) -> Steps:
    """The step over the curve's sizes or the bars' (`sizes`): they depend on k and the
    fixes only, so moving n reuses them."""
    n = np.geomspace(N_MIN, N_MAX, CURVE_POINTS if sizes == "curve" else SHARE_BARS)
    return step_times(n, k, fuse, cuda_graph, fp8)


class RegimeModel(FigureModel):
    """Figure 13.2: a matmul and k elementwise ops on an H100, their step time split into
    overhead, memory and compute against n, with the three fixes as switches."""

    n = Parameter(3072, label="Size n", minimum=N_MIN, maximum=N_MAX, log=True,
                  help="The matmul is n × n by n × n; the elementwise ops act on its n² "
                       "outputs")
    k = Parameter(8, label="Elementwise ops k", minimum=1, maximum=16, step=1,
                  help="Unary ops after the matmul, one kernel each unless fused")
    fuse = Parameter(False, label="Fuse", help="The k elementwise ops become one kernel")
    cuda_graph = Parameter(False, label="CUDA graph",
                           help="One launch for the whole step; each kernel still takes "
                                f"at least {GRAPH_MIN_US:g} µs on the GPU")
    fp8 = Parameter(False, label="fp8 matmul",
                    help="The matmul's inputs in fp8: twice the peak FLOP/s, half their "
                         "bytes")

    def compute(self) -> dict[str, Steps]:
        """The step at n, over the curve's sizes and the bars' sizes, with the fixes
        chosen ("now") and with none ("before"); at n with each fix alone (its name)."""
        fixes = (self.fuse, self.cuda_graph, self.fp8)
        return {
            "now": step_times(np.array([self.n]), self.k, *fixes),
            "before": step_times(np.array([self.n]), self.k, False, False, False),
            "curve": sweep("curve", self.k, *fixes),
            "curve_before": sweep("curve", self.k, False, False, False),
            "bars": sweep("bars", self.k, *fixes),
            **{fix: step_times(np.array([self.n]), self.k, *(f == fix for f in FIXES))
               for fix in FIXES},
        }

    def readouts(self) -> dict[str, Readout]:
        now, before = self.out["now"], self.out["before"]
        time = float(now.time[0])
        parts = {name: float(now.part(name)[0]) / time for name in PARTS}
        regime = max(parts, key=parts.get)
        return {
            "time": time_readout("Step time", time),
            "before": time_readout("Without the fixes", float(before.time[0])),
            "speedup": Readout("Speed-up from the fixes", float(before.time[0]) / time, "×"),
            "regime": Readout("Regime", name=regime),
            **{f"{name}_share": Readout(f"{name.capitalize()} share", 100 * share, "%",
                                        decimals=0) for name, share in parts.items()},
            "kernels": Readout("Kernels", now.kernels),
            **{f"{fix}_alone": Readout(f"{FIX_NAMES[fix]} alone", float(
                before.time[0] / self.out[fix].time[0]), "×") for fix in FIXES},
        }
