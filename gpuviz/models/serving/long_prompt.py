"""Figure 12.6: a long prompt arrives while a batch decodes: in one piece, in chunks, or
on a second GPU.

The decode batch is 12.1's: B sequences of `context` cached tokens on one GPU, a step of
d seconds (`serving.costs.decode_steps`), split here into its parts on the roofline:
W, reading the weights; R, reading the KV caches; C_d, its arithmetic.

A prompt of S tokens needs F(S) FLOPs of prefill (`transformer.forward_parts`, causal: a
quadratic in S, so a chunk of tokens s0 … s1 costs F(s1) − F(s0), its attention reaching
back over every earlier token). Prefill runs at `efficiency` of the peak, so it takes
P = F(S) / (efficiency × peak): for Llama-3-8B's 32,768 tokens on an H100 at 50%, 1.49 s.

A step that carries a prefill chunk of f FLOPs reads the weights once for all its tokens
and is then compute-bound; the caches are read by kernels of their own:

    mixed step = max(W + R, C_d + f / (efficiency × peak) + R)

  one piece      the whole prompt joins one step: every sequence waits about P for it;
  chunked        each step takes the most prompt tokens that keep it within the TPOT
                 target (at least 1/MAX_CHUNKS of the prompt, even when the target cannot
                 be met); TTFT is the end of the last chunk's step;
  disaggregated  a second GPU of the same kind prefills in P; the prompt's KV cache
                 (2 L S n_kv d_h elements in the cache precision) then crosses the chosen
                 link (alpha-beta `kv_cache_transfer`); the decode GPU never slows down.
                 TTFT is the end of the prefill (its first token comes from there).

Times run from the first decode step shown; the prompt arrives after BEFORE steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    FINE_STEPS,
    FigureModel,
    Parameter,
    Readout,
    format_value,
    nice_ceiling,
    plural,
    si_text,
    time_readout,
    time_text,
)
from gpuviz.core.schedule import Schedule, Task, schedule_at
from gpuviz.core.trace import Lane, Trace
from gpuviz.data import cache_by_key
from gpuviz.data.hardware import DEFAULT_GPU, gpu, gpu_choices
from gpuviz.data.models import model, model_choices
from gpuviz.models import transformer as tf
from gpuviz.models.alpha_beta import Link, kv_cache_transfer, network, nvlink
from gpuviz.models.serving.costs import (
    CACHE_BYTES,
    CACHE_PRECISIONS,
    WEIGHT_BYTES,
    decode_steps,
    memory_budget,
)
from gpuviz.models.serving.decode_batch import DEFAULT_PRESET

MODES = (("one_piece", "One piece"), ("chunked", "Chunked prefill"),
         ("disaggregated", "Disaggregated prefill"))
LINKS = (("nvlink", "NVLink"), ("network", "Network"))
BEFORE = 4  # decode steps shown before the prompt arrives
AFTER = 4  # decode steps shown after the latest mode is done, at least
MAX_CHUNKS = 256
MAX_DECODE_BOXES = 200
DECODE_GPU, PREFILL_GPU, LINK = "decode GPU", "prefill GPU", "KV link"
LANES = (DECODE_GPU, PREFILL_GPU, LINK)
DECODE, PREFILL, TRANSFER = "decode", "prefill", "transfer"


@cache_by_key()
def prefill_polynomial(preset: str) -> tuple[float, float, float]:
    """(a0, a1, a2) with F(s) = a0 + a1 s + a2 s² the prefill FLOPs of an s-token prompt
    (exact: every term of `forward_parts` in prefill is constant, linear or quadratic)."""
    cfg = model(preset)
    f1, f2, f3 = (tf.forward_parts(cfg, 1, s, "prefill", WEIGHT_BYTES).flops
                  for s in (1, 2, 3))
    a2 = (f3 - 2 * f2 + f1) / 2
    a1 = f2 - f1 - 3 * a2
    return f1 - a1 - a2, a1, a2


def prefill_flops(preset: str, tokens: float | np.ndarray) -> float | np.ndarray:
    """F(tokens), F(0) = 0: of a number, or of each of an array of token counts."""
    a0, a1, a2 = prefill_polynomial(preset)
    if np.ndim(tokens) == 0:
        return a0 + a1 * tokens + a2 * tokens * tokens if tokens > 0 else 0.0
    tokens = np.asarray(tokens, dtype=float)
    return np.where(tokens > 0, a0 + a1 * tokens + a2 * tokens * tokens, 0.0)


def chunk_ends(preset: str, prompt: int, budget: float) -> list[int]:
    """The token each chunk ends at, the most that cost at most `budget` FLOPs each (at
    least prompt / MAX_CHUNKS tokens)."""
    a0, a1, a2 = prefill_polynomial(preset)
    least = math.ceil(prompt / MAX_CHUNKS)
    ends, done = [], 0
    while done < prompt:
        # the largest s with a1 s + a2 s² <= budget + F(done) − a0 (F(0) = 0 has no a0)
        rhs = budget + (a1 * done + a2 * done * done if done else -a0)
        s = (rhs / a1 if a2 == 0 else (-a1 + math.sqrt(a1 * a1 + 4 * a2 * max(rhs, 0.0)))
             / (2 * a2))
        done = min(prompt, max(done + least, math.floor(s)))
        ends.append(done)
    return ends


class DecodeTimeline:
    """The tasks of the figure with their start times, built in order: the decode GPU's
    steps back to back, a run of decode-only steps drawn as one box of several steps when
    the whole would have more than MAX_DECODE_BOXES (its TPOT is still one step's)."""

    def __init__(self, step: float, steps: int) -> None:
        self.step = step
        self.per_box = max(1, math.ceil(steps / MAX_DECODE_BOXES))
        self.tasks: list[Task] = []
        self.starts: list[float] = []
        self.tpot: list[float] = []  # per task; NaN off the decode GPU
        self.t = 0.0  # where the decode GPU is
        self._boxes = 0

    def add(self, task: Task, start: float | None = None) -> None:
        self.tasks.append(task)
        if task.resource == DECODE_GPU:
            self.starts.append(self.t)
            self.tpot.append(task.duration)
            self.t += task.duration
        else:
            self.starts.append(start)
            self.tpot.append(math.nan)

    def decode(self, steps: int) -> None:
        while steps > 0:
            n = min(steps, self.per_box)
            self.tasks.append(Task(f"decode {self._boxes}", DECODE_GPU, n * self.step,
                                   kind=DECODE, label=f"{n} steps" if n > 1 else ""))
            self.starts.append(self.t)
            self.tpot.append(self.step)
            self.t += n * self.step
            self._boxes += 1
            steps -= n


@dataclass(frozen=True)
class LongPromptOut:
    mode: str
    schedule: Schedule
    tpot: np.ndarray  # per task: the TPOT of its step(s); NaN off the decode GPU
    arrival: float
    horizon: float
    decode_step: float  # d: a step of the batch alone
    prefill_time: float  # P: the whole prompt at the efficiency, alone
    transfer_time: float
    ttft: float  # from the arrival
    chunks: int  # decode-GPU steps that carry prompt tokens (0 when disaggregated)
    chunk_tokens: int  # the largest chunk
    target: float
    # Chunks held at the least size (1/MAX_CHUNKS of the prompt) although they cost more
    # than the target allows: the only way a chunked step misses the target.
    chunks_at_least: int = 0

    @property
    def worst_tpot(self) -> float:
        return float(np.nanmax(self.tpot))

    @property
    def target_met(self) -> bool:
        return self.worst_tpot <= self.target * (1 + 1e-9)


class LongPromptModel(FigureModel):
    """Figure 12.6: the TPOT of every decode step while a long prompt is prefilled in one
    piece, in chunks, or on a second GPU; TTFT, worst TPOT and the KV transfer."""

    mode = Parameter("one_piece", label="Prefill", choices=MODES,
                     help="How the new prompt's prefill shares the decode GPU")
    prompt = Parameter(32768, label="Prompt", unit="tokens", minimum=1024, maximum=65536,
                       log=True, help="Tokens of the prompt that arrives")
    sequences = Parameter(64, label="Decoding", unit="sequences", minimum=1, maximum=256,
                          log=True, help="Sequences decoding when the prompt arrives")
    target_ms = Parameter(50.0, label="TPOT target", unit="ms", minimum=10.0,
                          maximum=500.0, log=True,
                          help="Chunked prefill keeps each step within this")
    efficiency = Parameter(0.5, label="Prefill efficiency", minimum=0.2, maximum=1.0,
                           step=0.05, help="Share of the peak FLOP/s prefill reaches")
    link = Parameter("nvlink", label="KV link", choices=LINKS,
                     help="Disaggregated: how the KV cache reaches the decode GPU (NVLink in one "
                          "server, the network from another)")
    preset = Parameter(DEFAULT_PRESET, label="Model", choices=model_choices,
                       help="Layers, widths and KV heads from resources/models")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Both GPUs when disaggregated")
    context = Parameter(2048, label="Context", unit="tokens", minimum=128, maximum=32768,
                        log=True, help="Tokens in each decoding sequence's KV cache")
    cache = Parameter("bf16", label="KV cache", choices=CACHE_PRECISIONS,
                      help="Precision of the cached keys and values")

    def kv_link(self) -> Link:
        return nvlink(self.gpu) if self.link == "nvlink" else network(self.gpu)

    def compute(self) -> LongPromptOut:
        step = decode_steps(self.preset, self.gpu, self.context, self.cache, self.sequences)
        d = float(step.time[0])
        weights = float(step.weights[0] / step.bandwidth)
        rest = float(step.kv_cache[0] / step.bandwidth)
        decode_compute = float(step.compute_time[0])
        rate = self.efficiency * step.peak  # prefill FLOP/s
        target = self.target_ms / 1e3

        def mixed(flops: float) -> float:
            return max(weights + rest, decode_compute + flops / rate + rest)

        total = prefill_flops(self.preset, self.prompt)
        prefill_time = total / rate
        cfg = model(self.preset)
        transfer = kv_cache_transfer(self.prompt, cfg.layers, cfg.kv_heads, cfg.head_dim,
                                     CACHE_BYTES[self.cache]).time_on(self.kv_link())
        # Up to MAX_CHUNKS chunks for a large model: as arrays (in Python, their sums
        # were most of the time a new model took in this figure).
        edges = np.array([0, *chunk_ends(self.preset, self.prompt,
                                         max(target - decode_compute - rest, 0.0) * rate)])
        chunk_sizes = np.diff(edges)
        chunk_flops = np.diff(prefill_flops(self.preset, edges))
        chunk_times = np.maximum(weights + rest, decode_compute + chunk_flops / rate + rest)
        arrival = BEFORE * d
        done = {"one_piece": mixed(total), "chunked": float(chunk_times.sum()),
                "disaggregated": prefill_time + transfer}
        # The time shown ends at a round number (the decode steps go on to it): a limit
        # that follows every slider re-laid the axes and the grid on every change.
        horizon = nice_ceiling(arrival + max(done.values()) + AFTER * d, FINE_STEPS)

        timeline = DecodeTimeline(d, math.ceil((horizon - arrival) / d) + BEFORE)
        timeline.decode(BEFORE)
        carried = {"one_piece": [mixed(total)], "chunked": chunk_times.tolist(),
                   "disaggregated": []}[self.mode]
        for i, duration in enumerate(carried):
            timeline.add(Task(f"prefill {i}", DECODE_GPU, duration, kind=PREFILL,
                              label=f"chunk {i + 1}" if len(carried) > 1 else "prompt"))
        ttft = timeline.t - arrival
        if self.mode == "disaggregated":
            ttft = prefill_time
            timeline.add(Task("prefill", PREFILL_GPU, prefill_time, kind=PREFILL,
                              label="prompt", release=arrival), arrival)
            timeline.add(Task("KV transfer", LINK, transfer, ("prefill",), TRANSFER,
                              "KV cache"), arrival + prefill_time)
        timeline.decode(math.ceil((horizon - timeline.t) / d - 1e-9))
        chunk_tokens = {"one_piece": self.prompt, "disaggregated": 0,
                        "chunked": int(chunk_sizes.max())}
        least = math.ceil(self.prompt / MAX_CHUNKS)
        held = int(np.count_nonzero((chunk_sizes == least) & (chunk_times > target))
                   if self.mode == "chunked" else 0)
        return LongPromptOut(self.mode, schedule_at(timeline.tasks, timeline.starts),
                             np.array(timeline.tpot), arrival, horizon, d, prefill_time,
                             transfer, ttft, len(carried), chunk_tokens[self.mode], target,
                             held)

    def trace(self) -> Trace:
        out = self.out
        lanes = tuple(Lane("decode GPU" if lane == DECODE_GPU else "prefill GPU", lane,
                           lane) for lane in LANES
                      if any(task.resource == lane for task in out.schedule.tasks))
        return Trace(out.schedule, lanes, seconds=1.0)

    def memory_needed(self) -> tuple[float, float]:
        """(bytes the decode GPU must hold: weights, the batch's caches and the prompt's
        cache once it is prefilled; bytes it has for them), as 12.1 counts them."""
        budget = memory_budget(self.preset, self.gpu, self.context, self.cache)
        per_token = budget.cache_per_sequence / self.context
        held = budget.weights + budget.caches(self.sequences) + per_token * self.prompt
        return held, budget.hbm - budget.headroom - budget.workspace

    def fits(self) -> bool:
        held, room = self.memory_needed()
        return held <= room

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "ttft": time_readout("Time to first token", out.ttft),
            "worst_tpot": time_readout("Worst TPOT of the batch", out.worst_tpot),
            "transfer": time_readout("KV transfer (disaggregated)", out.transfer_time),
            "prefill": time_readout("Prefill alone", out.prefill_time),
            "decode_step": time_readout("Decode step alone", out.decode_step),
            "chunks": Readout("Steps carrying the prompt", out.chunks),
            "target_met": Readout("Every step within the target", out.target_met),
            "fits": Readout("Fits in the decode GPU's memory", self.fits()),
        }

    def message(self) -> tuple[str, bool]:
        out = self.out
        name = gpu(self.gpu).short_name
        target = format_value(self.target_ms, "ms")
        held, room = self.memory_needed()
        if held > room:
            return (f"Does not fit: the weights and the caches of "
                    f"{plural(self.sequences, 'sequence')} and the prompt need "
                    f"{si_text(held, 'B')}, one {name} has {si_text(room, 'B')} for them "
                    f"(12.1). The times are for a GPU that could hold them.", True)
        if out.mode == "one_piece":
            return (f"The {self.prompt:,}-token prompt takes one step of "
                    f"{time_text(out.worst_tpot)}: "
                    f"{plural(self.sequences, 'decoding sequence')} "
                    f"wait{'s' if self.sequences == 1 else ''} that long for a token.",
                    not out.target_met)
        if out.mode == "chunked":
            if out.decode_step > out.target:
                return (f"The decode step alone takes {time_text(out.decode_step)}, over "
                        f"the {target} target: no chunking can meet it.", True)
            if not out.target_met:
                return (f"Chunks of at least 1/{MAX_CHUNKS} of the prompt still make steps "
                        f"of up to {time_text(out.worst_tpot)}, over the {target} target.",
                        True)
            return (f"{plural(out.chunks, 'step')} of at most {out.chunk_tokens:,} prompt "
                    f"tokens keep every step within {target}; the prompt's first token "
                    f"comes after {time_text(out.ttft)}.", False)
        return (f"A second {name} prefills in {time_text(out.prefill_time)} and sends the "
                f"KV cache in {time_text(out.transfer_time)}; the decode GPU keeps its "
                f"{time_text(out.decode_step)} steps.", False)
