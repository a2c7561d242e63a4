"""Figure 12.5: rounds of speculative decoding, and the best number of draft tokens.

Each round the draft model proposes γ tokens, one after another; the target model checks
all of them in one pass. Each draft token is accepted with probability a (taken, as in
Leviathan et al. 2023, independent of the others); the first rejected one is replaced by
a token the target draws from its residual and the rest are discarded; if all γ are
accepted, the same target pass yields one bonus token. A round gives k + 1 tokens for k
accepted, and token i of the round (i = 0 … γ) exists with probability a^i, so

    E[tokens per round] = Σ_{i=0..γ} a^i = (1 − a^(γ+1)) / (1 − a)     (γ + 1 at a = 1)

A round costs one target pass plus γ draft passes of c target passes each, so against
plain decoding (one token per target pass) the speed-up is

    S(γ) = (1 − a^(γ+1)) / ((1 − a)(γ c + 1)),

whose new terms shrink geometrically while the draft cost grows linearly: S has a best γ.
a = 0.8, γ = 4, c = 0.05: 3.3616 tokens per round, 2.80×; the best is γ = 8 at 3.09×.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, format_value

ROUNDS = 12
GAMMA_MAX = 16
ACCEPTED, REPLACED, BONUS, DISCARDED = "accepted", "replaced", "bonus", "discarded"


def expected_tokens(a: float, gamma: np.ndarray | int) -> np.ndarray:
    """Σ_{i=0..γ} a^i, over an array of γ."""
    g = np.asarray(gamma, dtype=float)
    if a >= 1.0:
        return g + 1.0
    return (1.0 - a ** (g + 1.0)) / (1.0 - a)


def speedup(a: float, gamma: np.ndarray | int, c: float) -> np.ndarray:
    return expected_tokens(a, gamma) / (np.asarray(gamma, dtype=float) * c + 1.0)


def simulate_rounds(a: float, gamma: int, rounds: int, seed: int) -> np.ndarray:
    """Accepted draft tokens of each seeded round (0 to γ)."""
    accepted = np.random.default_rng(seed).random((rounds, gamma)) < a
    return np.where(accepted.all(axis=1), gamma, np.argmin(accepted, axis=1))


def round_tokens(accepted: int, gamma: int) -> list[str]:
    """What each draft position of a round holds, and the bonus position if all pass."""
    if accepted == gamma:
        return [ACCEPTED] * gamma + [BONUS]
    return [ACCEPTED] * accepted + [REPLACED] + [DISCARDED] * (gamma - accepted - 1)


@dataclass(frozen=True)
class SpeculativeDecodingOut:
    gammas: np.ndarray  # 1 … GAMMA_MAX
    speedups: np.ndarray  # over gammas
    positions: np.ndarray  # a^i for i = 0 … γ
    expected: float
    speedup: float
    accepted: np.ndarray | None  # per simulated round; None before Simulate

    @property
    def best_gamma(self) -> int:
        return int(self.gammas[np.argmax(self.speedups)])

    @property
    def best_speedup(self) -> float:
        return float(self.speedups.max())

    @property
    def simulated_mean(self) -> float | None:
        return None if self.accepted is None else float(self.accepted.mean() + 1)


class SpeculativeDecodingModel(PredictFirstModel):
    """Figure 12.5: 12 simulated rounds, the a^i bars whose sum is the expected tokens per
    round, and the speed-up against γ with its best γ. Predict first: the expected tokens
    per round."""

    acceptance = Parameter(0.8, label="Acceptance rate a", minimum=0.0, maximum=1.0,
                           step=0.01, help="Chance that each draft token is accepted")
    gamma = Parameter(4, label="Draft tokens γ", minimum=1, maximum=GAMMA_MAX, step=1,
                      help="Tokens the draft model proposes per round")
    draft_cost = Parameter(0.05, label="Draft cost c", unit="× target", minimum=0.0,
                           maximum=1.0, step=0.01,
                           help="Time of one draft pass over one target pass")
    simulation = Parameter(0, label="Simulation", minimum=0, maximum=9999, step=1,
                           help=f"Seed of the {ROUNDS} simulated rounds (0: none yet; "
                                "Simulate draws others)")
    guess_tokens = Parameter(2.0, label="Tokens per round", minimum=1.0,
                             maximum=GAMMA_MAX + 1.0, step=0.1,
                             help="Your guess: tokens one round yields on average")
    guess_parameter = "guess_tokens"
    hidden_again_by = ("acceptance", "gamma")

    def compute(self) -> SpeculativeDecodingOut:
        a, c, g = self.acceptance, self.draft_cost, self.gamma
        gammas = np.arange(1, GAMMA_MAX + 1)
        accepted = simulate_rounds(a, g, ROUNDS, self.simulation) if self.simulation else None
        return SpeculativeDecodingOut(gammas, speedup(a, gammas, c),
                                      a ** np.arange(g + 1.0), float(expected_tokens(a, g)),
                                      float(speedup(a, g, c)), accepted)

    def answer_text(self) -> str:
        out = self.out
        return (f"{format_value(out.expected, 'tokens', digits=5)}: the sum of the bars aⁱ, "
                f"one per position that can still be reached. Your guess of "
                f"{format_value(self.guess_tokens, digits=2)} is "
                f"{self.how_close(self.guess_tokens, out.expected)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        mean = out.simulated_mean
        return {
            "expected": self.answer(Readout("Expected tokens per round", out.expected,
                                            digits=5)),
            "speedup": Readout("Speed-up at this γ", out.speedup, "×"),
            "best_gamma": Readout("Best γ", out.best_gamma),
            "best_speedup": Readout("Speed-up at the best γ", out.best_speedup, "×"),
            "simulated": Readout(f"Mean of {ROUNDS} simulated rounds", mean, digits=3,
                                 shown="" if mean is not None else "press Simulate"),
        }

    def message(self) -> tuple[str, bool]:
        out = self.out
        if self.acceptance <= self.draft_cost:
            return (f"With a ≤ c the draft never pays for itself: the best speed-up is "
                    f"{format_value(out.best_speedup, '×')}.", True)
        best = (f"The best γ is {out.best_gamma} "
                f"({format_value(out.best_speedup, '×')}); this γ gives "
                f"{format_value(out.speedup, '×')}.")
        if out.accepted is None:
            return best + f" Press Simulate {ROUNDS} rounds.", False
        return (f"{ROUNDS} rounds gave {int(out.accepted.sum() + ROUNDS)} tokens, "
                f"{format_value(out.simulated_mean, digits=3)} per round. " + best, False)
