"""Figure 10.4: DeepSpeed-Ulysses, an all-to-all from sequence sharding to head sharding.

Outside attention each of P ranks holds N / P tokens with all their heads. Attention needs
every token of a head, so an all-to-all regroups one tensor (N tokens x n_q heads x d_head)
so that each rank holds all N tokens of n_q / P heads (Jacobs et al. 2023, section 3.2).
Each rank keeps the 1 / P of its shard that is already its own and sends the rest:

    shard       N n_q d_head e / P bytes       (e = 2 bytes per element)
    sent        (P - 1) / P of the shard

The bytes sent come from the Lesson 7 simulator's pairwise all-to-all. The head split
needs as many K/V heads as ranks: with GQA and fewer K/V heads than ranks, some ranks
would hold no K/V head of their own (they must be copied), which caps Ulysses' degree.

Left out: the K, V and output all-to-alls beside this one tensor (the per-layer volume is
four of them), their time, and the hybrid of Ulysses with ring attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout, plural, si_readout
from gpuviz.models.collective_sim import schedule

HEADS = 8  # query heads in the grid
ROWS = 16  # token rows in the grid; each stands for N / ROWS tokens
HEAD_DIM = 128
ELEMENT_BYTES = 2  # bf16
RANKS = (2, 4, 8)
KV_HEADS = (1, 2, 4, 8)
RANK_CHOICES = [(str(p), str(p)) for p in RANKS]  # text choices: shown as buttons
KV_CHOICES = [(str(k), str(k)) for k in KV_HEADS]
SHARDINGS = (("sequence", "By tokens"), ("heads", "By heads"))


def sequence_owner(ranks: int) -> np.ndarray:
    """(ROWS, HEADS) rank that holds each cell when the tokens are split."""
    return np.repeat((np.arange(ROWS) * ranks // ROWS)[:, None], HEADS, axis=1)


def head_owner(ranks: int) -> np.ndarray:
    """(ROWS, HEADS) rank that holds each cell when the heads are split."""
    return np.repeat((np.arange(HEADS) * ranks // HEADS)[None, :], ROWS, axis=0)


def shard_bytes(tokens: int, ranks: int) -> float:
    """One rank's part of the tensor: N n_q d_head e / P."""
    return tokens * HEADS * HEAD_DIM * ELEMENT_BYTES / ranks


def all_to_all_sent(shard: float, ranks: int) -> np.ndarray:
    """Bytes each rank sends in the simulator's all-to-all of a shard-sized buffer."""
    return schedule("all_to_all", "pairwise", ranks).bytes_per_rank(shard)


@dataclass(frozen=True)
class UlyssesOut:
    owner: np.ndarray  # (ROWS, HEADS) rank holding each cell now
    moved: np.ndarray  # (ROWS, HEADS) bool: the cell changes rank in the all-to-all
    rank: int  # the selected rank
    shard: float  # bytes per rank
    sent: np.ndarray  # bytes each rank sends
    kv_heads: int
    warning: str  # empty when every rank gets its own K/V heads
    rank_warning: str = ""  # empty when the selected rank is one of the P ranks


class UlyssesModel(FigureModel):
    """Figure 10.4: a tokens x heads tensor sharded by tokens or by heads, the all-to-all
    between the two, and the K/V head limit."""

    sharding = Parameter("sequence", label="Sharded by", choices=list(SHARDINGS),
                         help="All-to-all switches between the two")
    ranks = Parameter("4", label="Ranks P", choices=RANK_CHOICES,
                      help="GPUs sharing the sequence")
    rank = Parameter(0, label="Selected rank", minimum=0, maximum=max(RANKS) - 1, step=1,
                     help="Its cells are drawn magenta (0 to P - 1)")
    kv_heads = Parameter("8", label="K/V heads", choices=KV_CHOICES,
                         help="Fewer K/V heads than ranks (GQA) cannot be split by heads")
    tokens = Parameter(65536, label="Sequence N", unit="tokens", minimum=4096,
                       maximum=1048576, log=True, help="Tokens of the whole sequence")

    def parameter_changed(self, name: str) -> None:
        """Fewer ranks take the selected rank back to the last one, so the slider shows
        the rank drawn (a rank set past P - 1 on its own gets `rank_warning`)."""
        last = int(self.ranks) - 1
        if name == "ranks" and self.get("rank") > last:
            self._values["rank"] = last

    def compute(self) -> UlyssesOut:
        p, kv = int(self.ranks), int(self.kv_heads)
        by_tokens, by_heads = sequence_owner(p), head_owner(p)
        owner = by_heads if self.sharding == "heads" else by_tokens
        shard = shard_bytes(self.tokens, p)
        warning = ""
        if kv < p:
            without = p - kv
            get = "gets no K/V head of its" if without == 1 else "get no K/V head of their"
            warning = (f"Only {plural(kv, 'K/V head')} for {p} ranks: split by heads, "
                       f"{without} of {p} ranks {get} own, so each K/V head must be "
                       f"copied to {p // kv} ranks. "
                       "Ulysses can use at most as many ranks as K/V heads.")
        rank_warning = ""
        if self.rank > p - 1:
            rank_warning = (f"There is no rank {self.rank}: with {p} ranks they are 0 to "
                            f"{p - 1}. Drawn and counted here: rank {p - 1}, the last.")
        return UlyssesOut(owner, by_tokens != by_heads, min(self.rank, p - 1), shard,
                          all_to_all_sent(shard, p), kv, warning, rank_warning)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        sent = float(out.sent[out.rank])
        return {
            "sharding": Readout("Sharded by", name=dict(SHARDINGS)[self.sharding].lower()),
            "shard": si_readout("Shard per rank", out.shard, "B"),
            "sent": si_readout("Sent per rank", sent, "B"),
            "sent_share": Readout("Share of the shard sent", 100 * sent / out.shard, "%",
                                  decimals=1),
            "moved": Readout("Cells that move", int(out.moved.sum()), total=out.moved.size),
            "kv_per_rank": Readout("K/V heads per rank", out.kv_heads / len(out.sent),
                                   digits=3),
            "kv_split": Readout("K/V heads split evenly", not out.warning),
        }
