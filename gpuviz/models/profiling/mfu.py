"""Figure 13.3: model and hardware FLOPs utilisation from a training log line, and the
days a token budget takes at an assumed MFU.

Per token (N matmul parameters, L layers, attention width W = heads x head size,
T tokens per sequence; a multiply-add is 2 FLOPs):
  model FLOPs     6N + 12 L W T      (forward 2N + 4LWT, backward twice that)
  hardware FLOPs  + what recomputation runs again: nothing (none), the attention core's
                  forward (selective: + 4LWT), the whole forward (full: 8N + 16LWT)
N counts every parameter that takes part in a matmul: all of them but an untied input
embedding (a lookup); a shared input/output embedding is the output matmul, so it counts.
  tokens/s = sequences x T / seconds per step
  MFU = tokens/s x model FLOPs / (chips x peak FLOP/s); HFU the same with hardware FLOPs
  days for D tokens = D x model FLOPs / (chips x peak x MFU) / 86,400

The 7B log line (Llama-2-7B, N = 6.607B, 32 H100s, 256 x 4096 tokens per 3.60 s):
291,271 tokens/s, MFU 42.4%, HFU 56.5% with full recomputation. PaLM 540B (6144 TPU v4,
238.3k tokens/s, T = 2048): 46.2% with W = 48 x 256, 46.5% with d_model; full
recomputation gives 61.6%, PaLM's published HFU of 57.8% lies between.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpuviz.core.model import (
    SI_PREFIXES,
    Parameter,
    PredictFirstModel,
    Readout,
    format_value,
    si_readout,
)
from gpuviz.data import cache_by_key, read_toml
from gpuviz.data.hardware import gpu, gpu_choices
from gpuviz.data.models import ModelConfig, model, model_choices, parse_model
from gpuviz.models.transformer import parameter_count
from gpuviz.paths import resource

PALM = "palm_540b"
TPU = "tpu_v4"
SECONDS_PER_DAY = 86_400
MODES = [("log", "Read a log line"), ("plan", "Plan a run")]
ATTENTION_WIDTHS = [("heads", "heads × head size"), ("hidden", "hidden size")]
RECOMPUTATION = [("none", "none"), ("selective", "selective"), ("full", "full")]


@functools.cache
def palm_run() -> dict[str, float | str]:
    """The run PaLM's paper reports (resources/profiling/palm_540b.toml, [run])."""
    run = read_toml(resource("profiling", f"{PALM}.toml"))["run"]
    return {name: entry["value"] for name, entry in run.items()}


@cache_by_key()
def preset(key: str) -> ModelConfig:
    """A model of resources/models, or PaLM 540B from resources/profiling."""
    return parse_model(resource("profiling", f"{PALM}.toml")) if key == PALM else model(key)


def preset_choices() -> list[tuple[str, str]]:
    return [*model_choices(), (PALM, preset(PALM).short_name)]


def accelerator_choices() -> list[tuple[str, str]]:
    return [*gpu_choices(), (TPU, str(palm_run()["accelerator"]))]


def peak_flops(accelerator: str) -> float:
    """Dense bf16 FLOP/s of one chip."""
    return float(palm_run()["peak_tflops"]) * 1e12 if accelerator == TPU \
        else gpu(accelerator).peak_flops("bf16")


def matmul_parameters(cfg: ModelConfig) -> int:
    """N: every parameter a token multiplies by (a mixture of experts: the experts it is
    routed to), but an untied input embedding (and learned positions)."""
    count = parameter_count(cfg)
    lookups = count.position_embedding + (0 if cfg.tied_embeddings else count.token_embedding)
    return count.active - lookups


def attention_width(cfg: ModelConfig, which: str) -> int:
    return cfg.heads * cfg.head_dim if which == "heads" else cfg.hidden


def flops_per_token(n: float, layers: int, width: int, seq: int,
                    recompute: str | None = None) -> float:
    """Model FLOPs per token (recompute None), or hardware FLOPs with a recomputation."""
    attention = layers * width * seq
    if recompute in (None, "none"):
        return 6 * n + 12 * attention
    if recompute == "selective":
        return 6 * n + 16 * attention
    return 8 * n + 16 * attention


@dataclass(frozen=True)
class MfuOut:
    n: float  # matmul parameters
    width: int  # attention width W
    peak: float  # FLOP/s of one chip
    model_flops: float  # per token
    hardware_flops: float  # per token, with the chosen recomputation
    tokens_per_second: float  # the log line's, or what the plan's MFU gives
    mfu: float  # share of peak: the log line's, or the plan's assumption
    hfu: float
    plan_seconds: float  # for the token budget at that MFU

    @property
    def plan_days(self) -> float:
        return self.plan_seconds / SECONDS_PER_DAY


