"""Figure 4.4: one head's forward pass on the roofline, standard attention against
FlashAttention, and what each keeps for the backward pass."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, time_readout
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices
from gpuviz.models.flash_attention.common import BF16_BYTES, FP32_BYTES


def _bytes_in_unit(count: float) -> tuple[float, str]:
    """A byte count in KB, MB or GB (decimal), whichever keeps it below 1,000."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= size:
            return count / size, unit
    return float(count), "B"


@dataclass(frozen=True)
class HeadCosts:
    """Arrays over sequence lengths N (or scalars for one N); seconds and bytes."""

    n: np.ndarray
    flops: np.ndarray
    standard_bytes: np.ndarray
    flash_bytes: np.ndarray
    compute_time: np.ndarray
    standard_time: np.ndarray
    flash_time: np.ndarray


def head_forward_costs(n: np.ndarray, d: int, block_rows: int, peak_flops: float,
                       bandwidth: float, l2_rereads: bool) -> HeadCosts:
    """Minimum time of one head's attention forward pass in bf16 (2 bytes per element):

      FLOPs          = 4 N^2 d                       (Q K^T and P V, 2 N^2 d each)
      standard bytes = 2 (4Nd + 4N^2)                (Q, K, V, O once; S and P written
                                                      and read once each)
      flash bytes    = 2 (2Nd + 2Nd ceil(N / B_r))   (Q and O once; K and V once per
                                                      query block of B_r rows)
                     = 2 (4Nd)                       if L2 serves the K/V re-reads
      time           = max(FLOPs / peak, bytes / HBM bandwidth)

    For long sequences the memory term over the compute term tends to 2 ridge / d for
    standard attention and to ridge / B_r for FlashAttention (ridge = peak / bandwidth
    in FLOP/byte), so FlashAttention is compute-bound once B_r > ridge.
    """
    n = np.asarray(n, dtype=np.float64)
    flops = 4.0 * n * n * d
    standard = BF16_BYTES * (4.0 * n * d + 4.0 * n * n)
    if l2_rereads:
        flash = BF16_BYTES * 4.0 * n * d
    else:
        flash = BF16_BYTES * (2.0 * n * d + 2.0 * n * d * np.ceil(n / block_rows))
    compute = flops / peak_flops
    return HeadCosts(n, flops, standard, flash, compute,
                     np.maximum(compute, standard / bandwidth),
                     np.maximum(compute, flash / bandwidth))


def backward_memory_bytes(n: int) -> tuple[int, int]:
    """What the forward pass keeps for the backward pass, per head: standard attention
    the N x N probabilities P (bf16), FlashAttention N log-sum-exp values (fp32)."""
    return BF16_BYTES * n * n, FP32_BYTES * n


ROOFLINE_N_MIN, ROOFLINE_N_MAX = 256, 131072


@dataclass(frozen=True)
class RooflineState:
    curve: HeadCosts
    point: HeadCosts
    ridge: float
    standard_ratio: float  # standard time / compute time at this N
    flash_ratio: float
    standard_limit: float  # long-sequence limits of the ratios
    flash_limit: float
    standard_keep: int  # bytes kept for the backward pass
    flash_keep: int
    kv_bytes: float  # K and V of this head, to compare with L2
    l2_bytes: float


class HeadRooflineModel(FigureModel):
    """Figure 4.4: standard attention and FlashAttention against the compute time of one
    head's forward pass, over sequence length. Equations in `head_forward_costs`."""

    CURVE_POINTS = 96

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Peak bf16 FLOP/s and HBM bandwidth come from this GPU")
    seq_len = Parameter(8192, label="Sequence length N", unit="tokens",
                        minimum=ROOFLINE_N_MIN, maximum=ROOFLINE_N_MAX, log=True,
                        help="Queries and keys of one head")
    head_dim = Parameter(128, label="Head dimension d", minimum=32, maximum=256, step=32,
                         help="Changes both the FLOPs and the standard version's intensity")
    block_rows = Parameter(128, label="Query block Bᵣ", unit="rows", minimum=16,
                           maximum=512, step=16,
                           help="Queries that share each K/V byte loaded from HBM")
    l2_rereads = Parameter(False, label="L2 serves re-reads",
                           help="The ideal case: K and V come from HBM once, every later "
                                "pass over them hits in L2")

    def compute(self) -> RooflineState:
        g: GPU = gpu(self.gpu)
        peak, bw = g.peak_flops("bf16"), g.hbm_bandwidth
        # Whole query blocks only, so the drawn line has no ceil() saw-tooth.
        ns = np.geomspace(ROOFLINE_N_MIN, ROOFLINE_N_MAX, self.CURVE_POINTS)
        ns = np.where(ns <= self.block_rows, ns, np.ceil(ns / self.block_rows) * self.block_rows)
        ns = np.unique(np.clip(ns, ROOFLINE_N_MIN, ROOFLINE_N_MAX))
        args = (self.head_dim, self.block_rows, peak, bw, self.l2_rereads)
        curve = head_forward_costs(ns, *args)
        point = head_forward_costs(np.array([self.seq_len]), *args)
        ridge = g.ridge("bf16")
        std_keep, flash_keep = backward_memory_bytes(self.seq_len)
        return RooflineState(
            curve, point, ridge,
            float(point.standard_time[0] / point.compute_time[0]),
            float(point.flash_time[0] / point.compute_time[0]),
            max(1.0, 2 * ridge / self.head_dim),
            1.0 if self.l2_rereads else max(1.0, ridge / self.block_rows),
            std_keep, flash_keep,
            2.0 * BF16_BYTES * self.seq_len * self.head_dim, g["chip.l2_mb"] * 1e6)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        p = s.point
        return {
            "compute_time": time_readout("Compute 4N²d / peak", p.compute_time[0]),
            "standard_time": time_readout("Standard attention", p.standard_time[0]),
            "flash_time": time_readout("FlashAttention", p.flash_time[0]),
            "standard_ratio": Readout("Standard ÷ compute", s.standard_ratio, "×"),
            "flash_ratio": Readout("Flash ÷ compute", s.flash_ratio, "×"),
            "standard_limit": Readout("Long N: max(1, 2·ridge/d)", s.standard_limit, "×"),
            "flash_limit": Readout("Long N: max(1, ridge/Bᵣ)", s.flash_limit, "×"),
            "ridge": Readout("Ridge point (bf16)", s.ridge, "FLOP/B"),
            "standard_keep": Readout("Saved for backward: N² P",
                                     *_bytes_in_unit(s.standard_keep)),
            "flash_keep": Readout("Saved for backward: N LSE",
                                  *_bytes_in_unit(s.flash_keep)),
        }
