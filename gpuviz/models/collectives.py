"""Lesson 7: collectives and the alpha-beta model (figures 7.1 to 7.4).

The figures read two pure modules: `collective_sim` (the step-by-step simulator on real
numbers) and `alpha_beta` (the cost model, links from resources/hardware).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from gpuviz.core.model import (
    FigureModel,
    Parameter,
    PredictFirstModel,
    Readout,
    SteppedModel,
    si_readout,
    si_text,
    time_readout,
)
from gpuviz.core.schedule import Task, schedule_at
from gpuviz.core.trace import Lane, Trace
from gpuviz.data import cache_by_key
from gpuviz.data.hardware import DEFAULT_GPU, gpu, gpu_choices
from gpuviz.models import alpha_beta as ab
from gpuviz.models import collective_sim as cs

if TYPE_CHECKING:
    from gpuviz.imports.nccl_tests import NcclMeasurements

DATA_SEED = 7  # the numbers the figures' simulations run on
ALGORITHM_CHOICES = [(a, cs.ALGORITHM_NAMES[a]) for a in
                     ("ring", "recursive_doubling", "rabenseifner", "hierarchical")]


@functools.lru_cache(maxsize=64)
def simulated(collective: str, algorithm: str, p: int, gpus_per_node: int = 0
              ) -> tuple[cs.TransferPlan, tuple[cs.SimState, ...], bool]:
    """The schedule, every state, and whether the end matches the definition, for seeded
    random inputs (cached: a stepper only indexes the states)."""
    sched = cs.schedule(collective, algorithm, p, gpus_per_node=gpus_per_node)
    data = np.random.default_rng(DATA_SEED).normal(size=(p, sched.chunks))
    states = tuple(cs.simulate(sched, data))
    values, mask = cs.expected_final(collective, data)
    ok = bool(np.allclose(states[-1].values[mask], values[mask]))
    return sched, states, ok


def cell_labels(holds: np.ndarray) -> list[list[str]]:
    """labels[r][s] for every cell of a state's holds (rank r, slot s)."""
    p, c = holds.shape[:2]
    return [[cs.cell_label(holds[r, s]) for s in range(c)] for r in range(p)]


def cell_kinds(holds: np.ndarray) -> np.ndarray:
    """0 empty, 1 the rank's own input untouched, 2 arrived or a partial sum, 3 a full sum
    (every rank's share of that chunk)."""
    p, c = holds.shape[:2]
    counts = holds.sum(axis=(2, 3))
    kinds = np.where(counts > 0, 2, 0)
    for r in range(p):
        for s in range(c):
            if counts[r, s] == 1 and holds[r, s, r, s]:
                kinds[r, s] = 1
            elif counts[r, s] == p and holds[r, s, :, s].all() and p > 1:
                kinds[r, s] = 3
    return kinds


# ---------------------------------------------------------------------------------------
# Figure 7.1: the six collectives, step by step
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CollectiveSteps:
    collective: str
    algorithm: str  # the one used (the chosen one when it applies to the collective)
    ranks: int
    chunks: int
    total_steps: int
    steps: int
    phase: str
    labels: list[list[str]]  # [rank][slot]
    kinds: np.ndarray  # (P, C), see cell_kinds
    arrived: np.ndarray  # (P, C) bool: written by the last step
    moves: tuple[cs.Transfer, ...]  # the last step's transfers
    next_moves: tuple[cs.Transfer, ...]  # the next step's (empty at the end)
    progress: float  # 0..1 into the next step while playing (chunks in flight)
    start_labels: list[list[str]]
    start_kinds: np.ndarray
    end_labels: list[list[str]]
    end_kinds: np.ndarray
    matches: bool  # the simulated end state equals the definition on the seeded numbers
    sent_chunks: np.ndarray  # (P,) chunks each rank has sent so far


