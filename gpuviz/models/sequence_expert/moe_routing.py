"""Figure 10.5: mixture of experts: top-k routing, expert capacity and the all-to-all.

A seeded batch of T tokens, spread evenly over G GPUs, is routed by a router to the top k
of E experts (E / G experts per GPU). The router's scores are noise plus a skew that makes
the first experts popular. Each expert takes at most its capacity (Switch Transformer,
Fedus et al. 2021, section 2.2, with top-k):

    C = ceil(CF k T / E)         copies past C are dropped (the residual carries the token)

in the order the tokens come; with CF "none" nothing is dropped. A GPU's load is the
copies its experts compute; every GPU waits for the busiest one. The copies a GPU sends
to the experts of other GPUs (d_model values of 2 bytes each) make an uneven all-to-all
(`alpha_beta.uneven_all_to_all`).

Left out: the return all-to-all after the experts, the router's auxiliary loss and its
training, expert sizes and compute time (a copy is one unit of work), and token order
policies other than first come, first served.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, si_readout
from gpuviz.models.alpha_beta import AllToAll, uneven_all_to_all

TOKENS = 128
EXPERTS = 8
GPUS = 4
D_MODEL = 4096
ELEMENT_BYTES = 2
CAPACITIES = (("1.0", "1.0"), ("1.25", "1.25"), ("1.5", "1.5"), ("2.0", "2.0"),
              ("none", "none"))
TOP_K = (("1", "top-1"), ("2", "top-2"))


def route(skew: float, k: int, seed: int) -> np.ndarray:
    """(TOKENS, k) experts each token is sent to: the k best of noise + skew x popularity,
    where popularity falls linearly from expert 0 to expert E - 1."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((TOKENS, EXPERTS)) - skew * np.linspace(0, 1, EXPERTS)
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def capacity(factor: float | None, k: int) -> int | None:
    """C = ceil(CF k T / E) copies per expert; None without a limit."""
    return None if factor is None else math.ceil(factor * k * TOKENS / EXPERTS)


def kept_copies(experts: np.ndarray, limit: int | None) -> np.ndarray:
    """(TOKENS, k) bool: whether each copy fits under its expert's capacity, first come,
    first served (token by token, its first choice before its second)."""
    flat = experts.ravel()
    if limit is None:
        return np.ones(experts.shape, dtype=bool)
    order = np.zeros(flat.size, dtype=int)
    for e in range(EXPERTS):
        mine = flat == e
        order[mine] = np.arange(mine.sum())
    return (order < limit).reshape(experts.shape)


@dataclass(frozen=True)
class MoeOut:
    experts: np.ndarray  # (TOKENS, k) expert of each copy
    kept: np.ndarray  # (TOKENS, k) bool
    capacity: int | None
    per_expert: np.ndarray  # (EXPERTS,) copies routed
    computed: np.ndarray  # (EXPERTS,) copies kept
    gpu_load: np.ndarray  # (GPUS,) copies computed
    traffic: AllToAll

    @property
    def dropped_share(self) -> float:
        return float(1 - self.kept.mean())

    @property
    def imbalance(self) -> float:
        """The busiest GPU against the mean: the step takes this much longer than an
        even split would."""
        mean = self.gpu_load.mean()
        return float(self.gpu_load.max() / mean) if mean else 1.0


def moe_step(skew: float, k: int, factor: float | None, seed: int) -> MoeOut:
    experts = route(skew, k, seed)
    limit = capacity(factor, k)
    kept = kept_copies(experts, limit)
    per_expert = np.bincount(experts.ravel(), minlength=EXPERTS)
    computed = np.bincount(experts[kept], minlength=EXPERTS)
    gpu_load = computed.reshape(GPUS, -1).sum(axis=1)
    source = np.repeat(np.arange(TOKENS) * GPUS // TOKENS, k).reshape(experts.shape)
    target = experts * GPUS // EXPERTS
    copies = np.zeros((GPUS, GPUS))
    np.add.at(copies, (source[kept], target[kept]), 1)
    return MoeOut(experts, kept, limit, per_expert, computed, gpu_load,
                  uneven_all_to_all(copies * D_MODEL * ELEMENT_BYTES))


class MoeRoutingModel(PredictFirstModel):
    """Figure 10.5: top-k routing with a router skew and an expert capacity; the learner
    predicts the share of copies dropped first."""

    skew = Parameter(0.0, label="Router skew", minimum=0.0, maximum=3.0, step=0.1,
                     help="How much the router prefers the first experts")
    capacity_factor = Parameter("1.25", label="Capacity factor", choices=list(CAPACITIES),
                                help="Copies an expert takes, per even share")
    top_k = Parameter("2", label="Experts per token", choices=list(TOP_K),
                      help="Each token goes to its k best experts")
    seed = Parameter(1, label="Seed", minimum=0, maximum=9999, step=1,
                     help="Another batch of tokens")
    guess_dropped = Parameter(5.0, label="Copies dropped", unit="%", minimum=0.0,
                              maximum=100.0, step=1.0,
                              help="What share of the copies do you expect the experts to "
                                   "turn away at these settings?")
    guess_parameter = "guess_dropped"
    hidden_again_by = ("skew", "capacity_factor", "top_k", "seed")

    def compute(self) -> MoeOut:
        factor = None if self.capacity_factor == "none" else float(self.capacity_factor)
        return moe_step(self.skew, int(self.top_k), factor, self.seed)

    def answer_text(self) -> str:
        out = self.out
        dropped, guess = 100 * out.dropped_share, self.guess_dropped
        if out.capacity is None:
            why = "with no capacity every expert takes all its copies"
        else:
            over = int(out.kept.size - out.kept.sum())
            why = (f"{over} of {out.kept.size} copies arrive at an expert already holding "
                   f"{out.capacity}")
        return (f"{dropped:.1f}%: {why}. Your guess of {guess:.0f}% is "
                f"{self.how_close_in_points(guess, dropped)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "dropped": self.answer(Readout("Copies dropped", 100 * out.dropped_share, "%",
                                           decimals=1)),
            "imbalance": Readout("Slowest GPU / mean", out.imbalance, "×", digits=3),
            "capacity": (Readout("Capacity per expert", out.capacity, "copies")
                         if out.capacity is not None
                         else Readout("Capacity per expert", None, shown="none")),
            "all_to_all": si_readout("All-to-all, busiest GPU sends",
                                     float(out.traffic.sent.max()), "B"),
        }
