"""Figure 10.3: when ring attention hides its K/V transfer behind compute.

Ring attention (Liu, Zaharia, Abbeel 2023, section 3) gives each of P ranks a block of c
tokens. In every round a rank computes the attention of its queries against the K/V block
it holds, while it sends that block to the next rank and receives the following one. Per
layer and round, with n_q query heads, n_kv K/V heads of d_head each, 16-bit K and V, F the
GPU's FLOP/s and B the link's bandwidth:

    compute   4 c² d_head n_q k / F      (QKᵀ and PV, 2 c² d_head FLOPs each per head;
                                          k = 1/2 with a balanced causal mask, else 1)
    transfer  4 c d_head n_kv / B        (a K and a V block: 2 c n_kv d_head elements)
    crossing  c* = F n_kv / (k B n_q)    (compute = transfer)

Compute grows as c², transfer as c: below c* the transfer is exposed, above it hidden.
Both times scale with the heads, c* does not; GQA (n_kv = n_q / 8) divides c* by 8 and the
causal mask, which halves the work of a round, doubles it. With n_kv = n_q and no mask it
is the paper's F / B: about 2,200 tokens over NVLink (450 GB/s) on an H100, 19,800 over
one 50 GB/s InfiniBand NIC.

Left out: the α (latency) term of the message, the backward pass, the kernel's real FLOP/s
(peak is used), and the softmax and rescaling work beside the two matmuls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, si_readout, time_readout
from gpuviz.data.hardware import DEFAULT_GPU, gpu
from gpuviz.models.alpha_beta import network, nvlink, ring_attention_kv

HEAD_DIM = 128  # d_head of Llama and most current models
GQA_GROUP = 8  # query heads per K/V head with GQA (Llama 3 70B: 64 and 8)
FLOPS_PER_SCORE = 4  # 2 for QKᵀ and 2 for PV, per score and head dimension
BLOCK_MIN, BLOCK_MAX = 128, 262144  # tokens per rank on the axis
CURVE_POINTS = 97
LINKS = (("nvlink", "NVLink"), ("network", "InfiniBand"))
ATTENTION = (("mha", "Multi-head: one per query head"),
             ("gqa", f"GQA: one per {GQA_GROUP} query heads"))


def kv_heads(query_heads: int, attention: str) -> int:
    return query_heads // GQA_GROUP if attention == "gqa" else query_heads


def round_flops(block: np.ndarray | float, query_heads: int, causal: bool
                ) -> np.ndarray | float:
    """FLOPs of one rank in one round: 4 c² d_head n_q, halved by a balanced causal mask."""
    share = 0.5 if causal else 1.0
    return FLOPS_PER_SCORE * np.square(block) * HEAD_DIM * query_heads * share


def kv_block_bytes(block: np.ndarray | float, heads: int) -> np.ndarray | float:
    """The K and V block passed on in one round (the alpha-beta model's message)."""
    return ring_attention_kv(1, heads, HEAD_DIM).nbytes * np.asarray(block, dtype=float)


def crossing_block(flops: float, bandwidth: float, query_heads: int, heads: int,
                   causal: bool) -> float:
    """c* where compute = transfer: F n_kv / (k B n_q)."""
    return float(kv_block_bytes(1, heads) * flops
                 / (round_flops(1, query_heads, causal) * bandwidth))


@dataclass(frozen=True)
class KvOverlapOut:
    blocks: np.ndarray  # c of the curves (tokens)
    compute_curve: np.ndarray  # s per round
    transfer_curve: np.ndarray  # s per round
    kv_heads: int
    compute: float  # s per round at the chosen c
    transfer: float
    exposed: float  # s of transfer not hidden per round
    kv_bytes: float  # bytes of one K/V block at the chosen c
    crossing: float  # c* (tokens)
    flops: float  # F, FLOP/s
    bandwidth: float  # B, bytes/s

    @property
    def hidden(self) -> bool:
        return self.exposed == 0.0


class KvOverlapModel(PredictFirstModel):
    """Figure 10.3: compute and K/V transfer time per ring-attention round against the
    block size; the learner predicts the crossing c* first."""

    block = Parameter(4096, label="Block size c", unit="tokens", minimum=BLOCK_MIN,
                      maximum=BLOCK_MAX, log=True,
                      help="Tokens each rank holds (sequence length / ranks)")
    link = Parameter("nvlink", label="Link", choices=list(LINKS),
                     help="What the ring passes the K/V blocks over")
    heads = Parameter(32, label="Query heads", minimum=8, maximum=128, step=8,
                      help="Both times grow with the heads; the crossing does not move")
    attention = Parameter("mha", label="K/V heads", choices=list(ATTENTION),
                          help="GQA sends 8 times fewer K/V heads")
    causal = Parameter(False, label="Causal mask",
                       help="Half of the scores are masked: half the work per round")
    guess_crossing = Parameter(8000, label="Crossing c*", unit="tokens", minimum=BLOCK_MIN,
                               maximum=BLOCK_MAX, log=True,
                               help="At what block size do you expect the transfer to "
                                    "hide behind compute?")
    guess_parameter = "guess_crossing"
    hidden_again_by = ("link", "attention", "causal")

    def compute(self) -> KvOverlapOut:
        flops = gpu(DEFAULT_GPU).peak_flops("bf16")
        bandwidth = (nvlink() if self.link == "nvlink" else network()).bandwidth
        n_kv = kv_heads(self.heads, self.attention)
        blocks = np.geomspace(BLOCK_MIN, BLOCK_MAX, CURVE_POINTS)
        compute_curve = round_flops(blocks, self.heads, self.causal) / flops
        transfer_curve = kv_block_bytes(blocks, n_kv) / bandwidth
        c = float(self.block)
        compute = float(round_flops(c, self.heads, self.causal)) / flops
        kv_bytes = float(kv_block_bytes(c, n_kv))
        transfer = kv_bytes / bandwidth
        return KvOverlapOut(blocks, compute_curve, transfer_curve, n_kv, compute, transfer,
                            max(transfer - compute, 0.0), kv_bytes,
                            crossing_block(flops, bandwidth, self.heads, n_kv, self.causal),
                            flops, bandwidth)

    def answer_text(self) -> str:
        out = self.out
        return (f"c* = {out.crossing:,.0f} tokens: F / B = {out.flops / 1e12:,.0f} TFLOP/s "
                f"over {out.bandwidth / 1e9:,.0f} GB/s, times K/V heads / query heads = "
                f"{out.kv_heads} / {self.heads}{' and 2 for the mask' if self.causal else ''}."
                f" Your guess of {self.guess_crossing:,.0f} is "
                f"{self.how_close(self.guess_crossing, out.crossing)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "compute": time_readout("Compute per round", out.compute),
            "transfer": self.answer(time_readout("K/V transfer per round", out.transfer)),
            # All hidden: "none", not "0 ns" beside times in µs and ms.
            "exposed": self.answer(
                time_readout("Transfer not hidden", out.exposed) if out.exposed > 0
                else Readout("Transfer not hidden", 0.0, "s", shown="none")),
            "hidden": self.answer(Readout("Transfer hidden", out.hidden)),
            "kv_bytes": si_readout("K/V block per round", out.kv_bytes, "B"),
            "kv_heads": Readout("K/V heads", out.kv_heads),
            "crossing": self.answer(Readout("Crossing c*", out.crossing, "tokens",
                                            decimals=0)),
        }
