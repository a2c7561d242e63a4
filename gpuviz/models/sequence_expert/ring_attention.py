"""Figure 10.1: ring attention, round by round, and its load balance under a causal mask.

The sequence is cut into 2P chunks of CHUNK_TOKENS tokens and each of P ranks owns two of
them: chunks 2r and 2r + 1 (contiguous) or chunks r and 2P − 1 − r (zig-zag, the split
Llama 3's context parallelism uses). A rank keeps its
queries; in round k it holds the K/V of the rank k places before it in the ring, so score
(i, j) is computed in round (owner(i) − owner(j)) mod P by the owner of query i. With a
causal mask the scores of later keys (j > i) are skipped.

Each round lasts as long as its busiest rank (the next K/V block is passed on only then);
the others wait. Contiguous: the first rank's keys come first, so it computes in round 0
only and waits in every other round. Zig-zag: every rank holds an early and a late chunk
and does the same work as every other rank in every round, so nobody waits.

Left out: the transfer time (figure 10.3), the backward pass, and the tokens within a
chunk (a chunk here is CHUNK_TOKENS tokens; in practice thousands).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, SteppedModel

CHUNK_TOKENS = 1  # tokens per chunk: one cell each keeps the grid at (2P)² cells
RANKS_MAX = 8
ASSIGNMENTS = (("contiguous", "Contiguous"), ("zigzag", "Zig-zag"))


def chunk_owners(ranks: int, assignment: str) -> np.ndarray:
    """The rank that owns each of the 2P chunks."""
    chunks = np.arange(2 * ranks)
    if assignment == "zigzag":
        return np.minimum(chunks, 2 * ranks - 1 - chunks)
    return chunks // 2


def score_rounds(ranks: int, assignment: str) -> np.ndarray:
    """(tokens, tokens): the round in which score (query i, key j) is computed."""
    owner = np.repeat(chunk_owners(ranks, assignment), CHUNK_TOKENS)
    return (owner[:, None] - owner[None, :]) % ranks


def causal_mask(tokens: int) -> np.ndarray:
    """True where the key comes after the query: skipped with a causal mask."""
    return np.triu(np.ones((tokens, tokens), dtype=bool), k=1)


def round_work(ranks: int, assignment: str, causal: bool) -> np.ndarray:
    """(rounds, ranks): scores each rank computes in each round."""
    rounds = score_rounds(ranks, assignment)
    owner = np.repeat(chunk_owners(ranks, assignment), CHUNK_TOKENS)
    live = ~causal_mask(len(owner)) if causal else np.ones(rounds.shape, dtype=bool)
    work = np.zeros((ranks, ranks), dtype=int)
    np.add.at(work, (rounds[live], np.broadcast_to(owner[:, None], rounds.shape)[live]), 1)
    return work


@dataclass(frozen=True)
class RingAttentionOut:
    ranks: int
    rounds_done: int  # rounds computed so far (1 to P)
    owners: np.ndarray  # rank of each chunk
    rounds: np.ndarray  # (tokens, tokens) round of each score
    masked: np.ndarray  # (tokens, tokens) skipped by the causal mask
    work: np.ndarray  # (rounds, ranks) scores per rank and round
    round_time: np.ndarray  # (rounds,) the busiest rank's scores
    block_scores: int  # scores of a full block (one rank's queries against one K/V block)

    @property
    def this_round(self) -> int:
        return self.rounds_done - 1

    @property
    def pass_time(self) -> int:
        """Scores' worth of time for the whole pass: the busiest rank of each round."""
        return int(self.round_time.sum())

    @property
    def ideal_time(self) -> float:
        """The pass with the work spread evenly: every score over P ranks."""
        return float(self.work.sum()) / self.ranks

    def idle_share(self, rank: int | None = None) -> float:
        """The share of the pass a rank (or all ranks together) spends waiting."""
        idle = self.round_time[:, None] - self.work
        if rank is None:
            return float(idle.sum()) / (self.pass_time * self.ranks)
        return float(idle[:, rank].sum()) / self.pass_time


class RingAttentionModel(SteppedModel, PredictFirstModel):
    """Figure 10.1: the score matrix of ring attention filled round by round, the work of
    each rank in the current round and the waiting it causes (see the module docstring);
    the learner predicts how much of the pass rank 0 waits."""

    ranks = Parameter(4, label="Ranks P", minimum=2, maximum=RANKS_MAX, step=1,
                      help="GPUs in the ring; each holds two chunks of the sequence")
    causal = Parameter(True, label="Causal mask",
                       help="Skip the scores of keys that come after the query")
    assignment = Parameter("contiguous", label="Chunks per rank", choices=list(ASSIGNMENTS),
                           help="Contiguous: rank r holds chunks 2r and 2r + 1. Zig-zag: "
                                "chunks r and 2P − 1 − r, one early and one late")

    guess_idle = Parameter(25.0, label="Rank 0 waits", unit="% of the pass", minimum=0.0,
                           maximum=100.0, step=1.0,
                           help="How much of the whole pass do you expect rank 0 to wait?")
    guess_parameter = "guess_idle"
    hidden_again_by = ("ranks", "causal", "assignment")

    step_seconds = 1.0
    first_step = 1  # round 0, each rank against its own K/V, is shown from the start

    @property
    def total_steps(self) -> int:
        return self.ranks

    def compute(self) -> RingAttentionOut:
        p = self.ranks
        rounds = score_rounds(p, self.assignment)
        tokens = len(rounds)
        masked = causal_mask(tokens) if self.causal else np.zeros(rounds.shape, dtype=bool)
        work = round_work(p, self.assignment, self.causal)
        return RingAttentionOut(p, self.steps_done, chunk_owners(p, self.assignment),
                                rounds, masked, work, work.max(axis=1),
                                (2 * CHUNK_TOKENS) ** 2)

    def answer_text(self) -> str:
        out = self.out
        answer, guess = 100 * out.idle_share(0), self.guess_idle
        return (f"{answer:.1f}%: rank 0 computes {int(out.work[:, 0].sum())} scores in a pass "
                f"that lasts {out.pass_time} score-times. Your guess of {guess:.0f}% is "
                f"{self.how_close_in_points(guess, answer)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        done = out.rounds_done
        now = out.work[out.this_round]
        return {
            "round": Readout("Round", done, total=out.ranks),
            "busiest": Readout("Busiest rank this round", int(now.max()), "scores"),
            "idlest": Readout("Idlest rank this round", int(now.min()), "scores"),
            "first_idle": self.answer(Readout("Rank 0 waits (whole pass)",
                                              100 * out.idle_share(0), "%", decimals=1)),
            "all_idle": Readout("All ranks wait (whole pass)", 100 * out.idle_share(), "%",
                                decimals=1),
            "pass_time": Readout("Pass time", out.pass_time / out.block_scores,
                                 "full blocks", digits=4),
            "ideal_time": Readout("Evenly spread", out.ideal_time / out.block_scores,
                                  "full blocks", digits=4),
        }
