"""Figure 12.4: speculative sampling at one position, the rule that makes a cheap draft
model's guesses come out exactly as the target model would have sampled them.

The draft proposes token x with probability q(x); the target keeps it with probability
min(1, p(x)/q(x)); if not kept, a token is drawn from the residual
r = max(0, p − q) / Σ max(0, p − q). Per token,

    kept       = q · min(1, p/q)        = min(p, q)
    resampled  = P(reject) · r          = (1 − Σ min(p, q)) · r = max(0, p − q)
    emitted    = min(p, q) + max(0, p − q) = p            (exactly)

(Σ max(0, p − q) = 1 − Σ min(p, q), since both p and q sum to 1.) The acceptance rate is
β = Σ min(p, q), one minus the total variation distance between p and q.

The draft here is a mix of the target and a poor guess w: q = s·p + (1 − s)·w, for a draft
quality s from 0 to 1, so β = 1 − (1 − s)·TV(p, w). Sample draws DRAWS tokens through the
rule with numpy's seeded generator and tests their counts against p with Pearson's
chi-square, k − 1 degrees of freedom, at the 1% level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, format_value

DRAWS = 2000
# (token, target p, poor draft w) for each vocabulary size
VOCABULARIES = {
    2: (("cat", 0.7, 0.2), ("dog", 0.3, 0.8)),
    4: (("cat", 0.45, 0.1), ("dog", 0.3, 0.15), ("fox", 0.15, 0.35), ("owl", 0.1, 0.4)),
}
VOCABULARY_CHOICES = (("2", "2 tokens"), ("4", "4 tokens"))
# The 99th percentile of the chi-square distribution with k − 1 degrees of freedom
# (numpy has no chi-square quantile; these are the table values).
CHI_SQUARE_99 = {1: 6.6349, 3: 11.3449}


@dataclass(frozen=True)
class Speculation:
    """One position's target and draft, and what the rule emits (arrays over tokens)."""

    tokens: tuple[str, ...]
    p: np.ndarray
    q: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        return np.minimum(self.p, self.q)

    @property
    def acceptance(self) -> float:
        return float(self.kept.sum())

    @property
    def accept_probability(self) -> np.ndarray:
        """min(1, p/q) for each drafted token."""
        return np.minimum(1.0, self.p / self.q)

    @property
    def residual(self) -> np.ndarray:
        """norm(max(0, p − q)); all zero when the draft is the target (nothing rejected)."""
        excess = np.maximum(0.0, self.p - self.q)
        total = excess.sum()
        return excess / total if total > 0 else excess

    @property
    def resampled(self) -> np.ndarray:
        return (1.0 - self.acceptance) * self.residual

    @property
    def emitted(self) -> np.ndarray:
        return self.kept + self.resampled


def speculation(vocabulary: int, quality: float) -> Speculation:
    tokens, p, w = zip(*VOCABULARIES[vocabulary], strict=True)
    p, w = np.array(p), np.array(w)
    return Speculation(tokens, p, quality * p + (1.0 - quality) * w)


def sample(spec: Speculation, seed: int, draws: int = DRAWS) -> np.ndarray:
    """Emitted-token counts of `draws` seeded runs of the accept/resample rule."""
    rng = np.random.default_rng(seed)
    k = len(spec.p)
    drafted = rng.choice(k, size=draws, p=spec.q)
    kept = rng.random(draws) < spec.accept_probability[drafted]
    residual = spec.residual
    replaced = rng.choice(k, size=draws, p=residual) if residual.sum() > 0 else drafted
    return np.bincount(np.where(kept, drafted, replaced), minlength=k)


def chi_square(counts: np.ndarray, p: np.ndarray) -> float:
    expected = counts.sum() * p
    return float(((counts - expected) ** 2 / expected).sum())


@dataclass(frozen=True)
class SpeculativeSamplingOut:
    spec: Speculation
    counts: np.ndarray | None  # None until Sample is pressed

    @property
    def frequencies(self) -> np.ndarray | None:
        return None if self.counts is None else self.counts / self.counts.sum()

    @property
    def chi_square(self) -> float | None:
        return None if self.counts is None else chi_square(self.counts, self.spec.p)

    @property
    def critical(self) -> float:
        return CHI_SQUARE_99[len(self.spec.p) - 1]

    @property
    def matches(self) -> bool | None:
        """The draws are consistent with p at the 1% level."""
        chi = self.chi_square
        return None if chi is None else chi < self.critical


class SpeculativeSamplingModel(FigureModel):
    """Figure 12.4: target p, draft q, what the accept/resample rule emits, and 2,000
    seeded draws that check it."""

    vocabulary = Parameter("2", label="Vocabulary", choices=VOCABULARY_CHOICES,
                           help="Tokens the two models choose among at this position")
    quality = Parameter(0.5, label="Draft quality", minimum=0.0, maximum=1.0, step=0.01,
                        help="0: the draft is a poor guess; 1: the draft is the target")
    draws = Parameter(0, label="Sample", minimum=0, maximum=9999, step=1,
                      help=f"Seed of the {DRAWS:,} draws (0: none yet; Sample draws "
                           "again)")

    def compute(self) -> SpeculativeSamplingOut:
        spec = speculation(int(self.vocabulary), self.quality)
        return SpeculativeSamplingOut(spec, sample(spec, self.draws) if self.draws else None)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        not_drawn = "press Sample"
        return {
            "acceptance": Readout("Acceptance rate Σ min(p, q)",
                                  100 * out.spec.acceptance, "%", decimals=1),
            "resampled": Readout("Rejected, then resampled", 100 * (1 - out.spec.acceptance),
                                 "%", decimals=1),
            "chi_square": Readout(f"χ² of {DRAWS:,} draws", out.chi_square, digits=3,
                                  shown="" if self.draws else not_drawn),
            "critical": Readout("χ² at 99%", out.critical, decimals=2),
            "matches": Readout("Draws match p", out.matches,
                               shown="" if self.draws else not_drawn),
        }

    def message(self) -> tuple[str, bool]:
        out = self.out
        accepted = f"{100 * out.spec.acceptance:.1f}%"
        if out.counts is None:
            return (f"The draft's token is kept {accepted} of the time; the rest is "
                    "redrawn from the residual, and the sum is exactly p. Press Sample "
                    f"to check with {DRAWS:,} draws.", False)
        verdict = ("consistent with p" if out.matches
                   else "off p: a 1-in-100 event for a correct rule")
        return (f"{DRAWS:,} draws: χ² = {format_value(out.chi_square, digits=3)} against "
                f"{format_value(out.critical, decimals=2)} at 99%, {verdict}.",
                not out.matches)
