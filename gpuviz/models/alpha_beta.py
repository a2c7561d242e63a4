"""The alpha-beta cost model of collectives (Lessons 7, 8, 9, 10 and 12).

A message of m bytes over a link costs alpha + m * beta seconds: alpha is the latency
(start-up) of one step, beta = 1 / bandwidth the seconds per byte. A collective on P ranks
and n bytes is a number of steps; each step costs alpha plus the largest message one rank
sends in it. So every algorithm is a `Cost(steps, volume)`:

    time = steps * alpha + volume * n * beta

with `volume` the bytes on the critical path in units of n:

| algorithm (all-reduce)                  | steps            | volume                   |
|-----------------------------------------|------------------|--------------------------|
| ring                                    | 2(P-1)           | 2(P-1)/P                 |
| recursive doubling, P = 2^k             | log2 P           | log2 P                   |
| recursive doubling, other P (MPICH)     | floor(log2 P)+2  | floor(log2 P)+2          |
| Rabenseifner, P = 2^k                   | 2 log2 P         | 2(P-1)/P                 |
| Rabenseifner, other P (MPICH)           | 2 floor(log2 P)+2| 2(P'-1)/P' + 2           |

P' is the largest power of two <= P: MPICH folds the first 2(P - P') ranks in pairs
before the algorithm and unfolds them after it, one full-buffer step each way. (MPICH's
comment writes 2(P-1)/P for the middle term; the data it moves is 2(P'-1)/P'.) Reduction
arithmetic (gamma) is left out. Reduce-scatter and all-gather are half a ring:
P-1 steps, volume (P-1)/P. These are the costs `gpuviz.models.collective_sim` schedules
take step by step; the tests check both agree for P = 2..16.

Hierarchical all-reduce on N nodes of G GPUs (P = N G): ring reduce-scatter inside each
node over NVLink ((G-1) steps, (G-1)/G n), then G parallel ring all-reduces of the n/G
shards across nodes over the network (2(N-1) steps, 2(N-1)/N n/G), then ring all-gather
inside each node. A flat ring over all P GPUs waits for its network hops at every step:
2(P-1) (alpha_net + n/P beta_net).

Bus bandwidth as nccl-tests defines it: algbw = n / t; busbw = algbw * factor with factor
2(P-1)/P for all-reduce, (P-1)/P for reduce-scatter, all-gather and all-to-all, 1 for
broadcast and reduce (NVIDIA/nccl-tests doc/PERFORMANCE.md). It is the speed each link
would need to run at for the ideal ring, so it compares with one link's bandwidth.

Links (`Link`, `nvlink`, `network`) read latency and bandwidth from resources/hardware
(`[links]` of each GPU file: NVLink per direction, one 400 Gb/s NIC per GPU; the
latencies are assumptions marked `estimate = true` there).

API for the other lessons (all pure, numbers in seconds and bytes):
- `allreduce_cost(algorithm, p)` -> Cost; `Cost.time(n, alpha, beta)` works on arrays of n,
  `Cost.time_on(link, n)` takes a `Link` (`nvlink(gpu_key)`, `network(gpu_key)`).
- `allreduce_time(algorithm, p, n, alpha, beta)`; `ring_allreduce_time(p, n, alpha, beta)`.
- `collective_cost(collective, algorithm, p, chunks)` for the six collectives.
- `crossover(a, b, alpha, beta)` -> n where Cost a and b take the same time (or None).
- `bus_bandwidth(collective, p, n, t)`, `algorithm_bandwidth(n, t)`, `BUS_FACTOR`.
- `fit_alpha_beta(collective, p, sizes, times)` -> `AlphaBetaFit`: the ring's alpha and
  beta that fit measured times best (nccl-tests output, `gpuviz.imports.nccl_tests`).
- `hierarchical_allreduce(n, nodes, gpus_per_node, intra, inter)` -> phases and total;
  `flat_ring_allreduce(n, nodes, gpus_per_node, intra, inter)`;
  `network_lower_bound(n, nodes, gpus_per_node, inter)`.
- Point to point, one message of n bytes: alpha + n beta (`P2P`). The named transfers:
  `pipeline_activations(micro_batch, seq, hidden)` (b s h elements between two pipeline
  stages, Narayanan et al. 2021), `ring_attention_kv(block_tokens, kv_heads, head_dim)`
  (a K and a V block to the next rank of the ring), `kv_cache_transfer(tokens, layers,
  kv_heads, head_dim)` (a prompt's K and V of every layer, prefill GPU to decode GPU);
  each a `Message` with `.time(alpha, beta)` and `.time_on(link)`.
- `uneven_all_to_all(traffic)`: all-to-all with traffic[r, q] bytes from rank r to q
  (expert parallelism with a skewed router). Each rank sends and receives at once over
  its own link, in the pairwise rounds of the even case; rank r needs
  rounds alpha + max(sent_r, received_r) beta and the slowest rank sets the time. With
  n/P to every rank it is `collective_cost("all_to_all", ...)` again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.data.hardware import DEFAULT_GPU, gpu
from gpuviz.models.collective_sim import floor_power_of_two, is_power_of_two

US = 1e-6
GB = 1e9  # bytes; link bandwidths in the data files are GB/s (10^9 bytes per second)
ALLREDUCE_ALGORITHMS = ("ring", "recursive_doubling", "rabenseifner")


@dataclass(frozen=True)
class Link:
    """A link with latency alpha (s) and bandwidth (B/s); beta = 1 / bandwidth."""

    name: str
    alpha: float
    bandwidth: float

    @property
    def beta(self) -> float:
        return 1.0 / self.bandwidth


def nvlink(gpu_key: str = DEFAULT_GPU) -> Link:
    """The GPU's NVLink, per direction, with the assumed per-step latency."""
    g = gpu(gpu_key)
    return Link("NVLink", g["links.nvlink_latency_us"] * US, g["links.nvlink_gbs"] * GB)


