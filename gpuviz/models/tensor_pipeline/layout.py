"""Figure 9.4: plan a TP × PP × DP layout on servers of 8 GPUs, and check the memory of
one GPU of the first pipeline stage.

GPUs = 8 N for N servers; DP = GPUs / (TP · PP) data-parallel replicas. Ranks follow
Megatron-LM's order (tensor fastest, then data, then pipeline): GPU g is in TP group
⌊g / TP⌋, DP replica ⌊g / TP⌋ mod DP and PP stage ⌊g / (TP · DP)⌋, so a TP group of up to
8 stays inside one server.

Memory of one GPU of stage 0 (back of the envelope, Lesson 6's accounting):
    parameters   ⌈L / PP⌉ layers × the layer's parameters / TP
    model states 16 bytes per parameter with mixed-precision Adam (2 weights + 2 gradients
                 + 12 optimizer states); ZeRO-1 over the DP replicas: 4 + 12 / DP
    activations  1F1B keeps min(m, PP) micro-batches on stage 0 (m = batch / (DP · b)),
                 each ⌈L / PP⌉ layers of Korthikanti et al.'s activations with tensor
                 parallelism (FlashAttention, no dropout); with full checkpointing each
                 layer keeps only its 2 s b h input, plus one layer's activations while it
                 is recomputed
For the worked example, a 70B model (Llama 2 70B: 80 layers) on 8 servers with TP 8 and
PP 8 (DP 1): 68.45 B layer parameters / 64 GPUs = 1.07 B per GPU, 17.1 GB of model
states, and 8 micro-batches of 3.75 GB of activations in flight: 47.1 GB of 80.

Left out: embeddings, the output layer and its logits, communication buffers, the
allocator's fragmentation and the CUDA context; hence the 10-20% to keep free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, format_value
from gpuviz.data.hardware import DEFAULT_GPU, gpu
from gpuviz.data.models import model, model_choices
from gpuviz.models import transformer as tf
from gpuviz.models.memory import (
    GB,
    ModelStates,
    checkpoint_bytes,
    layer_activation_bytes,
    model_state_bytes,
)
from gpuviz.models.tensor_pipeline.schedules import bubble_share, peak_stash
from gpuviz.models.tensor_pipeline.tp_comm import DEFAULT_MODEL, GPUS_PER_NODE

KEEP_FREE = (0.10, 0.20)  # of the GPU's memory, for what the model leaves out
COLOURINGS = (("tp", "TP group"), ("pp", "PP stage"), ("dp", "DP replica"))


@dataclass(frozen=True)
class Layout:
    """Who is who: a group index per GPU for each colouring (−1: a GPU left idle)."""

    gpus: int
    tp: int
    pp: int
    dp: int

    @property
    def used(self) -> int:
        return self.tp * self.pp * self.dp

    def groups(self, colouring: str) -> np.ndarray:
        g = np.arange(self.gpus)
        tp_group = g // self.tp
        index = {"tp": tp_group, "dp": tp_group % max(self.dp, 1),
                 "pp": g // (self.tp * max(self.dp, 1))}[colouring]
        return np.where(g < self.used, index, -1)


def layout(nodes: int, tp: int, pp: int) -> Layout:
    """DP is what is left: ⌊GPUs / (TP · PP)⌋ (0 when TP · PP is more than the GPUs)."""
    gpus = nodes * GPUS_PER_NODE
    return Layout(gpus, tp, pp, gpus // (tp * pp))


@dataclass(frozen=True)
class StageMemory:
    """One GPU of the first stage, bytes."""

    parameters: float
    states: ModelStates
    micro_batch_bytes: float  # activations of one micro-batch over the stage's layers
    in_flight: float  # micro-batches stashed at once (1F1B, stage 0)
    recompute_bytes: float  # one layer's activations while recomputed (checkpointing)

    @property
    def activations(self) -> float:
        return self.in_flight * self.micro_batch_bytes + self.recompute_bytes

    @property
    def total(self) -> float:
        return self.states.total + self.activations


def first_stage_memory(preset: str, tp: int, pp: int, dp: int, micro_batches: int,
                       seq: int, micro_batch: int, zero1: bool, checkpointing: bool
                       ) -> StageMemory:
    """The memory of one GPU of stage 0 (module docstring)."""
    cfg = model(preset)
    layers = math.ceil(cfg.layers / pp)
    parameters = layers * tf.parameter_count(cfg).per_layer / tp
    states = model_state_bytes(parameters, zero_stage=1 if zero1 else 0, gpus=max(dp, 1))
    layer = layer_activation_bytes(cfg, seq, micro_batch, flash=True, dropout=False, tp=tp)
    if checkpointing:
        per_micro_batch = layers * checkpoint_bytes(cfg, seq, micro_batch)
        recompute = layer
    else:
        per_micro_batch, recompute = layers * layer, 0.0
    in_flight = peak_stash("1f1b", pp, max(micro_batches, 1), 0)
    return StageMemory(parameters, states, per_micro_batch, in_flight, recompute)


@dataclass(frozen=True)
class LayoutOut:
    layout: Layout
    micro_batches: int  # m per pipeline and step
    memory: StageMemory
    hbm: float  # bytes
    bubble: float  # 1F1B's idle share
    warnings: tuple[str, ...]

    @property
    def free(self) -> float:
        """Share of the GPU's memory left free (negative: over)."""
        return 1 - self.memory.total / self.hbm