def tokens_readout(tokens_per_second: float) -> Readout:
    """Tokens/s, every digit up to 999,999 (the lesson's 291,271); past that in millions,
    billions... ("105 M tokens/s"), which keeps to the readout's column."""
    for factor, prefix in SI_PREFIXES:
        if factor >= 1e6 and round(tokens_per_second) >= factor:
            return Readout("Tokens per second", tokens_per_second / factor,
                           f"{prefix} tokens/s")
    return Readout("Tokens per second", round(tokens_per_second), "tokens/s")


class MfuModel(PredictFirstModel):
    """Figure 13.3: tokens/s, MFU and HFU of a training log line; the days of a planned
    run. Predict first: the MFU of the log line."""

    mode = Parameter("log", label="Mode", choices=MODES,
                     help="Read a finished run's log line, or plan a new run")
    preset = Parameter("llama2_7b", label="Model", choices=preset_choices,
                       help="Layers, widths and parameters (resources/models, PaLM from "
                            "resources/profiling)")
    attention = Parameter("heads", label="Attention width", choices=ATTENTION_WIDTHS,
                          help="W in 12 L W T: heads × head size, or the hidden size")
    accelerator = Parameter("h100_sxm", label="Chip", choices=accelerator_choices,
                            help="Peak dense BF16 FLOP/s of one chip")
    chips = Parameter(32, label="Chips", unit="", minimum=1, maximum=65536, log=True,
                      help="GPUs (or TPU chips) in the run")
    sequences = Parameter(256, label="Global batch", unit="sequences", minimum=1,
                          maximum=65536, log=True, help="Sequences per optimizer step")
    seq_len = Parameter(4096, label="Sequence", unit="tokens", minimum=128, maximum=131072,
                        log=True, help="T: tokens per sequence")
    step_time = Parameter(3.6, label="Step time", unit="s", minimum=0.01, maximum=1e5,
                          help="From the log line: wall-clock seconds per optimizer step "
                               "(a typed number that is not positive is refused)")
    recompute = Parameter("full", label="Recompute", choices=RECOMPUTATION,
                          help="Activation recomputation, counted by HFU only")
    tokens = Parameter(1e12, label="Token budget", unit="tokens", minimum=1e9, maximum=1e14,
                       log=True, help="Plan: tokens to train on")
    assumed_mfu = Parameter(40.0, label="Assumed MFU", unit="%", minimum=1.0, maximum=100.0,
                            step=0.5, help="Plan: the MFU you expect to reach")
    guess_mfu = Parameter(60.0, label="Your MFU guess", unit="%", minimum=1.0, maximum=100.0,
                          step=1.0, help="What share of the peak does this run reach?")
    guess_parameter = "guess_mfu"
    hidden_again_by = ("preset", "attention", "accelerator", "chips", "sequences", "seq_len",
                       "step_time")

    def compute(self) -> MfuOut:
        cfg = preset(self.preset)
        n = matmul_parameters(cfg)
        width = attention_width(cfg, self.attention)
        peak = peak_flops(self.accelerator)
        model_flops = flops_per_token(n, cfg.layers, width, self.seq_len)
        hardware_flops = flops_per_token(n, cfg.layers, width, self.seq_len, self.recompute)
        capacity = self.chips * peak
        if self.mode == "plan":
            tokens_per_second = capacity * self.assumed_mfu / 100 / model_flops
        else:
            tokens_per_second = self.sequences * self.seq_len / self.step_time
        return MfuOut(n, width, peak, model_flops, hardware_flops, tokens_per_second,
                      tokens_per_second * model_flops / capacity,
                      tokens_per_second * hardware_flops / capacity,
                      self.tokens / tokens_per_second)

    def answer_text(self) -> str:
        mfu = 100 * self.out.mfu
        return (f"{format_value(mfu, '%', decimals=1)} of the peak does useful model "
                f"work. Your guess of {format_value(self.guess_mfu, '%', decimals=0)} is "
                f"{self.how_close(self.guess_mfu, mfu)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        mfu = Readout("MFU", 100 * out.mfu, "%", decimals=1)
        hfu = Readout("HFU", 100 * out.hfu, "%", decimals=1)  # gives MFU away: hidden too
        planned = self.mode == "plan"
        return {
            "model_flops": si_readout("Model FLOPs per token", out.model_flops, "FLOP"),
            "tokens_per_second": tokens_readout(out.tokens_per_second),
            "mfu": mfu if planned else self.answer(mfu),
            "hfu": hfu if planned else self.answer(hfu),
            "days": Readout("Days for the token budget", out.plan_days, "days", digits=2),
        }