@functools.lru_cache(maxsize=256)
def collective_steps(collective: str, algorithm: str, p: int, g: int, k: int
                     ) -> CollectiveSteps:
    """Figure 7.1's picture of `algorithm` for `collective` on P GPUs after k steps."""
    sched, states, ok = simulated(collective, algorithm, p, g)
    state = states[k]
    arrived = np.zeros(state.values.shape, dtype=bool)
    moves: tuple[cs.Transfer, ...] = ()
    phase = "start"
    if k > 0:
        step = sched.steps[k - 1]
        moves, phase = step.transfers, step.phase
        for t in moves:
            arrived[t.dst, t.dst_slot] = True
    sent = np.zeros(p)
    for step in sched.steps[:k]:
        for t in step.transfers:
            sent[t.src] += 1
    end = cs.expected_holds(collective, p, sched.chunks)
    return CollectiveSteps(
        collective, algorithm, p, sched.chunks, sched.step_count(), k, phase,
        cell_labels(state.holds), cell_kinds(state.holds), arrived, moves,
        sched.steps[k].transfers if k < sched.step_count() else (), 0.0,
        cell_labels(states[0].holds), cell_kinds(states[0].holds), cell_labels(end),
        cell_kinds(end), ok, sent)


class CollectiveStepsModel(SteppedModel):
    """Figure 7.1: one collective on P GPUs (A, B, C, ...) run by `collective_sim` on
    seeded random numbers; a cell's label lists the inputs it contains ("ABD₂" = A₂ + B₂
    + D₂, "Σ₂" = all of them). All-to-all ends as the transpose of the start."""

    collective = Parameter("all_reduce", label="Collective",
                           choices=[(c, cs.COLLECTIVE_NAMES[c]) for c in cs.COLLECTIVES],
                           help="Which collective to run; the steps start again")
    algorithm = Parameter("ring", label="Algorithm", choices=ALGORITHM_CHOICES,
                          help="How the data moves. Rabenseifner and hierarchical apply "
                               "to all-reduce; all-to-all always swaps in pairs")
    gpus = Parameter(4, label="GPUs", minimum=2, maximum=8, step=1,
                     help="Number of GPUs (columns); each buffer has that many chunks")

    def resolved(self) -> tuple[str, int]:
        """The algorithm actually run and the GPUs per node (hierarchical: 2)."""
        p = self.gpus
        g = 2 if self.algorithm == "hierarchical" else 0
        if cs.supports(self.collective, self.algorithm, p, g):
            return self.algorithm, g
        fallback = cs.ALGORITHMS[self.collective][0]
        return fallback, 0

    @property
    def total_steps(self) -> int:
        algorithm, g = self.resolved()
        return simulated(self.collective, algorithm, self.gpus, g)[0].step_count()

    def compute(self) -> CollectiveSteps:
        algorithm, g = self.resolved()
        # Everything but the in-flight progress is cached: Play recomputes every frame.
        return replace(collective_steps(self.collective, algorithm, self.gpus, g,
                                        self.steps_done), progress=self.step_progress)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        used = cs.ALGORITHM_NAMES[out.algorithm]
        if out.algorithm != self.algorithm and len(cs.ALGORITHMS[out.collective]) > 1:
            used += " (fallback)"
        sent = int(out.sent_chunks.max()) if out.sent_chunks.size else 0
        return {
            "collective": Readout("Collective", name=cs.COLLECTIVE_NAMES[out.collective]),
            "algorithm": Readout("Algorithm", name=used),
            "step": Readout("Step", out.steps, total=out.total_steps),
            "phase": Readout("This step", name=out.phase),
            "sent": Readout("Most chunks one GPU sent", sent, f"of n/{out.chunks} each"),
            "steps_formula": Readout("Steps (α terms)", out.total_steps),
            "matches": Readout("End equals the definition", out.matches,
                               shown="yes" if out.matches else "NO"),
        }


# ---------------------------------------------------------------------------------------
# Figure 7.2: the ring all-reduce
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RingSteps:
    ranks: int
    total_steps: int
    steps: int
    phase: str
    counts: np.ndarray  # (P, P): inputs in each cell
    sending: np.ndarray  # (P, P) bool: cells the last step sent from
    arrived: np.ndarray  # (P, P) bool: cells the last step wrote
    moves: tuple[cs.Transfer, ...]  # the last step's
    next_moves: tuple[cs.Transfer, ...]  # the next step's (empty at the end)
    next_sending: np.ndarray  # (P, P) bool: cells the next step sends from
    progress: float  # 0..1 into the next step while playing (chunks in flight)
    chunk_bytes: float
    sent_bytes: float  # per GPU so far (every GPU sends the same)
    total_bytes: float  # per GPU over the whole all-reduce
    formula_bytes: float  # 2(P-1)/P n
    time: float  # alpha-beta time on the link (s)


