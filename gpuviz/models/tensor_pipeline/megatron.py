"""Figure 9.1: the Megatron split of a transformer MLP over t GPUs, step by step, and a
numerical check of it on random float32 matrices.

The MLP is out = GeLU(X A) B with X (b × h) the tokens, A (h × 4h) and B (4h × h).
Megatron (Shoeybi et al. 2019) splits A by columns, A = [A₁ … A_t], and B by rows, B =
[B₁; …; B_t]. GPU i holds X, A_i and B_i and computes, with no communication,

    Y_i = X A_i  (b × 4h/t),   Z_i = GeLU(Y_i),   P_i = Z_i B_i  (b × h, a partial sum)

because GeLU acts on each element and X A_i is a whole column block of X A. One all-reduce
sums the P_i: out = Σ P_i on every GPU. In the backward pass, from the output gradient
dO (the same on every GPU), dZ_i = dO B_iᵀ, dY_i = dZ_i ⊙ GeLU′(Y_i) and the weight
gradients dA_i = Xᵀ dY_i, dB_i = Z_iᵀ dO are all local; the input gradient
dX = Σ dY_i A_iᵀ is the one all-reduce.

Split A by rows instead (X by columns, X_i A_i) and each GPU holds a partial sum of the
whole X A: GeLU(Σ x) is not Σ GeLU(x), so the partial sums must be all-reduced before the
GeLU: an extra all-reduce of b × 4h numbers, four times the b × h of the one Megatron
needs. Then each GPU takes its columns of GeLU(X A) and goes on as above.

The side panel runs each split with numpy on random float32 matrices (b = 8, h = 16) and
reads out the largest difference from the unsplit result: a few 10⁻⁷, float32 rounding
in a different order. GeLU is the tanh approximation (as GPT-2).

Left out: biases, dropout, the attention block (split the same way by heads), and
sequence parallelism.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, Readout, SteppedModel

CHECK_TOKENS, CHECK_HIDDEN = 8, 16  # b and h of the numerical check
MLP_WIDTH = 4  # the MLP is 4h wide
COMPUTE, ALLREDUCE, EXTRA = "compute", "allreduce", "extra"  # kinds of a stage
MODES = (("forward", "Forward: columns, then rows"), ("backward", "Backward"),
         ("wrong", "Wrong split: rows first"))
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def sub(i: int) -> str:
    """GPU i's block index as a subscript, counted from 1 as in A₁ … A_t."""
    return str(i + 1).translate(_SUB)


@dataclass(frozen=True)
class Stage:
    """One step of the walk-through: what every GPU computes, or one all-reduce.

    blocks: the block GPU i makes (its label), or for an all-reduce the one result;
    width: the width of that tensor in units of h (its rows are the b tokens)."""

    title: str  # two short lines
    kind: str
    blocks: tuple[str, ...]
    width: float


