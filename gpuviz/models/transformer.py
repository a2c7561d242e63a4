"""FLOPs, bytes and parameters of one decoder-only transformer, op by op.

Shared by the lessons that reason about whole models (2 roofline, 6 training memory,
8 data parallelism, 9 tensor/pipeline parallelism, 12 serving, 13 profiling). Pure
functions of a `ModelConfig` (gpuviz.data.models) and the workload; no figure state.

Symbols: h hidden size, f intermediate (MLP) size, n_q query heads, n_kv key/value heads,
d_h head size, V vocabulary, L layers, B sequences (batch), s tokens per sequence, b bytes
per element, T tokens processed by this pass.

Phases (inference forward pass):
  prefill: every sequence processes its s prompt tokens at once: T = B s, causal
           attention over the prompt.
  decode:  every sequence processes one new token: T = B; that token attends to the s
           positions in the KV cache (its own included), whose K and V are read from HBM.

One pre-norm layer, in execution order:
  norm -> Q, K, V projections -> (RoPE) -> attention core -> O projection -> residual add
  -> norm -> MLP (GeLU: up, GeLU, down | SwiGLU: gate, up, SiLU x up, down) -> residual add

Weight matmul (T x k) @ (k x n):   FLOPs 2Tkn (+ Tn for a bias)
                                   bytes b (kn [+ n] + Tk + Tn): weights, input, output
Attention core, per sequence and query head, over P scored pairs:
  scores S = Q K^T: 2 P d_h FLOPs; softmax: SOFTMAX_FLOPS per score; P V: 2 P d_h FLOPs
  P = s(s+1)/2 for causal prefill with a fused kernel (masked pairs skipped),
      s^2 for an unfused prefill (the matmul computes the full square, the mask is applied
      in the softmax), s for decode.
  fused (FlashAttention-style): one kernel reads Q, K, V once and writes O, scores stay on
      chip: bytes b (T n_q d_h + 2 B s n_kv d_h [decode: the KV cache] + T n_q d_h).
      In prefill K and V are the T = B s projected tokens: b (2 T n_q d_h + 2 T n_kv d_h).
  unfused: three kernels that write and read the score and probability matrices:
      scores reads Q and K and writes S, softmax reads S and writes P, PV reads P and V
      and writes O (scores stored with `score_bytes` per element).
  K and V are read once per KV head and shared by its n_q/n_kv query heads (GQA).
Elementwise (per element of a T x width tensor, read and written once; FLOP conventions):
  residual add 1 FLOP, reads two tensors, writes one;
  LayerNorm 7 FLOPs (mean add, subtract, square, variance add, scale by 1/sigma, gain,
  bias), RMSNorm 4 (square, add, scale, gain); the gain (and bias) vectors are read once;
  GeLU 8 (tanh approximation), SiLU(gate) x up 5 and reads two tensors;
  RoPE 3 per element of Q and K (two multiplies, one add), tables of s x d_h cos and sin.
Dropout is not modelled (inference). Small per-row costs (a square root per row) are left
out. All FLOPs count a multiply-add as 2 FLOPs.

Parameters per layer:
  attention  h n_q d_h + 2 h n_kv d_h + n_q d_h h  (+ n_q d_h + 2 n_kv d_h + h biases;
             Qwen2 has the Q, K and V ones only)
  MLP        GeLU 2hf (+ f + h biases); SwiGLU 3hf (+ 2f + h biases); a mixture of E
             experts has E of them, a router (h E) and maybe a shared expert with its
             gate (h); a token runs through k experts, so its ops are k f wide
  norms      2 x (2h for LayerNorm, h for RMSNorm)
Model: L x layer + V h token embedding + (learned positions: context x h) + final norm
       + (untied: V h output matrix). For GPT-3 this is 12 L h^2 + 13 L h + (V + s) h + 2h.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuviz.data.models import ModelConfig

BF16_BYTES = 2
PHASES = ("decode", "prefill")

# FLOPs per element of the elementwise ops (see the module docstring).
ADD_FLOPS = 1
LAYERNORM_FLOPS = 7
RMSNORM_FLOPS = 4
SOFTMAX_FLOPS = 5
GELU_FLOPS = 8
SWIGLU_FLOPS = 5
ROPE_FLOPS = 3

# Op groups, in the order a layer runs them.
NORM = "norm"
PROJECTION = "attention projection"
ATTENTION = "attention core"
MLP = "MLP"
ELEMENTWISE = "elementwise"
HEAD = "head"


@dataclass(frozen=True)
class Op:
    """One kernel: its work (FLOPs) and its HBM traffic (bytes).

    weight_bytes and kv_bytes are the parts of `bytes` that are parameters and KV-cache
    reads; the rest is activations. matmul_flops is the part of `flops` done by matrix
    multiplies (tensor cores); the rest is elementwise work. `weight_matmul` marks the
    matmuls with a weight matrix.
    """

    name: str
    label: str
    group: str
    flops: float
    bytes: float
    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    weight_matmul: bool = False
    matmul_flops: float = 0.0

    @property
    def intensity(self) -> float:
        """FLOP per byte (infinite for an op that moves nothing)."""
        return self.flops / self.bytes if self.bytes > 0 else math.inf

    @property
    def activation_bytes(self) -> float:
        return self.bytes - self.weight_bytes - self.kv_bytes


@dataclass(frozen=True)
class ParameterCount:
    """Parameter counts; attention, mlp, norms and per_layer are for one layer."""

    attention: int
    mlp: int
    norms: int
    per_layer: int
    layers: int  # all L layers
    token_embedding: int
    position_embedding: int
    final_norm: int
    output: int  # the untied output matrix (0 when tied)
    total: int
    active: int  # what one token runs through: the total less the experts it skips

    @property
    def embeddings(self) -> int:
        return self.token_embedding + self.position_embedding + self.output

    @property
    def non_embedding(self) -> int:
        return self.total - self.embeddings


# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------

def norm_parameters(cfg: ModelConfig) -> int:
    """Parameters of one norm: gain and bias for LayerNorm, gain only for RMSNorm."""
    return 2 * cfg.hidden if cfg.norm == "layernorm" else cfg.hidden


def parameter_count(cfg: ModelConfig) -> ParameterCount:
    """Exact parameter count (formulas in the module docstring)."""
    h, dh = cfg.hidden, cfg.head_dim
    q, kv = cfg.heads * dh, cfg.kv_heads * dh
    attention = h * q + 2 * h * kv + q * h
    if cfg.bias:
        attention += q + 2 * kv + h
    elif cfg.qkv_bias:
        attention += q + 2 * kv
    expert = mlp_parameters(cfg, cfg.intermediate)
    mlp = cfg.experts * expert
    if cfg.experts > 1:
        mlp += h * cfg.experts  # the router
    if cfg.shared_expert_intermediate:
        mlp += mlp_parameters(cfg, cfg.shared_expert_intermediate) + h  # and its gate
    norms = 2 * norm_parameters(cfg)
    per_layer = attention + mlp + norms
    token = cfg.vocab * h
    position = cfg.context * h if cfg.positions == "learned" else 0
    final = norm_parameters(cfg)
    output = 0 if cfg.tied_embeddings else cfg.vocab * h
    total = cfg.layers * per_layer + token + position + final + output
    skipped = cfg.layers * (cfg.experts - cfg.experts_per_token) * expert
    return ParameterCount(attention, mlp, norms, per_layer, cfg.layers * per_layer, token,
                          position, final, output, total, total - skipped)


def mlp_parameters(cfg: ModelConfig, width: int) -> int:
    """One MLP (or expert) `width` wide: 2 or 3 matrices, and their biases."""
    matrices = 3 if cfg.mlp == "swiglu" else 2
    return matrices * cfg.hidden * width + ((matrices - 1) * width + cfg.hidden
                                            if cfg.bias else 0)


def active_mlp_width(cfg: ModelConfig) -> int:
    """The MLP width one token runs through: its experts side by side (the intermediate
    size for a dense model)."""
    return cfg.intermediate * cfg.experts_per_token + cfg.shared_expert_intermediate


def kv_cache_bytes_per_token(cfg: ModelConfig, bytes_per_element: float = BF16_BYTES) -> float:
    """K and V of every layer for one token: 2 L n_kv d_h b bytes."""
    return 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * bytes_per_element


# ---------------------------------------------------------------------------------------
# Ops
# ---------------------------------------------------------------------------------------

def matmul_cost(m: float, k: float, n: float, bytes_per_element: float = BF16_BYTES
                ) -> tuple[float, float]:
    """(FLOPs, bytes) of (m x k) @ (k x n) reading both inputs and writing the output once:
    FLOPs 2mkn, bytes b (mk + kn + mn)."""
    return 2.0 * m * k * n, float(bytes_per_element) * (m * k + k * n + m * n)


def weight_matmul(name: str, label: str, group: str, tokens: float, k: int, n: int,
                  b: float, bias: bool) -> Op:
    """A linear layer on `tokens` rows: (tokens x k) @ (k x n) plus an optional bias."""
    products, _ = matmul_cost(tokens, k, n, b)
    weights = (k * n + (n if bias else 0)) * b
    activations = (tokens * k + tokens * n) * b
    return Op(name, label, group, products + (tokens * n if bias else 0.0),
              weights + activations, weight_bytes=weights, weight_matmul=True,
              matmul_flops=products)


def elementwise(name: str, label: str, group: str, elements: float, flops_per: float,
                b: float, inputs: int = 1, outputs: int = 1, extra_bytes: float = 0.0) -> Op:
    return Op(name, label, group, flops_per * elements,
              (inputs + outputs) * elements * b + extra_bytes)


def norm_op(cfg: ModelConfig, name: str, label: str, tokens: float, b: float) -> Op:
    per = LAYERNORM_FLOPS if cfg.norm == "layernorm" else RMSNORM_FLOPS
    kind = "LayerNorm" if cfg.norm == "layernorm" else "RMSNorm"
    params = norm_parameters(cfg) * b
    op = elementwise(name, f"{label} ({kind})", NORM, tokens * cfg.hidden, per, b,
                     extra_bytes=params)
    return Op(op.name, op.label, op.group, op.flops, op.bytes, weight_bytes=params)


def scored_pairs(context: int, phase: str, fused: bool, causal: bool = True) -> float:
    """Query-key pairs scored per sequence and query head (see the module docstring)."""
    s = float(context)
    if phase == "decode":
        return s
    if fused and causal:
        return s * (s + 1) / 2
    return s * s


def attention_ops(cfg: ModelConfig, batch: int, context: int, phase: str, b: float,
                  fused: bool = True, causal: bool = True,
                  score_bytes: float | None = None) -> list[Op]:
    """The attention core: one fused op, or scores, softmax and P V as three kernels."""
    _check_phase(phase)
    dh, nq, nkv = cfg.head_dim, cfg.heads, cfg.kv_heads
    tokens = batch * (1 if phase == "decode" else context)
    pairs = batch * nq * scored_pairs(context, phase, fused, causal)
    q_bytes = tokens * nq * dh * b
    o_bytes = q_bytes
    kv_tokens = batch * context  # decode: the cache; prefill: the freshly projected K, V
    k_bytes = kv_tokens * nkv * dh * b
    v_bytes = k_bytes
    kv_in_cache = k_bytes + v_bytes if phase == "decode" else 0.0
    score_flops = 2.0 * pairs * dh
    softmax_flops = SOFTMAX_FLOPS * pairs
    if fused:
        return [Op("attention", "Attention (fused)", ATTENTION,
                   2 * score_flops + softmax_flops, q_bytes + k_bytes + v_bytes + o_bytes,
                   kv_bytes=kv_in_cache, matmul_flops=2 * score_flops)]
    sb = b if score_bytes is None else score_bytes
    s_bytes = pairs * sb
    return [
        Op("scores", "Scores Q·Kᵀ", ATTENTION, score_flops, q_bytes + k_bytes + s_bytes,
           kv_bytes=kv_in_cache / 2, matmul_flops=score_flops),
        Op("softmax", "Softmax", ATTENTION, softmax_flops, 2 * s_bytes),
        Op("pv", "P·V", ATTENTION, score_flops, s_bytes + v_bytes + o_bytes,
           kv_bytes=kv_in_cache / 2, matmul_flops=score_flops),
    ]


def layer_ops(cfg: ModelConfig, batch: int, context: int, phase: str = "decode",
              bytes_per_element: float = BF16_BYTES, *, fused_attention: bool = True,
              causal: bool = True, score_bytes: float | None = None) -> list[Op]:
    """Every kernel of one layer for `batch` sequences.

    context: prompt length in prefill, KV-cache length (tokens attended to) in decode.
    Returns the ops in execution order; sum their FLOPs and bytes for the layer.
    """
    _check_phase(phase)
    if batch < 1 or context < 1:
        raise ValueError("batch and context must be at least 1")
    b = float(bytes_per_element)
    h, f, dh = cfg.hidden, active_mlp_width(cfg), cfg.head_dim
    tokens = float(batch * (1 if phase == "decode" else context))
    ops = [norm_op(cfg, "attn_norm", "Norm", tokens, b)]
    ops += [
        weight_matmul("q_proj", "Q projection", PROJECTION, tokens, h, cfg.heads * dh, b,
                      cfg.bias or cfg.qkv_bias),
        weight_matmul("k_proj", "K projection", PROJECTION, tokens, h, cfg.kv_heads * dh, b,
                      cfg.bias or cfg.qkv_bias),
        weight_matmul("v_proj", "V projection", PROJECTION, tokens, h, cfg.kv_heads * dh, b,
                      cfg.bias or cfg.qkv_bias),
    ]
    if cfg.positions == "rope":
        rotated = tokens * (cfg.heads + cfg.kv_heads) * dh
        # cos and sin tables for the positions of this pass (s in prefill, 1 in decode)
        tables = 2 * (context if phase == "prefill" else 1) * dh * b
        ops.append(elementwise("rope", "RoPE on Q, K", ELEMENTWISE, rotated, ROPE_FLOPS, b,
                               extra_bytes=tables))
    ops += attention_ops(cfg, batch, context, phase, b, fused_attention, causal, score_bytes)
    ops.append(weight_matmul("o_proj", "O projection", PROJECTION, tokens, cfg.heads * dh, h,
                             b, cfg.bias))
    ops.append(elementwise("residual_attn", "Residual add", ELEMENTWISE, tokens * h,
                           ADD_FLOPS, b, inputs=2))
    ops.append(norm_op(cfg, "mlp_norm", "Norm", tokens, b))
    if cfg.mlp == "swiglu":
        ops += [
            weight_matmul("mlp_gate", "MLP gate", MLP, tokens, h, f, b, cfg.bias),
            weight_matmul("mlp_up", "MLP up", MLP, tokens, h, f, b, cfg.bias),
            elementwise("mlp_act", "SiLU(gate) × up", MLP, tokens * f, SWIGLU_FLOPS, b,
                        inputs=2),
        ]
    else:
        ops += [
            weight_matmul("mlp_up", "MLP up", MLP, tokens, h, f, b, cfg.bias),
            elementwise("mlp_act", "GeLU", MLP, tokens * f, GELU_FLOPS, b),
        ]
    ops.append(weight_matmul("mlp_down", "MLP down", MLP, tokens, f, h, b, cfg.bias))
    ops.append(elementwise("residual_mlp", "Residual add", ELEMENTWISE, tokens * h,
                           ADD_FLOPS, b, inputs=2))
    return ops


def head_ops(cfg: ModelConfig, batch: int, context: int, phase: str = "decode",
             bytes_per_element: float = BF16_BYTES, *, all_logits: bool = False) -> list[Op]:
    """What runs once per pass outside the layers: embedding lookup (plus learned
    positions), final norm and the output matmul. Inference needs logits only for the
    last token of each sequence; `all_logits=True` computes them for every token
    (training)."""
    _check_phase(phase)
    b = float(bytes_per_element)
    h = cfg.hidden
    tokens = float(batch * (1 if phase == "decode" else context))
    rows = tokens * h
    if cfg.positions == "learned":
        embed = Op("embedding", "Embedding + positions", HEAD, ADD_FLOPS * rows, 3 * rows * b)
    else:
        embed = Op("embedding", "Embedding lookup", HEAD, 0.0, 2 * rows * b)
    logit_rows = tokens if all_logits or phase == "decode" else float(batch)
    return [
        embed,
        norm_op(cfg, "final_norm", "Final norm", logit_rows, b),
        weight_matmul("lm_head", "Output (logits)", HEAD, logit_rows, h, cfg.vocab, b, False),
    ]


def totals(ops: list[Op]) -> tuple[float, float]:
    """(FLOPs, bytes) summed over ops."""
    return sum(op.flops for op in ops), sum(op.bytes for op in ops)


@dataclass(frozen=True)
class PassCost:
    """One whole forward pass (L layers plus the head ops) as a whole-model roofline sees
    it: the work the tensor-core peak is quoted for, and the bytes that must come from
    HBM whatever the kernels. This is the one accounting of a pass (Lesson 12's decode
    step and prefill; Lesson 2 times the same ops one kernel at a time):
      flops     the matmul FLOPs: 2 per weight per token for every weight matrix (the
                output matrix only for the tokens that need logits) plus attention's
                Q·Kᵀ and P·V; elementwise work (norms, softmax, activation functions,
                residual adds) runs beside the tensor cores and is left out;
      weights   every parameter, read once per pass (N × b bytes); this counts the input
                embedding table whole, as the usual rule does, although a lookup reads
                only one row per token;
      kv_cache  K and V read from the cache (decode), in the cache's precision.
    Left out: the activations. A kernel-by-kernel count (each `Op`'s activation bytes)
    sends every kernel's input and output through HBM; a decode step's activations are a
    few MB per kernel, which fused kernels and the L2 cache keep mostly off HBM.
    """

    flops: float
    weights: float
    kv_cache: float

    @property
    def bytes(self) -> float:
        return self.weights + self.kv_cache


def forward_parts(cfg: ModelConfig, batch: int, context: int, phase: str = "decode",
                  bytes_per_element: float = BF16_BYTES, *,
                  kv_bytes_per_element: float | None = None, **options: object) -> PassCost:
    """The `PassCost` of one forward pass; `kv_bytes_per_element` stores the KV cache in
    another precision than the rest (an fp8 cache: 1)."""
    layer = layer_ops(cfg, batch, context, phase, bytes_per_element, **options)
    head = head_ops(cfg, batch, context, phase, bytes_per_element)

    def whole(attr: str) -> float:
        return (cfg.layers * sum(getattr(op, attr) for op in layer)
                + sum(getattr(op, attr) for op in head))

    cache_ratio = 1.0 if kv_bytes_per_element is None else (kv_bytes_per_element
                                                              / bytes_per_element)
    return PassCost(whole("matmul_flops"), parameter_count(cfg).total * bytes_per_element,
                    whole("kv_bytes") * cache_ratio)


def _check_phase(phase: str) -> None:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, not {phase!r}")