class RingAllReduceModel(SteppedModel):
    """Figure 7.2: ring all-reduce on P GPUs, rows GPUs and columns chunks, each cell the
    number of inputs it holds. Reduce-scatter step s (s = 0..P-2): GPU i adds chunk
    (i - s - 1) mod P into GPU i + 1, so after P - 1 steps GPU j holds the full chunk j
    (the diagonal); all-gather then passes the full chunks on. 2(P-1) steps; each GPU
    sends 2(P-1)/P n bytes. Time 2(P-1)(alpha + n/P beta) on the GPU's NVLink."""

    gpus = Parameter(4, label="GPUs P", minimum=2, maximum=16, step=1,
                     help="Ranks in the ring; the steps start again")
    message_bytes = Parameter(1e9, label="Message n", unit="B", minimum=1e6, maximum=1e10,
                              log=True, help="Bytes of the buffer each GPU all-reduces")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Its NVLink bandwidth and assumed latency give the time")

    step_seconds = 0.9

    def parameter_changed(self, name: str) -> None:
        if name == "gpus":
            self.reset_state()

    @property
    def total_steps(self) -> int:
        return 2 * (self.gpus - 1)

    def compute(self) -> RingSteps:
        p, n = self.gpus, self.message_bytes
        sched, states, _ = simulated("all_reduce", "ring", p)
        k = self.steps_done
        sending = np.zeros((p, p), dtype=bool)
        arrived = np.zeros((p, p), dtype=bool)
        moves: tuple[cs.Transfer, ...] = ()
        phase = "start"
        if k:
            step = sched.steps[k - 1]
            moves, phase = step.transfers, step.phase
            for t in moves:
                sending[t.src, t.src_slot] = True
                arrived[t.dst, t.dst_slot] = True
        next_moves = sched.steps[k].transfers if k < sched.step_count() else ()
        next_sending = np.zeros((p, p), dtype=bool)
        for t in next_moves:
            next_sending[t.src, t.src_slot] = True
        chunk = n / p
        link = ab.nvlink(self.gpu)
        sent = sched.bytes_per_rank(n)
        return RingSteps(p, sched.step_count(), k, phase, states[k].counts(), sending,
                         arrived, moves, next_moves, next_sending, self.step_progress,
                         chunk, k * chunk, float(sent.max()),
                         2 * (p - 1) / p * n,
                         ab.ring_allreduce_time(p, n, link.alpha, link.beta))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        full = int((out.counts == out.ranks).sum())
        return {
            "step": Readout("Step", out.steps, total=out.total_steps),
            "phase": Readout("Phase", name=out.phase),
            "full": Readout("Full chunks", full, total=out.ranks * out.ranks),
            "chunk": si_readout("Chunk n/P", out.chunk_bytes, "B"),
            "sent": si_readout("Sent per GPU so far", out.sent_bytes, "B"),
            "total": si_readout("Sent per GPU in all", out.total_bytes, "B"),
            "formula": si_readout("2(P−1)/P · n", out.formula_bytes, "B"),
            "time": time_readout(f"Time on {gpu(self.gpu).short_name} NVLink", out.time),
        }


# ---------------------------------------------------------------------------------------
# Figure 7.3: time against message size
# ---------------------------------------------------------------------------------------
# Measurements of one's own on 7.3 and 7.4 (File > Open measurements)
# ---------------------------------------------------------------------------------------
MEASURED_POINTS = 64  # dots at most; nccl-tests' usual sweep (8 B to 16 GB by 2) has 32
# Tables given on the command line (`gpuviz --import run.txt`): every 7.3 and 7.4 made in
# this run opens with the last one.
RUN_MEASUREMENTS: list[NcclMeasurements] = []


