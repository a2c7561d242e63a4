"""Training memory of one GPU: model states, activations, logits, checkpointing, the peak.

Shared by lessons 6 (training memory), 8 (ZeRO sharding), 9 (tensor and pipeline splits)
and 12 (serving). Pure functions of plain numbers, a `ModelConfig` (gpuviz.data.models) and
named choices; every function returns bytes (or a frozen dataclass of bytes). No figure
state, no Qt.

Symbols: P parameters, L layers, h hidden size, f MLP width, a = n_q query heads, n_kv
key/value heads, d_h head size, V vocabulary, s tokens per sequence, b sequences per
micro-batch, t tensor-parallel degree, N data-parallel GPUs (ZeRO).

Model states (bytes per parameter; Rajbhandari et al. 2020, ZeRO, section 3):
    weights w + gradients g + optimizer states (master copy m + k moments of e bytes)
    mixed bf16 + Adam: 2 + 2 + (4 + 4 + 4) = 16;  SGD with momentum: 2 + 2 + (4 + 4) = 12
    fp32 + Adam: 4 + 4 + (0 + 4 + 4) = 16;        pure bf16 + Adam: 2 + 2 + (0 + 2 + 2) = 8
    8-bit Adam (bitsandbytes): moments of 1 byte each, master copy as the recipe says.
ZeRO stage z over N GPUs (per GPU): 1 shards the optimizer states, 2 also the gradients,
3 also the weights (each sharded part divided by N).

Activations stored for the backward pass, per layer (Korthikanti et al. 2022, arXiv
2205.05198, section 4.1 and Table 2): each tensor a layer keeps, with e = 2 bytes per
element for 16-bit activations and 1 byte per dropout-mask element. For a GPT layer
(f = 4h, n_kv = a) they add up to 34 sbh + 5 a s^2 b bytes:
    attention: LayerNorm input 2sbh, Q/K/V projection input 2sbh, Q and K 4sbh,
               softmax output 2as^2b, its dropout mask as^2b, dropout output 2as^2b,
               V 2sbh, output-projection input 2sbh, dropout mask sbh   = 11sbh + 5as^2b
    MLP:       LayerNorm input 2sbh, up-projection input 2sbh, GeLU input 8sbh,
               down-projection input 8sbh, dropout mask sbh             = 19sbh (+4sbh
               for the two LayerNorms counted above)
The general items (`activation_items`) use the real widths: Q n_q d_h, K and V n_kv d_h,
the MLP f (SwiGLU keeps gate and up outputs, 2f, and the down input, f). Without dropout
the masks and the dropout output go. FlashAttention never stores the s x s matrices (it
recomputes them block by block in its backward), and Korthikanti's selective
recomputation drops them too: both leave 34 sbh. Its per-row softmax statistics
(4 a s b bytes) are left out. Tensor parallelism over t GPUs divides the items inside the
attention and the MLP by t; sequence parallelism divides the rest too (10sbh + 24sbh/t
and 34sbh/t in the paper's notation).

Outside the layers: the final-norm input and the output-layer input (e sbh each) and the
logits, s b V numbers kept in fp32 for the loss (4 bytes, as Korthikanti count them).

Checkpointing (full recomputation) every k layers keeps only each segment's input
(e sbh, a "checkpoint") during the forward pass and runs the segment's forward again just
before its backward. Step time in units of one layer's forward: forward 1, backward 2,
recompute 1 per layer (k does not change it: every layer is recomputed once).

Left out everywhere: the allocator's fragmentation and caching, the CUDA context and
library workspaces, temporary buffers inside a kernel or a collective, and the gradient
flowing between layers during the backward pass (e sbh).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from gpuviz.data import cache_by_key
from gpuviz.data.models import ModelConfig, model
from gpuviz.models import transformer as tf

GB = 1e9
MASK_BYTES = 1  # a dropout mask keeps one byte per element (Korthikanti et al. 2022)
LOGIT_BYTES = 4  # the loss is computed on fp32 logits
FP32_BYTES = 4
BACKWARD_PER_FORWARD = 2.0  # a backward pass costs about twice its forward (gradients of
# inputs and of weights)

# ---------------------------------------------------------------------------------------
# Precision recipes and optimizers
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """Bytes per element of each kind of tensor under one precision recipe."""

    key: str
    label: str
    weight_bytes: int
    grad_bytes: int
    master_bytes: int  # an fp32 copy of the weights kept by the optimizer (0: none)
    state_bytes: int  # one optimizer moment
    activation_bytes: int


RECIPES = {
    "mixed": Recipe("mixed", "Mixed bf16 + fp32 master", 2, 2, FP32_BYTES, FP32_BYTES, 2),
    "fp32": Recipe("fp32", "fp32 throughout", 4, 4, 0, FP32_BYTES, FP32_BYTES),
    "bf16": Recipe("bf16", "Pure bf16 (no master copy)", 2, 2, 0, 2, 2),
}


@dataclass(frozen=True)
class Optimizer:
    """moments: optimizer tensors per parameter; moment_bytes: their size when fixed by
    the optimizer itself (8-bit), else None (the recipe's state size)."""

    key: str
    label: str
    moments: int
    moment_bytes: int | None = None


OPTIMIZERS = {
    "adam": Optimizer("adam", "Adam", 2),
    "adam_8bit": Optimizer("adam_8bit", "Adam, 8-bit states", 2, 1),
    "sgd": Optimizer("sgd", "SGD with momentum", 1),
    "sgd_8bit": Optimizer("sgd_8bit", "SGD with momentum, 8-bit state", 1, 1),
}
EIGHT_BIT = {"adam": "adam_8bit", "sgd": "sgd_8bit"}  # the 8-bit version of an optimizer
ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class BytesPerParameter:
    weights: float
    gradients: float
    master: float
    moments: float

    @property
    def optimizer(self) -> float:
        """Optimizer states: the master copy and the moments (12 for mixed Adam)."""
        return self.master + self.moments

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def bytes_per_parameter(recipe: str = "mixed", optimizer: str = "adam") -> BytesPerParameter:
    """Bytes each parameter costs in weights, gradients and optimizer states."""
    r, o = RECIPES[recipe], OPTIMIZERS[optimizer]
    moment = o.moment_bytes if o.moment_bytes is not None else r.state_bytes
    return BytesPerParameter(r.weight_bytes, r.grad_bytes, r.master_bytes, o.moments * moment)


@dataclass(frozen=True)
class ModelStates:
    """Model-state bytes held by one GPU."""

    weights: float
    gradients: float
    optimizer: float  # master copy + moments

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def model_state_bytes(parameters: float, recipe: str = "mixed", optimizer: str = "adam",
                      zero_stage: int = 0, gpus: int = 1) -> ModelStates:
    """Weights, gradients and optimizer states of `parameters` on one GPU, bytes.

    ZeRO stage 1 divides the optimizer states by `gpus`, stage 2 also the gradients,
    stage 3 also the weights: per GPU (2 + 2 + 12) P becomes 4P + 12P/N, 2P + 14P/N and
    16P/N for mixed Adam."""
    if zero_stage not in ZERO_STAGES:
        raise ValueError(f"ZeRO stage must be one of {ZERO_STAGES}, not {zero_stage!r}")
    n = max(1, int(gpus))
    per = bytes_per_parameter(recipe, optimizer)
    p = float(parameters)
    return ModelStates(p * per.weights / (n if zero_stage >= 3 else 1),
                       p * per.gradients / (n if zero_stage >= 2 else 1),
                       p * per.optimizer / (n if zero_stage >= 1 else 1))


# ---------------------------------------------------------------------------------------
# Parameters of one layer, matrix by matrix
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeightBlock:
    name: str
    label: str
    count: int  # parameters


def layer_weight_blocks(cfg: ModelConfig) -> list[WeightBlock]:
    """Each weight matrix of one layer, then all its biases and norm gains together.
    Sums to `transformer.parameter_count(cfg).per_layer`. A mixture of experts' MLP
    matrices hold every expert's (and a shared expert's); its router and shared-expert
    gate (h E + h) join the biases and norms."""
    h, dh = cfg.hidden, cfg.head_dim
    f = cfg.experts * cfg.intermediate + cfg.shared_expert_intermediate
    q, kv = cfg.heads * dh, cfg.kv_heads * dh
    blocks = [WeightBlock("wq", "Q", h * q), WeightBlock("wk", "K", h * kv),
              WeightBlock("wv", "V", h * kv), WeightBlock("wo", "O", q * h)]
    if cfg.mlp == "swiglu":
        blocks += [WeightBlock("gate", "MLP gate", h * f), WeightBlock("up", "MLP up", h * f)]
    else:
        blocks.append(WeightBlock("up", "MLP up", h * f))
    blocks.append(WeightBlock("down", "MLP down", f * h))
    count = tf.parameter_count(cfg)
    small = count.per_layer - sum(block.count for block in blocks)
    blocks.append(WeightBlock("small", "Biases + norms", small))
    return blocks


def active_layer(cfg: ModelConfig) -> ModelConfig:
    """The dense layer one token runs through: a mixture of experts' routed and shared
    experts as one MLP as wide as they are together (a dense model is itself)."""
    return dataclasses.replace(cfg, intermediate=tf.active_mlp_width(cfg), experts=1,
                               experts_per_token=1, shared_expert_intermediate=0)


def llama_ffn_width(hidden: int, multiple_of: int = 256) -> int:
    """The Llama MLP width without a multiplier: (2/3) 4h rounded up to `multiple_of`
    (Meta's model code; 11,008 for h = 4,096), which keeps 3hf close to 8h^2."""
    return multiple_of * math.ceil(int(2 * 4 * hidden / 3) / multiple_of)


def layer_style(cfg: ModelConfig, style: str, mlp_ratio: float | None = None,
                kv_heads: int | None = None) -> ModelConfig:
    """The preset with a GPT-style layer (GeLU MLP, biases, LayerNorm) or a Llama-style
    one (SwiGLU, no biases, RMSNorm); optionally another MLP width f = ratio x h and
    another number of KV heads (rounded down to a divisor of the query heads).
    Embeddings and positions stay the preset's."""
    if style == "gpt":
        cfg = dataclasses.replace(cfg, mlp="gelu", bias=True, norm="layernorm")
    elif style == "llama":
        cfg = dataclasses.replace(cfg, mlp="swiglu", bias=False, norm="rmsnorm")
    else:
        raise ValueError(f"style must be 'gpt' or 'llama', not {style!r}")
    if mlp_ratio is not None:
        cfg = dataclasses.replace(cfg, intermediate=max(1, round(mlp_ratio * cfg.hidden)))
    if kv_heads is not None:
        cfg = dataclasses.replace(cfg, kv_heads=kv_head_divisor(cfg.heads, kv_heads))
    return cfg


def kv_head_divisor(heads: int, wanted: int) -> int:
    """The largest divisor of `heads` that is at most `wanted` (at least 1)."""
    wanted = max(1, min(int(wanted), heads))
    return max(d for d in range(1, wanted + 1) if heads % d == 0)


# ---------------------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------------------

SBH = "sbh"
AS2B = "as2b"


@dataclass(frozen=True)
class ActivationItem:
    """One tensor a layer keeps for its backward pass.

    width: numbers per token (for SBH items) or per head and query-key pair (AS2B items);
    mask: a 1-byte dropout mask; split_by_tp: inside the tensor-parallel region (divided
    by t even without sequence parallelism)."""

    name: str
    label: str
    op: str  # the operation that keeps it
    kind: str  # SBH or AS2B
    width: float
    mask: bool = False
    split_by_tp: bool = True

    def element_bytes(self, activation_bytes: float) -> float:
        return MASK_BYTES if self.mask else float(activation_bytes)

    def bytes(self, cfg: ModelConfig, seq: int, micro_batch: int,
              activation_bytes: float = 2, tp: int = 1, sp: bool = False) -> float:
        if self.kind == SBH:
            elements = seq * micro_batch * self.width
        else:
            elements = cfg.heads * seq * seq * micro_batch * self.width
        divide = tp if (self.split_by_tp or sp) else 1
        return elements * self.element_bytes(activation_bytes) / divide

    def units(self, cfg: ModelConfig, activation_bytes: float = 2) -> float:
        """Bytes in units of sbh (SBH items) or a s^2 b (AS2B items)."""
        per = self.width * self.element_bytes(activation_bytes)
        return per / cfg.hidden if self.kind == SBH else per


def activation_items(cfg: ModelConfig, dropout: bool = True) -> list[ActivationItem]:
    """Every tensor one layer keeps, in the order the forward pass makes them (see the
    module docstring); AS2B items are the attention core's s x s matrices. A mixture of
    experts keeps what each token's experts make, so its MLP is as wide as they are."""
    h, f = cfg.hidden, tf.active_mlp_width(cfg)
    q, kv = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    norm = "LayerNorm" if cfg.norm == "layernorm" else "RMSNorm"
    items = [
        ActivationItem("norm1_in", f"{norm} input", f"{norm} 1", SBH, h, split_by_tp=False),
        ActivationItem("qkv_in", "Q, K, V projection input", "QKV projection", SBH, h,
                       split_by_tp=False),
        ActivationItem("qk", "Q and K", "Scores Q·Kᵀ", SBH, q + kv),
        ActivationItem("softmax", "Softmax output", "Softmax", AS2B, 1),
    ]
    if dropout:
        items += [ActivationItem("softmax_mask", "Dropout mask", "Attention dropout", AS2B, 1,
                                 mask=True),
                  ActivationItem("softmax_drop", "Dropout output", "Attention dropout", AS2B,
                                 1)]
    items += [
        ActivationItem("v", "V", "Weights × V", SBH, kv),
        ActivationItem("o_in", "Output projection input", "Output projection", SBH, q),
    ]
    if dropout:
        items.append(ActivationItem("attn_mask", "Dropout mask", "Dropout after attention",
                                    SBH, h, mask=True, split_by_tp=False))
    items += [
        ActivationItem("norm2_in", f"{norm} input", f"{norm} 2", SBH, h, split_by_tp=False),
        ActivationItem("mlp_in", "MLP input", "MLP up projection", SBH, h, split_by_tp=False),
    ]
    if cfg.mlp == "swiglu":
        items.append(ActivationItem("gate_up", "Gate and up outputs", "SiLU(gate) × up", SBH,
                                    2 * f))
    else:
        items.append(ActivationItem("act_in", "GeLU input", "GeLU", SBH, f))
    items.append(ActivationItem("down_in", "Down projection input", "MLP down projection",
                                SBH, f))
    if dropout:
        items.append(ActivationItem("mlp_mask", "Dropout mask", "Dropout after the MLP", SBH,
                                    h, mask=True, split_by_tp=False))
    return items


def layer_activation_units(cfg: ModelConfig, activation_bytes: float = 2,
                           dropout: bool = True) -> tuple[float, float]:
    """(sbh coefficient, a s^2 b coefficient) of one layer: (34, 5) for GPT with 16-bit
    activations and dropout."""
    items = activation_items(cfg, dropout)
    return (sum(i.units(cfg, activation_bytes) for i in items if i.kind == SBH),
            sum(i.units(cfg, activation_bytes) for i in items if i.kind == AS2B))


def layer_activation_bytes(cfg: ModelConfig, seq: int, micro_batch: int,
                           activation_bytes: float = 2, *, flash: bool = False,
                           selective: bool = False, dropout: bool = True, tp: int = 1,
                           sp: bool = False) -> float:
    """Bytes one layer keeps for its backward pass (34 sbh + 5 a s^2 b for GPT, 16-bit).
    flash (FlashAttention) or selective (recompute the attention core) leave out the
    a s^2 b items; tp and sp divide as Korthikanti Table 2."""
    skip_scores = flash or selective
    return sum(item.bytes(cfg, seq, micro_batch, activation_bytes, tp, sp)
               for item in activation_items(cfg, dropout)
               if not (skip_scores and item.kind == AS2B))


def checkpoint_bytes(cfg: ModelConfig, seq: int, micro_batch: int,
                     activation_bytes: float = 2, tp: int = 1, sp: bool = False) -> float:
    """One checkpoint, the input of a layer: e s b h bytes (2 sbh in 16 bits)."""
    return seq * micro_batch * cfg.hidden * activation_bytes / (tp if sp else 1)


def head_activation_bytes(cfg: ModelConfig, seq: int, micro_batch: int,
                          activation_bytes: float = 2) -> float:
    """Final-norm input and output-layer input: 2 e s b h bytes."""
    return 2 * seq * micro_batch * cfg.hidden * activation_bytes


def logits_bytes(cfg: ModelConfig, seq: int, micro_batch: int,
                 logit_bytes: float = LOGIT_BYTES) -> float:
    """The logits of every token, kept for the loss: s b V x 4 bytes (fp32)."""
    return seq * micro_batch * cfg.vocab * logit_bytes


# ---------------------------------------------------------------------------------------
# Checkpointing and the step timeline
# ---------------------------------------------------------------------------------------

NONE = "none"
EVERY_K = "every_k"
SELECTIVE = "selective"
POLICIES = (NONE, EVERY_K, SELECTIVE)


@dataclass(frozen=True)
class StepTimeline:
    """Memory over one training step (bytes, beyond the model states) at the vertices t
    (time in units of one layer's forward pass); linear between vertices.

    checkpoints, activations, logits: stacked parts; recompute: (n, 2) start and end of
    each recomputed forward; turn: when the backward pass begins; peak: the largest
    checkpoints + activations + logits, first reached at peak_time."""

    t: np.ndarray
    checkpoints: np.ndarray
    activations: np.ndarray
    logits: np.ndarray
    recompute: np.ndarray
    turn: float
    step_time: float
    peak: float
    peak_time: float

    @property
    def total(self) -> np.ndarray:
        return self.checkpoints + self.activations + self.logits


def step_timeline(layers: int, layer_bytes: float, checkpoint: float, head_bytes: float,
                  logit_bytes: float, policy: str = NONE, every: int = 1,
                  head_time: float = 1.0, recompute_time: float = 1.0) -> StepTimeline:
    """Stored bytes through forward and backward of `layers` layers.

    layer_bytes: what one layer keeps (already without the a s^2 b items under
    FlashAttention or selective recomputation); checkpoint: one segment input;
    head_bytes and logit_bytes: what the output layer and the loss keep; head_time: the
    output layer's forward in layer-forward units; recompute_time: the share of a layer's
    forward run again in its backward (1 for full recomputation, the attention core's
    share for selective). policy EVERY_K: checkpoint every `every` layers (segments of
    `every` layers from the first; the last may be shorter)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    k = max(1, min(int(every), layers))
    full = policy == EVERY_K
    rows: list[tuple[float, float, float, float]] = [(0.0, 0.0, 0.0, 0.0)]
    spans: list[tuple[float, float]] = []

    def add(dt: float, d_ckpt: float = 0.0, d_act: float = 0.0, d_logit: float = 0.0) -> None:
        t, c, a, g = rows[-1]
        rows.append((t + dt, c + d_ckpt, a + d_act, g + d_logit))

    for layer in range(layers):
        if full:
            if layer % k == 0:
                add(0.0, d_ckpt=checkpoint)
            add(1.0)
        else:
            add(1.0, d_act=layer_bytes)
    add(head_time, d_act=head_bytes, d_logit=logit_bytes)
    turn = rows[-1][0]
    add(BACKWARD_PER_FORWARD * head_time, d_act=-head_bytes, d_logit=-logit_bytes)
    if full:
        starts = list(range(0, layers, k))
        for start in reversed(starts):
            size = min(k, layers - start)
            begin = rows[-1][0]
            for _ in range(size):
                add(recompute_time, d_act=layer_bytes)
            spans.append((begin, rows[-1][0]))
            for _ in range(size):
                add(BACKWARD_PER_FORWARD, d_act=-layer_bytes)
            add(0.0, d_ckpt=-checkpoint)
    else:
        extra = recompute_time if policy == SELECTIVE else 0.0
        for _ in range(layers):
            if extra:
                begin = rows[-1][0]
                add(extra)
                spans.append((begin, rows[-1][0]))
            add(BACKWARD_PER_FORWARD, d_act=-layer_bytes)
    array = np.array(rows)
    # Sums of many floats drift by rounding; what is freed ends at exactly zero.
    array[:, 1:] = np.where(np.abs(array[:, 1:]) < 1e-6 * max(1.0, array[:, 1:].max()), 0.0,
                            array[:, 1:])
    total = array[:, 1:].sum(axis=1)
    at = int(np.argmax(total))
    return StepTimeline(array[:, 0], array[:, 1], array[:, 2], array[:, 3],
                        np.array(spans, dtype=float).reshape(-1, 2), turn,
                        float(array[-1, 0]), float(total[at]), float(array[at, 0]))


def checkpoint_peaks(layers: int, layer_bytes: float, checkpoint: float, head_bytes: float,
                     logit_bytes: float, every: np.ndarray) -> np.ndarray:
    """The peak of `step_timeline(..., policy=EVERY_K, every=k)` for each k in `every`,
    without building the timelines. With n = ceil(L/k) segments, the last of
    L - (n-1)k layers, the stored bytes are largest at one of:
      the turn:                          n C + head + logits
      the last segment recomputed:       n C + (L - (n-1)k) A
      any earlier segment recomputed:    (n-1) C + k A   (the latest of them, if n > 1)."""
    k = np.clip(np.asarray(every, dtype=int), 1, layers)
    n = -(-layers // k)
    last = layers - (n - 1) * k
    turn = n * checkpoint + head_bytes + logit_bytes
    final = n * checkpoint + last * layer_bytes
    earlier = np.where(n > 1, (n - 1) * checkpoint + k * layer_bytes, 0.0)
    return np.maximum(turn, np.maximum(final, earlier))


# ---------------------------------------------------------------------------------------
# One GPU's whole budget
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingMemory:
    """Everything one GPU holds at the peak of a training step, bytes.

    activations: stored layer activations, checkpoints and the output layer's inputs at
    the peak; logits: the loss's fp32 logits at the peak (0 when the peak comes later,
    during a recomputed backward)."""

    parameters: int
    states: ModelStates
    layer_bytes: float
    checkpoint_bytes: float
    timeline: StepTimeline

    @property
    def activations(self) -> float:
        i = int(np.argmax(self.timeline.total))
        return float(self.timeline.checkpoints[i] + self.timeline.activations[i])

    @property
    def logits(self) -> float:
        i = int(np.argmax(self.timeline.total))
        return float(self.timeline.logits[i])

    @property
    def peak(self) -> float:
        return self.states.total + self.timeline.peak


@functools.lru_cache(maxsize=512)
def layer_forward_flops(cfg: ModelConfig, seq: int, micro_batch: int) -> float:
    """FLOPs of one layer's forward pass over b sequences of s tokens (causal,
    FlashAttention-style), from the transformer module."""
    return tf.totals(tf.layer_ops(cfg, micro_batch, seq, "prefill"))[0]


@functools.lru_cache(maxsize=512)
def attention_core_share(cfg: ModelConfig, seq: int, micro_batch: int) -> float:
    """The attention core's share of a layer's forward FLOPs: what selective
    recomputation runs again."""
    core = tf.totals(tf.attention_ops(cfg, micro_batch, seq, "prefill", tf.BF16_BYTES))[0]
    return core / layer_forward_flops(cfg, seq, micro_batch)


@functools.lru_cache(maxsize=512)
def head_forward_time(cfg: ModelConfig, seq: int, micro_batch: int) -> float:
    """The output layer's forward (logits for every token) in layer-forward units."""
    head = tf.totals(tf.head_ops(cfg, micro_batch, seq, "prefill", all_logits=True))[0]
    return head / layer_forward_flops(cfg, seq, micro_batch)


