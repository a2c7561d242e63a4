"""Figure 12.1: the time of one decode step against the batch, and the memory that caps
the batch (physics in `serving.costs`).

Batching is nearly free in decode while the weights dominate the bytes: they are read
once per step for the whole batch, so from batch 1 to 64 the work grows 64× and the step
(4.87 → 9.92 ms for Llama-3-8B on an H100, 2,048 tokens) only 2.04×. Every sequence
reads its own KV cache, though, so the caches take over (76% of the bytes at 186, the
largest batch that fits) and the time per output token climbs while the tokens per
second level off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    Parameter,
    PredictFirstModel,
    Readout,
    format_value,
    plural,
    si_readout,
    time_readout,
)
from gpuviz.data.hardware import DEFAULT_GPU, gpu, gpu_choices
from gpuviz.data.models import model, model_choices
from gpuviz.models.memory import GB
from gpuviz.models.serving.costs import (
    CACHE_PRECISIONS,
    DecodeSteps,
    MemoryBudget,
    decode_steps,
    memory_budget,
)

DEFAULT_PRESET = "llama3_8b"
BATCH_MAX = 4096
CURVE_POINTS = 400  # batch sizes on the trade-off curve (all of them up to this many)
PREDICTED_BATCH = 64  # the prediction: a step at this batch against a step at batch 1


@dataclass(frozen=True)
class DecodeBatchOut:
    budget: MemoryBudget
    step: DecodeSteps  # at the chosen batch (arrays of one)
    first: DecodeSteps  # at batch 1
    curve: DecodeSteps  # every batch that fits (thinned past CURVE_POINTS)
    predicted: DecodeSteps  # at PREDICTED_BATCH

    @property
    def fits(self) -> bool:
        return self.step.batch[0] <= self.budget.max_batch

    @property
    def slowdown(self) -> float:
        return float(self.step.time[0] / self.first.time[0])

    @property
    def predicted_slowdown(self) -> float:
        return float(self.predicted.time[0] / self.first.time[0])

    @property
    def bound(self) -> str:
        return "memory" if self.step.memory_time[0] >= self.step.compute_time[0] else "compute"


def curve_batches(max_batch: int) -> np.ndarray:
    """Every batch size from 1 to max_batch, or CURVE_POINTS of them spread on a log scale."""
    if max_batch <= CURVE_POINTS:
        return np.arange(1, max_batch + 1)
    return np.unique(np.geomspace(1, max_batch, CURVE_POINTS).round().astype(int))


class DecodeBatchModel(PredictFirstModel):
    """Figure 12.1: one decode step's roofline times and the GPU's memory at a batch, and
    tokens per second against time per output token over every batch that fits. Predict
    first: how much longer a step of 64 sequences takes than a step of one."""

    preset = Parameter(DEFAULT_PRESET, label="Model", choices=model_choices,
                       help="Layers, widths and KV heads from resources/models")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="HBM size and bandwidth, peak BF16 FLOP/s")
    batch_size = Parameter(1, label="Batch", unit="sequences", minimum=1, maximum=BATCH_MAX,
                      log=True, help="Sequences decoded together, one token each per step")
    context = Parameter(2048, label="Context", unit="tokens", minimum=128, maximum=131072,
                        log=True, help="Tokens in each sequence's KV cache")
    cache = Parameter("bf16", label="KV cache", choices=CACHE_PRECISIONS,
                      help="Precision of the cached keys and values (the weights stay "
                           "BF16)")
    guess_slowdown = Parameter(32.0, label=f"Step at batch {PREDICTED_BATCH} ÷ batch 1",
                               unit="×", minimum=1.0, maximum=64.0, log=True,
                               help=f"{PREDICTED_BATCH} times the work: how many times the "
                                    "time?")
    guess_parameter = "guess_slowdown"
    hidden_again_by = ("preset", "gpu", "context", "cache")

    def compute(self) -> DecodeBatchOut:
        args = (self.preset, self.gpu, self.context, self.cache)
        budget = memory_budget(*args)
        return DecodeBatchOut(budget, decode_steps(*args, self.batch_size),
                              decode_steps(*args, 1),
                              decode_steps(*args, curve_batches(budget.max_batch)),
                              decode_steps(*args, PREDICTED_BATCH))

    def answer_text(self) -> str:
        out = self.out
        return (f"{format_value(out.predicted_slowdown, '×')}: the {PREDICTED_BATCH} "
                "sequences share one reading of the weights; only their caches add "
                "bytes. Your guess of "
                f"{format_value(self.guess_slowdown, '×')} is "
                f"{self.how_close(self.guess_slowdown, out.predicted_slowdown)}."
                + self._fit_note())

    def _fit_note(self) -> str:
        """Why the predicted batch is not on this GPU's curve, if it is not."""
        fit = self.out.budget.max_batch
        if fit == 0:
            return (" (Here the weights leave no room for even one cache: that ratio is "
                    "for a GPU large enough to hold them.)")
        if fit < PREDICTED_BATCH:
            fits = "fits" if fit == 1 else "fit"
            return (f" (Only {plural(fit, 'cache')} {fits} here: batch {PREDICTED_BATCH} "
                    "is what a larger GPU would take.)")
        return ""

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        step = out.step
        return {
            "max_batch": Readout("Largest batch that fits", out.budget.max_batch,
                                 "sequences"),
            "step_time": time_readout("Step = time per output token", step.time[0]),
            "slowdown": Readout("Step / step at batch 1", out.slowdown, "×"),
            "predicted": self.answer(Readout(f"Batch {PREDICTED_BATCH} / batch 1",
                                             out.predicted_slowdown, "×")),
            "cache_time": time_readout("Reading the KV caches", step.kv_cache[0]
                                       / step.bandwidth),
            "cache_share": Readout("KV caches, share of bytes", 100 * step.cache_share[0],
                                   "%", digits=2),
            "tokens_per_second": Readout("Tokens per second", step.tokens_per_second[0],
                                         "tokens/s"),
            "cache_per_sequence": si_readout("KV cache per sequence",
                                             out.budget.cache_per_sequence, "B"),
            "fits": Readout("Batch fits", out.fits),
        }

    def message(self) -> tuple[str, bool]:
        out, budget = self.out, self.out.budget
        cfg = model(self.preset)
        name = gpu(self.gpu).short_name
        if budget.max_batch == 0:
            weights = format_value(budget.weights / GB, "GB")
            return (f"{cfg.short_name}'s weights ({weights}) leave no room for a single "
                    f"{self.context:,}-token cache on one {name}: it needs more GPUs "
                    "(tensor parallelism, Lesson 9).", True)
        if not out.fits:
            return (f"{self.batch_size:,} caches do not fit: at most {budget.max_batch:,} "
                    f"sequences of {self.context:,} tokens on one {name}.", True)
        if self.context > cfg.context:
            return (f"{cfg.name} was trained for {cfg.context:,} tokens; a "
                    f"{self.context:,}-token context is beyond it (the numbers still "
                    "follow the formulas).", True)
        share = format_value(100 * out.step.cache_share[0], "%", 2)
        if self.batch_size == 1:
            weights = format_value(out.step.weights[0] / GB, "GB")
            return (f"One sequence: the step reads {weights} of weights for a single "
                    f"token (the cache is {share} of the bytes). Raise the batch.", False)
        slowdown = format_value(out.slowdown, "×")
        return (f"{self.batch_size:,}× the work of batch 1 takes {slowdown} the "
                f"time: the caches are {share} of the bytes a step reads.", False)
