"""Lesson 13, profiling, MFU and compilation: one module per figure (`regime`: 13.2, the
step time of a matmul and elementwise ops split into overhead, memory and compute, and
the fixes for each; `mfu`: 13.3, model and hardware FLOPs utilisation of a training run,
and the days of a planned one)."""

from gpuviz.models.profiling.mfu import (
    MfuModel,
    MfuOut,
    flops_per_token,
    matmul_parameters,
    peak_flops,
)
from gpuviz.models.profiling.regime import RegimeModel, Steps, kernel_gpu_times, step_times

__all__ = [
    "MfuModel",
    "MfuOut",
    "RegimeModel",
    "Steps",
    "flops_per_token",
    "kernel_gpu_times",
    "matmul_parameters",
    "peak_flops",
    "step_times",
]
