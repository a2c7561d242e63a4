"""Figure 9.3: how much of a tensor-parallel layer's time goes to its all-reduces.

Megatron's tensor parallelism over t GPUs splits every matmul of a layer t ways and
all-reduces the layer's output activations twice in the forward pass (after attention and
after the MLP) and its input gradients twice in the backward pass (Narayanan et al. 2021,
section 2.3): four ring all-reduces of T h 16-bit numbers per layer for T = b s tokens.
With W the weights of the layer's matmuls, X the FLOP/s one GPU achieves and B the
bandwidth of the link the ring runs over (bandwidth terms only, as in figure 8.4):

    all-reduces  4 × 2 (t − 1)/t × 2 T h / B
    matmuls      6 W T / (t X)             (2 W T forward, 4 W T backward, split t ways)
    ratio        (8/3) (t − 1) h X / (W B)

T cancels: the ratio does not depend on the tokens. For a GPT layer (W = 12 h²) it is
(2/9) (t − 1) X / (h B). Over InfiniBand (one 50 GB/s NIC per GPU) it is 450/50 = 9
times the NVLink value on an H100, at every t. A server holds 8 GPUs on one NVLink
switch, so t above 8 puts a network hop in every ring: the network sets the pace then.

Left out: the α (latency) terms, the attention's s² matmuls, overlap of communication
with compute, and sequence parallelism (same bytes, as reduce-scatter plus all-gather).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    Parameter,
    PredictFirstModel,
    Readout,
    format_value,
    si_readout,
    si_text,
    time_readout,
)
from gpuviz.data.hardware import DEFAULT_GPU
from gpuviz.data.models import ModelConfig, model, model_choices
from gpuviz.models.alpha_beta import Link, network, nvlink, ring_allreduce_time
from gpuviz.models.data_parallel import ACHIEVED_TFLOPS
from gpuviz.models.memory import active_layer, layer_weight_blocks

GPUS_PER_NODE = 8  # an HGX/DGX H100 server: 8 GPUs on one NVLink switch
ACTIVATION_BYTES = 2  # 16-bit activations and gradients on the wire
ALLREDUCES_PER_LAYER = 4  # 2 forward (g), 2 backward (f)
MATMUL_FLOPS_PER_WEIGHT_TOKEN = 6  # 2 forward + 4 backward
TP_MAX = 32
TP_DEGREES = np.arange(2, TP_MAX + 1)  # the curves (t = 1 sends nothing)
LINKS = (("nvlink", "NVLink"), ("network", "InfiniBand"))  # one 400 Gb/s NIC per GPU
DEFAULT_MODEL = "llama2_70b"


@functools.cache
def layer_matmul_weights(cfg: ModelConfig) -> int:
    """W: the weights of one layer's matmuls (attention projections and the MLP; for a
    mixture of experts the ones a token is routed to), without biases and norms."""
    return sum(block.count for block in layer_weight_blocks(active_layer(cfg))
               if block.name != "small")


def link_of(name: str, gpu_key: str = DEFAULT_GPU) -> Link:
    """"nvlink" or "network" (InfiniBand) of the GPU's data file."""
    return nvlink(gpu_key) if name == "nvlink" else network(gpu_key)


def crosses_nodes(tp: int) -> bool:
    """A TP group larger than a server has a network hop in its ring."""
    return tp > GPUS_PER_NODE


def allreduce_seconds(tp: int, tokens: float, hidden: int, bandwidth: float) -> float:
    """The four all-reduces of one layer's training step (bandwidth terms only)."""
    message = ACTIVATION_BYTES * tokens * hidden
    return ALLREDUCES_PER_LAYER * float(ring_allreduce_time(tp, message, 0.0, 1 / bandwidth))


def matmul_seconds(tp: int, tokens: float, weights: float, flops: float) -> float:
    """One layer's matmuls, forward and backward, on one of t GPUs."""
    return MATMUL_FLOPS_PER_WEIGHT_TOKEN * weights * tokens / (tp * flops)


def tp_ratio(tp: np.ndarray | int, hidden: int, weights: float, flops: float,
             bandwidth: float) -> np.ndarray | float:
    """All-reduce time over matmul time: (8/3) (t − 1) h X / (W B); no tokens in it."""
    t = np.asarray(tp, dtype=float)
    return (ALLREDUCES_PER_LAYER * 2 * (t - 1) * ACTIVATION_BYTES * hidden * flops
            / (MATMUL_FLOPS_PER_WEIGHT_TOKEN * weights * bandwidth))


