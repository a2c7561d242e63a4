"""Lesson 2, roofline and arithmetic intensity: the roofline of a GPU (2.1), the batch at
which a matmul turns compute-bound (2.2), one transformer layer op by op (2.3) and the
four-step calculator (2.4).

Pure functions first (numbers in, numbers or frozen dataclasses out), then the figure
models. Units: FLOPs, bytes, seconds, FLOP/s, bytes/s; intensity in FLOP per byte.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    FigureModel,
    Parameter,
    PredictFirstModel,
    Readout,
    duration_readout,
    format_value,
    si_readout,
    time_readout,
)
from gpuviz.data import cache_by_key
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices, load_gpus
from gpuviz.data.models import DEFAULT_MODEL, ModelConfig, model, model_choices
from gpuviz.models import transformer as tf

BF16_BYTES = tf.BF16_BYTES
PRECISIONS = (("bf16", "BF16"), ("fp8", "FP8"))
FALLBACK_PRECISION = "bf16"
COMPUTE = "compute"
MEMORY = "memory"

# ---------------------------------------------------------------------------------------
# The roofline
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Roof:
    """The two roofs of one GPU at one precision."""

    gpu_key: str
    gpu_name: str
    precision: str  # the precision actually used
    requested: str  # the precision asked for
    peak: float  # FLOP/s
    bandwidth: float  # bytes/s

    @property
    def ridge(self) -> float:
        return ridge_point(self.peak, self.bandwidth)

    @property
    def fell_back(self) -> bool:
        return self.precision != self.requested


def gpu_roof(key: str, precision: str = "bf16") -> Roof:
    """Peak and bandwidth of a GPU; a precision it has no tensor-core peak for falls back
    to BF16 (the A100 has no FP8)."""
    g: GPU = gpu(key)
    used = precision if precision in g.precisions() else FALLBACK_PRECISION
    return Roof(key, g.name, used, precision, g.peak_flops(used), g.hbm_bandwidth)


def ridge_point(peak: float, bandwidth: float) -> float:
    """Intensity where the memory roof meets the compute roof: peak / bandwidth (FLOP/B)."""
    return peak / bandwidth


def attainable(intensity: float | np.ndarray, peak: float, bandwidth: float
               ) -> float | np.ndarray:
    """Roofline: attainable FLOP/s = min(peak, bandwidth x intensity)."""
    return np.minimum(peak, bandwidth * np.asarray(intensity, dtype=float)) \
        if isinstance(intensity, np.ndarray) else min(peak, bandwidth * intensity)


@dataclass(frozen=True)
class RooflineTime:
    """Minimum time of one kernel: the longer of compute time and memory time."""

    compute: float  # FLOPs / peak, s
    memory: float  # bytes / bandwidth, s
    time: float  # max of the two, s
    bound: str  # "compute" or "memory"

    @property
    def achieved(self) -> float:
        """Fraction of the peak this kernel can reach at best."""
        return self.compute / self.time if self.time > 0 else 0.0


def roofline_time(flops: float, nbytes: float, peak: float, bandwidth: float) -> RooflineTime:
    """time = max(FLOPs / peak, bytes / bandwidth); ties count as compute-bound."""
    compute = flops / peak
    memory = nbytes / bandwidth
    return RooflineTime(compute, memory, max(compute, memory),
                        COMPUTE if compute >= memory else MEMORY)


# ---------------------------------------------------------------------------------------
# Named ops (figures 2.1 and 2.4), from the transformer module
# ---------------------------------------------------------------------------------------

OPS_PRESET = "gpt3_6_7b"  # a GPT-style layer: LayerNorm, GeLU, d = 4096 as in figure 2.2
PREFILL_TOKENS = 2048
DECODE_CONTEXT = 2048
DECODE_BIG_BATCH = 64


@dataclass(frozen=True)
class NamedOp:
    key: str
    label: str
    detail: str  # where the numbers come from
    flops: float
    bytes: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes


@cache_by_key()
def named_ops(preset: str = OPS_PRESET) -> tuple[NamedOp, ...]:
    """Eight kernels of one layer of `preset`, with FLOPs and bytes from the transformer
    module: the residual add, softmax (unfused) and LayerNorm of a 2,048-token prefill,
    the MLP up matmul in decode (1 and 64 sequences) and in prefill, and fused attention
    in decode (2,048 cached tokens) and in prefill (2,048-token prompt)."""
    cfg = model(preset)
    s = PREFILL_TOKENS

    def pick(ops: list[tf.Op], name: str) -> tf.Op:
        return next(op for op in ops if op.name == name)

    prefill = tf.layer_ops(cfg, 1, s, "prefill")
    prefill_unfused = tf.layer_ops(cfg, 1, s, "prefill", fused_attention=False)
    decode = tf.layer_ops(cfg, 1, DECODE_CONTEXT, "decode")
    decode_big = tf.layer_ops(cfg, DECODE_BIG_BATCH, DECODE_CONTEXT, "decode")
    h, f = cfg.hidden, cfg.intermediate
    rows = [
        ("add", "Elementwise add", f"residual add of {s:,} × {h:,} bf16 values",
         pick(prefill, "residual_attn")),
        ("softmax", "Softmax", f"attention softmax over {s:,} × {s:,} scores × "
         f"{cfg.heads} heads (unfused)", pick(prefill_unfused, "softmax")),
        ("layernorm", "Layer norm", f"LayerNorm of {s:,} × {h:,}", pick(prefill, "attn_norm")),
        ("decode_matmul", "Decode matmul (1 seq.)",
         f"MLP up {h:,} → {f:,} for 1 token", pick(decode, "mlp_up")),
        ("decode_attention", "Decode attention",
         f"1 token attending to {DECODE_CONTEXT:,} cached tokens", pick(decode, "attention")),
        ("decode_matmul_64", f"Decode matmul ({DECODE_BIG_BATCH} seq.)",
         f"MLP up {h:,} → {f:,} for {DECODE_BIG_BATCH} tokens", pick(decode_big, "mlp_up")),
        ("prefill_attention", "Prefill attention",
         f"causal fused attention over a {s:,}-token prompt", pick(prefill, "attention")),
        ("prefill_matmul", "Prefill matmul", f"MLP up {h:,} → {f:,} for {s:,} tokens",
         pick(prefill, "mlp_up")),
    ]
    return tuple(NamedOp(key, label, f"{detail} ({cfg.short_name})", op.flops, op.bytes)
                 for key, label, detail, op in rows)


def named_op(key: str) -> NamedOp:
    return next(op for op in named_ops() if op.key == key)


def op_choices() -> list[tuple[str, str]]:
    return [(op.key, op.label) for op in named_ops()]


# ---------------------------------------------------------------------------------------
# Figure 2.1: the roofline
# ---------------------------------------------------------------------------------------

INTENSITY_SCALE_MIN = 1 / 64
INTENSITY_SCALE_MAX = 64.0


@dataclass(frozen=True)
class RooflineOut:
    roof: Roof
    keys: tuple[str, ...]
    labels: tuple[str, ...]
    flops: np.ndarray  # after the intensity scale
    bytes: np.ndarray
    intensity: np.ndarray  # FLOP/B
    attained: np.ndarray  # FLOP/s, on the roofline
    bounds: tuple[str, ...]
    times: np.ndarray  # minimum time, s
    scales: np.ndarray
    selected: int


def roofline_points(roof: Roof, ops: tuple[NamedOp, ...], scales: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """Each op's (FLOPs, bytes, intensity, attainable FLOP/s, bound) with its FLOPs
    multiplied by its intensity scale (the same bytes doing more or less work)."""
    nbytes = np.array([op.bytes for op in ops], dtype=float)
    flops = np.array([op.flops for op in ops], dtype=float) * scales
    intensity = flops / nbytes
    attained = attainable(intensity, roof.peak, roof.bandwidth)
    bounds = tuple(COMPUTE if i >= roof.ridge else MEMORY for i in intensity)
    return flops, nbytes, intensity, attained, bounds


class RooflineModel(FigureModel):
    """Figure 2.1: the roofline of one GPU with eight named ops.

    attainable = min(peak, bandwidth x intensity); ridge = peak / bandwidth; an op's
    minimum time is max(FLOPs / peak, bytes / bandwidth). A memory-bound op sits on the
    sloped roof, so another GPU moves it by the bandwidth ratio only. The intensity
    scale multiplies one op's FLOPs at fixed bytes (dragging it sideways); each op keeps
    its own scale.
    """

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Peak FLOP/s and HBM bandwidth come from this GPU's data sheet")
    precision = Parameter("bf16", label="Precision", choices=PRECISIONS,
                          help="Tensor-core precision of the compute roof; a GPU without "
                               "FP8 falls back to BF16")
    selected_op = Parameter("decode_matmul", label="Op", choices=op_choices,
                            help="The op whose numbers the readout shows (or click a point)")
    intensity_scale = Parameter(1.0, label="Intensity of this op", unit="×",
                                minimum=INTENSITY_SCALE_MIN, maximum=INTENSITY_SCALE_MAX,
                                log=True,
                                help="Multiply the selected op's FLOPs at the same bytes "
                                     "(or drag its point left or right)")

    def __init__(self, parent: object = None) -> None:
        self._scales: dict[str, float] = {}
        super().__init__(parent)

    def parameter_changed(self, name: str) -> None:
        if name == "selected_op":
            # Show the newly selected op's own scale; no second signal needed.
            self._values["intensity_scale"] = self._scales.get(self.selected_op, 1.0)
        elif name == "intensity_scale":
            self._scales[self.selected_op] = self.intensity_scale

    def reset_state(self) -> None:
        self._scales.clear()

    def scale_of(self, key: str) -> float:
        return self._scales.get(key, 1.0)

    def compute(self) -> RooflineOut:
        roof = gpu_roof(self.gpu, self.precision)
        ops = named_ops()
        scales = np.array([self.scale_of(op.key) for op in ops])
        flops, nbytes, intensity, attained, bounds = roofline_points(roof, ops, scales)
        times = np.maximum(flops / roof.peak, nbytes / roof.bandwidth)
        keys = tuple(op.key for op in ops)
        return RooflineOut(roof, keys, tuple(op.label for op in ops), flops, nbytes,
                           intensity, attained, bounds, times, scales,
                           keys.index(self.selected_op))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        roof = out.roof
        i = out.selected
        precision = dict(PRECISIONS)[roof.precision]
        return {
            "peak": Readout(f"Compute roof ({precision})", roof.peak / 1e12, "TFLOP/s"),
            "bandwidth": Readout("Memory roof (HBM)", roof.bandwidth / 1e12, "TB/s"),
            "ridge": Readout("Ridge point", roof.ridge, "FLOP/B"),
            # "Op ..." rows are the op chosen in the Op box above them.
            "op_flops": si_readout("Op FLOPs", out.flops[i], "FLOP"),
            "op_bytes": si_readout("Op bytes moved", out.bytes[i], "B"),
            "op_intensity": Readout("Op intensity", float(out.intensity[i]), "FLOP/B"),
            "op_attained": si_readout("Op attainable", out.attained[i], "FLOP/s"),
            "op_bound": Readout("Op bound", name=f"{out.bounds[i]}-bound"),
            "op_time": time_readout("Op minimum time", out.times[i]),
            # 1/64 reads 0.0156×, not 0.02× (a ratio's usual two places).
            "op_scale": Readout("Intensity scale", float(out.scales[i]), "×",
                                decimals=2 if out.scales[i] >= 0.1 else 4),
        }

    def message(self) -> tuple[str, bool]:
        out = self.out
        roof = out.roof
        if roof.fell_back:
            return (f"The {gpu(roof.gpu_key).short_name} has no FP8 tensor cores, so the "
                    f"compute roof shown is its BF16 peak.", True)
        i = out.selected
        op = named_ops()[i]
        if out.bounds[i] == MEMORY:
            gap = roof.ridge / out.intensity[i]
            return (f"{out.labels[i]}: {op.detail}. It is memory-bound: it would need "
                    f"{gap:,.0f}× more FLOPs per byte to reach the ridge.", False)
        return (f"{out.labels[i]}: {op.detail}. It is compute-bound: only a higher "
                f"FLOP/s peak makes it faster.", False)


# ---------------------------------------------------------------------------------------
# Figure 2.2: when does a matmul become compute-bound?
# ---------------------------------------------------------------------------------------

TABLE_BATCHES = (1, 8, 64, 256, 1024, 4096)
BATCH_MAX = 16384
CURVE_POINTS = 160


def square_matmul(batch: float, width: float, bytes_per_element: float = BF16_BYTES
                  ) -> tuple[float, float]:
    """(B x d) @ (d x d): FLOPs 2 B d^2, bytes b (d^2 + 2 B d) (weights, input, output)."""
    flops, nbytes = tf.matmul_cost(batch, width, width, bytes_per_element)
    return flops, nbytes


def matmul_intensity(batch: float | np.ndarray, width: float) -> float | np.ndarray:
    """Intensity of the bf16 (B x d) @ (d x d) matmul: B d / (d + 2B) FLOP/B."""
    return batch * width / (width + 2 * batch)


def intensity_ceiling(width: float) -> float:
    """The limit of B d / (d + 2B) as B grows: d / 2 FLOP/B."""
    return width / 2


def compute_bound_batch(ridge: float, width: float) -> float:
    """B* where B d / (d + 2B) = ridge: B* = ridge d / (d - 2 ridge); infinite when the
    ceiling d/2 is not above the ridge (no batch is large enough)."""
    if width <= 2 * ridge:
        return math.inf
    return ridge * width / (width - 2 * ridge)


@dataclass(frozen=True)
class MatmulRow:
    batch: int
    flops: float
    bytes: float
    intensity: float
    time: RooflineTime


@dataclass(frozen=True)
class MatmulOut:
    roof: Roof
    row: MatmulRow  # the current batch
    ceiling: float
    b_star: float  # inf when no batch is large enough
    table: tuple[MatmulRow, ...]
    curve_batch: np.ndarray
    curve_intensity: np.ndarray
    curve_compute: np.ndarray  # s
    curve_memory: np.ndarray  # s
    time_1: float  # s at B = 1
    time_64: float  # s at B = 64


def matmul_row(batch: int, width: int, roof: Roof) -> MatmulRow:
    flops, nbytes = square_matmul(batch, width)
    return MatmulRow(batch, flops, nbytes, flops / nbytes,
                     roofline_time(flops, nbytes, roof.peak, roof.bandwidth))


class MatmulBatchModel(PredictFirstModel):
    """Figure 2.2: the (B x d) @ (d x d) bf16 matmul of a layer with d features.

    FLOPs 2 B d^2; bytes 2 (d^2 + 2 B d); intensity B d / (d + 2B), rising with B to the
    ceiling d / 2; compute-bound from B* = ridge d / (d - 2 ridge) when d / 2 > ridge.
    time = max(FLOPs / peak, bytes / bandwidth). The learner guesses B* first.
    """

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="The ridge point is this GPU's peak BF16 FLOP/s over its bandwidth")
    width = Parameter(4096, label="Model width d", unit="", minimum=256, maximum=16384,
                      step=256, help="Features per token: the weight matrix is d × d")
    batch_size = Parameter(1, label="Batch B", unit="tokens", minimum=1, maximum=BATCH_MAX,
                      log=True, help="Rows of the input: tokens that share one read of the "
                                     "weights")
    guess_batch = Parameter(16, label="Your guess for B*", unit="tokens", minimum=1,
                            maximum=BATCH_MAX, log=True,
                            help="The batch at which you expect the matmul to become "
                                 "compute-bound")
    guess_parameter = "guess_batch"

    def compute(self) -> MatmulOut:
        roof = gpu_roof(self.gpu, "bf16")
        d = self.width
        batches = np.geomspace(1, BATCH_MAX, CURVE_POINTS)
        flops, nbytes = square_matmul(batches, d)
        return MatmulOut(
            roof, matmul_row(self.batch_size, d, roof), intensity_ceiling(d),
            compute_bound_batch(roof.ridge, d),
            tuple(matmul_row(b, d, roof) for b in TABLE_BATCHES),
            batches, matmul_intensity(batches, d), flops / roof.peak, nbytes / roof.bandwidth,
            matmul_row(1, d, roof).time.time, matmul_row(64, d, roof).time.time)

    def answer_text(self) -> str:
        out = self.out
        ridge = out.roof.ridge
        if math.isinf(out.b_star):
            return (f"No batch is large enough. With d = {self.width:,} the intensity "
                    f"can never pass d/2 = {out.ceiling:,.0f} FLOP/B, below the ridge of "
                    f"{ridge:,.0f} FLOP/B: this matmul stays memory-bound. (You guessed "
                    f"{self.guess_batch:,}.)")
        return (f"Compute-bound from B* = {out.b_star:,.0f}: there B·d/(d+2B) reaches the "
                f"ridge of {ridge:,.0f} FLOP/B. Your guess of {self.guess_batch:,} is "
                f"{self.how_close(self.guess_batch, out.b_star)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        row = out.row
        b_star = (Readout("Compute-bound from B*", shown="never")
                  if math.isinf(out.b_star) else
                  Readout("Compute-bound from B*", out.b_star, "tokens"))
        return {
            "flops": si_readout("Work", row.flops, "FLOP"),
            "bytes": si_readout("Bytes moved", row.bytes, "B"),
            "intensity": Readout("Intensity", row.intensity, "FLOP/B"),
            "ceiling": Readout("Ceiling d/2", out.ceiling, "FLOP/B"),
            "ridge": Readout(f"Ridge ({gpu(self.gpu).short_name})", out.roof.ridge, "FLOP/B"),
            "time": time_readout("Time", row.time.time),
            "bound": Readout("Bound", name=f"{row.time.bound}-bound"),
            "time_1": time_readout("Time at B = 1", out.time_1),
            "time_64": time_readout("Time at B = 64", out.time_64),
            "growth_64": Readout("Work ×64 costs extra time",
                                 100 * (out.time_64 / out.time_1 - 1), "%"),
            "b_star": self.answer(b_star),
        }


# ---------------------------------------------------------------------------------------
# Figure 2.3: the kernels of a single transformer layer
# ---------------------------------------------------------------------------------------

GQA_KV_HEADS = 8  # what Llama 2 70B and Llama 3 use

LAYER_OPS = (
    ("attn_norm", "Norm before attention"), ("q_proj", "Q projection"),
    ("k_proj", "K projection"), ("v_proj", "V projection"), ("rope", "RoPE"),
    ("attention", "Attention (fused)"), ("scores", "Scores Q·Kᵀ"), ("softmax", "Softmax"),
    ("pv", "P·V"), ("o_proj", "O projection"), ("residual_attn", "Residual add 1"),
    ("mlp_norm", "Norm before MLP"), ("mlp_gate", "MLP gate"), ("mlp_up", "MLP up"),
    ("mlp_act", "MLP activation"), ("mlp_down", "MLP down"), ("residual_mlp", "Residual add 2"),
)
# Where a selection goes when its op is not in the current layer.
OP_FALLBACK = {"rope": "q_proj", "attention": "scores", "scores": "attention",
               "softmax": "attention", "pv": "attention", "mlp_gate": "mlp_up"}


def gqa_kv_heads(cfg: ModelConfig) -> int:
    """KV heads in the GQA variant: the model's own if it uses GQA, else the largest
    divisor of the head count that is at most GQA_KV_HEADS and below it."""
    if cfg.kv_heads < cfg.heads:
        return cfg.kv_heads
    return max(k for k in range(1, min(GQA_KV_HEADS, cfg.heads - 1) + 1) if cfg.heads % k == 0) \
        if cfg.heads > 1 else 1


def with_attention(cfg: ModelConfig, attention: str) -> ModelConfig:
    kv = cfg.heads if attention == "mha" else gqa_kv_heads(cfg)
    return dataclasses.replace(cfg, kv_heads=kv)


@dataclass(frozen=True)
class LayerOut:
    config: ModelConfig
    roof: Roof
    ops: tuple[tf.Op, ...]
    times: tuple[RooflineTime, ...]
    total_time: float  # s, one layer
    total_flops: float
    total_bytes: float
    selected: int


def layer_times(ops: list[tf.Op], roof: Roof) -> list[RooflineTime]:
    return [roofline_time(op.flops, op.bytes, roof.peak, roof.bandwidth) for op in ops]


class LayerModel(FigureModel):
    """Figure 2.3: the roofline time of every kernel of one layer (transformer module),
    time = max(FLOPs / peak, bytes / bandwidth) per kernel, launch costs ignored.
    Decode: weight matmuls read their weights once for all B sequences, so their time
    stays flat until B nears the ridge, while attention reads every sequence's own KV
    cache and grows with B."""

    preset = Parameter(DEFAULT_MODEL, label="Model", choices=model_choices,
                       help="Layer shapes from the model's published configuration")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Peak BF16 FLOP/s and HBM bandwidth")
    phase = Parameter("decode", label="Phase",
                      choices=(("decode", "Decode"), ("prefill", "Prefill")),
                      help="Decode: one new token per sequence; prefill: the whole prompt")
    batch_size = Parameter(1, label="Batch", unit="sequences", minimum=1, maximum=1024, log=True,
                      help="Sequences processed together")
    context = Parameter(2048, label="Context", unit="tokens", minimum=128, maximum=131072,
                        log=True, help="Prompt length in prefill; tokens in the KV cache "
                                       "in decode")
    attention = Parameter("mha", label="Attention",
                          choices=(("mha", "MHA"), ("gqa", "GQA")),
                          help="MHA: a K and V head per query head; GQA: 8 KV heads shared "
                               "by groups of query heads")
    fused_attention = Parameter(True, label="Fused attention (FlashAttention)",
                                help="Off: scores and probabilities go through HBM in three "
                                     "kernels")
    selected_op = Parameter("mlp_up", label="Op", choices=LAYER_OPS,
                            help="The op whose numbers the readout shows (or click its bar)")

    def parameter_changed(self, name: str) -> None:
        if name == "preset":
            cfg = model(self.preset)
            self.set("attention", "mha" if cfg.kv_heads == cfg.heads else "gqa")
        names = {op.name for op in self.layer()}
        if self.selected_op not in names:
            self.set("selected_op", OP_FALLBACK.get(self.selected_op, "mlp_up"))

    def config(self) -> ModelConfig:
        return with_attention(model(self.preset), self.attention)

    def layer(self) -> list[tf.Op]:
        return tf.layer_ops(self.config(), self.batch_size, self.context, self.phase,
                            fused_attention=self.fused_attention)

    def compute(self) -> LayerOut:
        roof = gpu_roof(self.gpu, "bf16")
        ops = self.layer()
        times = layer_times(ops, roof)
        names = [op.name for op in ops]
        selected = names.index(self.selected_op) if self.selected_op in names else 0
        flops, nbytes = tf.totals(ops)
        return LayerOut(self.config(), roof, tuple(ops), tuple(times),
                        sum(t.time for t in times), flops, nbytes, selected)

    def share(self, predicate: object) -> float:
        out = self.out
        part = sum(t.time for op, t in zip(out.ops, out.times, strict=True) if predicate(op))
        return part / out.total_time if out.total_time > 0 else 0.0

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        cfg = out.config
        op, t = out.ops[out.selected], out.times[out.selected]
        memory_bound = sum(1 for x in out.times if x.bound == MEMORY)
        return {
            "layer_time": duration_readout("One layer", out.total_time),
            "model_time": duration_readout(f"All {cfg.layers} layers",
                                           out.total_time * cfg.layers),
            "layer_flops": si_readout("Layer FLOPs", out.total_flops, "FLOP"),
            "layer_bytes": si_readout("Layer bytes", out.total_bytes, "B"),
            "weight_share": Readout("Weight matmuls", 100 * self.share(
                lambda o: o.weight_matmul), "% of time"),
            "attention_share": Readout("Attention core", 100 * self.share(
                lambda o: o.group == tf.ATTENTION), "% of time"),
            "memory_bound": Readout("Memory-bound ops", memory_bound, total=len(out.ops)),
            "kv_heads": Readout("KV heads", cfg.kv_heads, total=cfg.heads),
            # "Op ..." rows are the op chosen in the Op box (or by a click on its bar).
            "op_flops": si_readout("Op FLOPs", op.flops, "FLOP"),
            "op_bytes": si_readout("Op bytes", op.bytes, "B"),
            "op_intensity": Readout("Op intensity", op.intensity, "FLOP/B"),
            "op_bound": Readout("Op bound", name=f"{t.bound}-bound"),
            "op_time": duration_readout("Op time", t.time),
        }

    def message(self) -> tuple[str, bool]:
        cfg = model(self.preset)
        if self.context > cfg.context:
            return (f"{cfg.name} was trained for {cfg.context:,} tokens; a {self.context:,}"
                    "-token context is beyond it (the numbers still follow the formulas).",
                    True)
        weights = self.share(lambda o: o.weight_matmul)
        attention = self.share(lambda o: o.group == tf.ATTENTION)
        lead = "weight matmuls" if weights >= attention else "attention core"
        return (f"The {lead} take{'' if weights >= attention else 's'} most of the layer's time "
                f"({format_value(100 * max(weights, attention), '%')}).", False)


# ---------------------------------------------------------------------------------------
# Figure 2.4: the four-step calculator
# ---------------------------------------------------------------------------------------

CUSTOM = "custom"
FLOPS_MAX = 1e18
BYTES_MAX = 1e15
NEXT_GPU = "next"
_MATCH = 1e-6  # relative tolerance for "these numbers are the picked op's"


def calculator_op_choices() -> list[tuple[str, str]]:
    return [*op_choices(), (CUSTOM, "Your own numbers")]


def faster_gpu_choices() -> list[tuple[str, str]]:
    return [(NEXT_GPU, "Next in the list"), *gpu_choices()]


def next_gpu(key: str) -> str | None:
    keys = list(load_gpus())
    index = keys.index(key)
    return keys[index + 1] if index + 1 < len(keys) else None


@dataclass(frozen=True)
class WhatIf:
    label: str
    time: float  # s
    speedup: float


@dataclass(frozen=True)
class CalculatorOut:
    roof: Roof
    flops: float
    bytes: float
    intensity: float
    time: RooflineTime
    other_gpu: str | None
    what_ifs: tuple[WhatIf, ...]  # another GPU, bytes halved, peak doubled


def what_ifs(flops: float, nbytes: float, roof: Roof, other: Roof | None
             ) -> tuple[WhatIf, ...]:
    """Speed-ups of three changes: another GPU, half the bytes, twice the FLOP/s.
    A memory-bound op gains nothing from more FLOP/s, a compute-bound one nothing from
    fewer bytes."""
    base = roofline_time(flops, nbytes, roof.peak, roof.bandwidth).time
    faster = (roofline_time(flops, nbytes, other.peak, other.bandwidth).time
              if other is not None else base)
    half = roofline_time(flops, nbytes / 2, roof.peak, roof.bandwidth).time
    double = roofline_time(flops, nbytes, 2 * roof.peak, roof.bandwidth).time
    gpu_label = f"On {gpu(other.gpu_key).short_name}" if other else "No faster GPU listed"
    return tuple(WhatIf(label, t, base / t if t > 0 else 1.0) for label, t in (
        (gpu_label, faster), ("Half the bytes", half), ("Twice the FLOP/s", double)))


class CalculatorModel(FigureModel):
    """Figure 2.4: the four steps. (1) FLOPs and bytes of the op; (2) compute time =
    FLOPs / peak; (3) memory time = bytes / bandwidth; (4) time = the larger, which names
    the bound. Then the speed-up of a faster GPU, of half the bytes and of twice the
    FLOP/s, each time_before / time_after."""

    op = Parameter("decode_matmul", label="Op", choices=calculator_op_choices,
                   help="Pick an op from figure 2.1, or type your own numbers below")
    flops = Parameter(named_op("decode_matmul").flops, label="FLOPs", unit="FLOP",
                      minimum=1.0, maximum=FLOPS_MAX,
                      help="Floating-point operations of the kernel (a multiply-add is 2)")
    bytes_moved = Parameter(named_op("decode_matmul").bytes, label="Bytes moved", unit="B",
                      minimum=1.0, maximum=BYTES_MAX,
                      help="Bytes the kernel reads from and writes to HBM")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Peak BF16 FLOP/s and HBM bandwidth")
    faster_gpu = Parameter(NEXT_GPU, label="Faster GPU", choices=faster_gpu_choices,
                           help="The GPU of the first what-if: the next one in the list or "
                                "any you choose")

    def __init__(self, parent: object = None) -> None:
        self._loading = False
        super().__init__(parent)

    def parameter_changed(self, name: str) -> None:
        if self._loading:
            return
        if name == "op" and self.op != CUSTOM:
            op = named_op(self.op)
            self._loading = True
            try:
                self.set("flops", op.flops)
                self.set("bytes_moved", op.bytes)
            finally:
                self._loading = False
        elif name in ("flops", "bytes_moved") and self.op != CUSTOM:
            op = named_op(self.op)
            if not (math.isclose(self.flops, op.flops, rel_tol=_MATCH)
                    and math.isclose(self.bytes_moved, op.bytes, rel_tol=_MATCH)):
                self.set("op", CUSTOM)

    def other_gpu(self) -> str | None:
        return next_gpu(self.gpu) if self.faster_gpu == NEXT_GPU else self.faster_gpu

    def compute(self) -> CalculatorOut:
        roof = gpu_roof(self.gpu, "bf16")
        other_key = self.other_gpu()
        other = gpu_roof(other_key, "bf16") if other_key else None
        time = roofline_time(self.flops, self.bytes_moved, roof.peak, roof.bandwidth)
        return CalculatorOut(roof, self.flops, self.bytes_moved, self.flops / self.bytes_moved,
                             time, other_key, what_ifs(self.flops, self.bytes_moved, roof,
                                                       other))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        gains = {f"speedup_{key}": Readout(w.label, w.speedup, "×")
                 for key, w in zip(("gpu", "bytes", "flops"), out.what_ifs, strict=True)}
        return {
            "flops": si_readout("1. Work", out.flops, "FLOP"),
            "bytes": si_readout("1. Bytes moved", out.bytes, "B"),
            "intensity": Readout("Intensity", out.intensity, "FLOP/B"),
            "ridge": Readout("Ridge point", out.roof.ridge, "FLOP/B"),
            "compute_time": duration_readout("2. Compute time", out.time.compute),
            "memory_time": duration_readout("3. Memory time", out.time.memory),
            "time": duration_readout("4. Time", out.time.time),
            "bound": Readout("Bound", name=f"{out.time.bound}-bound"),
            **gains,
        }
