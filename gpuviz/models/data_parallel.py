"""Lesson 8, data parallelism, ZeRO and FSDP: the model states and traffic of each ZeRO
stage (8.1), gradient bucketing and overlap (8.2), FSDP units on two streams (8.3), and
when the gradient all-reduce can hide behind the backward pass (8.4).

Units: bytes, seconds, FLOP/s, bytes/s; decimal MB and GB (10^6, 10^9) as the spec's
numbers use them. Ψ is the parameter count.

Mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter (16-bit weights and gradients;
fp32 master weights, momentum and variance; Rajbhandari et al. 2019, ZeRO, section 3).
Per GPU with N data-parallel GPUs:

    DDP     2Ψ + 2Ψ + 12Ψ              ZeRO-2   2Ψ + (2 + 12)Ψ / N
    ZeRO-1  2Ψ + 2Ψ + 12Ψ / N          ZeRO-3   (2 + 2 + 12)Ψ / N

Bytes each GPU sends per step with 16-bit communication: a ring all-reduce of the 2Ψ-byte
gradient sends 2 (N−1)/N × 2Ψ = 4 (N−1)/N Ψ (DDP, ZeRO-1, ZeRO-2: a reduce-scatter plus
an all-gather of the updated weights is the same traffic); ZeRO-3 all-gathers the weights
again in the backward pass: 6 (N−1)/N Ψ, 1.5 times as much.

Time of a ring all-reduce of n bytes over p GPUs, each step paying the latency α:
2 (p−1) α + 2 (p−1)/p × n / bandwidth (`gpuviz.models.alpha_beta`, Lesson 7). Backward FLOPs are
4 Ψ T for T tokens (twice the forward's 2 Ψ T).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    FigureModel,
    Parameter,
    PlayheadModel,
    PredictFirstModel,
    Readout,
    time_readout,
)
from gpuviz.core.schedule import Schedule, Task, schedule, schedule_at
from gpuviz.core.trace import COMMUNICATION, Lane, Trace
from gpuviz.data.hardware import DEFAULT_GPU, gpu, gpu_choices
from gpuviz.data.models import model, model_choices
from gpuviz.models import transformer as tf
from gpuviz.models.alpha_beta import collective_cost, ring_allreduce_time
from gpuviz.models.memory import ModelStates, model_state_bytes

GB = 1e9
MB = 1e6
GRAD_BYTES = 2  # bf16 gradients and weights on the wire
BACKWARD_FLOPS_PER_PARAM_TOKEN = 4
FORWARD_FLOPS_PER_PARAM_TOKEN = 2

# The figures' assumptions (stated in the captions and the lesson, section "bucketing"):
# an achieved 400 TFLOP/s is about 40% of an H100's dense bf16 peak, a typical training
# efficiency; the network is one 50 GB/s NIC per GPU with 10 µs per ring step, the
# numbers of resources/hardware (h100_sxm.toml, [links]).
ACHIEVED_TFLOPS = 400.0
EIGHT_GPUS = 8
LAYERS = 24
PARAMS_PER_LAYER = 50e6


def nic_defaults(key: str = DEFAULT_GPU) -> tuple[float, float]:
    """(bandwidth GB/s, latency µs) of one GPU's network card, from resources/hardware."""
    card = gpu(key)
    return card["links.nic_gbs"], card["links.nic_latency_us"]


NIC_GBS, NIC_LATENCY_US = nic_defaults()


# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------

STAGES = ("ddp", "zero1", "zero2", "zero3")
STAGE_NAMES = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3 / FSDP"}


ZERO_STAGE = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}


def zero_model_states(params: float, gpus: int, stage: str) -> ModelStates:
    """Per-GPU model-state bytes of mixed-precision Adam under a ZeRO stage (the memory
    accounting of Lesson 6, `memory.model_state_bytes`)."""
    if stage not in ZERO_STAGE:
        raise ValueError(f"unknown stage {stage!r}; known: {', '.join(STAGES)}")
    return model_state_bytes(params, "mixed", "adam", ZERO_STAGE[stage], gpus)