def stages(mode: str, t: int) -> tuple[Stage, ...]:
    """The steps of `mode` ("forward", "backward", "wrong") on t GPUs."""
    gpus = range(t)
    shard = MLP_WIDTH / t
    if mode == "forward":
        return (
            Stage("X·Aᵢ\ncolumn-parallel", COMPUTE,
                  tuple(f"Y{sub(i)} = X A{sub(i)}" for i in gpus), shard),
            Stage("GeLU\nlocal", COMPUTE, tuple(f"Z{sub(i)} = GeLU(Y{sub(i)})" for i in gpus),
                  shard),
            Stage("Zᵢ·Bᵢ\nrow-parallel", COMPUTE, tuple(f"Z{sub(i)} B{sub(i)}" for i in gpus),
                  1.0),
            Stage("all-reduce\nof the output", ALLREDUCE, ("out = Σ Zᵢ Bᵢ\nb × h",), 1.0),
        )
    if mode == "backward":
        return (
            Stage("dO·Bᵢᵀ\n(and dBᵢ)", COMPUTE, tuple(f"dZ{sub(i)} = dO B{sub(i)}ᵀ" for i in gpus),
                  shard),
            Stage("GeLU′\nlocal", COMPUTE,
                  tuple(f"dY{sub(i)} = dZ{sub(i)}⊙GeLU′" for i in gpus), shard),
            Stage("dYᵢ·Aᵢᵀ\n(and dAᵢ)", COMPUTE,
                  tuple(f"dY{sub(i)} A{sub(i)}ᵀ" for i in gpus), 1.0),
            Stage("all-reduce of\nthe input gradient", ALLREDUCE, ("dX = Σ dYᵢ Aᵢᵀ\nb × h",), 1.0),
        )
    if mode == "wrong":
        return (
            Stage("Xᵢ·Aᵢ\nA split by rows", COMPUTE,
                  tuple(f"X{sub(i)} A{sub(i)}" for i in gpus), float(MLP_WIDTH)),
            Stage("all-reduce\nbefore GeLU", EXTRA, ("Y = Σ Xᵢ Aᵢ\nb × 4h",),
                  float(MLP_WIDTH)),
            Stage("GeLU of\nmy columns", COMPUTE, tuple(f"Z{sub(i)} = GeLU(Y){sub(i)}"
                                                       for i in gpus), shard),
            Stage("Zᵢ·Bᵢ\nrow-parallel", COMPUTE, tuple(f"Z{sub(i)} B{sub(i)}" for i in gpus),
                  1.0),
            Stage("all-reduce\nof the output", ALLREDUCE, ("out = Σ Zᵢ Bᵢ\nb × h",), 1.0),
        )
    raise ValueError(f"mode must be one of {[m for m, _ in MODES]}, not {mode!r}")


def held(mode: str, t: int) -> tuple[str, ...]:
    """What GPU i holds before the first step."""
    if mode == "forward":
        return tuple(f"X, A{sub(i)}, B{sub(i)}" for i in range(t))
    if mode == "backward":
        return tuple(f"dO, Y{sub(i)}, A{sub(i)}, B{sub(i)}" for i in range(t))
    return tuple(f"X{sub(i)}, A{sub(i)}, B{sub(i)}" for i in range(t))


# --- the numerical check ----------------------------------------------------------------
_GELU_C = math.sqrt(2 / math.pi)


def gelu(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), in x's dtype."""
    inner = x.dtype.type(_GELU_C) * (x + x.dtype.type(0.044715) * x ** 3)
    return x.dtype.type(0.5) * x * (1 + np.tanh(inner))


def gelu_grad(x: np.ndarray) -> np.ndarray:
    """d GeLU / dx of the tanh approximation."""
    f = x.dtype.type
    inner = f(_GELU_C) * (x + f(0.044715) * x ** 3)
    th = np.tanh(inner)
    return f(0.5) * (1 + th) + f(0.5) * x * (1 - th ** 2) * f(_GELU_C) * (
        1 + f(3 * 0.044715) * x ** 2)


@dataclass(frozen=True)
class SplitCheck:
    """Largest |split − unsplit| of each way to run the MLP on t GPUs (float32)."""

    forward: float  # columns then rows, one all-reduce
    backward: float  # the input gradient, one all-reduce
    rows_first: float  # A by rows with the extra all-reduce before GeLU
    rows_first_no_allreduce: float  # GeLU applied to the partial sums: wrong
    scale: float  # the largest |out|, for scale