def network(gpu_key: str = DEFAULT_GPU) -> Link:
    """One NIC per GPU (per direction), with the assumed per-step network latency."""
    g = gpu(gpu_key)
    return Link("network", g["links.nic_latency_us"] * US, g["links.nic_gbs"] * GB)


@dataclass(frozen=True)
class Cost:
    """steps * alpha + volume * n * beta."""

    steps: int
    volume: float

    def time(self, n: float | np.ndarray, alpha: float, beta: float) -> float | np.ndarray:
        return self.steps * alpha + self.volume * n * beta

    def time_on(self, link: Link, n: float | np.ndarray) -> float | np.ndarray:
        """The time over one kind of link, e.g. `ring_allreduce_cost(8).time_on(nvlink(), n)`."""
        return self.time(n, link.alpha, link.beta)


def ring_allreduce_cost(p: int) -> Cost:
    return Cost(2 * (p - 1), 2 * (p - 1) / p)


def recursive_doubling_cost(p: int) -> Cost:
    levels = floor_power_of_two(p).bit_length() - 1
    extra = 0 if is_power_of_two(p) else 2
    return Cost(levels + extra, float(levels + extra))


def rabenseifner_cost(p: int) -> Cost:
    q = floor_power_of_two(p)
    levels = q.bit_length() - 1
    extra = 0 if is_power_of_two(p) else 2
    return Cost(2 * levels + extra, 2 * (q - 1) / q + extra)


_ALLREDUCE = {"ring": ring_allreduce_cost, "recursive_doubling": recursive_doubling_cost,
              "rabenseifner": rabenseifner_cost}


def allreduce_cost(algorithm: str, p: int) -> Cost:
    """Cost of "ring", "recursive_doubling" or "rabenseifner" all-reduce on P ranks."""
    return _ALLREDUCE[algorithm](p)


def allreduce_time(algorithm: str, p: int, n: float | np.ndarray, alpha: float,
                   beta: float) -> float | np.ndarray:
    return allreduce_cost(algorithm, p).time(n, alpha, beta)


def ring_allreduce_time(p: int, n: float | np.ndarray, alpha: float,
                        beta: float) -> float | np.ndarray:
    """2(P-1) alpha + 2(P-1)/P n beta."""
    return ring_allreduce_cost(p).time(n, alpha, beta)


def collective_cost(collective: str, algorithm: str, p: int, chunks: int | None = None
                    ) -> Cost:
    """Cost of a single-link algorithm of `gpuviz.models.collective_sim` (not
    hierarchical: see `hierarchical_allreduce`). `chunks` is the pipeline depth of the
    ring broadcast and reduce (default P)."""
    c = chunks or p
    levels = math.ceil(math.log2(p)) if p > 1 else 0
    if collective in ("broadcast", "reduce"):
        if algorithm == "ring":  # a pipelined chain: P - 1 + C - 1 steps of n / C
            return Cost(p + c - 2, (p + c - 2) / c)
        return Cost(levels, float(levels))  # binomial tree of whole buffers
    if collective == "all_reduce":
        return allreduce_cost(algorithm, p)
    if collective in ("reduce_scatter", "all_gather"):
        if algorithm == "ring":
            return Cost(p - 1, (p - 1) / p)
        return Cost(levels, (p - 1) / p)  # recursive halving or doubling, P = 2^k
    if collective == "all_to_all":
        rounds = all_to_all_rounds(p)
        return Cost(rounds, rounds / p)
    raise ValueError(f"unknown collective {collective!r}")