class LayoutModel(FigureModel):
    """Figure 9.4: a TP × PP × DP layout on servers of 8 GPUs and the memory of one GPU of
    the first pipeline stage against its 80 GB (module docstring)."""

    preset = Parameter(DEFAULT_MODEL, label="Model", choices=model_choices,
                       help="Layers, widths and heads from resources/models")
    nodes = Parameter(8, label="Servers", unit="× 8 GPUs", minimum=1, maximum=32, step=1,
                      help="Servers of 8 GPUs joined by InfiniBand")
    tp = Parameter(8, label="TP", minimum=1, maximum=16, step=1,
                   help="Tensor-parallel degree: GPUs that split every layer")
    pp = Parameter(8, label="PP", minimum=1, maximum=32, step=1,
                   help="Pipeline stages: groups of layers on different GPUs")
    zero1 = Parameter(False, label="ZeRO-1",
                      help="Shard the optimizer states over the DP replicas")
    checkpointing = Parameter(False, label="Checkpointing",
                              help="Keep only each layer's input; recompute the rest in "
                                   "the backward pass")
    seq = Parameter(4096, label="Sequence s", unit="tokens", minimum=512, maximum=32768,
                    log=True, help="Tokens per sequence")
    micro_batch = Parameter(1, label="Micro-batch b", unit="sequences", minimum=1,
                            maximum=16, step=1, help="Sequences per micro-batch")
    global_batch = Parameter(1024, label="Global batch", unit="sequences", minimum=16,
                      maximum=8192, log=True, help="Sequences per optimizer step, over "
                                                   "all replicas")
    colour_by = Parameter("tp", label="Colour by", choices=list(COLOURINGS),
                          help="Which groups the colours tell apart")

    def compute(self) -> LayoutOut:
        lay = layout(self.nodes, self.tp, self.pp)
        per_step = max(lay.dp, 1) * self.micro_batch
        m = max(self.global_batch // per_step, 1)
        memory = first_stage_memory(self.preset, self.tp, self.pp, lay.dp, m, self.seq,
                                    self.micro_batch, self.zero1, self.checkpointing)
        hbm = gpu(DEFAULT_GPU)["chip.hbm_gb"] * GB
        out = LayoutOut(lay, m, memory, hbm, bubble_share("1f1b", self.pp, m), ())
        return LayoutOut(lay, m, memory, hbm, out.bubble, self._warnings(out))

    def _warnings(self, out: LayoutOut) -> tuple[str, ...]:
        lay, m, cfg = out.layout, out.micro_batches, model(self.preset)
        if lay.dp == 0:  # no layout at all: nothing else is worth saying
            return (f"No layout: TP × PP = {format_value(lay.tp * lay.pp)} is more than "
                    f"the {format_value(lay.gpus)} GPUs of "
                    f"{format_value(lay.gpus // GPUS_PER_NODE, 'servers')}. Lower TP or PP, "
                    "or add servers.",)
        found = []
        if lay.tp > GPUS_PER_NODE:
            found.append(f"TP {lay.tp} crosses servers: its all-reduces run over "
                         "InfiniBand (figure 9.3).")
        if lay.used < lay.gpus:
            found.append(f"TP × PP = {format_value(lay.tp * lay.pp)} does not divide "
                         f"{format_value(lay.gpus)} GPUs: "
                         f"{format_value(lay.gpus - lay.used)} stay idle.")
        if out.free < 0:
            found.append(f"Does not fit: {format_value(out.memory.total / GB, 'GB')} on a "
                         f"GPU of {format_value(out.hbm / GB, 'GB')}.")
        elif out.free < KEEP_FREE[0]:
            found.append(f"Only {format_value(100 * out.free, '%', decimals=0)} free: keep "
                         "10–20% for what the model leaves out.")
        if self.global_batch % (lay.dp * self.micro_batch):
            found.append(f"The batch of {format_value(self.global_batch, 'sequences')} does "
                         f"not split into DP {lay.dp} × micro-batches of "
                         f"{format_value(self.micro_batch, 'sequences')}.")
        if m < lay.pp:
            found.append(f"Too few micro-batches for the pipeline: m = {format_value(m)} for "
                         f"{format_value(lay.pp, 'stages')} leaves a "
                         f"{format_value(100 * out.bubble, '%', decimals=1)} bubble; less DP "
                         "or a bigger batch.")
        elif m % lay.pp:
            found.append(f"m = {format_value(m)} is not a multiple of PP {lay.pp} "
                         "(interleaving needs one).")
        if cfg.layers % lay.pp:
            found.append(f"{format_value(cfg.layers, 'layers')} do not split evenly into "
                         f"{format_value(lay.pp, 'stages')}.")
        return tuple(found)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        lay, mem = out.layout, out.memory
        found = {
            "dp": Readout("DP replicas", lay.dp),
            "uses_all": Readout("TP × PP × DP = GPUs", lay.used == lay.gpus),
            "parameters": Readout("Parameters per GPU", mem.parameters / 1e9, "billion"),
            "weights": Readout("Weights (gradients alike)", mem.states.weights / GB, "GB"),
            "optimizer": Readout("Optimizer states", mem.states.optimizer / GB, "GB"),
            "activations": Readout("Activations", mem.activations / GB, "GB"),
            "total": Readout("First-stage GPU", mem.total / GB, "GB"),
            "free": (Readout("Free", 100 * out.free, "%", decimals=0) if out.free >= 0
                     else Readout("Free", shown="none: over HBM")),
            "fits": Readout("Fits with 10% free", out.free >= KEEP_FREE[0]),
            "micro_batches": Readout("Micro-batches m", out.micro_batches),
            "in_flight": Readout("In flight on stage 0", mem.in_flight),
            "bubble": Readout("Bubble (1F1B)", 100 * out.bubble, "%", decimals=1),
        }
        if lay.dp == 0:  # TP × PP beyond the GPUs: no layout, so none of its numbers
            for key in found.keys() - {"dp", "uses_all"}:
                found[key] = Readout(found[key].label, shown="no layout")
        return found