@cache_by_key(maxsize=256)
def training_memory(preset: str | ModelConfig, seq: int, micro_batch: int,
                    recipe: str = "mixed", optimizer: str = "adam", *, flash: bool = False,
                    policy: str = NONE, every: int = 1, zero_stage: int = 0, gpus: int = 1,
                    dropout: bool = True, tp: int = 1, sp: bool = False) -> TrainingMemory:
    """The memory of one GPU training `preset` (a key of resources/models or a
    ModelConfig) on micro-batches of `micro_batch` sequences of `seq` tokens.

    Layers are divided by tp (and by sp) as Korthikanti Table 2; pipeline stages are not
    modelled here (pass a config with fewer layers)."""
    cfg = model(preset) if isinstance(preset, str) else preset
    recipe_ = RECIPES[recipe]
    e = recipe_.activation_bytes
    parameters = tf.parameter_count(cfg).total
    states = model_state_bytes(parameters / max(1, tp), recipe, optimizer, zero_stage, gpus)
    layer = layer_activation_bytes(cfg, seq, micro_batch, e, flash=flash,
                                   selective=policy == SELECTIVE, dropout=dropout, tp=tp, sp=sp)
    ckpt = checkpoint_bytes(cfg, seq, micro_batch, e, tp, sp)
    if policy == EVERY_K:
        recompute = 1.0
    elif policy == SELECTIVE:
        recompute = attention_core_share(cfg, seq, micro_batch)
    else:
        recompute = 0.0
    timeline = step_timeline(cfg.layers, layer, ckpt,
                             head_activation_bytes(cfg, seq, micro_batch, e) / max(1, tp),
                             logits_bytes(cfg, seq, micro_batch) / max(1, tp), policy, every,
                             head_forward_time(cfg, seq, micro_batch), recompute)
    return TrainingMemory(parameters, states, layer, ckpt, timeline)


def gb(value: float) -> float:
    """Bytes to GB (10^9 bytes, as GPU memory is quoted)."""
    return value / GB