@dataclass(frozen=True, eq=False)  # one per file opened: equal only to itself
class Measured:
    """An nccl-tests table on a figure and the ring's alpha and beta fitted to its times.

    Bus bandwidth puts the collectives on one scale: the ring's busbw is
    n F / (s alpha + v n beta) with F = v and s / v = P for all-reduce, all-gather,
    reduce-scatter and all-to-all (even P) alike, so a measured time t of collective c
    reads as the all-reduce time t F_all-reduce / F_c at the same bus bandwidth (for an
    all-reduce, t itself)."""

    table: NcclMeasurements
    fit: ab.AlphaBetaFit
    shown: np.ndarray  # indices of the rows drawn as dots

    @classmethod
    def of(cls, table: NcclMeasurements) -> Measured:
        fit = ab.fit_alpha_beta(table.collective, table.ranks, table.sizes, table.times)
        rows = len(table.sizes)
        shown = np.unique(np.linspace(0, rows - 1, min(rows, MEASURED_POINTS)).round()
                          .astype(int))
        return cls(table, fit, shown)

    @property
    def allreduce_times(self) -> np.ndarray:
        """The times of the dots drawn (s), as all-reduce times at the measured busbw."""
        t = self.table
        factor = ab.BUS_FACTOR["all_reduce"](t.ranks) / ab.BUS_FACTOR[t.collective](t.ranks)
        return t.times[self.shown] * factor

    def busbw_at(self, n: float) -> float | None:
        """The measured bus bandwidth (B/s) at n bytes, between the two sizes around it
        (log-linear); None outside the sizes measured."""
        sizes = self.table.sizes
        if not sizes[0] <= n <= sizes[-1]:
            return None
        return float(np.interp(np.log(n), np.log(sizes), self.table.busbw))


class MeasuredFigure:
    """What File > Open measurements adds to a FigureModel: the table (state, not a
    parameter: not saved, Reset keeps it, `clear_measurements` drops it), the fit's
    readouts and `apply_fit`, which sets the figure's matching parameters."""

    measured: Measured | None = None

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - the model's
        super().__init__(*args, **kwargs)
        if RUN_MEASUREMENTS:
            self.measured = Measured.of(RUN_MEASUREMENTS[-1])

    def load_measurements(self, table: NcclMeasurements) -> None:
        self.measured = Measured.of(table)
        self._notify()

    def clear_measurements(self) -> None:
        if self.measured is not None:
            self.measured = None
            self._notify()

    def apply_fit(self) -> None:
        if self.measured is not None:
            self._apply_fit(self.measured)

    def _apply_fit(self, measured: Measured) -> None:
        raise NotImplementedError

    def measured_readouts(self) -> dict[str, Readout]:
        if self.measured is None:
            return {}
        fit = self.measured.fit
        return {
            "fit_alpha": time_readout("Fitted α", fit.alpha),
            "fit_bandwidth": (Readout("Fitted 1/β", 1 / fit.beta / ab.GB, "GB/s")
                              if fit.beta > 0 else
                              Readout("Fitted 1/β", shown="not measured (sizes too small)")),
            "fit_error": Readout("Fit's worst error", 100 * fit.worst_error, "%", digits=2),
        }


# ---------------------------------------------------------------------------------------
SIZE_MIN, SIZE_MAX = 1.0, 1e10  # bytes on the plot
CURVE_POINTS = 241
PREDICTED = ("recursive_doubling", "rabenseifner")  # the crossover of the predict-and-reveal
LINK_PRESETS = (("network", "Network (one NIC)"), ("nvlink", "NVLink"))


@dataclass(frozen=True)
class AlphaBetaOut:
    ranks: int
    alpha: float  # s
    beta: float  # s/B
    sizes: np.ndarray
    times: dict[str, np.ndarray]  # algorithm -> seconds over sizes
    costs: dict[str, ab.Cost]
    at_marker: dict[str, float]
    winner: str
    crossovers: tuple[tuple[str, str, float], ...]  # (a, b, n*) inside the plot
    rd_rab: float | None  # n* of recursive doubling vs Rabenseifner
    power_of_two: bool

    def crossings_shown(self, revealed: bool) -> tuple[tuple[str, str, float], ...]:
        """The crossovers to draw: the one the learner predicts waits for Reveal."""
        return tuple(c for c in self.crossovers if revealed or c[:2] != PREDICTED)

    def rd_rab_shown(self) -> bool:
        """Whether recursive doubling vs Rabenseifner changes the winner (is drawn)."""
        return any(c[:2] == PREDICTED for c in self.crossovers)


def _link_numbers(preset: str, gpu_key: str) -> tuple[float, float]:
    """Latency (µs) and bandwidth (GB/s) of a preset link, as the data file gives them."""
    g = gpu(gpu_key)
    if preset == "nvlink":
        return g["links.nvlink_latency_us"], g["links.nvlink_gbs"]
    return g["links.nic_latency_us"], g["links.nic_gbs"]


