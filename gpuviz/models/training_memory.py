"""Lesson 6, training memory and checkpointing: memory over one step (6.1), the
parameters of a layer (6.2), the activations a layer keeps (6.3), checkpointing every k
layers (6.4) and whether a training run fits one GPU (6.5).

The accounting (formulas, units, sources) lives in `gpuviz.models.memory`; this module
holds only the figure models built on it. Bytes throughout; readouts in GB = 10^9 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    AnimatedModel,
    FigureModel,
    Parameter,
    PredictFirstModel,
    Readout,
    SteppedModel,
    Stops,
    si_readout,
    si_text,
)
from gpuviz.data import cache_by_key
from gpuviz.data.hardware import DEFAULT_GPU, gpu, gpu_choices
from gpuviz.data.models import ModelConfig, model, model_choices
from gpuviz.models import memory as mem
from gpuviz.models import transformer as tf

STEP_PRESET = "gpt3_xl"  # the 24-layer 1.3B model the lesson works through
SEQ_LEN = 2048  # its training context (Brown et al. 2020)
PLAY_SECONDS = 10.0  # one training step, played at speed 1
MARGIN = 0.15  # leave 15% of the GPU's memory free (allocator, context, workspaces)


def gb_text(value: float) -> str:
    return si_text(value, "B")


def _closeness(guess: float, answer: float) -> str:
    ratio = guess / answer if answer else math.inf
    if 0.85 <= ratio <= 1.15:
        return "close"
    return f"{ratio:.1f}× too high" if ratio > 1 else f"{1 / ratio:.1f}× too low"


# ---------------------------------------------------------------------------------------
# Figure 6.1: memory over one training step
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepMemory:
    memory: mem.TrainingMemory
    t: float  # playhead, layer-forward units
    checkpoints: float  # bytes stored at the playhead
    activations: float
    logits: float

    @property
    def states(self) -> float:
        return self.memory.states.total

    @property
    def now(self) -> float:
        return self.states + self.checkpoints + self.activations + self.logits

    @property
    def phase(self) -> str:
        timeline = self.memory.timeline
        if self.t < timeline.turn - 1e-9:
            return "forward"
        return "backward" if self.t < timeline.step_time - 1e-9 else "done"


class StepMemoryModel(AnimatedModel, PredictFirstModel):
    """Figure 6.1: the memory of one GPU through one training step of GPT-3 1.3B (mixed
    bf16 with Adam): the model states (16 bytes per parameter) stay flat, the stored
    activations rise layer by layer in the forward pass and fall in the backward pass, so
    the peak is at the turn. With checkpointing every layer only the layer inputs are kept
    (2 sbh each) and each layer is recomputed just before its backward: a sawtooth.
    Time is in units of one layer's forward pass (backward 2, see gpuviz.models.memory)."""

    checkpointing = Parameter(False, label="Checkpoint every layer",
                              help="Keep only each layer's input and recompute the layer's "
                                   "forward pass just before its backward pass")
    flash_attention = Parameter(False, label="FlashAttention",
                                help="Never store the s × s attention matrices (5 as²b "
                                     "bytes per layer)")
    micro_batch = Parameter(1, label="Micro-batch", unit="sequences", minimum=1, maximum=16,
                            step=1, help="Sequences of 2,048 tokens processed together")
    progress = Parameter(0.0, label="Time in the step", unit="%", minimum=0.0,
                         maximum=100.0,
                         help="Where the playhead is: 0 is the start of the forward pass, "
                              "100 the end of the backward pass")
    guess_peak = Parameter(20.0, label="Your guess for the peak", unit="GB", minimum=1.0,
                           maximum=200.0, step=1.0,
                           help="The most memory the GPU holds at any moment of the step")
    guess_parameter = "guess_peak"
    hidden_again_by = ("checkpointing", "flash_attention", "micro_batch")

    def memory(self) -> mem.TrainingMemory:
        policy = mem.EVERY_K if self.checkpointing else mem.NONE
        return mem.training_memory(STEP_PRESET, SEQ_LEN, self.micro_batch,
                                   flash=self.flash_attention, policy=policy, every=1)

    def compute(self) -> StepMemory:
        memory = self.memory()
        timeline = memory.timeline
        t = self.progress / 100 * timeline.step_time
        parts = [_at(timeline.t, values, t) for values in
                 (timeline.checkpoints, timeline.activations, timeline.logits)]
        return StepMemory(memory, t, *parts)

    # --- time: the playhead is the `progress` parameter, so the slider follows Play ---
    def baseline(self) -> mem.TrainingMemory:
        """The same step without checkpointing."""
        return mem.training_memory(STEP_PRESET, SEQ_LEN, self.micro_batch,
                                   flash=self.flash_attention)

    def reset_state(self) -> None:
        """The playhead is a parameter: Reset puts it back to the start."""

    def rewind(self) -> None:
        self.set("progress", 0.0)

    @property
    def finished(self) -> bool:
        return self.progress >= 100.0

    def advance_by(self, dt: float) -> bool:
        self.set("progress", min(100.0, self.progress + 100.0 * max(0.0, dt) / PLAY_SECONDS))
        return not self.finished

    def stops(self) -> Stops:
        """Where Step stops: the end of each layer (or output layer) in the timeline."""
        timeline = self.memory().timeline
        return Stops.of(timeline.t, timeline.step_time)

    @property
    def steps(self) -> int:
        return len(self.stops())

    @property
    def current_step(self) -> int:
        return self.stops().passed(self.out.t)

    def step_once(self) -> None:
        self.place_at_step(self.current_step + 1)

    def place_at_step(self, n: int) -> None:
        stops = self.stops()
        self.set("progress", 100.0 * stops.at(n) / stops.positions[-1])

    def answer_text(self) -> str:
        peak = self.out.memory.peak
        return (f"The peak is {gb_text(peak)} ({gb_text(self.out.memory.states.total)} of "
                f"model states + {gb_text(self.out.memory.timeline.peak)} stored). Your "
                f"guess of {self.guess_peak:,.0f} GB is "
                f"{_closeness(self.guess_peak * mem.GB, peak)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        timeline = out.memory.timeline
        return {
            "states": si_readout("Model states", out.states, "B"),
            "layer": si_readout("One layer keeps", out.memory.layer_bytes, "B"),
            "now": si_readout("Memory now", out.now, "B"),
            "stored": si_readout("Stored now", out.checkpoints + out.activations + out.logits,
                                 "B"),
            "phase": Readout("Phase", name=out.phase),
            "peak": self.answer(si_readout("Peak", out.memory.peak, "B")),
            "step_time": Readout("Step time", timeline.step_time, "layer forwards"),
        }


def _at(t: np.ndarray, values: np.ndarray, when: float) -> float:
    """The value at time `when` of a piecewise-linear series; at a jump, the later
    value."""
    i = int(np.searchsorted(t, when, side="right")) - 1
    i = max(0, min(i, len(t) - 1))
    if i == len(t) - 1 or t[i + 1] == t[i]:
        return float(values[i])
    share = (when - t[i]) / (t[i + 1] - t[i])
    return float(values[i] + share * (values[i + 1] - values[i]))


# ---------------------------------------------------------------------------------------
# Figure 6.2: the parameters of one layer
# ---------------------------------------------------------------------------------------

STYLES = (("gpt", "GPT-style"), ("llama", "Llama-style"))
MLP_RATIO_STEP = 1 / 16  # every preset's f / h is a multiple of 1/16


@dataclass(frozen=True)
class LayerParameters:
    cfg: ModelConfig
    blocks: tuple[mem.WeightBlock, ...]
    count: tf.ParameterCount

    @property
    def d2(self) -> int:
        return self.cfg.hidden ** 2

    @property
    def twelve_l_d2(self) -> int:
        return 12 * self.cfg.layers * self.d2

    @property
    def twelve_share(self) -> float:
        return self.twelve_l_d2 / self.count.total

    @property
    def embedding_share(self) -> float:
        return self.count.embeddings / self.count.total


def preset_style(cfg: ModelConfig) -> str:
    return "llama" if cfg.mlp == "swiglu" else "gpt"


class LayerParametersModel(FigureModel):
    """Figure 6.2: the parameters of one layer, each weight matrix in units of d^2
    (Q and O n_q d_h d, K and V n_kv d_h d, the MLP 2fd or 3fd for SwiGLU), biases and
    norms together; the model total (L layers, token and position embeddings, an untied
    output matrix, the final norm) against 12 L d^2. The preset's own layer gives its
    exact count; GPT-style means GeLU MLP, biases and LayerNorm, Llama-style SwiGLU, no
    biases and RMSNorm (see memory.layer_style)."""

    preset = Parameter(STEP_PRESET, label="Model", choices=model_choices,
                       help="Layer sizes, vocabulary and embeddings from resources/models; "
                            "choosing one sets the style, width and KV heads to its own")
    style = Parameter("gpt", label="Layer style", choices=STYLES,
                      help="GPT: GeLU MLP of two matrices, biases, LayerNorm. Llama: SwiGLU "
                           "MLP of three matrices, no biases, RMSNorm")
    mlp_ratio = Parameter(4.0, label="MLP width f / d", unit="× d", minimum=1.0, maximum=8.0,
                          step=MLP_RATIO_STEP,
                          help="Hidden width of the MLP as a multiple of d (4 for GPT, "
                               "about 8/3 to 3.5 for Llama's three matrices)")
    kv_heads = Parameter(16, label="KV heads", unit="heads", minimum=1, maximum=128, step=1,
                         help="Key/value heads (GQA shares each among several query heads); "
                              "rounded down to a divisor of the query heads")

    def parameter_changed(self, name: str) -> None:
        cfg = model(self.preset)
        if name == "preset":
            self.set("style", preset_style(cfg))
            self.set("mlp_ratio", cfg.intermediate / cfg.hidden)
            self.set("kv_heads", cfg.kv_heads)
        elif name == "style":
            if self.style == preset_style(cfg):
                self.set("mlp_ratio", cfg.intermediate / cfg.hidden)
                self.set("kv_heads", cfg.kv_heads)
            elif self.style == "gpt":
                self.set("mlp_ratio", 4.0)
                self.set("kv_heads", cfg.heads)
            else:
                self.set("mlp_ratio", mem.llama_ffn_width(cfg.hidden) / cfg.hidden)
                self.set("kv_heads", max(1, cfg.heads // 4))

    def config(self) -> ModelConfig:
        return mem.layer_style(model(self.preset), self.style, self.mlp_ratio, self.kv_heads)

    def compute(self) -> LayerParameters:
        cfg = self.config()
        return LayerParameters(cfg, tuple(mem.layer_weight_blocks(cfg)),
                               tf.parameter_count(cfg))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        cfg = out.cfg
        per_layer_d2 = out.count.per_layer / out.d2
        return {
            "layer": Readout("Parameters, one layer", out.count.per_layer),
            "layer_d2": Readout("One layer", per_layer_d2, "d²", decimals=3),
            "total": Readout("Parameters, model", out.count.total),
            "twelve": Readout("12 L d²", out.twelve_l_d2),
            "share": Readout("12 L d² / total", 100 * out.twelve_share, "%"),
            "embeddings": Readout("Embeddings share", 100 * out.embedding_share, "%"),
            "kv": Readout("KV heads used", cfg.kv_heads, total=cfg.heads,
                          shown=f"{cfg.kv_heads} of {cfg.heads} ({cfg.attention_kind})"),
            "f": Readout("MLP width f", cfg.intermediate, ""),
        }


# ---------------------------------------------------------------------------------------
# Figure 6.3: what one layer keeps, operation by operation
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerWalk:
    cfg: ModelConfig
    items: tuple[mem.ActivationItem, ...]
    units: np.ndarray  # per item, sbh or a s^2 b units
    is_score: np.ndarray  # per item: an a s^2 b item
    kept: np.ndarray  # per item: stored (False for a s^2 b items under FlashAttention)
    item_bytes: np.ndarray  # per item, for the chosen s and b (0 when not kept)
    done: int  # items added so far
    sbh_so_far: float
    as2b_so_far: float
    bytes_so_far: float

    @property
    def sbh_total(self) -> float:
        return float(self.units[~self.is_score].sum())

    @property
    def as2b_total(self) -> float:
        return float(self.units[self.is_score & self.kept].sum())

    @property
    def layer_bytes(self) -> float:
        return float(self.item_bytes.sum())


class LayerActivationsModel(SteppedModel):
    """Figure 6.3: the tensors one GPT-3 1.3B layer keeps for its backward pass, one
    operation at a time, after Korthikanti et al. 2022: in units of sbh (orange) they add
    to 34 sbh, the attention core's s x s matrices (magenta) to 5 a s^2 b; FlashAttention
    keeps none of those. Bytes for s tokens, b sequences, 16-bit activations."""

    flash_attention = Parameter(False, label="FlashAttention",
                                help="Never store the s × s matrices: the magenta items go")
    seq_len = Parameter(2048, label="Sequence length s", unit="tokens", minimum=256,
                        maximum=16384, step=256,
                        help="Tokens per sequence (the as²b items grow with its square)")
    micro_batch = Parameter(1, label="Micro-batch b", unit="sequences", minimum=1,
                            maximum=16, step=1, help="Sequences processed together")

    step_seconds = 0.7

    def parameter_changed(self, name: str) -> None:
        """Only a different layer starts the walk again; sizes and FlashAttention keep the
        place, so the totals can be compared."""

    def items(self) -> list[mem.ActivationItem]:
        return mem.activation_items(model(STEP_PRESET))

    @property
    def total_steps(self) -> int:
        return len(self.items())

    def go_to(self, index: int) -> None:
        """Show the walk up to and including item `index` (a click on an operation)."""
        self.go_to_step(index + 1)

    def compute(self) -> LayerWalk:
        cfg = model(STEP_PRESET)
        items = tuple(self.items())
        units = np.array([item.units(cfg) for item in items])
        score = np.array([item.kind == mem.AS2B for item in items])
        kept = ~score if self.flash_attention else np.ones(len(items), dtype=bool)
        sizes = np.array([item.bytes(cfg, self.seq_len, self.micro_batch) for item in items])
        sizes = np.where(kept, sizes, 0.0)
        done = self.steps_done
        shown = np.arange(len(items)) < done
        return LayerWalk(cfg, items, units, score, kept, sizes, done,
                         float(units[shown & ~score].sum()),
                         float(units[shown & score & kept].sum()),
                         float(sizes[shown].sum()))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        cfg = out.cfg
        s, b = self.seq_len, self.micro_batch
        return {
            "sbh": Readout("Orange so far", out.sbh_so_far, "sbh"),
            "as2b": Readout("Magenta so far", out.as2b_so_far, "as²b"),
            "so_far": si_readout("Bytes so far", out.bytes_so_far, "B"),
            "sbh_unit": si_readout("1 sbh", s * b * cfg.hidden, "B"),
            "as2b_unit": si_readout("1 as²b", cfg.heads * s * s * b, "B"),
            "layer": si_readout("Whole layer", out.layer_bytes, "B"),
            "model": si_readout(f"All {cfg.layers} layers", cfg.layers * out.layer_bytes, "B"),
        }


# ---------------------------------------------------------------------------------------
# Figure 6.4: checkpoint every k layers
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointSweep:
    memory: mem.TrainingMemory  # at the chosen k
    baseline: mem.TrainingMemory  # without checkpointing
    ks: np.ndarray  # 1..L
    peaks: np.ndarray  # stored bytes at the peak, per k (model states not included)
    step_times: np.ndarray  # per k, layer-forward units
    best_k: int


@cache_by_key(maxsize=64)
def checkpoint_sweep(preset: str, seq: int, micro_batch: int, flash: bool, every: int
                     ) -> CheckpointSweep:
    """The chosen k's full timeline, and the peak of every k from the closed form
    (memory.checkpoint_peaks, tested equal to the timelines' peaks)."""
    cfg = model(preset)
    run = mem.training_memory(preset, seq, micro_batch, flash=flash, policy=mem.EVERY_K,
                              every=every)
    baseline = mem.training_memory(preset, seq, micro_batch, flash=flash)
    ks = np.arange(1, cfg.layers + 1)
    peaks = mem.checkpoint_peaks(cfg.layers, run.layer_bytes, run.checkpoint_bytes,
                                 mem.head_activation_bytes(cfg, seq, micro_batch),
                                 mem.logits_bytes(cfg, seq, micro_batch), ks)
    # Every layer is recomputed once, whatever k: the step time is the same for all.
    times = np.full(len(ks), run.timeline.step_time)
    return CheckpointSweep(run, baseline, ks, peaks, times, int(ks[np.argmin(peaks)]))


class CheckpointEveryKModel(PredictFirstModel):
    """Figure 6.4: full recomputation with a checkpoint (the segment's input, 2 sbh) every
    k layers of GPT-3 1.3B. The peak is the largest of the turn (all checkpoints, the
    logits) and each segment's recomputed forward (its k layers' activations plus the
    checkpoints still held): about (L/k) 2sbh + k A for a layer's activations A. A
    checkpoint is much smaller than A, so the best k is small (1 here), not sqrt(L). Every
    layer is recomputed once whatever k: one extra forward pass."""

    every = Parameter(4, label="Checkpoint every k layers", unit="layers", minimum=1,
                      maximum=24, step=1, help="Segment length: 1 keeps every layer's input, "
                                               "24 only the first layer's")
    flash_attention = Parameter(False, label="FlashAttention",
                                help="Never store the s × s attention matrices")
    micro_batch = Parameter(1, label="Micro-batch", unit="sequences", minimum=1, maximum=16,
                            step=1, help="Sequences of 2,048 tokens processed together")
    guess_k = Parameter(5, label="Your guess for the best k", unit="layers", minimum=1,
                        maximum=24, step=1, help="The k with the lowest peak memory")
    guess_parameter = "guess_k"
    hidden_again_by = ("flash_attention", "micro_batch")

    def compute(self) -> CheckpointSweep:
        return checkpoint_sweep(STEP_PRESET, SEQ_LEN, self.micro_batch, self.flash_attention,
                                self.every)

    def answer_text(self) -> str:
        out = self.out
        best = out.best_k
        sqrt_l = math.sqrt(len(out.ks))
        verdict = "right" if self.guess_k == best else f"off by {abs(self.guess_k - best)}"
        floor = (" The logits held at the turn set a floor, so the first few layers per "
                 "segment come free." if best > 1 else "")
        return (f"The lowest peak is at k = {best} ({gb_text(out.peaks[best - 1])} stored), "
                f"not at √L ≈ {sqrt_l:.1f}: a checkpoint ({gb_text(out.memory.checkpoint_bytes)})"
                f" is far smaller than a layer's activations "
                f"({gb_text(out.memory.layer_bytes)}).{floor} Your guess is {verdict}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        memory, base = out.memory, out.baseline
        return {
            "checkpoint": si_readout("One checkpoint", memory.checkpoint_bytes, "B"),
            "layer": si_readout("One layer's activations", memory.layer_bytes, "B"),
            "peak": si_readout("Peak stored, this k", memory.timeline.peak, "B"),
            "baseline": si_readout("Peak stored, no checkpoints", base.timeline.peak, "B"),
            "time": Readout("Step time vs none",
                            100 * memory.timeline.step_time / base.timeline.step_time, "%"),
            "best": self.answer(Readout("Best k", out.best_k, "layers")),
        }


# ---------------------------------------------------------------------------------------
# Figure 6.5: does it fit?
# ---------------------------------------------------------------------------------------

PRECISION_CHOICES = tuple((key, r.label) for key, r in mem.RECIPES.items())
OPTIMIZER_CHOICES = (("adam", "Adam"), ("sgd", "SGD with momentum"))
ZERO_CHOICES = tuple((str(z), "off" if z == 0 else f"ZeRO-{z}") for z in mem.ZERO_STAGES)
SEQ_CHOICES = tuple((str(s), f"{s:,}") for s in (512, 1024, 2048, 4096, 8192, 16384, 32768))
COMPONENTS = (("weights", "Weights"), ("gradients", "Gradients"),
              ("optimizer", "Optimizer states"), ("activations", "Activations"),
              ("logits", "Logits"))
FIXES = (
    ("fix_flash", "FlashAttention", "activations (the s × s matrices)"),
    ("fix_checkpoint", "Checkpointing", "activations (only layer inputs kept)"),
    ("fix_half_batch", "Halve micro-batch", "activations and logits"),
    ("fix_8bit", "8-bit optimizer", "optimizer states (1-byte moments)"),
    ("zero_stage", "ZeRO", "optimizer states, then gradients, then weights"),
    ("fix_bf16", "bf16 weights", "weights and gradients (fp32 → bf16; adds a master copy)"),
)


@dataclass(frozen=True)
class Budget:
    """One GPU's memory at the peak, bytes per component."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits: float

    @property
    def parts(self) -> tuple[float, ...]:
        return (self.weights, self.gradients, self.optimizer, self.activations, self.logits)

    @property
    def total(self) -> float:
        return sum(self.parts)


@dataclass(frozen=True)
class FitOut:
    before: Budget  # the settings without any fix
    after: Budget  # with the fixes ticked
    capacity: float  # the GPU's memory, bytes
    effects: tuple[tuple[str, str, str, float, tuple[float, ...]], ...]
    # (name, label, what it shrinks, change of the total, change per component) per fix

    @property
    def usable(self) -> float:
        return (1 - MARGIN) * self.capacity

    @property
    def fits(self) -> bool:
        return self.after.total <= self.usable


@cache_by_key(maxsize=512)
def budget(preset: str, seq: int, micro_batch: int, recipe: str, optimizer: str,
           flash: bool, checkpoint: bool, zero_stage: int, gpus: int) -> Budget:
    run = mem.training_memory(preset, seq, micro_batch, recipe, optimizer, flash=flash,
                              policy=mem.EVERY_K if checkpoint else mem.NONE, every=1,
                              zero_stage=zero_stage, gpus=gpus)
    states = run.states
    return Budget(states.weights, states.gradients, states.optimizer, run.activations,
                  run.logits)


class FitModel(FigureModel):
    """Figure 6.5: weights, gradients, optimizer states, activations and logits of one
    GPU at the peak of a training step (gpuviz.models.memory) against its memory, with
    15% kept free. Each fix changes one input; its effect is the change of each component
    when that fix alone is switched (on if off, off if on), so a fix that changes nothing
    says so."""

    preset = Parameter(STEP_PRESET, label="Model", choices=model_choices,
                       help="Model presets from resources/models")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="The GPU's memory comes from resources/hardware")
    seq_len = Parameter("2048", label="Sequence length", choices=SEQ_CHOICES,
                        help="Tokens per sequence")
    micro_batch = Parameter(8, label="Micro-batch", unit="sequences", minimum=1, maximum=64,
                            step=1, help="Sequences per forward and backward pass")
    precision = Parameter("mixed", label="Precision", choices=PRECISION_CHOICES,
                          help="Bytes of weights, gradients, optimizer states and "
                               "activations (see the lesson)")
    optimizer = Parameter("adam", label="Optimizer", choices=OPTIMIZER_CHOICES,
                          help="Adam keeps two moments per parameter, SGD with momentum one")
    fix_flash = Parameter(False, label="FlashAttention",
                          help="Shrinks activations: the s × s attention matrices are "
                               "never stored")
    fix_checkpoint = Parameter(False, label="Checkpointing",
                               help="Checkpoint every layer. Shrinks activations: only each "
                                    "layer's input is kept; costs one extra forward pass")
    fix_half_batch = Parameter(False, label="Halve micro-batch",
                               help="Shrinks activations and logits; takes twice the "
                                    "micro-batches (gradient accumulation) per step")
    fix_8bit = Parameter(False, label="8-bit optimizer",
                         help="Shrinks optimizer states: moments kept in one byte each")
    fix_bf16 = Parameter(False, label="bf16 weights",
                         help="Only for fp32 training: bf16 weights and gradients instead "
                              "of fp32, with an fp32 master copy, and 16-bit activations")
    zero_stage = Parameter("0", label="ZeRO", choices=ZERO_CHOICES,
                           help="Shard optimizer states (1), also gradients (2), also "
                                "weights (3) over the data-parallel GPUs (lesson 8)")
    gpus = Parameter(8, label="Data-parallel GPUs", unit="GPUs", minimum=2, maximum=64,
                     step=1, help="GPUs that share the ZeRO shards")

    def settings(self, **override: object) -> dict[str, object]:
        values = {"flash": self.fix_flash, "checkpoint": self.fix_checkpoint,
                  "half": self.fix_half_batch, "eight": self.fix_8bit,
                  "bf16": self.fix_bf16, "zero": int(self.zero_stage)}
        values.update(override)
        return values

    def _budget(self, flash: bool, checkpoint: bool, half: bool, eight: bool, bf16: bool,
                zero: int) -> Budget:
        batch = max(1, math.ceil(self.micro_batch / 2)) if half else self.micro_batch
        recipe = "mixed" if bf16 and self.precision == "fp32" else self.precision
        optimizer = mem.EIGHT_BIT[self.optimizer] if eight else self.optimizer
        return budget(self.preset, int(self.seq_len), batch, recipe, optimizer, flash,
                      checkpoint, zero, self.gpus)

    def compute(self) -> FitOut:
        now = self.settings()
        after = self._budget(**now)
        before = self._budget(False, False, False, False, False, 0)
        effects = []
        for key, label, shrinks in FIXES:
            if key == "zero_stage":
                other = 0 if now["zero"] else 3
                changed = self._budget(**self.settings(zero=other))
                label = f"ZeRO-{now['zero'] or 3} over {self.gpus} GPUs"
            else:
                short = {"fix_flash": "flash", "fix_checkpoint": "checkpoint",
                         "fix_half_batch": "half", "fix_8bit": "eight",
                         "fix_bf16": "bf16"}[key]
                changed = self._budget(**self.settings(**{short: not now[short]}))
            on, off = (after, changed) if self.fix_is_on(key) else (changed, after)
            deltas = tuple(a - b for a, b in zip(on.parts, off.parts, strict=True))
            effects.append((key, label, shrinks, on.total - off.total, deltas))
        capacity = gpu(self.gpu)["chip.hbm_gb"] * mem.GB
        return FitOut(before, after, capacity, tuple(effects))

    def fix_is_on(self, key: str) -> bool:
        return int(self.zero_stage) > 0 if key == "zero_stage" else bool(self.get(key))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        rows = {key: si_readout(label, value, "B")
                for (key, label), value in zip(COMPONENTS, out.after.parts, strict=True)}
        rows.update({
            "total": si_readout("Total", out.after.total, "B"),
            "usable": si_readout("Usable (85%)", out.usable, "B"),
            "fits": Readout("Fits with the margin", out.fits),
            "before": si_readout("Without fixes", out.before.total, "B"),
        })
        return rows


def effect_text(label: str, delta_total: float, deltas: tuple[float, ...], on: bool) -> str:
    """What one fix does, in words: the components it shrinks or grows, or nothing."""
    return f"{label}: {effect_phrase(delta_total, deltas, on)}"


def effect_phrase(delta_total: float, deltas: tuple[float, ...], on: bool) -> str:
    if abs(delta_total) < 1e6 and all(abs(d) < 1e6 for d in deltas):
        return "changes nothing here"
    names = [name.lower() for (_, name), d in zip(COMPONENTS, deltas, strict=True)
             if abs(d) >= 1e6]
    verb = "saves" if on else "would save"
    if delta_total <= -1e6:  # what shrinks is in the row already
        return f"{verb} {gb_text(-delta_total)}"
    if delta_total >= 1e6:
        return f"adds {gb_text(delta_total)} ({', '.join(names)})"
    return f"same total ({', '.join(names)} move)"


def fixes_with_effect() -> tuple[str, ...]:
    """Parameter names of the fixes (for views and tests)."""
    return tuple(key for key, _, _ in FIXES)

