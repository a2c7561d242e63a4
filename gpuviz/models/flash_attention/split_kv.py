"""Figure 4.5: split-KV decoding: the KV cache cut into splits so that more SMs stream it
at once, then a small kernel merges the partial results."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, time_readout
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices
from gpuviz.models.flash_attention.common import BF16_BYTES, FP32_BYTES


def sm_stream_bandwidth(bytes_in_flight: float, latency_s: float) -> float:
    """Little's law: an SM that keeps `bytes_in_flight` bytes of loads outstanding, each
    answered after `latency_s`, streams at most bytes_in_flight / latency bytes/s."""
    return bytes_in_flight / latency_s


@dataclass(frozen=True)
class SplitKV:
    units: int  # work units = batch x KV heads x splits
    waves: int  # ceil(units / SMs)
    busy_sms: int  # SMs with work in the first wave
    utilisation: float  # units / (waves x SMs)
    unit_bytes: float  # bytes one unit streams (its K/V slice and its partial output)
    partial_bytes: float  # fp32 partial outputs + LSE of all units (0 without splits)
    stream_bandwidth: float  # bytes/s the first wave draws from HBM, all busy SMs
    attention_time: float  # seconds, including the kernel's fixed cost
    merge_time: float  # seconds, 0 without splits
    total_time: float


def _wave_bandwidth(busy: np.ndarray | int, sm_bandwidth: float, bandwidth: float
                    ) -> np.ndarray | float:
    """Bytes/s of a wave with `busy` SMs: each at its Little's-law rate, all of them
    together at most the HBM bandwidth."""
    return np.minimum(busy * sm_bandwidth, bandwidth)


def split_kv_time(batch: int, kv_heads: int, kv_len: int, splits: int, head_dim: int,
                  group: int, sms: int, bandwidth: float, sm_bandwidth: float,
                  kernel_s: float) -> SplitKV:
    """Decode attention for one new token per sequence, K/V cache in bf16.

    A work unit is one (sequence, KV head, split): it streams ceil(L / splits) keys and
    values, 2 x ceil(L/s) x d x 2 bytes, and, when splits > 1, writes a partial output of
    (d + 1) fp32 numbers (o and the log-sum-exp) for each of the `group` query heads that
    share the KV head. Units run on the SMs in waves of `sms`. A wave with b busy SMs
    streams at min(b x per-SM bandwidth, HBM bandwidth), the per-SM bandwidth set by
    Little's law (`sm_stream_bandwidth`): a few busy SMs cannot use all of HBM, enough
    of them saturate it.

      units     = batch x kv_heads x splits,  waves = ceil(units / sms)
      attention = kernel cost + sum over waves of b x unit bytes / wave bandwidth(b)
      merge     = kernel cost + partial bytes / bandwidth      (only when splits > 1)

    Reading the queries is neglected (d numbers per query head, tiny next to the cache).
    """
    times = split_kv_times(batch, kv_heads, kv_len, np.array([splits]), head_dim, group,
                           sms, bandwidth, sm_bandwidth, kernel_s)
    splits = max(1, splits)
    units = batch * kv_heads * splits
    waves = math.ceil(units / sms)
    busy = min(units, sms)
    return SplitKV(units, waves, busy, units / (waves * sms), float(times.unit_bytes[0]),
                   float(times.partial_bytes[0]),
                   float(_wave_bandwidth(busy, sm_bandwidth, bandwidth)),
                   float(times.attention[0]), float(times.merge[0]), float(times.total[0]))


@dataclass(frozen=True)
class SplitTimes:
    unit_bytes: np.ndarray
    partial_bytes: np.ndarray
    attention: np.ndarray
    merge: np.ndarray
    total: np.ndarray


def split_kv_times(batch: int, kv_heads: int, kv_len: int, splits: np.ndarray,
                   head_dim: int, group: int, sms: int, bandwidth: float,
                   sm_bandwidth: float, kernel_s: float) -> SplitTimes:
    """The times of `split_kv_time` for an array of split counts at once."""
    splits = np.maximum(1, np.asarray(splits, dtype=np.int64))
    units = batch * kv_heads * splits
    full, rest = np.divmod(units, sms)  # full waves, SMs busy in the last one
    keys_per_unit = -(-kv_len // splits)  # ceiling division
    partial_per_unit = np.where(splits > 1, group * (head_dim + 1) * FP32_BYTES, 0)
    unit_bytes = 2.0 * keys_per_unit * head_dim * BF16_BYTES + partial_per_unit
    full_wave = sms * unit_bytes / _wave_bandwidth(sms, sm_bandwidth, bandwidth)
    last_wave = np.where(rest > 0, rest * unit_bytes
                         / _wave_bandwidth(np.maximum(rest, 1), sm_bandwidth, bandwidth), 0.0)
    attention = kernel_s + full * full_wave + last_wave
    partial_bytes = units * partial_per_unit
    merge = np.where(splits > 1, kernel_s + partial_bytes / bandwidth, 0.0)
    return SplitTimes(unit_bytes, partial_bytes.astype(float), attention, merge,
                      attention + merge)


MAX_SPLITS = 64


@dataclass(frozen=True)
class SplitKVState:
    sms: int
    split: SplitKV
    unsplit: SplitKV
    units_per_sm: np.ndarray  # units each SM runs over all waves
    curve_splits: np.ndarray
    curve_time: np.ndarray  # total seconds for 1..MAX_SPLITS splits
    sm_bandwidth: float  # bytes/s one SM streams (Little's law)
    hbm_bandwidth: float

    @property
    def speedup(self) -> float:
        return self.unsplit.total_time / self.split.total_time


def sm_bandwidth(g: GPU) -> float:
    """Bytes/s one SM can stream from HBM: its bytes in flight over the HBM latency
    (an idle-GPU pointer-chase latency; under load it is longer)."""
    latency = g["latency_cycles.hbm"] / (g["chip.clock_ghz"] * 1e9)
    return sm_stream_bandwidth(g["sm.bytes_in_flight_kb"] * 1024, latency)


class SplitKVModel(FigureModel):
    """Figure 4.5: split-KV (Flash-Decoding) fills the SMs when batch x KV heads is small.
    Time model in `split_kv_time`."""

    HEAD_DIM = 128  # the head size of every Llama model (reference facts, Llama table)

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="SM count and HBM bandwidth come from this GPU")
    splits = Parameter(1, label="KV splits", minimum=1, maximum=MAX_SPLITS, step=1,
                       help="Pieces the cache of each sequence is cut into along its "
                            "length; each piece is a separate work unit")
    # Not "batch": that name is FigureModel.batch(), the context manager.
    batch_size = Parameter(1, label="Batch size", unit="sequences", minimum=1, maximum=256,
                           log=True, help="Sequences decoding one token each")
    kv_len = Parameter(32768, label="KV cache length", unit="tokens", minimum=256,
                       maximum=131072, log=True, help="Tokens already in each sequence")
    kv_heads = Parameter(8, label="KV heads", minimum=1, maximum=64, step=1,
                         help="Key/value heads per layer (8 in Llama 3 with GQA)")
    group = Parameter(8, label="Query heads per KV head", minimum=1, maximum=16, step=1,
                      help="GQA group size: query heads sharing each KV head")
    kernel_us = Parameter(3.0, label="Fixed cost per kernel", unit="µs", minimum=0.0,
                          maximum=20.0, step=0.5,
                          help="Launch and tail of each kernel; the merge kernel adds one")

    def compute(self) -> SplitKVState:
        g = gpu(self.gpu)
        sms, bw = g.sms, g.hbm_bandwidth
        sm_bw = sm_bandwidth(g)

        args = (self.batch_size, self.kv_heads, self.kv_len)
        rest = (self.HEAD_DIM, self.group, sms, bw, sm_bw, self.kernel_us * 1e-6)

        def run(splits: int) -> SplitKV:
            return split_kv_time(*args, splits, *rest)

        split = run(self.splits)
        units = split.units
        per_sm = np.full(sms, units // sms, dtype=np.int64)
        per_sm[: units % sms] += 1
        # The curve over split counts does not depend on the chosen split: moving the
        # splits slider reuses it (the curve is evaluated once per other setting).
        key = (self.gpu, *args, *rest)
        cached = getattr(self, "_curve_cache", None)
        if cached is None or cached[0] != key:
            curve_splits = np.arange(1, MAX_SPLITS + 1)
            curve = split_kv_times(*args, curve_splits, *rest).total
            curve_splits.flags.writeable = False
            curve.flags.writeable = False
            cached = self._curve_cache = (key, curve_splits, curve, run(1))
        _, curve_splits, curve, unsplit = cached
        return SplitKVState(sms, split, unsplit, per_sm, curve_splits, curve, sm_bw, bw)

    def readouts(self) -> dict[str, Readout]:
        s = self.out
        sp = s.split
        best = int(s.curve_splits[int(np.argmin(s.curve_time))])
        return {
            "units": Readout("Work units", sp.units, "units"),
            "busy": Readout("Busy SMs", sp.busy_sms, total=s.sms),
            "utilisation": Readout("SM utilisation", 100 * sp.utilisation, "%"),
            "sm_bandwidth": Readout("Per SM, in flight ÷ latency", s.sm_bandwidth / 1e9,
                                    "GB/s"),
            "hbm_use": Readout("HBM bandwidth in use", 100 * sp.stream_bandwidth
                               / s.hbm_bandwidth, "%"),
            # In the time unit that keeps 1 to 999 before it ("329 ms", not "328,636 µs").
            "time_unsplit": time_readout("Time, no splits", s.unsplit.total_time),
            "attention_time": time_readout("Attention kernel", sp.attention_time),
            "merge_time": time_readout("Merge kernel", sp.merge_time),
            "time_split": time_readout("Time, these splits", sp.total_time),
            "speedup": Readout("Speed-up", s.speedup, "×"),
            "best_splits": Readout("Best split count", best),
        }