class AlphaBetaModel(MeasuredFigure, PredictFirstModel):
    """Figure 7.3: all-reduce time against message size n (log-log) for the ring,
    recursive doubling and Rabenseifner, from `alpha_beta` (MPICH's extra steps when P
    is not a power of two). Crossover of a and b: n* = (s_b - s_a) alpha / ((v_a - v_b)
    beta); for P = 8 recursive doubling vs Rabenseifner is 2.4 alpha/beta and ring vs
    recursive doubling 8.8 alpha/beta. The learner predicts the first before Reveal."""

    gpus = Parameter(8, label="GPUs P", minimum=2, maximum=64, step=1,
                     help="Ranks; not a power of two adds MPICH's fold-in and fold-out steps")
    link = Parameter("network", label="Link preset", choices=list(LINK_PRESETS),
                     help="Sets α and bandwidth from the GPU's data (the latencies are "
                          "assumptions)")
    alpha_us = Parameter(_link_numbers("network", DEFAULT_GPU)[0], label="Latency α",
                         unit="µs", minimum=0.1, maximum=100.0, log=True,
                         help="Start-up time of every step")
    bandwidth_gbs = Parameter(_link_numbers("network", DEFAULT_GPU)[1], label="Bandwidth 1/β",
                              unit="GB/s", minimum=1.0, maximum=1000.0, log=True,
                              help="Bytes per second of one link, one direction")
    message_bytes = Parameter(1e6, label="Message n", unit="B", minimum=SIZE_MIN,
                              maximum=SIZE_MAX, log=True,
                              help="The magenta line: the size the winner is read at")
    guess_bytes = Parameter(1e4, label="Your guess for n*", unit="B", minimum=SIZE_MIN,
                            maximum=SIZE_MAX, log=True,
                            help="Where Rabenseifner overtakes recursive doubling")
    guess_parameter = "guess_bytes"

    def _apply_fit(self, measured: Measured) -> None:
        """P, alpha and bandwidth of the measurement's fit (clamped to the sliders)."""
        fit = measured.fit
        with self.batch():
            self.set("gpus", measured.table.ranks)
            self.set("alpha_us", fit.alpha / ab.US)
            if fit.beta > 0:
                self.set("bandwidth_gbs", 1 / fit.beta / ab.GB)

    def parameter_changed(self, name: str) -> None:
        super().parameter_changed(name)
        if name == "link":
            alpha, bandwidth = _link_numbers(self.link, DEFAULT_GPU)
            self.set("alpha_us", alpha)
            self.set("bandwidth_gbs", bandwidth)

    def compute(self) -> AlphaBetaOut:
        p = self.gpus
        alpha, beta = self.alpha_us * ab.US, 1.0 / (self.bandwidth_gbs * ab.GB)
        sizes = np.geomspace(SIZE_MIN, SIZE_MAX, CURVE_POINTS)
        costs = {a: ab.allreduce_cost(a, p) for a in ab.ALLREDUCE_ALGORITHMS}
        times = {a: c.time(sizes, alpha, beta) for a, c in costs.items()}
        at = {a: float(c.time(self.message_bytes, alpha, beta)) for a, c in costs.items()}
        winner = min(at, key=lambda a: (at[a], ab.ALLREDUCE_ALGORITHMS.index(a)))
        crossings = []
        names = ab.ALLREDUCE_ALGORITHMS
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                n = ab.crossover(costs[a], costs[b], alpha, beta)
                if n is not None and SIZE_MIN <= n <= SIZE_MAX and self._on_envelope(
                        n, costs, alpha, beta, (a, b)):
                    crossings.append((a, b, n))
        rd_rab = ab.crossover(costs["recursive_doubling"], costs["rabenseifner"], alpha, beta)
        return AlphaBetaOut(p, alpha, beta, sizes, times, costs, at, winner,
                            tuple(crossings), rd_rab, cs.is_power_of_two(p))

    @staticmethod
    def _on_envelope(n: float, costs: dict[str, ab.Cost], alpha: float, beta: float,
                     pair: tuple[str, str]) -> bool:
        """A crossover matters only where the two are the fastest there (it changes the
        winner); the others are drawn neither."""
        t = {a: c.time(n, alpha, beta) for a, c in costs.items()}
        best = min(t.values())
        return all(t[a] <= best * (1 + 1e-9) for a in pair)

    def answer_text(self) -> str:
        out = self.out
        if out.rd_rab is None:
            return ("Here recursive doubling and Rabenseifner never cross: with P = "
                    f"{out.ranks} one of them is never slower.")
        # Short: the column keeps it in view on a 1280x800 projector (why is in the lesson).
        return (f"Rabenseifner wins above n* = {si_text(out.rd_rab, 'B')} = "
                f"{out.rd_rab * out.beta / out.alpha:.3g} α/β. Your guess of "
                f"{si_text(self.guess_bytes, 'B')} is "
                f"{self.how_close(self.guess_bytes, out.rd_rab)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        names = cs.ALGORITHM_NAMES
        rows = {
            "winner": Readout("Fastest at n", name=names[out.winner]),
            **{f"t_{a}": time_readout(names[a], out.at_marker[a]) for a in out.at_marker},
            "alpha_over_beta": si_readout("α/β", out.alpha / out.beta, "B"),
        }
        rows["rd_rab"] = self.answer(
            Readout("RD/Rabenseifner n*", shown="none") if out.rd_rab is None
            else si_readout("RD/Rabenseifner n*", out.rd_rab, "B"))
        ring_rd = ab.crossover(out.costs["ring"], out.costs["recursive_doubling"], out.alpha,
                               out.beta)
        rows["ring_rd"] = (si_readout("Ring/RD n*", ring_rd, "B") if ring_rd is not None
                           else Readout("Ring/RD n*", shown="none"))
        ring_rab = ab.crossover(out.costs["ring"], out.costs["rabenseifner"], out.alpha,
                                out.beta)
        rows["ring_rab"] = (si_readout("Ring/Rabenseifner n*", ring_rab, "B")
                            if ring_rab is not None else
                            Readout("Ring/Rabenseifner n*", shown="never (ring never wins)"))
        return rows | self.measured_readouts()


# ---------------------------------------------------------------------------------------
# Figure 7.4: flat ring vs hierarchical across nodes
# ---------------------------------------------------------------------------------------
NODES_MAX = 32
SCHEMES = (("hierarchical", "Hierarchical"), ("flat", "Flat ring"))
# The lanes of one GPU, top to bottom, named as the phases name their link.
LINK_LANES = (Lane("one GPU of the ring", "NVLink"), Lane("one GPU of the ring", "network"))


@dataclass(frozen=True)
class MultiNodeOut:
    nodes: int
    gpus_per_node: int
    ranks: int
    n: float
    intra: ab.Link
    inter: ab.Link
    hierarchical: ab.MultiNode
    flat: ab.MultiNode
    nvlink_hop: float  # s, an NVLink hop of a flat-ring step
    lower_bound: float  # s on the network
    node_counts: np.ndarray
    busbw_hierarchical: np.ndarray  # B/s over node_counts
    busbw_flat: np.ndarray

    def chosen(self, scheme: str) -> ab.MultiNode:
        return self.hierarchical if scheme == "hierarchical" else self.flat


def multi_node_busbw(n: float, node_counts: np.ndarray, g: int, intra: ab.Link,
                     inter: ab.Link, latency: bool) -> tuple[np.ndarray, np.ndarray]:
    hier = [ab.hierarchical_allreduce(n, int(k), g, intra, inter, latency)
            .bus_bandwidth(n, int(k) * g) for k in node_counts]
    flat = [ab.flat_ring_allreduce(n, int(k), g, intra, inter, latency)
            .bus_bandwidth(n, int(k) * g) for k in node_counts]
    return np.array(hier), np.array(flat)


class MultiNodeModel(MeasuredFigure, FigureModel):
    """Figure 7.4: all-reduce of n bytes on N nodes of G GPUs, one NIC per GPU. Flat
    ring: 2(P-1) steps of (alpha_net + n/P beta_net). Hierarchical: intra-node ring
    reduce-scatter, G parallel inter-node ring all-reduces of n/G, intra-node ring
    all-gather (see `alpha_beta.hierarchical_allreduce`). Bus bandwidth = n/t * 2(P-1)/P.
    With latencies (default): 4 nodes x 8, 1 GB: 250.3 GB/s hierarchical, 49.2 flat."""

    scheme = Parameter("hierarchical", label="Scheme", choices=list(SCHEMES),
                       help="One ring through every GPU, or the three-phase hierarchy")
    nodes = Parameter(4, label="Nodes N", minimum=1, maximum=NODES_MAX, step=1,
                      help="Servers joined by the network")
    gpus_per_node = Parameter(8, label="GPUs per node G", minimum=2, maximum=8, step=1,
                              help="GPUs joined by NVLink inside a node, one NIC each")
    message_bytes = Parameter(1e9, label="Message n", unit="B", minimum=1e6, maximum=1e10,
                              log=True, help="Bytes all-reduced (a gradient buffer)")
    latency = Parameter(True, label="Latency terms (α)",
                        help="Off: bandwidth terms only, as in the lower bound")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="NVLink and NIC numbers come from this GPU's data")

    def _apply_fit(self, measured: Measured) -> None:
        """The measurement's layout: its servers and GPUs per server (clamped)."""
        table = measured.table
        with self.batch():
            self.set("nodes", table.nodes)
            self.set("gpus_per_node", table.ranks // table.nodes)

    def compute(self) -> MultiNodeOut:
        n, k, g = self.message_bytes, self.nodes, self.gpus_per_node
        intra, inter = ab.nvlink(self.gpu), ab.network(self.gpu)
        counts = np.arange(1, NODES_MAX + 1)
        hier_bw, flat_bw = _busbw_curves(n, g, self.gpu, self.latency)
        return MultiNodeOut(
            k, g, k * g, n, intra, inter,
            ab.hierarchical_allreduce(n, k, g, intra, inter, self.latency),
            ab.flat_ring_allreduce(n, k, g, intra, inter, self.latency),
            ab.nvlink_hop_time(n, k * g, intra, self.latency),
            ab.network_lower_bound(n, k, g, inter), counts, hier_bw, flat_bw)

    def trace(self) -> Trace:
        """Every step of the chosen scheme on its link's lane; a flat ring across nodes
        also sends over NVLink in each step (the hop done early, then waiting)."""
        out = self.out
        tasks, starts = [], []
        for phase in out.chosen(self.scheme).phases:
            for k in range(phase.steps):
                start = phase.start + k * phase.step_time
                tasks.append(Task(f"{phase.name} {k + 1}", phase.link, phase.step_time,
                                  kind=phase.link))
                starts.append(start)
                if phase.link != "NVLink" and self.scheme == "flat":
                    tasks.append(Task(f"NVLink hop {k + 1}", "NVLink", out.nvlink_hop,
                                      kind="NVLink"))
                    starts.append(start)
        return Trace(schedule_at(tasks, starts), LINK_LANES)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        run = out.chosen(self.scheme)
        busbw = run.bus_bandwidth(out.n, out.ranks) if out.ranks > 1 else 0.0
        rows = {
            "gpus": Readout("GPUs P", out.ranks),
            "time": time_readout("All-reduce time", run.total),
            "algbw": Readout("Algorithm bandwidth", out.n / run.total / ab.GB, "GB/s"),
            "busbw": Readout("Bus bandwidth", busbw / ab.GB, "GB/s"),
            "nic": Readout("One NIC", out.inter.bandwidth / ab.GB, "GB/s"),
            "vs_nic": Readout("Bus bw / NIC", busbw / out.inter.bandwidth, "×"),
            "lower_bound": time_readout("Network lower bound", out.lower_bound),
        }
        for i, phase in enumerate(out.hierarchical.phases):
            rows[f"phase_{i}"] = time_readout(f"H{i + 1}: {phase.name}", phase.time)
        other = out.flat if self.scheme == "hierarchical" else out.hierarchical
        rows["other"] = Readout(
            "Flat ring bus bw" if self.scheme == "hierarchical" else "Hierarchical bus bw",
            other.bus_bandwidth(out.n, out.ranks) / ab.GB if out.ranks > 1 else 0.0, "GB/s")
        if self.measured is not None:
            busbw = self.measured.busbw_at(out.n)
            rows["measured_busbw"] = (
                Readout("Measured bus bw at n", busbw / ab.GB, "GB/s") if busbw is not None
                else Readout("Measured bus bw at n", shown="not measured at this n"))
        return rows | self.measured_readouts()


@cache_by_key(maxsize=32)
def _busbw_curves(n: float, g: int, gpu_key: str, latency: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    counts = np.arange(1, NODES_MAX + 1)
    return multi_node_busbw(n, counts, g, ab.nvlink(gpu_key), ab.network(gpu_key), latency)
