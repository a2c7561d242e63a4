"""A step-by-step simulator of collectives on real data (Lessons 7, 8, 9, 10 and 12).

P ranks each hold a buffer cut into C numbered chunks. A collective algorithm is a
`TransferPlan`: a list of `Step`s, each a set of `Transfer`s that happen at the same time
(every transfer of a step reads the state before the step). A transfer moves one chunk
from a slot of its source rank into a slot of its destination rank, either adding it to
what is there (`reduce=True`, a reduction) or replacing it (a copy).

`simulate` replays a schedule on numbers and tracks, for every cell (rank, slot), which
inputs it contains: `holds[r, s, i, c]` is true when input chunk c of rank i is part of
the value in slot s of rank r. Labels such as "ABD₂" (A₂ + B₂ + D₂), "Σ₂" (the full sum)
and the count of inputs per cell come from that bookkeeping, never from a formula.
`expected_final` gives the end state the definition of each collective demands; the
tests run every algorithm for P = 2..16 on random numbers and compare.

Collectives and algorithms (`ALGORITHMS`):
- broadcast, reduce: "ring" (a pipelined chain, one chunk per step per link) and
  "recursive_doubling" (a binomial tree: the number of ranks holding data doubles).
- all_reduce: "ring" (reduce-scatter then all-gather around the ring), "recursive_doubling"
  (partners at distance 1, 2, 4, ... swap whole buffers), "rabenseifner" (recursive-halving
  reduce-scatter + recursive-doubling all-gather), "hierarchical" (ring reduce-scatter
  inside each node, ring all-reduce of each shard across nodes, ring all-gather inside each
  node). A P that is not a power of two uses MPICH's extra steps for recursive doubling and
  Rabenseifner: the first 2r ranks (r = P - p', p' the largest power of two <= P) pair up,
  the even one of each pair hands its whole buffer to the odd one before the algorithm runs
  on p' ranks and gets the result back after it.
- reduce_scatter, all_gather: "ring", and "recursive_doubling" (recursive halving for
  reduce-scatter, recursive doubling for all-gather) for a power-of-two P only.
- all_to_all: "pairwise": P - 1 rounds of pairwise swaps (P rounds for an odd P, where one
  rank rests each round); each swap is in place, so no rank overwrites a chunk before
  sending it.

Costs: `TransferPlan.cost(link_of_step)` sums, over steps, the link's alpha plus the largest
number of bytes one rank sends in that step times the link's beta; this is exactly the
alpha-beta model of `gpuviz.models.alpha_beta` (the tests check the two agree).
Pure Python and numpy, no Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COLLECTIVES = ("broadcast", "reduce", "all_reduce", "reduce_scatter", "all_gather",
               "all_to_all")
COLLECTIVE_NAMES = {"broadcast": "Broadcast", "reduce": "Reduce", "all_reduce": "All-reduce",
                    "reduce_scatter": "Reduce-scatter", "all_gather": "All-gather",
                    "all_to_all": "All-to-all"}
ALGORITHMS = {
    "broadcast": ("ring", "recursive_doubling"),
    "reduce": ("ring", "recursive_doubling"),
    "all_reduce": ("ring", "recursive_doubling", "rabenseifner", "hierarchical"),
    "reduce_scatter": ("ring", "recursive_doubling"),
    "all_gather": ("ring", "recursive_doubling"),
    "all_to_all": ("pairwise",),
}
ALGORITHM_NAMES = {"ring": "Ring", "recursive_doubling": "Recursive doubling",
                   "rabenseifner": "Rabenseifner", "hierarchical": "Hierarchical",
                   "pairwise": "Pairwise exchange"}
INTRA, INTER = "intra", "inter"  # the link a step uses: inside a node, or the network
ROOT = 0  # the root of broadcast and reduce
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


@dataclass(frozen=True)
class Transfer:
    """One chunk sent from `src` (slot `src_slot`) to `dst` (slot `dst_slot`); with
    `reduce` it is added to the destination's value, else it replaces it."""

    src: int
    dst: int
    src_slot: int
    dst_slot: int
    reduce: bool


@dataclass(frozen=True)
class Step:
    transfers: tuple[Transfer, ...]
    link: str = INTRA  # INTRA or INTER
    phase: str = ""  # what the step is part of: "reduce-scatter", "all-gather", ...

    def max_chunks_sent(self) -> int:
        """The most chunks one rank sends in this step (it sets the step's time)."""
        counts: dict[int, int] = {}
        for t in self.transfers:
            counts[t.src] = counts.get(t.src, 0) + 1
        return max(counts.values(), default=0)


