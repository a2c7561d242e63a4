"""Lesson 12's shared physics: what one decode step of a batch costs on one GPU, and how
many sequences' KV caches fit beside the weights.

A decode step runs the whole model once for B sequences, one new token each, every
sequence attending to its `context` cached tokens. Its FLOPs and bytes are the
transformer module's `forward_parts` (the one accounting of a pass): every weight read
once for the whole batch and the KV cache of every sequence; the activations are left
out. On the roofline of the GPU

    memory time  = (weights + KV cache) / HBM bandwidth
    compute time = matmul FLOPs / peak bf16 FLOP/s
    step time    = max(memory time, compute time)   (kernel launches and overlap ignored)

In decode every term is constant or grows in step with B, so the costs of all batch sizes
are two passes' worth of arithmetic: cost(B) = cost(1) + (B − 1) (cost(2) − cost(1)).

Memory of the GPU: HBM = weights (every parameter, bf16) + KV caches + workspace
(activations, CUDA context, allocator: WORKSPACE) + headroom (HEADROOM of HBM, kept free).
One sequence's cache is 2 L n_kv d_h × context × bytes per element; the largest batch is
⌊(HBM − headroom − workspace − weights) / cache per sequence⌋.

Llama-3-8B on an H100 (80 GB, 3.35 TB/s), 2,048 tokens, bf16 cache: 186 sequences fit;
a step takes 4.87 ms at batch 1, 9.92 ms at 64 and 19.7 ms at 186.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.data import cache_by_key
from gpuviz.data.hardware import gpu
from gpuviz.data.models import model
from gpuviz.models import transformer as tf
from gpuviz.models.memory import GB

HEADROOM = 0.15  # of HBM, kept free
WORKSPACE = 2 * GB
CACHE_PRECISIONS = (("bf16", "BF16"), ("fp8", "FP8"))
CACHE_BYTES = {"bf16": 2, "fp8": 1}  # per element
WEIGHT_BYTES = tf.BF16_BYTES


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes of one GPU's HBM for serving one model."""

    hbm: float
    weights: float
    workspace: float
    headroom: float
    cache_per_sequence: float

    @property
    def cache_pool(self) -> float:
        """What is left for KV caches (negative when the weights alone do not fit)."""
        return self.hbm - self.headroom - self.workspace - self.weights

    @property
    def max_batch(self) -> int:
        return max(0, math.floor(self.cache_pool / self.cache_per_sequence))

    def caches(self, batch: int) -> float:
        return batch * self.cache_per_sequence


def memory_budget(preset: str, gpu_key: str, context: int, cache: str) -> MemoryBudget:
    cfg = model(preset)
    hbm = gpu(gpu_key)["chip.hbm_gb"] * GB
    weights = tf.parameter_count(cfg).total * WEIGHT_BYTES
    per_sequence = tf.kv_cache_bytes_per_token(cfg, CACHE_BYTES[cache]) * context
    return MemoryBudget(hbm, weights, WORKSPACE, HEADROOM * hbm, per_sequence)


@dataclass(frozen=True)
class DecodeSteps:
    """Decode steps at each batch size in `batch` (arrays over it): bytes, FLOPs, times."""

    batch: np.ndarray
    weights: np.ndarray  # bytes
    kv_cache: np.ndarray
    flops: np.ndarray
    bandwidth: float  # bytes/s
    peak: float  # FLOP/s

    @property
    def bytes(self) -> np.ndarray:
        return self.weights + self.kv_cache

    @property
    def memory_time(self) -> np.ndarray:
        return self.bytes / self.bandwidth

    @property
    def compute_time(self) -> np.ndarray:
        return self.flops / self.peak

    @property
    def time(self) -> np.ndarray:
        """Seconds per step: the time per output token of every sequence."""
        return np.maximum(self.memory_time, self.compute_time)

    @property
    def tokens_per_second(self) -> np.ndarray:
        return self.batch / self.time

    @property
    def cache_share(self) -> np.ndarray:
        """The KV cache's share of the bytes a step moves."""
        return self.kv_cache / self.bytes


@cache_by_key()
def _per_sequence(preset: str, context: int, cache: str) -> tuple[tf.PassCost, tf.PassCost]:
    """The cost of a step of one sequence, and what each further sequence adds."""
    cfg = model(preset)
    one, two = (tf.forward_parts(cfg, b, context, "decode", WEIGHT_BYTES,
                                 kv_bytes_per_element=CACHE_BYTES[cache]) for b in (1, 2))
    more = tf.PassCost(two.flops - one.flops, two.weights - one.weights,
                       two.kv_cache - one.kv_cache)
    return one, more


def decode_steps(preset: str, gpu_key: str, context: int, cache: str,
                 batch: np.ndarray | int) -> DecodeSteps:
    """Decode steps of `preset` on `gpu_key` for every batch size in `batch`."""
    b = np.atleast_1d(np.asarray(batch, dtype=float))
    one, more = _per_sequence(preset, context, cache)
    extra = b - 1

    def part(attr: str) -> np.ndarray:
        return getattr(one, attr) + extra * getattr(more, attr)

    g = gpu(gpu_key)
    return DecodeSteps(b, part("weights"), part("kv_cache"), part("flops"),
                       g.hbm_bandwidth, g.peak_flops("bf16"))


def prefill_compute_seconds(preset: str, gpu_key: str, tokens: int) -> float:
    """The arithmetic of prefilling `tokens` prompt tokens at the GPU's peak (a prefill
    batched with other work, whose weight reads are shared): FLOPs / peak."""
    if tokens <= 0:
        return 0.0
    flops = tf.forward_parts(model(preset), 1, tokens, "prefill", WEIGHT_BYTES).flops
    return flops / gpu(gpu_key).peak_flops("bf16")

