"""Lesson 13, profiling, MFU and compilation: one module per figure (`puzzle`: 13.1, five
steps with one problem each and their fixes, timed by the scheduler; `trace_analysis`: what
a profile says about a step, for the puzzle and a trace opened; `regime`: 13.2, the
step time of a matmul and elementwise ops split into overhead, memory and compute, and
the fixes for each; `mfu`: 13.3, model and hardware FLOPs utilisation of a training run,
and the days of a planned one; `compile`: 13.4, torch.compile's graphs, fused kernels and
recompiles of one small function, read from the groupings torch produced)."""

from gpuviz.models.profiling.compile import (
    CompileModel,
    CompileOut,
    Groupings,
    groupings,
    read_groupings,
)
from gpuviz.models.profiling.mfu import (
    MfuModel,
    MfuOut,
    flops_per_token,
    matmul_parameters,
    peak_flops,
)
from gpuviz.models.profiling.puzzle import (
    CASES,
    FIXES,
    PROBLEMS,
    PuzzleModel,
    StepInputs,
    case_traces,
    step_schedule,
    step_tasks,
)
from gpuviz.models.profiling.regime import RegimeModel, Steps, kernel_gpu_times, step_times
from gpuviz.models.profiling.trace_analysis import Profile, analyse, profile_readouts

__all__ = [
    "CASES",
    "FIXES",
    "CompileModel",
    "CompileOut",
    "Groupings",
    "PROBLEMS",
    "MfuModel",
    "MfuOut",
    "Profile",
    "PuzzleModel",
    "RegimeModel",
    "StepInputs",
    "Steps",
    "analyse",
    "case_traces",
    "flops_per_token",
    "groupings",
    "kernel_gpu_times",
    "matmul_parameters",
    "peak_flops",
    "profile_readouts",
    "read_groupings",
    "step_schedule",
    "step_tasks",
    "step_times",
]