@functools.lru_cache(maxsize=64)
def split_check(t: int, seed: int) -> SplitCheck:
    """Run the unsplit MLP and each split on seeded random float32 matrices."""
    rng = np.random.default_rng(seed)
    b, h, f = CHECK_TOKENS, CHECK_HIDDEN, MLP_WIDTH * CHECK_HIDDEN

    def draw(rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    x, a, w = draw(b, h, 1.0), draw(h, f, h ** -0.5), draw(f, h, f ** -0.5)
    d_out = draw(b, h, 1.0)
    cols = np.array_split(np.arange(f), t)  # columns of A (and rows of B) of each GPU
    rows = np.array_split(np.arange(h), t)  # rows of A (and columns of X), wrong split

    y = x @ a
    out = gelu(y) @ w
    d_x = ((d_out @ w.T) * gelu_grad(y)) @ a.T

    forward = sum(gelu(x @ a[:, c]) @ w[c] for c in cols)
    backward = sum(((d_out @ w[c].T) * gelu_grad(x @ a[:, c])) @ a[:, c].T for c in cols)
    partial = [x[:, r] @ a[r] for r in rows]
    summed = sum(partial)  # the extra all-reduce
    rows_first = sum(gelu(summed[:, c]) @ w[c] for c in cols)
    no_allreduce = sum(gelu(p[:, c]) @ w[c] for p, c in zip(partial, cols, strict=True))

    def largest(result: np.ndarray, truth: np.ndarray) -> float:
        return float(np.max(np.abs(result - truth)))

    return SplitCheck(largest(forward, out), largest(backward, d_x),
                      largest(rows_first, out), largest(no_allreduce, out),
                      float(np.max(np.abs(out))))


@dataclass(frozen=True)
class MegatronOut:
    mode: str
    gpus: int
    stages: tuple[Stage, ...]
    held: tuple[str, ...]
    done: int  # stages completed
    progress: float  # into the next stage while playing
    check: SplitCheck

    @property
    def allreduces(self) -> int:
        return sum(s.kind != COMPUTE for s in self.stages)

    @property
    def allreduced_width(self) -> float:
        """Numbers all-reduced per token, in units of h (1, or 5 for rows first)."""
        return sum(s.width for s in self.stages if s.kind != COMPUTE)


class MegatronModel(SteppedModel):
    """Figure 9.1: Next shows what each GPU computes in the Megatron MLP (forward,
    backward, or the wrong split by rows); the side panel checks the splits numerically
    (module docstring)."""

    gpus = Parameter(2, label="GPUs t", unit="GPUs", minimum=2, maximum=4, step=2,
                     help="GPUs the MLP is split over")
    mode = Parameter("forward", label="Show", choices=list(MODES),
                     help="The forward pass, the backward pass, or A split by rows")
    seed = Parameter(0, label="Random seed", minimum=0, maximum=9999, step=1,
                     help="The random matrices of the numerical check (New seed draws "
                          "others)")

    step_seconds = 1.2

    def parameter_changed(self, name: str) -> None:
        if name not in ("speed", "seed"):  # new matrices keep the walk-through's place
            self.reset_state()

    @property
    def total_steps(self) -> int:
        return len(stages(self.mode, self.gpus))

    def compute(self) -> MegatronOut:
        t = self.gpus
        return MegatronOut(self.mode, t, stages(self.mode, t), held(self.mode, t),
                           self.steps_done, self.step_progress, split_check(t, self.seed))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        now = "start"
        if out.done:
            stage = out.stages[out.done - 1]
            # An all-reduce by what it sums ("all-reduce of dX"): its header's words ran
            # past the readout's column ("all-reduce of th…").
            now = (f"all-reduce of {stage.blocks[0].split(' =')[0]}"
                   if stage.kind in (ALLREDUCE, EXTRA) else stage.title.replace("\n", " "))
        check = out.check
        extra = [s.width for s in out.stages if s.kind == EXTRA]
        needed = [s.width for s in out.stages if s.kind == ALLREDUCE]
        return {
            "step": Readout("Step", out.done, total=len(out.stages)),
            "now": Readout("This step", name=now),
            "allreduces": Readout("All-reduces", out.allreduces),
            "allreduced": Readout("All-reduced per token", out.allreduced_width, "× h",
                                  decimals=0),
            "extra": (Readout("Extra all-reduce, size", extra[0] / needed[0], "×")
                      if extra else Readout("Extra all-reduce, size", shown="none")),
            "forward": Readout("Forward, max |diff|", check.forward, digits=2),
            "backward": Readout("Backward dX, max |diff|", check.backward, digits=2),
            "rows_first": Readout("Rows first + extra all-reduce", check.rows_first,
                                  digits=2),
            "no_allreduce": Readout("Rows first, no extra all-reduce",
                                    check.rows_first_no_allreduce, digits=2),
        }