def zero_sent_bytes(params: float, gpus: int, stage: str) -> float:
    """Bytes one GPU sends per step (16-bit traffic): 4 (N−1)/N Ψ, or 6 (N−1)/N Ψ for
    ZeRO-3 (the weights are gathered again for the backward pass)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}")
    passes = 3 if stage == "zero3" else 2
    return passes * (gpus - 1) / gpus * GRAD_BYTES * params


def ring_pass_seconds(nbytes: float, gpus: int, bandwidth: float, alpha: float) -> float:
    """One ring all-gather or reduce-scatter of an n-byte array: (p−1) α + (p−1)/p × n / B
    (Lesson 7's cost model)."""
    return float(collective_cost("all_gather", "ring", gpus).time(nbytes, alpha,
                                                                    1 / bandwidth))


BACKWARD_LANE, ALLREDUCE_LANE = "backward", "all-reduce"
ONE_GPU = "one GPU of 8"  # every GPU runs the same timeline
BUCKETING_LANES = (Lane(ONE_GPU, BACKWARD_LANE, "Backward"),
                   Lane(ONE_GPU, ALLREDUCE_LANE, "All-reduce", COMMUNICATION))


@dataclass(frozen=True)
class Bucketing:
    """The backward pass with bucketed gradient all-reduces (figure 8.2)."""

    layer_start: np.ndarray  # backward of the last layer first
    layer_end: np.ndarray
    bucket_bytes: np.ndarray
    ready: np.ndarray  # when each bucket's last gradient is computed
    start: np.ndarray  # all-reduce start and end, one at a time on one stream
    end: np.ndarray
    backward_time: float
    step_time: float

    @property
    def exposed(self) -> float:
        """Communication left after the last backward kernel: the GPU waits."""
        return self.step_time - self.backward_time

    @property
    def buckets(self) -> int:
        return len(self.bucket_bytes)

    def schedule(self) -> Schedule:
        """The same times as tasks: layers L24..L1 on the backward lane, all-reduces
        AR1..ARn on the all-reduce lane."""
        layers = len(self.layer_start)
        tasks = [Task(f"L{layers - i}", BACKWARD_LANE, float(end - start), kind="compute")
                 for i, (start, end) in enumerate(zip(self.layer_start, self.layer_end,
                                                      strict=True))]
        tasks += [Task(f"AR{k + 1}", ALLREDUCE_LANE, float(end - start), kind="network")
                  for k, (start, end) in enumerate(zip(self.start, self.end, strict=True))]
        return schedule_at(tasks, np.r_[self.layer_start, self.start])


def bucketed_backward(layers: int, params_per_layer: float, tokens: float, flops: float,
                      bucket_bytes: float, gpus: int, bandwidth: float, alpha: float
                      ) -> Bucketing:
    """Backward of `layers` equal layers (4 Ψ_layer T FLOPs each at `flops` FLOP/s) while
    gradients stream out at an even rate. A bucket is the next `bucket_bytes` of that
    stream (the last one holds the rest); it is all-reduced as soon as it is full, after
    the previous bucket's all-reduce (one stream):

        start_k = max(ready_k, end_{k−1}),  end_k = start_k + t_allreduce(size_k)

    which is end_k = S_k + max_{j ≤ k} (ready_j − S_{j−1}) with S the running sum of the
    all-reduce times: a cumulative maximum, so thousands of buckets cost microseconds.
    """
    layer_time = BACKWARD_FLOPS_PER_PARAM_TOKEN * params_per_layer * tokens / flops
    layer_start = np.arange(layers) * layer_time
    total_bytes = layers * params_per_layer * GRAD_BYTES
    count = max(1, math.ceil(total_bytes / bucket_bytes - 1e-9))
    edges = np.minimum(np.arange(1, count + 1) * bucket_bytes, total_bytes)
    sizes = np.diff(edges, prepend=0.0)
    backward_time = layers * layer_time
    ready = edges / total_bytes * backward_time
    durations = ring_allreduce_time(gpus, sizes, alpha, 1 / bandwidth)
    running = np.cumsum(durations)
    end = running + np.maximum.accumulate(ready - (running - durations))
    start = end - durations
    return Bucketing(layer_start, layer_start + layer_time, sizes, ready, start, end,
                     backward_time, float(max(end[-1], backward_time)))


def overlap_ratio(tokens: np.ndarray | float, gpus: int, bandwidth: float, flops: float
                  ) -> np.ndarray | float:
    """All-reduce time over backward time, bandwidth terms only:
    [2 (p−1)/p × 2Ψ / B] / [4 Ψ T / X] = (p−1) X / (p B T). Ψ cancels."""
    return (gpus - 1) * flops / (gpus * bandwidth * np.asarray(tokens, dtype=float))


def overlap_threshold(gpus: int, bandwidth: float, flops: float) -> float:
    """Tokens per GPU at which the all-reduce takes as long as the backward pass."""
    return (gpus - 1) * flops / (gpus * bandwidth)


# ---------------------------------------------------------------------------------------
# FSDP units on a compute and a communication stream (figure 8.3)
# ---------------------------------------------------------------------------------------

COMPUTE_STREAM, COMM_STREAM = "compute", "communication"
FSDP_LANES = (Lane(ONE_GPU, COMPUTE_STREAM, "Compute"),
              Lane(ONE_GPU, COMM_STREAM, "Communication", COMMUNICATION))


def fsdp_tasks(units: int, forward: float, gather: float, scatter: float, *,
               prefetch: bool, reshard: bool) -> list[Task]:
    """One training step of `units` FSDP units as tasks on two in-order streams.

    Forward: all-gather unit i (AG), then compute it (F). With prefetch the next
    all-gather is issued while unit i computes: it waits only for unit i−2's compute to
    free its weights, so at most two units are gathered at a time; without prefetch it is
    issued when unit i−1's compute ends. Backward runs from the last unit (B takes twice
    F); with resharding after forward each unit is gathered again first, with the same
    prefetch rule, except the last unit, whose weights the backward needs at once (FSDP
    keeps them); after its backward a unit's gradients are reduce-scattered (RS).
    Communication runs in issue order: without prefetch the next gather is issued after
    this unit's reduce-scatter and waits behind it.
    """
    lead = 2 if prefetch else 1  # how far ahead a gather may be issued
    tasks: list[Task] = []
    for i in range(units):
        freed_by = i - lead
        after = (f"F{freed_by}",) if freed_by >= 0 else ()
        tasks.append(Task(f"AG{i}", COMM_STREAM, gather, after, "gather", f"AG{i + 1}"))
        tasks.append(Task(f"F{i}", COMPUTE_STREAM, forward, (f"AG{i}",), "forward",
                          f"F{i + 1}"))
    order = list(reversed(range(units)))
    forward_done = f"F{units - 1}"
    gathers, scatters = [], []
    for n, j in enumerate(order):
        # The last unit keeps its weights: the backward pass starts with it at once.
        regather = reshard and n > 0
        if regather:
            freed_by = n - lead
            issued_after = (f"B{order[freed_by]}",) if freed_by >= 0 else (forward_done,)
            gathers.append(Task(f"AG{j}b", COMM_STREAM, gather, issued_after, "gather",
                                f"AG{j + 1}"))
        needs = (f"AG{j}b",) if regather else (forward_done,)
        tasks.append(Task(f"B{j}", COMPUTE_STREAM, 2 * forward, needs, "backward",
                          f"B{j + 1}"))
        scatters.append(Task(f"RS{j}", COMM_STREAM, scatter, (f"B{j}",), "scatter",
                             f"RS{j + 1}"))
    comm = gathers[:lead - 1]
    for n, scatter_task in enumerate(scatters):
        comm += [scatter_task, *gathers[n + lead - 1:n + lead]]
    return tasks + comm


def units_in_full(result: Schedule, units: int, reshard: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Step curve (times, counts) of the units whose full weights are in memory: from the
    start of a unit's all-gather to the end of the compute that uses it last."""
    spans = []
    for i in range(units):
        if reshard and i < units - 1:
            spans += [(f"AG{i}", f"F{i}"), (f"AG{i}b", f"B{i}")]
        else:
            spans.append((f"AG{i}", f"B{i}"))
    return result.level(spans)


# ---------------------------------------------------------------------------------------
# Figure 8.1: ZeRO stages
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ZeroOut:
    params: float
    gpus: int
    memory: float  # the GPU's memory in bytes
    states: tuple[ModelStates, ...]  # in STAGES order
    sent: tuple[float, ...]


def _preset_params(key: str) -> float:
    return float(tf.parameter_count(model(key)).total)


class ZeroStagesModel(FigureModel):
    """Figure 8.1: per-GPU model states and bytes sent per step for DDP and ZeRO 1-3."""

    preset = Parameter("llama2_7b", label="Model", choices=model_choices,
                       help="The model whose states are split (its exact parameter count)")
    gpus = Parameter(8, label="GPUs N", unit="GPUs", minimum=1, maximum=1024, log=True,
                     help="Data-parallel GPUs that share the optimizer states, gradients "
                          "and weights")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Sets the memory line")

    def compute(self) -> ZeroOut:
        params = _preset_params(self.preset)
        return ZeroOut(params, self.gpus, gpu(self.gpu)["chip.hbm_gb"] * GB,
                       tuple(zero_model_states(params, self.gpus, s) for s in STAGES),
                       tuple(zero_sent_bytes(params, self.gpus, s) for s in STAGES))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        rows = {"params": Readout("Parameters Ψ", out.params / 1e9, "billion")}
        for stage, states in zip(STAGES, out.states, strict=True):
            rows[f"{stage}_states"] = Readout(f"{STAGE_NAMES[stage]} states / GPU",
                                              states.total / GB, "GB")
        for stage, sent in zip(STAGES, out.sent, strict=True):
            rows[f"{stage}_sent"] = Readout(f"{STAGE_NAMES[stage]} sends / GPU",
                                            sent / GB, "GB")
        rows["ratio"] = (Readout("ZeRO-3 / DDP traffic", out.sent[3] / out.sent[0], "×")
                         if out.sent[0] else Readout("ZeRO-3 / DDP traffic", shown="—"))
        rows["memory"] = Readout(f"{gpu(self.gpu).short_name} memory", out.memory / GB, "GB")
        return rows


# ---------------------------------------------------------------------------------------
# Figure 8.2: gradient bucketing
# ---------------------------------------------------------------------------------------

TOTAL_GRAD_MB = LAYERS * PARAMS_PER_LAYER * GRAD_BYTES / MB  # one bucket for everything


class BucketingModel(FigureModel):
    """Figure 8.2: 24 layers of 50 M parameters on 8 GPUs; gradients all-reduced in
    buckets while the backward pass goes on (see `bucketed_backward`)."""

    bucket_mb = Parameter(25.0, label="Bucket size", unit="MB", minimum=1.0,
                          maximum=TOTAL_GRAD_MB, log=True,
                          help="Gradient bytes collected before an all-reduce starts; the "
                               "largest is one bucket for the whole model (2,400 MB)")
    tokens = Parameter(16384, label="Tokens per GPU", unit="tokens", minimum=512,
                       maximum=131072, log=True,
                       help="Tokens in each GPU's micro-batch: backward work grows with them")
    bandwidth_gbs = Parameter(NIC_GBS, label="Network bandwidth", unit="GB/s", minimum=5.0,
                              maximum=450.0, log=True,
                              help="Per-GPU bandwidth of the ring (one NIC: 50 GB/s)")
    alpha_us = Parameter(NIC_LATENCY_US, label="Latency α per step", unit="µs", minimum=0.0,
                         maximum=100.0, step=1.0,
                         help="Fixed cost of each of the 2(p−1) ring steps (assumed)")

    def compute(self) -> Bucketing:
        return bucketed_backward(LAYERS, PARAMS_PER_LAYER, self.tokens,
                                 ACHIEVED_TFLOPS * 1e12, self.bucket_mb * MB, EIGHT_GPUS,
                                 self.bandwidth_gbs * GB, self.alpha_us * 1e-6)

    def trace(self) -> Trace:
        return Trace(self.out.schedule(), BUCKETING_LANES)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        # Four digits: 1.015 ms per all-reduce and 1.015 ms exposed read as the same time.
        times = {
            "fill": ("Backward per bucket", out.ready[0]),
            "allreduce": ("All-reduce per bucket", out.end[0] - out.start[0]),
            "layer": ("Backward per layer", out.layer_end[0]),
            "backward": ("Backward pass", out.backward_time),
            "step_time": ("Backward + communication", out.step_time),
            "exposed": ("Exposed communication", out.exposed),
        }
        return {"buckets": Readout("Buckets", out.buckets),
                **{key: time_readout(label, round(seconds, 12), digits=4)
                   for key, (label, seconds) in times.items()}}


# ---------------------------------------------------------------------------------------
# Figure 8.3: FSDP units
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FsdpOut:
    schedule: Schedule
    units: int
    times: np.ndarray  # the units-in-full step curve
    counts: np.ndarray
    forward: float
    gather: float

    @property
    def peak_units(self) -> int:
        return int(self.counts.max())

    def units_at(self, t: float) -> int:
        return int(self.counts[np.searchsorted(self.times, t, side="right") - 1])


class FsdpModel(PlayheadModel):
    """Figure 8.3: the 24 × 50 M model of 8.2 in FSDP units on 8 GPUs. A unit of Ψ_u
    parameters computes its forward in 2 Ψ_u T / X and its backward in twice that;
    gathering its weights or scattering its gradients is one ring pass of 2 Ψ_u bytes:
    (p−1) α + (p−1)/p × 2 Ψ_u / B. Play draws the step up to a playhead; Step jumps to
    the end of the next task."""

    units = Parameter(6, label="FSDP units", unit="units", minimum=2, maximum=12,
                      help="The 24 layers are wrapped in this many equal units")
    tokens = Parameter(16384, label="Tokens per GPU", unit="tokens", minimum=512,
                       maximum=65536, log=True,
                       help="Compute grows with the tokens; the gathers do not")
    bandwidth_gbs = Parameter(NIC_GBS, label="Network bandwidth", unit="GB/s", minimum=5.0,
                              maximum=450.0, log=True, help="Per-GPU ring bandwidth")
    prefetch = Parameter(True, label="Prefetch the next unit",
                         help="Start the next all-gather while this unit computes")
    reshard = Parameter(True, label="Reshard after forward",
                        help="Free each unit's full weights after its forward; gather "
                             "them again in the backward pass")

    def compute(self) -> FsdpOut:
        params = LAYERS * PARAMS_PER_LAYER / self.units
        flops = ACHIEVED_TFLOPS * 1e12
        forward = FORWARD_FLOPS_PER_PARAM_TOKEN * params * self.tokens / flops
        ring = ring_pass_seconds(GRAD_BYTES * params, EIGHT_GPUS, self.bandwidth_gbs * GB,
                                 NIC_LATENCY_US * 1e-6)
        result = schedule(fsdp_tasks(self.units, forward, ring, ring,
                                     prefetch=self.prefetch, reshard=self.reshard))
        times, counts = units_in_full(result, self.units, self.reshard)
        return FsdpOut(result, self.units, times, counts, forward, ring)

    @property
    def horizon(self) -> float:
        return self.out.schedule.step_time

    def step_marks(self) -> np.ndarray:
        return self.out.schedule.end

    def trace(self) -> Trace:
        return Trace(self.out.schedule, FSDP_LANES)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        result = out.schedule
        now = self.t
        return {
            "step_time": time_readout("Step time", result.step_time),
            "compute": time_readout("Compute", result.busy(COMPUTE_STREAM)),
            "waiting": time_readout("Compute waits", result.idle(COMPUTE_STREAM)),
            "gather": time_readout("All-gather per unit", out.gather),
            "forward": time_readout("Forward per unit", out.forward),
            "peak": Readout("Units in full, peak", out.peak_units, total=out.units),
            "now": Readout("Units in full now", out.units_at(now)),
            "time": time_readout("Time", now),
        }


# ---------------------------------------------------------------------------------------
# Figure 8.4: can the all-reduce hide?
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OverlapOut:
    tokens: np.ndarray  # the curve
    ratio: np.ndarray
    threshold: float
    backward: float  # the bars, for the current settings
    allreduce: float
    current_ratio: float


OVERLAP_TOKENS = np.geomspace(256, 262144, 121)


class OverlapModel(PredictFirstModel):
    """Figure 8.4: all-reduce time / backward time against tokens per GPU. Bandwidth
    terms only (latency is hidden by bucketing): the ratio (p−1) X / (p B T) and the
    threshold T* = (p−1) X / (p B) do not depend on the model size."""

    params_b = Parameter(7.0, label="Model size", unit="B params", minimum=0.1,
                         maximum=1000.0, log=True,
                         help="Parameters Ψ: both times grow with it, their ratio does not")
    tokens = Parameter(16384, label="Tokens per GPU", unit="tokens", minimum=256,
                       maximum=262144, log=True, help="Tokens in each GPU's batch")
    gpus = Parameter(EIGHT_GPUS, label="GPUs p", unit="GPUs", minimum=2, maximum=1024,
                     log=True, help="Data-parallel GPUs in the ring")
    bandwidth_gbs = Parameter(NIC_GBS, label="Network bandwidth", unit="GB/s", minimum=5.0,
                              maximum=450.0, log=True, help="Per-GPU ring bandwidth")
    tflops = Parameter(ACHIEVED_TFLOPS, label="Achieved compute", unit="TFLOP/s",
                       minimum=50.0, maximum=2000.0, log=True,
                       help="FLOP/s the backward pass reaches (400: about 40% of an "
                            "H100's dense bf16 peak)")
    guess_tokens = Parameter(1000, label="Your guess for T*", unit="tokens", minimum=256,
                             maximum=262144, log=True,
                             help="Tokens per GPU at which you expect the all-reduce to "
                                  "take as long as the backward pass")
    guess_parameter = "guess_tokens"

    def compute(self) -> OverlapOut:
        flops, bandwidth = self.tflops * 1e12, self.bandwidth_gbs * GB
        params = self.params_b * 1e9
        backward = BACKWARD_FLOPS_PER_PARAM_TOKEN * params * self.tokens / flops
        allreduce = ring_allreduce_time(self.gpus, GRAD_BYTES * params, 0.0, 1 / bandwidth)
        return OverlapOut(OVERLAP_TOKENS, overlap_ratio(OVERLAP_TOKENS, self.gpus,
                                                        bandwidth, flops),
                          overlap_threshold(self.gpus, bandwidth, flops), backward,
                          float(allreduce), float(allreduce / backward))

    def answer_text(self) -> str:
        out = self.out
        return (f"T* = (p − 1) X / (p B) = {out.threshold:,.0f} tokens per GPU; below it "
                f"the all-reduce outlasts the backward pass. Your guess of "
                f"{self.guess_tokens:,} is {self.how_close(self.guess_tokens, out.threshold)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "backward": time_readout("Backward", out.backward),
            "allreduce": time_readout("All-reduce", out.allreduce),
            "ratio": Readout("Ratio comm / backward", out.current_ratio, "×"),
            "hides": Readout("All-reduce hides", out.current_ratio <= 1.0),
            "threshold": self.answer(Readout("Threshold T*", out.threshold, "tokens")),
        }