@dataclass(frozen=True)
class TpCommOut:
    degrees: np.ndarray  # t of the curves
    ratios: dict[str, np.ndarray]  # link -> ratio over degrees
    link_used: str  # the link the chosen t runs over ("network" once it crosses nodes)
    crosses_nodes: bool
    matmul: float  # s, one layer, forward and backward, at the chosen t and tokens
    allreduce: float  # s, its four all-reduces over link_used
    ratio: float
    message: float  # bytes of one all-reduce
    link_factor: float  # the InfiniBand line over the NVLink line


class TpCommModel(PredictFirstModel):
    """Figure 9.3: the all-reduce / matmul ratio of a tensor-parallel layer against the
    TP degree t, over NVLink and over InfiniBand (formulas in the module docstring); the
    learner predicts how many times higher the InfiniBand line is."""

    tp = Parameter(8, label="TP degree t", unit="GPUs", minimum=1, maximum=TP_MAX, step=1,
                   help="GPUs that split every matmul of a layer")
    link = Parameter("nvlink", label="Link", choices=list(LINKS),
                     help="What the all-reduce ring runs over (above 8 GPUs it has to "
                          "cross the network anyway)")
    preset = Parameter(DEFAULT_MODEL, label="Model", choices=model_choices,
                       help="Its hidden size h and layer weights W set the ratio")
    tokens = Parameter(4096, label="Tokens b·s", unit="tokens", minimum=256,
                       maximum=131072, log=True,
                       help="Tokens of one micro-batch: both bars grow with them, the "
                            "ratio does not")
    tflops = Parameter(ACHIEVED_TFLOPS, label="Achieved compute", unit="TFLOP/s",
                       minimum=50.0, maximum=2000.0, log=True,
                       help="FLOP/s the matmuls reach (400: about 40% of an H100's "
                            "dense bf16 peak)")
    guess_factor = Parameter(2.0, label="InfiniBand line ÷ NVLink line", unit="×",
                             minimum=1.0, maximum=100.0, log=True,
                             help="How many times higher do you expect the dashed line?")
    guess_parameter = "guess_factor"

    def compute(self) -> TpCommOut:
        cfg = model(self.preset)
        weights, flops = layer_matmul_weights(cfg), self.tflops * 1e12
        bandwidth = {name: link_of(name).bandwidth for name, _ in LINKS}
        ratios = {name: tp_ratio(TP_DEGREES, cfg.hidden, weights, flops, b)
                  for name, b in bandwidth.items()}
        t, tokens = self.tp, self.tokens
        crossing = crosses_nodes(t)
        used = "network" if crossing else self.link
        matmul = matmul_seconds(t, tokens, weights, flops)
        allreduce = allreduce_seconds(t, tokens, cfg.hidden, bandwidth[used])
        return TpCommOut(TP_DEGREES, ratios, used, crossing, matmul, allreduce,
                         allreduce / matmul, ACTIVATION_BYTES * tokens * cfg.hidden,
                         bandwidth["nvlink"] / bandwidth["network"])

    def answer_text(self) -> str:
        factor = self.out.link_factor
        return (f"{format_value(factor, '×')}: the bytes and the FLOPs are the same, only "
                f"the bandwidth differs ({si_text(link_of('nvlink').bandwidth, 'B/s')} "
                f"against {si_text(link_of('network').bandwidth, 'B/s')}), so the ratio "
                f"scales by it at every t. Your guess of "
                f"{format_value(float(self.guess_factor), '×')} is "
                f"{self.how_close(self.guess_factor, factor)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "matmul": time_readout("Matmuls (one layer, fwd + bwd)", out.matmul),
            # t = 1 splits nothing: no all-reduce, so no time and no size ("0 ns" beside
            # "1.05 MB" read as if there were one).
            "allreduce": (time_readout("Its 4 all-reduces", out.allreduce) if self.tp > 1
                          else Readout("Its 4 all-reduces", shown="none (no split)")),
            "ratio": Readout("All-reduce / matmul", out.ratio, "×"),
            "message": (si_readout("One all-reduce", out.message, "B") if self.tp > 1
                        else Readout("One all-reduce", shown="none (no split)")),
            "link_used": Readout("Ring runs over", name=dict(LINKS)[out.link_used]
                                 if self.tp > 1 else "no ring"),
            "crosses_nodes": Readout(f"Crosses {GPUS_PER_NODE}-GPU servers",
                                     out.crosses_nodes),
            "link_factor": self.answer(Readout("InfiniBand ÷ NVLink", out.link_factor, "×")),
        }
