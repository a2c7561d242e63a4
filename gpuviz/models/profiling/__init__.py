"""Lesson 13, profiling, MFU and compilation: one module per figure (`mfu`: 13.3, model
and hardware FLOPs utilisation of a training run, and the days of a planned one)."""

from gpuviz.models.profiling.mfu import (
    MfuModel,
    MfuOut,
    flops_per_token,
    matmul_parameters,
    peak_flops,
)

__all__ = ["MfuModel", "MfuOut", "flops_per_token", "matmul_parameters", "peak_flops"]