@dataclass(frozen=True)
class TransferPlan:
    """What every step of one collective algorithm moves (not timed: timing is
    `gpuviz.core.schedule`'s job)."""

    collective: str
    algorithm: str
    ranks: int
    chunks: int
    steps: tuple[Step, ...]
    gpus_per_node: int = 0  # hierarchical only: ranks node * G + g

    def step_count(self) -> int:
        return len(self.steps)

    def bytes_per_rank(self, n: float) -> np.ndarray:
        """Bytes each rank sends over the whole collective, for a buffer of n bytes."""
        sent = np.zeros(self.ranks)
        for step in self.steps:
            for t in step.transfers:
                sent[t.src] += 1
        return sent * n / self.chunks

    def critical_bytes(self, n: float) -> float:
        """Sum over steps of the most bytes one rank sends: the bandwidth term's bytes."""
        return sum(s.max_chunks_sent() for s in self.steps) * n / self.chunks

    def time(self, n: float, links: dict[str, tuple[float, float]]) -> float:
        """Alpha-beta time (s): each step costs its link's alpha (s) plus the most bytes
        one rank sends times its beta (s/B). `links` maps INTRA/INTER to (alpha, beta)."""
        total = 0.0
        for step in self.steps:
            alpha, beta = links[step.link]
            total += alpha + step.max_chunks_sent() * n / self.chunks * beta
        return total


@dataclass(frozen=True)
class SimState:
    """values[r, s]: the number in slot s of rank r (0 where empty); holds[r, s, i, c]:
    input chunk c of rank i is part of it."""

    values: np.ndarray
    holds: np.ndarray

    def counts(self) -> np.ndarray:
        """How many inputs each cell contains, shape (P, C)."""
        return self.holds.sum(axis=(2, 3))