def all_to_all_rounds(p: int) -> int:
    """Rounds of in-place pairwise swaps: P − 1, or P for an odd P (one rank rests)."""
    return p - 1 if p % 2 == 0 else p


def crossover(a: Cost, b: Cost, alpha: float, beta: float) -> float | None:
    """The message size (bytes) where a and b take the same time, or None when one is
    never slower than the other for n > 0."""
    dv = (a.volume - b.volume) * beta
    ds = (b.steps - a.steps) * alpha
    if dv == 0 or ds == 0:
        return None
    n = ds / dv
    return n if n > 0 else None


# --- bandwidths -------------------------------------------------------------------------
BUS_FACTOR = {
    "all_reduce": lambda p: 2 * (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "all_gather": lambda p: (p - 1) / p,
    "all_to_all": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}


def algorithm_bandwidth(n: float, t: float) -> float:
    """algbw = n / t (B/s); n is the full buffer (for all-gather, the gathered one)."""
    return n / t


def bus_bandwidth(collective: str, p: int, n: float, t: float) -> float:
    """busbw = algbw * the nccl-tests factor of the collective (B/s)."""
    return algorithm_bandwidth(n, t) * BUS_FACTOR[collective](p)


# --- alpha and beta fitted to measured times -------------------------------------------
@dataclass(frozen=True)
class AlphaBetaFit:
    """The ring's alpha (s) and beta (s/B) that fit measured times best, and how well."""

    cost: Cost
    alpha: float
    beta: float
    worst_error: float  # the largest |model - measured| / measured over the sizes

    def time(self, n: float | np.ndarray) -> float | np.ndarray:
        return self.cost.time(n, self.alpha, self.beta)


def fit_alpha_beta(collective: str, p: int, sizes: np.ndarray, times: np.ndarray
                   ) -> AlphaBetaFit:
    """alpha and beta of `collective`'s ring on P ranks (`collective_cost`) that fit the
    measured times (s) of messages of `sizes` (B) best: least squares on
    time = steps alpha + volume n beta, each row divided by its time, so that every size
    counts alike (the times span several decades; unweighted, the largest messages
    alone would set alpha). Neither may be negative: when the best fit makes one so, it
    is 0 and the other is fitted alone (beta 0: no size long enough to measure it)."""
    cost = collective_cost(collective, "ring", p)
    sizes, times = np.asarray(sizes, dtype=float), np.asarray(times, dtype=float)
    columns = np.column_stack([np.full_like(sizes, cost.steps), cost.volume * sizes])
    weighted = columns / times[:, None]
    ones = np.ones_like(times)
    alpha, beta = np.linalg.lstsq(weighted, ones, rcond=None)[0]
    if alpha < 0 or beta < 0:
        keep = 1 if alpha < 0 else 0
        alone = np.linalg.lstsq(weighted[:, keep:keep + 1], ones, rcond=None)[0][0]
        alpha, beta = (0.0, alone) if keep else (alone, 0.0)
    worst = float(np.max(np.abs(cost.time(sizes, alpha, beta) - times) / times))
    return AlphaBetaFit(cost, float(alpha), float(beta), worst)


# --- hierarchical vs flat across nodes --------------------------------------------------
@dataclass(frozen=True)
class Phase:
    name: str
    link: str  # "NVLink" or "network"
    steps: int
    step_time: float  # s, alpha + bytes per step * beta
    start: float  # s from the start of the collective

    @property
    def time(self) -> float:
        return self.steps * self.step_time

    @property
    def end(self) -> float:
        return self.start + self.time


@dataclass(frozen=True)
class MultiNode:
    phases: tuple[Phase, ...]
    total: float  # s

    def bus_bandwidth(self, n: float, ranks: int) -> float:
        return bus_bandwidth("all_reduce", ranks, n, self.total)


def _without_latency(link: Link, latency: bool) -> Link:
    return link if latency else Link(link.name, 0.0, link.bandwidth)


def hierarchical_allreduce(n: float, nodes: int, gpus_per_node: int, intra: Link,
                           inter: Link, latency: bool = True) -> MultiNode:
    """Intra-node ring reduce-scatter, G parallel inter-node ring all-reduces of n/G
    shards, intra-node ring all-gather, in sequence. `latency=False` drops the alphas."""
    intra, inter = _without_latency(intra, latency), _without_latency(inter, latency)
    g, big_n = gpus_per_node, nodes
    phases, start = [], 0.0
    plan = [("reduce-scatter in node", intra, g - 1, n / g),
            ("all-reduce across nodes", inter, 2 * (big_n - 1), n / (g * big_n)),
            ("all-gather in node", intra, g - 1, n / g)]
    for name, link, steps, chunk in plan:
        phase = Phase(name, link.name, steps, link.alpha + chunk * link.beta, start)
        phases.append(phase)
        start = phase.end
    return MultiNode(tuple(phases), start)


def flat_ring_allreduce(n: float, nodes: int, gpus_per_node: int, intra: Link,
                        inter: Link, latency: bool = True) -> MultiNode:
    """One ring through all P GPUs: each of its 2(P-1) steps lasts as long as its slowest
    hop, a network hop when there is more than one node."""
    p = nodes * gpus_per_node
    link = _without_latency(inter if nodes > 1 else intra, latency)
    steps = 2 * (p - 1)
    phase = Phase("flat ring", link.name, steps, link.alpha + n / p * link.beta, 0.0)
    return MultiNode((phase,), phase.end)


def nvlink_hop_time(n: float, p: int, intra: Link, latency: bool = True) -> float:
    """How long an NVLink hop of a flat ring takes in one step (it then waits)."""
    intra = _without_latency(intra, latency)
    return intra.alpha + n / p * intra.beta


def network_lower_bound(n: float, nodes: int, gpus_per_node: int, inter: Link) -> float:
    """The least time any all-reduce across nodes needs on the network: each node must
    send 2(N-1)/N n bytes (the all-reduce bound for N parties) through its G NICs."""
    if nodes < 2:
        return 0.0
    return 2 * (nodes - 1) / nodes * n / (gpus_per_node * inter.bandwidth)


# --- point to point and uneven all-to-all -----------------------------------------------
P2P = Cost(1, 1.0)  # one message: alpha + n beta


@dataclass(frozen=True)
class Message:
    """One named point-to-point message of `nbytes` bytes."""

    name: str
    nbytes: float

    def time(self, alpha: float, beta: float) -> float:
        return P2P.time(self.nbytes, alpha, beta)

    def time_on(self, link: Link) -> float:
        return P2P.time_on(link, self.nbytes)


def pipeline_activations(micro_batch: int, seq: int, hidden: int,
                         element_bytes: float = 2) -> Message:
    """The activations one micro-batch hands to the next pipeline stage (and their
    gradients back): b s h elements."""
    return Message("pipeline activations", micro_batch * seq * hidden * element_bytes)


def ring_attention_kv(block_tokens: int, kv_heads: int, head_dim: int,
                      element_bytes: float = 2) -> Message:
    """The K and V block a rank passes to the next in one ring-attention round (per
    layer): 2 c n_kv d_head elements."""
    return Message("ring-attention K/V", 2 * block_tokens * kv_heads * head_dim
                    * element_bytes)


def kv_cache_transfer(tokens: int, layers: int, kv_heads: int, head_dim: int,
                      element_bytes: float = 2) -> Message:
    """A prompt's KV cache from the prefill GPU to the decode GPU (disaggregated
    serving): 2 L s n_kv d_head elements."""
    return Message("KV cache transfer", 2 * layers * tokens * kv_heads * head_dim
                    * element_bytes)


@dataclass(frozen=True)
class AllToAll:
    """Bytes each rank sends to and receives from the others in one all-to-all."""

    sent: np.ndarray
    received: np.ndarray
    rounds: int

    def rank_times(self, alpha: float, beta: float) -> np.ndarray:
        """rounds alpha + max(sent, received) beta for each rank."""
        return self.rounds * alpha + np.maximum(self.sent, self.received) * beta

    def time(self, alpha: float, beta: float) -> float:
        """The slowest rank's time: the others wait for it."""
        return float(self.rank_times(alpha, beta).max()) if len(self.sent) else 0.0

    def slowest(self, alpha: float, beta: float) -> int:
        return int(np.argmax(self.rank_times(alpha, beta)))


def uneven_all_to_all(traffic: np.ndarray) -> AllToAll:
    """traffic[r, q] bytes from rank r to rank q; what stays on a rank (the diagonal)
    costs nothing. Raises ValueError for a matrix that is not square, finite and not
    negative."""
    traffic = np.asarray(traffic, dtype=float)
    if traffic.ndim != 2 or traffic.shape[0] != traffic.shape[1]:
        raise ValueError(f"traffic must be a square matrix, got shape {traffic.shape}")
    if not (np.all(np.isfinite(traffic)) and np.all(traffic >= 0)):
        raise ValueError("traffic must be finite and not negative")
    moved = traffic * (1 - np.eye(len(traffic)))
    return AllToAll(moved.sum(axis=1), moved.sum(axis=0), all_to_all_rounds(len(traffic)))