def is_power_of_two(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


def floor_power_of_two(p: int) -> int:
    return 1 << (int(p).bit_length() - 1)


def default_chunks(algorithm: str, p: int) -> int:
    """Rabenseifner cuts the buffer into p' (power of two) pieces, as MPICH does; the
    others into P chunks."""
    return floor_power_of_two(p) if algorithm == "rabenseifner" else p


def supports(collective: str, algorithm: str, p: int, gpus_per_node: int = 0) -> bool:
    """Whether `schedule` can build this algorithm for P ranks."""
    if algorithm not in ALGORITHMS.get(collective, ()) or p < 2:
        return False
    if collective in ("reduce_scatter", "all_gather") and algorithm == "recursive_doubling":
        return is_power_of_two(p)
    if algorithm == "hierarchical":
        return gpus_per_node >= 1 and p % gpus_per_node == 0
    return True


# --- schedules --------------------------------------------------------------------------
def schedule(collective: str, algorithm: str, p: int, chunks: int | None = None,
             gpus_per_node: int = 0) -> TransferPlan:
    """The steps of `algorithm` for `collective` on P ranks (ValueError when unsupported).
    `chunks` only matters for broadcast and reduce (pipeline depth); the other
    collectives use `default_chunks`. Hierarchical all-reduce needs `gpus_per_node`
    (dividing P); a ring over several nodes marks its steps as network (INTER) steps."""
    if not supports(collective, algorithm, p, gpus_per_node):
        raise ValueError(f"{algorithm} {collective} is not available for P = {p}")
    c = chunks if chunks and collective in ("broadcast", "reduce") else default_chunks(
        algorithm, p)
    link = INTER if 0 < gpus_per_node < p else INTRA
    if collective == "broadcast":
        steps = (_chain_broadcast(p, c) if algorithm == "ring" else _tree_broadcast(p, c))
    elif collective == "reduce":
        steps = _chain_reduce(p, c) if algorithm == "ring" else _tree_reduce(p, c)
    elif collective == "all_reduce":
        if algorithm == "ring":
            groups = [[k] for k in range(p)]
            steps = (_ring_reduce_scatter(list(range(p)), groups, link)
                     + _ring_all_gather(list(range(p)), groups, link))
        elif algorithm == "recursive_doubling":
            steps = _folded(p, c, _recursive_doubling_core, link)
        elif algorithm == "rabenseifner":
            steps = _folded(p, c, _rabenseifner_core, link)
        else:
            steps = _hierarchical(p, gpus_per_node)
    elif collective == "reduce_scatter":
        if algorithm == "ring":
            steps = _ring_reduce_scatter(list(range(p)), [[k] for k in range(p)], link)
        else:
            steps = _halving(list(range(p)), link)
    elif collective == "all_gather":
        if algorithm == "ring":
            steps = _ring_all_gather(list(range(p)), [[k] for k in range(p)], link)
        else:
            steps = _doubling(list(range(p)), [(r, r + 1) for r in range(p)], link)
    else:
        steps = _pairwise_all_to_all(p, link)
    return TransferPlan(collective, algorithm, p, c, tuple(steps),
                        gpus_per_node if algorithm == "hierarchical" else 0)


def _step(transfers: list[Transfer], link: str, phase: str) -> Step:
    return Step(tuple(transfers), link, phase)


def _chain_broadcast(p: int, c: int) -> list[Step]:
    # Rank i forwards chunk k to rank i + 1 at step k + i: a pipeline along the chain.
    steps = []
    for t in range(p + c - 2):
        moves = [Transfer(i, i + 1, t - i, t - i, False) for i in range(p - 1)
                 if 0 <= t - i < c]
        steps.append(_step(moves, INTRA, "pipeline"))
    return steps


def _chain_reduce(p: int, c: int) -> list[Step]:
    # Partial sums flow from rank P-1 down to the root: rank i adds chunk k into rank
    # i - 1 at step k + (P - 1 - i), right after receiving it from rank i + 1.
    steps = []
    for t in range(p + c - 2):
        moves = [Transfer(i, i - 1, t - (p - 1 - i), t - (p - 1 - i), True)
                 for i in range(1, p) if 0 <= t - (p - 1 - i) < c]
        steps.append(_step(moves, INTRA, "pipeline"))
    return steps


def _tree_broadcast(p: int, c: int) -> list[Step]:
    steps, have = [], 1
    while have < p:
        moves = [Transfer(r, r + have, k, k, False) for r in range(have) if r + have < p
                 for k in range(c)]
        steps.append(_step(moves, INTRA, "tree"))
        have *= 2
    return steps


def _tree_reduce(p: int, c: int) -> list[Step]:
    steps, dist = [], 1
    while dist < p:
        moves = [Transfer(r, r - dist, k, k, True) for r in range(p)
                 if r % (2 * dist) == dist for k in range(c)]
        steps.append(_step(moves, INTRA, "tree"))
        dist *= 2
    return steps


def _ring_reduce_scatter(members: list[int], groups: list[list[int]], link: str,
                         phase: str = "reduce-scatter") -> list[Step]:
    """At step s member i adds group (i - s - 1) mod m into member i + 1: after m - 1
    steps member j holds the full sum of group j (the diagonal)."""
    m = len(members)
    return [_step([Transfer(src, members[(i + 1) % m], k, k, True)
                   for i, src in enumerate(members) for k in groups[(i - s - 1) % m]],
                  link, phase) for s in range(m - 1)]


def _ring_all_gather(members: list[int], groups: list[list[int]], link: str,
                     phase: str = "all-gather") -> list[Step]:
    """At step s member i passes group (i - s) mod m on to member i + 1."""
    m = len(members)
    return [_step([Transfer(src, members[(i + 1) % m], k, k, False)
                   for i, src in enumerate(members) for k in groups[(i - s) % m]],
                  link, phase) for s in range(m - 1)]


def _halving(members: list[int], link: str) -> list[Step]:
    """Recursive-halving reduce-scatter on a power-of-two group, chunk j ending at member
    j: at distance d = m/2, m/4, ..., 1 a member keeps the half of its range on its side
    and adds the other half into its partner."""
    m = len(members)
    ranges = [(0, m)] * m
    steps, dist = [], m // 2
    while dist >= 1:
        moves, new = [], []
        for j in range(m):
            lo, hi = ranges[j]
            mid = (lo + hi) // 2
            keep, send = ((lo, mid), (mid, hi)) if j & dist == 0 else ((mid, hi), (lo, mid))
            moves += [Transfer(members[j], members[j ^ dist], k, k, True)
                      for k in range(*send)]
            new.append(keep)
        ranges = new
        steps.append(_step(moves, link, "reduce-scatter"))
        dist //= 2
    return steps


def _doubling(members: list[int], ranges: list[tuple[int, int]], link: str) -> list[Step]:
    """Recursive-doubling all-gather on a power-of-two group: member j starts with the
    chunks in ranges[j]; at distance 1, 2, 4, ... partners swap everything they have."""
    m = len(members)
    steps, dist = [], 1
    while dist < m:
        moves = [Transfer(members[j], members[j ^ dist], k, k, False)
                 for j in range(m) for k in range(*ranges[j])]
        ranges = [(min(ranges[j][0], ranges[j ^ dist][0]), max(ranges[j][1],
                                                               ranges[j ^ dist][1]))
                  for j in range(m)]
        steps.append(_step(moves, link, "all-gather"))
        dist *= 2
    return steps


def _recursive_doubling_core(members: list[int], c: int, link: str) -> list[Step]:
    m = len(members)
    steps, dist = [], 1
    while dist < m:
        moves = [Transfer(members[j], members[j ^ dist], k, k, True)
                 for j in range(m) for k in range(c)]
        steps.append(_step(moves, link, "exchange"))
        dist *= 2
    return steps


def _rabenseifner_core(members: list[int], c: int, link: str) -> list[Step]:
    return _halving(members, link) + _doubling(members, [(j, j + 1) for j in range(c)],
                                               link)


def _folded(p: int, c: int, core, link: str) -> list[Step]:  # noqa: ANN001
    """MPICH's handling of a P that is not a power of two: the even rank of each of the
    first r = P - p' pairs adds its buffer into the odd one, the core algorithm runs on
    the p' remaining ranks, and the odd ranks send the result back."""
    pof2 = floor_power_of_two(p)
    r = p - pof2
    members = [2 * j + 1 if j < r else j + r for j in range(pof2)]
    steps = []
    if r:
        steps.append(_step([Transfer(2 * i, 2 * i + 1, k, k, True) for i in range(r)
                            for k in range(c)], link, "fold in"))
    steps += core(members, c, link)
    if r:
        steps.append(_step([Transfer(2 * i + 1, 2 * i, k, k, False) for i in range(r)
                            for k in range(c)], link, "fold out"))
    return steps


def _parallel(step_lists: list[list[Step]]) -> list[Step]:
    """Independent groups running the same number of steps at the same time."""
    return [Step(tuple(t for s in same for t in s.transfers), same[0].link, same[0].phase)
            for same in zip(*step_lists, strict=True)]


def _hierarchical(p: int, g: int) -> list[Step]:
    """Chunk k belongs to shard k // N of N = P / G nodes; local rank g of each node owns
    shard g after the intra-node reduce-scatter and all-reduces it with the local rank g
    of the other nodes before the intra-node all-gather."""
    nodes = p // g
    shards = [[s * nodes + k for k in range(nodes)] for s in range(g)]
    locals_ = [[node * g + s for s in range(g)] for node in range(nodes)]
    peers = [[node * g + s for node in range(nodes)] for s in range(g)]
    steps = []
    if g > 1:
        steps += _parallel([_ring_reduce_scatter(m, shards, INTRA, "intra reduce-scatter")
                            for m in locals_])
    if nodes > 1:
        steps += _parallel([_ring_reduce_scatter(peers[s], [[k] for k in shards[s]], INTER,
                                                 "inter all-reduce")
                            + _ring_all_gather(peers[s], [[k] for k in shards[s]], INTER,
                                               "inter all-reduce") for s in range(g)])
    if g > 1:
        steps += _parallel([_ring_all_gather(m, shards, INTRA, "intra all-gather")
                            for m in locals_])
    return steps


def _pairwise_all_to_all(p: int, link: str) -> list[Step]:
    """Rounds of disjoint pairs (XOR partners for a power of two, the circle method of a
    round-robin tournament otherwise); partners swap the chunks meant for each other."""
    rounds: list[list[tuple[int, int]]] = []
    if is_power_of_two(p):
        rounds = [[(a, a ^ s) for a in range(p) if a < a ^ s] for s in range(1, p)]
    else:
        m = p + p % 2  # an odd P gets a resting "rank" m - 1 = P
        for k in range(m - 1):
            pairs = [(m - 1, k)] + [((k + j) % (m - 1), (k - j) % (m - 1))
                                    for j in range(1, m // 2)]
            rounds.append([(a, b) for a, b in pairs if a < p and b < p])
    return [_step([t for a, b in pairs for t in (Transfer(a, b, b, a, False),
                                                 Transfer(b, a, a, b, False))],
                  link, "swap") for pairs in rounds]


# --- replay -----------------------------------------------------------------------------
def initial_state(collective: str, data: np.ndarray) -> SimState:
    """The start of `collective` for input data[i, c] (rank i, chunk c): every rank holds
    all its chunks, except broadcast (only the root) and all-gather (rank i holds chunk i).
    """
    p, c = data.shape
    values = np.zeros((p, c))
    holds = np.zeros((p, c, p, c), dtype=bool)
    for r in range(p):
        for k in range(c):
            own = {"broadcast": r == ROOT, "all_gather": k == r}.get(collective, True)
            if own:
                values[r, k] = data[r, k]
                holds[r, k, r, k] = True
    return SimState(values, holds)


def apply_step(state: SimState, step: Step) -> SimState:
    """The state after one step; every transfer reads the state before the step. Copies
    land first, then reductions add on top. A reduction that would count an input twice,
    or two copies into one cell, is a bug in the schedule: ValueError. Vectorised: a step
    of a 16-rank ring costs a few array operations, not one per transfer."""
    values, holds = state.values.copy(), state.holds.copy()
    if not step.transfers:
        return SimState(values, holds)
    moves = np.array([(t.src, t.src_slot, t.dst, t.dst_slot, t.reduce)
                      for t in step.transfers], dtype=np.int64)
    src, src_slot, dst, dst_slot, reduce = moves.T
    copy = reduce == 0
    if copy.any():
        cells = dst[copy] * values.shape[1] + dst_slot[copy]
        if np.unique(cells).size < cells.size:
            raise ValueError("two copies into one cell in one step")
        values[dst[copy], dst_slot[copy]] = state.values[src[copy], src_slot[copy]]
        holds[dst[copy], dst_slot[copy]] = state.holds[src[copy], src_slot[copy]]
    add = ~copy
    if add.any():
        where = (dst[add], dst_slot[add])
        np.add.at(values, where, state.values[src[add], src_slot[add]])
        total = holds.astype(np.int16)
        np.add.at(total, where, state.holds[src[add], src_slot[add]].astype(np.int16))
        if (total > 1).any():
            raise ValueError("a step adds an input twice into one cell")
        holds = total > 0
    return SimState(values, holds)


def simulate(sched: TransferPlan, data: np.ndarray) -> list[SimState]:
    """The states before the first step and after each step (len = steps + 1)."""
    states = [initial_state(sched.collective, data)]
    for step in sched.steps:
        states.append(apply_step(states[-1], step))
    return states


def expected_final(collective: str, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the definition of the collective demands: (values, mask) where mask marks
    the cells the definition constrains (the rest may hold anything)."""
    p, c = data.shape
    total = data.sum(axis=0)
    values = np.zeros((p, c))
    mask = np.zeros((p, c), dtype=bool)
    if collective == "broadcast":
        values[:], mask[:] = data[ROOT], True
    elif collective == "reduce":
        values[ROOT], mask[ROOT] = total, True
    elif collective == "all_reduce":
        values[:], mask[:] = total, True
    elif collective == "reduce_scatter":
        for r in range(p):
            values[r, r], mask[r, r] = total[r], True
    elif collective == "all_gather":
        values[:], mask[:] = np.diag(data), True
    else:  # all_to_all: rank r slot s holds chunk r of rank s, the transpose
        values[:], mask[:] = data.T, True
    return values, mask


def expected_holds(collective: str, p: int, c: int) -> np.ndarray:
    """holds[r, s, i, k] of the definition's end state (unconstrained cells empty)."""
    holds = np.zeros((p, c, p, c), dtype=bool)
    for r in range(p):
        for s in range(c):
            if collective == "broadcast":
                holds[r, s, ROOT, s] = True
            elif (collective == "all_reduce" or collective == "reduce" and r == ROOT
                  or collective == "reduce_scatter" and r == s):
                holds[r, s, :, s] = True
            elif collective == "all_gather":
                holds[r, s, s, s] = True
            elif collective == "all_to_all":
                holds[r, s, s, r] = True
    return holds


# --- labels -----------------------------------------------------------------------------
def rank_letter(i: int) -> str:
    return LETTERS[i] if i < len(LETTERS) else str(i)


def cell_label(holds_cell: np.ndarray) -> str:
    """"ABD₂" for A₂ + B₂ + D₂, "Σ₂" when every rank's chunk 2 is in, "" when empty;
    for a cell holding chunks of several indices, the terms joined by "+"."""
    p = holds_cell.shape[0]
    ranks, chunks = np.nonzero(holds_cell)
    if ranks.size == 0:
        return ""
    parts = []
    for k in sorted(set(chunks.tolist())):
        who = sorted(ranks[chunks == k].tolist())
        sub = str(k).translate(SUBSCRIPTS)
        parts.append(f"Σ{sub}" if len(who) == p and p > 1 else
                     "".join(rank_letter(i) for i in who) + sub)
    return "+".join(parts)


def chunk_label(k: int) -> str:
    return str(k).translate(SUBSCRIPTS)
