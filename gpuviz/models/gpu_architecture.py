"""Lesson 1, GPU architecture: occupancy, waves of blocks, warp scheduling, memory levels.

Pure functions first (numbers in, frozen dataclasses out), then the figure models.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, PlayheadModel, Readout, format_g, plural
from gpuviz.core.schedule import Task, schedule_at
from gpuviz.core.trace import Lane, Trace
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices

WARP_SIZE = 32
KB = 1024

# ---------------------------------------------------------------------------------------
# Occupancy (figure 1.3, also used by 1.1)
# ---------------------------------------------------------------------------------------

RESOURCES = ("warps", "registers", "shared_memory", "blocks")
RESOURCE_LABELS = {
    "warps": "Warps",
    "registers": "Registers",
    "shared_memory": "Shared memory",
    "blocks": "Block slots",
}
LIMIT_LABELS = {"warps": "Warps", "registers": "Registers", "shared_memory": "Shared mem.",
                "blocks": "Block slots"}
# Short names for a readout line that names two resources ("regs + shared mem.").
LIMITER_WORDS = {"warps": "warps", "registers": "regs", "shared_memory": "shared mem.",
                 "blocks": "block slots"}


def limiter_text(limiting: tuple[str, ...]) -> str:
    """The resources that set the limit, short enough for one readout line: one by its
    name, two by short names joined with "+", more as a count (the bars show which)."""
    if len(limiting) == 1:
        return RESOURCE_LABELS[limiting[0]].lower()
    if len(limiting) == 2:
        return " + ".join(LIMITER_WORDS[name] for name in limiting)
    return f"{len(limiting)} resources tie"


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and what limits them.

    limits: blocks per SM each resource alone allows (0 = the block cannot launch).
    limiting: the resources whose limit equals the result (ties included).
    """

    blocks: int
    limits: dict[str, int]
    limiting: tuple[str, ...]
    warps_per_block: int
    registers_per_warp: int
    registers_per_block: int
    shared_memory_per_block: int  # bytes, including the runtime's reservation
    active_warps: int
    occupancy: float  # active warps / maximum warps per SM
    failure: str  # why the launch fails, or "" when at least one block fits


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(g: GPU, threads_per_block: int, registers_per_thread: int,
              shared_memory_bytes: int) -> Occupancy:
    """Blocks per SM by the rules of CUDA's occupancy calculator
    (cudaOccMaxActiveBlocksPerMultiprocessor in cuda_occupancy.h):

      warps/block     = ceil(threads / 32)
      registers/warp  = roundup(registers/thread x 32, allocation unit 256)
      limit_registers = floor(floor(registers/SM / 4 / registers per warp) x 4 / warps/block)
                        (registers live in 4 sub-partitions; 0 if a block needs more than
                        the per-block maximum)
      limit_warps     = floor(max warps/SM / warps per block)
      shared/block    = roundup(requested + 1 KB reserved, 128 B)
      limit_shared    = floor(shared/SM / shared per block)
      blocks          = min(all limits, max blocks/SM)
    """
    warps = math.ceil(threads_per_block / WARP_SIZE)
    regs_per_warp = _round_up(registers_per_thread * WARP_SIZE, int(g["sm.register_alloc_unit"]))
    regs_per_block = regs_per_warp * warps
    subparts = int(g["sm.register_subpartitions"])
    smem_per_block = _round_up(
        shared_memory_bytes + int(g["sm.shared_memory_reserved_per_block_kb"] * KB),
        int(g["sm.shared_memory_alloc_unit_bytes"]))
    smem_per_sm = int(g["sm.shared_memory_kb"] * KB)
    failure = ""

    if threads_per_block > g["sm.max_threads_per_block"]:
        limit_warps = 0
        failure = (f"{threads_per_block:,} threads exceed the limit of "
                   f"{int(g['sm.max_threads_per_block']):,} per block")
    else:
        limit_warps = int(g["sm.max_warps"]) // warps

    fits_registers = (registers_per_thread <= g["sm.max_registers_per_thread"]
                      and regs_per_block <= g["sm.max_registers_per_block"]
                      and regs_per_warp * _round_up(warps, subparts) <= g["sm.registers"])
    if fits_registers:
        per_subpart = int(g["sm.registers"]) // subparts
        limit_regs = (per_subpart // regs_per_warp) * subparts // warps
    else:
        limit_regs = 0
        failure = failure or (
            f"a block needs {regs_per_block:,} registers "
            f"({warps} warps × {regs_per_warp:,}), more than the "
            f"{int(g['sm.max_registers_per_block']):,} one SM has")

    if shared_memory_bytes > g["sm.shared_memory_per_block_kb"] * KB:
        limit_smem = 0
        failure = failure or (
            f"{shared_memory_bytes / KB:g} KB of shared memory exceeds the "
            f"{g['sm.shared_memory_per_block_kb']:g} KB a block may use")
    else:
        limit_smem = smem_per_sm // smem_per_block

    limits = {"warps": limit_warps, "registers": limit_regs, "shared_memory": limit_smem,
              "blocks": int(g["sm.max_blocks"])}
    blocks = min(limits.values())
    limiting = tuple(name for name in RESOURCES if limits[name] == blocks)
    active = blocks * warps
    return Occupancy(blocks, limits, limiting, warps, regs_per_warp, regs_per_block,
                     smem_per_block, active, active / g["sm.max_warps"], failure)


class OccupancyModel(FigureModel):
    """Figure 1.3: how threads, registers and shared memory per block set the number of
    blocks resident on one SM, and when a launch fails. Rules in `occupancy()`."""

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Per-SM limits come from this GPU's data sheet")
    threads_per_block = Parameter(256, label="Threads per block", unit="threads",
                                  minimum=32, maximum=1024, step=32,
                                  help="Block size chosen at launch")
    registers_per_thread = Parameter(32, label="Registers per thread", unit="regs",
                                     minimum=8, maximum=255, step=1,
                                     help="Chosen by the compiler; cap it with "
                                          "__launch_bounds__ or -maxrregcount")
    shared_memory_kb = Parameter(16, label="Shared memory per block", unit="KB",
                                 minimum=0, maximum=228, step=1,
                                 help="Static plus dynamic shared memory the kernel asks for")

    def compute(self) -> Occupancy:
        return occupancy(gpu(self.gpu), self.threads_per_block, self.registers_per_thread,
                         self.shared_memory_kb * KB)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        g = gpu(self.gpu)
        return {
            "resident_blocks": Readout("Blocks per SM", out.blocks, "blocks"),
            "active_warps": Readout("Warps per SM", out.active_warps,
                                    total=int(g["sm.max_warps"])),
            "occupancy": Readout("Occupancy", 100 * out.occupancy, "%"),
            "limited_by": Readout("Limited by", name=limiter_text(out.limiting)),
            "registers_per_block": Readout("Registers/block", out.registers_per_block,
                                           "regs"),
            "shared_memory_per_block": Readout("Shared mem. (+1 KB)",
                                               out.shared_memory_per_block, "B"),
            **{f"limit_{name}": Readout(f"{LIMIT_LABELS[name]} limit",
                                        out.limits[name], "blocks")
               for name in RESOURCES},
            "launch": Readout("Launch", not out.failure,
                              shown="fails" if out.failure else "succeeds"),
        }


# ---------------------------------------------------------------------------------------
# Execution hierarchy, waves and the tail effect (figure 1.1)
# ---------------------------------------------------------------------------------------

# Figure 1.1 assumes a simple kernel: 32 registers per thread and no shared memory. It is a
# teaching assumption, not a hardware number, so it lives here and not in resources/.
HIERARCHY_REGISTERS_PER_THREAD = 32
HIERARCHY_SHARED_MEMORY_BYTES = 0

LEVELS = (("grid", "Grid"), ("block", "Block"), ("warp", "Warp"), ("thread", "Thread"),
          ("sm", "SM"))


@dataclass(frozen=True)
class GridLaunch:
    """A 1-D launch of `problem_size` threads in blocks of `block_size`, cut into waves.

    waves: how many rounds of `blocks_per_wave` (SMs x resident blocks) the grid needs.
    last_wave_blocks (r): blocks left for the last wave, dealt one per SM first, so
    idle_sms_last_wave = max(0, SMs - r).
    tail_efficiency: blocks / (waves x blocks_per_wave), the share of block slots used
    over the whole run (1 when the last wave is full).
    """

    problem_size: int
    block_size: int
    blocks: int
    warps_per_block: int
    total_warps: int
    threads_launched: int
    idle_threads: int  # launched threads beyond the problem, all in the last block
    last_block_threads: int  # threads of the last block that have work
    resident_blocks: int  # per SM, from the occupancy rules
    sms: int
    blocks_per_wave: int
    waves: int
    last_wave_blocks: int
    busy_sms_last_wave: int
    idle_sms_last_wave: int
    last_wave_fill: float  # last_wave_blocks / blocks_per_wave
    tail_efficiency: float
    occupancy: Occupancy


def grid_launch(g: GPU, problem_size: int, block_size: int,
                registers_per_thread: int = HIERARCHY_REGISTERS_PER_THREAD,
                shared_memory_bytes: int = HIERARCHY_SHARED_MEMORY_BYTES) -> GridLaunch:
    """Blocks, warps, waves and idle hardware of a launch of N threads in blocks of B:

      blocks           = ceil(N / B)             warps per block = ceil(B / 32)
      idle threads     = blocks x B - N          (the last block is only partly used)
      resident         = blocks per SM from occupancy() (1.3's rules)
      blocks per wave  = SMs x resident          waves = ceil(blocks / blocks per wave)
      r                = blocks - (waves - 1) x blocks per wave
      idle SMs (last)  = max(0, SMs - r)
    """
    problem_size = max(int(problem_size), 1)
    block_size = max(int(block_size), 1)
    blocks = math.ceil(problem_size / block_size)
    warps = math.ceil(block_size / WARP_SIZE)
    occ = occupancy(g, block_size, registers_per_thread, shared_memory_bytes)
    sms = g.sms
    per_wave = sms * occ.blocks
    if per_wave > 0:
        waves = math.ceil(blocks / per_wave)
        last = blocks - (waves - 1) * per_wave
        busy = min(sms, last)
        fill = last / per_wave
        efficiency = blocks / (waves * per_wave)
    else:  # the block does not fit: nothing runs
        waves, last, busy, fill, efficiency = 0, 0, 0, 0.0, 0.0
    launched = blocks * block_size
    return GridLaunch(
        problem_size=problem_size, block_size=block_size, blocks=blocks,
        warps_per_block=warps, total_warps=blocks * warps, threads_launched=launched,
        idle_threads=launched - problem_size,
        last_block_threads=problem_size - (blocks - 1) * block_size,
        resident_blocks=occ.blocks, sms=sms, blocks_per_wave=per_wave, waves=waves,
        last_wave_blocks=last, busy_sms_last_wave=busy, idle_sms_last_wave=sms - busy,
        last_wave_fill=fill, tail_efficiency=efficiency, occupancy=occ)


def level_description(level: str, launch: GridLaunch, g: GPU) -> str:
    """What one level of the hierarchy is, in a few sentences, with this launch's numbers."""
    n, b = launch.problem_size, launch.block_size
    if level == "grid":
        return (f"The grid is the whole launch: every thread of one kernel call. "
                f"{n:,} threads in blocks of {b:,} need {launch.blocks:,} blocks "
                f"({launch.threads_launched:,} threads launched, {launch.idle_threads:,} "
                f"with nothing to do). Blocks never talk to each other, so the hardware "
                f"may run them in any order, on any SM.")
    if level == "block":
        return (f"A block is a team of {b:,} threads that runs on one SM from start to "
                f"finish. Its threads can share fast on-chip memory and wait for each "
                f"other at a barrier. Here one SM holds "
                f"{plural(launch.resident_blocks, 'such block', 'such blocks')} at a time. "
                f"The last block has work for only "
                f"{launch.last_block_threads:,} of its threads.")
    if level == "warp":
        return (f"A warp is 32 threads that the SM schedules as one: they issue the same "
                f"instruction together. A block of {b:,} threads is {launch.warps_per_block} "
                f"warps (a partial warp still takes a whole warp slot); the grid has "
                f"{launch.total_warps:,} warps. One SM keeps up to "
                f"{int(g['sm.max_warps'])} warps in flight.")
    if level == "thread":
        return (f"A thread is one instance of the kernel with its own registers "
                f"(here {HIERARCHY_REGISTERS_PER_THREAD}) and its own index, which tells it "
                f"which element to work on. Threads past N = {n:,} must check the index "
                f"and do nothing: {launch.idle_threads:,} of them here.")
    return (f"An SM (streaming multiprocessor) is one of the {launch.sms} processors of the "
            f"{g.short_name}. It holds {plural(launch.resident_blocks, 'block')} of this "
            f"size at once, so the chip runs {plural(launch.blocks_per_wave, 'block')} per "
            f"wave and the grid takes {plural(launch.waves, 'wave')}. The last wave has "
            f"{plural(launch.last_wave_blocks, 'block')}: "
            f"{plural(launch.idle_sms_last_wave, 'SM')} get none and wait.")


class HierarchyModel(FigureModel):
    """Figure 1.1: grid, blocks, warps and threads of a launch of N threads, and how its
    blocks fill the SMs in waves. Equations in `grid_launch()`; resident blocks per SM use
    the occupancy rules of 1.3 with 32 registers per thread and no shared memory."""

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="The number of SMs and the per-SM limits come from this GPU")
    problem_size = Parameter(300_000, label="Problem size N", unit="threads",
                             minimum=1_000, maximum=100_000_000, log=True,
                             help="Threads the grid must cover, one element each")
    block_size = Parameter(256, label="Block size", unit="threads", minimum=32,
                           maximum=1024, step=32, help="Threads per block, chosen at launch")
    level = Parameter("grid", label="Level", choices=LEVELS,
                      help="Pick a level of the hierarchy to read what it is")

    def compute(self) -> GridLaunch:
        return grid_launch(gpu(self.gpu), self.problem_size, self.block_size)

    def description(self) -> str:
        return level_description(self.level, self.out, gpu(self.gpu))

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "blocks": Readout("Blocks", out.blocks, "blocks"),
            "warps_per_block": Readout("Warps per block", out.warps_per_block, "warps"),
            "total_warps": Readout("Warps in the grid", out.total_warps, "warps"),
            "idle_threads": Readout("Idle threads (last block)", out.idle_threads,
                                    "threads"),
            "resident_blocks": Readout("Blocks per SM", out.resident_blocks, "blocks"),
            "blocks_per_wave": Readout("Blocks per wave", out.blocks_per_wave, "blocks"),
            "waves": Readout("Waves", out.waves),
            "last_wave_blocks": Readout("Blocks in last wave", out.last_wave_blocks,
                                        "blocks"),
            "idle_sms_last_wave": Readout("Idle SMs, last wave", out.idle_sms_last_wave,
                                          total=out.sms),
            "tail_efficiency": Readout("Block slots used", 100 * out.tail_efficiency, "%"),
        }


# ---------------------------------------------------------------------------------------
# Latency hiding by warp switching (figure 1.2)
# ---------------------------------------------------------------------------------------

HORIZON_PERIODS = 4  # the timeline shows this many periods of c + L cycles
PLAY_SECONDS = 8.0  # Play crosses the whole horizon in this many seconds at speed 1
STEADY_PERIODS = 4  # periods averaged for the simulated idle share, after one warm-up


def warps_to_hide_latency(issue_cycles: float, memory_latency: float) -> int:
    """Fewest warps that keep one scheduler busy: while one warp waits L cycles the others
    must fill them, c cycles each, so n c >= c + L, i.e. n = 1 + ceil(L / c)."""
    return 1 + math.ceil(memory_latency / issue_cycles)


def idle_share(warps: int, issue_cycles: float, memory_latency: float) -> float:
    """Share of cycles the scheduler has no ready warp: each warp is busy c of every c + L
    cycles, so with n warps the scheduler idles 1 - n c / (c + L) (0 once n c >= c + L)."""
    return max(0.0, 1.0 - warps * issue_cycles / (issue_cycles + memory_latency))


def simulate_warps(warps: int, issue_cycles: float, memory_latency: float,
                   until: float) -> tuple[np.ndarray, np.ndarray]:
    """Event-by-event schedule of one warp scheduler. Every warp is ready at cycle 0; the
    scheduler picks the warp that has been ready longest (lowest index on ties), lets it
    issue for c cycles, and that warp is ready again c + L cycles after it started.
    Returns the start cycles of the bursts that begin before `until` and their warps."""
    ready = [(0.0, warp) for warp in range(warps)]  # a heap of (ready cycle, warp)
    starts: list[float] = []
    owners: list[int] = []
    now = 0.0
    while True:
        ready_at, warp = heapq.heappop(ready)
        start = max(now, ready_at)
        if start >= until:
            break
        starts.append(start)
        owners.append(warp)
        now = start + issue_cycles
        heapq.heappush(ready, (now + memory_latency, warp))
    return np.asarray(starts, dtype=float), np.asarray(owners, dtype=int)


def busy_cycles(starts: np.ndarray, issue_cycles: float, t0: float, t1: float) -> float:
    """Cycles in [t0, t1) during which the scheduler issues (bursts never overlap)."""
    if t1 <= t0 or starts.size == 0:
        return 0.0
    overlap = np.clip(np.minimum(starts + issue_cycles, t1) - np.maximum(starts, t0), 0, None)
    return float(overlap.sum())


# What a lane shows at a time: a warp issuing (also drawn on the scheduler's lane), waiting
# for memory, or ready and waiting for the scheduler.
ISSUE, WAIT, READY = 0, 1, 2
BAR_KINDS = {ISSUE: "issue", WAIT: "memory", READY: "ready"}


def warp_lanes(warps: int) -> list[str]:
    """The lanes top to bottom: each warp, then the scheduler."""
    return [f"Warp {i + 1}" for i in range(warps)] + ["Scheduler"]


@dataclass(frozen=True, eq=False)  # compared by identity: one per computed schedule
class WarpBars:
    """The schedule as bars on lanes: warps 0..n-1, then the scheduler (lane n). Bars are
    sorted by lane, then time; `idle_start`/`idle_end` are the scheduler's gaps."""

    lane: np.ndarray
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray  # ISSUE, WAIT or READY
    idle_start: np.ndarray
    idle_end: np.ndarray


def warp_bars(warps: int, issue_cycles: float, memory_latency: float, starts: np.ndarray,
              owners: np.ndarray, horizon: float) -> WarpBars:
    """Every bar up to the horizon: each burst issues for c cycles, waits L, and is then
    ready until the warp's next burst (or the horizon); bars of no length are left out."""
    c, lat = issue_cycles, memory_latency
    lane, x0, x1, kind = [], [], [], []
    for warp in range(warps):
        mine = starts[owners == warp]
        ready = mine + c + lat
        following = np.append(mine[1:], horizon)
        for a, b, k in ((mine, mine + c, ISSUE), (mine + c, ready, WAIT),
                        (ready, np.maximum(following, ready), READY)):
            lane.append(np.full(len(mine), warp))
            x0.append(a)
            x1.append(b)
            kind.append(np.full(len(mine), k))
    lane.append(np.full(len(starts), warps))
    x0.append(starts)
    x1.append(starts + c)
    kind.append(np.full(len(starts), ISSUE))
    lane, x0, kind = np.concatenate(lane), np.concatenate(x0), np.concatenate(kind)
    x1 = np.minimum(np.concatenate(x1), horizon)
    keep = x1 > x0
    order = np.lexsort((x0[keep], lane[keep]))
    gap_from = np.minimum(np.concatenate([[0.0], starts + c]), horizon)
    gap_to = np.append(starts, horizon)
    gaps = gap_to > gap_from
    return WarpBars(lane[keep][order], x0[keep][order], x1[keep][order], kind[keep][order],
                    gap_from[gaps], gap_to[gaps])


@dataclass(frozen=True)
class WarpSchedule:
    """The simulated schedule over the horizon, and the idle share two ways.

    period: the schedule repeats every max(c + L, n c) cycles.
    idle_share_simulated: idle cycles / all cycles over STEADY_PERIODS periods after one
    warm-up period.
    """

    warps: int
    issue_cycles: int
    memory_latency: int
    horizon: float
    starts: np.ndarray  # burst start cycles (time order)
    owners: np.ndarray  # warp of each burst
    warps_needed: int
    idle_share_formula: float
    idle_share_simulated: float
    period: float
    bars: WarpBars


def warp_schedule(warps: int, issue_cycles: int, memory_latency: int) -> WarpSchedule:
    c, lat = float(issue_cycles), float(memory_latency)
    period = max(c + lat, warps * c)
    horizon = HORIZON_PERIODS * (c + lat)
    until = max(horizon, (STEADY_PERIODS + 2) * period)
    starts, owners = simulate_warps(warps, c, lat, until)
    t0, t1 = period, (STEADY_PERIODS + 1) * period
    simulated = 1.0 - busy_cycles(starts, c, t0, t1) / (t1 - t0)
    shown = starts < horizon
    starts, owners = starts[shown], owners[shown]
    return WarpSchedule(warps, issue_cycles, memory_latency, horizon, starts, owners,
                        warps_to_hide_latency(c, lat), idle_share(warps, c, lat),
                        max(simulated, 0.0), period,
                        warp_bars(warps, c, lat, starts, owners, horizon))


class WarpSchedulerModel(PlayheadModel):
    """Figure 1.2: one warp scheduler hides memory latency by switching warps. A warp
    computes for c cycles, then sits L cycles waiting on memory. Warps needed = 1 + ceil(L / c);
    with fewer, the scheduler idles 1 - n c / (c + L) of the time. Play draws the schedule
    up to a moving playhead (`t`, in cycles); Step jumps to the end of the next burst."""

    warps = Parameter(1, label="Warps", unit="warps", minimum=1, maximum=16, step=1,
                      help="Warps assigned to this scheduler (recent NVIDIA SMs have 4 "
                           "schedulers sharing 64 warps, so at most 16 each)")
    issue_cycles = Parameter(10, label="Issue cycles c", unit="cycles", minimum=1,
                             maximum=50, step=1,
                             help="Cycles a warp issues instructions before it needs memory")
    memory_latency = Parameter(90, label="Memory latency L", unit="cycles", minimum=10,
                               maximum=800, step=10,
                               help="Cycles a warp waits for its load (HBM is several "
                                    "hundred cycles)")

    play_seconds = PLAY_SECONDS

    def compute(self) -> WarpSchedule:
        return warp_schedule(self.warps, self.issue_cycles, self.memory_latency)

    # --- time: the playhead `t` is in cycles -----------------------------------------
    @property
    def horizon(self) -> float:
        return self.out.horizon

    def step_marks(self) -> np.ndarray:
        """The end of every burst."""
        return self.out.starts + self.out.issue_cycles

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "warps_needed": Readout("Warps needed, 1 + ⌈L/c⌉", out.warps_needed, "warps"),
            # One decimal, as the formula and the comment write them (90.0%, not 90%).
            "idle_formula": Readout("Idle, formula", 100 * out.idle_share_formula, "%",
                                    decimals=1),
            "idle_simulated": Readout("Idle, simulated", 100 * out.idle_share_simulated,
                                      "%", decimals=1),
            "period": Readout("Period", out.period, "cycles"),
            "cycle": Readout("Playhead", round(self.t), "cycles"),
        }

    def trace(self) -> Trace:
        """The bars, a cycle being one at the default GPU's clock."""
        bars = self.out.bars
        lanes = warp_lanes(self.warps)
        tasks = [Task(f"{lanes[lane]} {BAR_KINDS[kind]} {i}", lanes[lane], end - start,
                      kind=BAR_KINDS[kind], label=BAR_KINDS[kind])
                 for i, (lane, start, end, kind) in enumerate(zip(
                     bars.lane.tolist(), bars.start.tolist(), bars.end.tolist(),
                     bars.kind.tolist(), strict=True))]
        return Trace(schedule_at(tasks, bars.start),
                     tuple(Lane("one warp scheduler", name) for name in lanes),
                     seconds=1e-9 / gpu(DEFAULT_GPU)["chip.clock_ghz"])


# ---------------------------------------------------------------------------------------
# The memory hierarchy (figure 1.4)
# ---------------------------------------------------------------------------------------

QUANTITIES = (("size", "Size"), ("bandwidth", "Bandwidth"), ("latency", "Latency"))
MEMORY_LEVELS = (("registers", "Registers"), ("shared", "Shared memory / L1"),
                 ("l2", "L2 cache"), ("hbm", "HBM"), ("nvlink", "NVLink"),
                 ("network", "InfiniBand / NIC"))
LINK_LEVELS = ("nvlink", "network")
REGISTER_BYTES = 4  # a register holds one 32-bit word
FMA_SOURCE_OPERANDS = 3  # a fused multiply-add reads a, b and c
NO_MEASUREMENT = "no published measurement"


@dataclass(frozen=True)
class LevelNumber:
    """One number of one level: value (None when there is none), its source, and its
    status: "published" (data sheet or tuning guide), "measured" (microbenchmark),
    "computed" (from other sourced numbers), "estimate", or "none"."""

    value: float | None
    source: str
    status: str

    @property
    def shown(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class MemoryLevel:
    key: str
    label: str
    kind: str  # "onchip", "memory" or "network": the colour role
    size_bytes: LevelNumber
    bandwidth_bytes_s: LevelNumber
    latency_ns: LevelNumber
    latency_cycles: float | None

    def number(self, quantity: str) -> LevelNumber:
        return {"size": self.size_bytes, "bandwidth": self.bandwidth_bytes_s,
                "latency": self.latency_ns}[quantity]


def _status(sourced: object, default: str = "published") -> str:
    return "estimate" if sourced.estimate else default


def _sourced(g: GPU, field: str, scale: float, default: str = "published") -> LevelNumber:
    s = g.source(field)
    return LevelNumber(s.value * scale, s.source, _status(s, default))


def _none(why: str) -> LevelNumber:
    return LevelNumber(None, why, "none")


def memory_levels(g: GPU) -> tuple[MemoryLevel, ...]:
    """Size, bandwidth and latency of each level of one GPU, each with its source.

    Sizes are whole-chip totals (per-SM size x SMs for registers and shared memory/L1;
    KB are 1024 bytes as NVIDIA counts them; the chip's MB and GB are decimal).
    Shared-memory bandwidth = banks x bank width per clock x SMs x clock (computed).
    Register bandwidth = FP32 lanes x 3 source operands x 4 B x SMs x clock, with the
    lanes read off the FP32 peak (estimate). L2 bandwidth only where a measurement
    exists. Latencies: cycles / clock for on-chip and HBM; links use assumed values.
    """
    sms = g.sms
    clock = g["chip.clock_ghz"] * 1e9
    clock_src = g.source("chip.clock_ghz")
    clock_note = "" if not clock_src.estimate else " (the clock itself is an estimate)"

    def ns(field: str) -> tuple[LevelNumber, float]:
        s = g.source(f"latency_cycles.{field}")
        status = "estimate" if (s.estimate or clock_src.estimate) else "measured"
        return (LevelNumber(s.value / g["chip.clock_ghz"],
                            f"{s.value:g} cycles / {g['chip.clock_ghz']:g} GHz; {s.source}",
                            status), s.value)

    # Registers
    reg_size = LevelNumber(g["sm.registers"] * REGISTER_BYTES * sms,
                           f"{int(g['sm.registers']):,} registers × 4 B per SM × {sms} SMs; "
                           f"{g.source('sm.registers').source}", "computed")
    lanes = g["peak_tflops.fp32"] * 1e12 / (2 * sms * clock)
    reg_bw = LevelNumber(
        lanes * FMA_SOURCE_OPERANDS * REGISTER_BYTES * sms * clock,
        f"{lanes:.0f} FP32 lanes × 3 operands × 4 B per clock × {sms} SMs × "
        f"{g['chip.clock_ghz']:g} GHz; lanes from the FP32 peak "
        f"({g.source('peak_tflops.fp32').source}){clock_note}", "estimate")
    registers = MemoryLevel(
        "registers", "Registers", "onchip", reg_size, reg_bw,
        _none(f"{NO_MEASUREMENT}: operands are read inside the instruction pipeline"), None)

    # Shared memory / L1
    smem_size = LevelNumber(g["sm.l1_shared_kb"] * KB * sms,
                            f"{g['sm.l1_shared_kb']:g} KB per SM × {sms} SMs; "
                            f"{g.source('sm.l1_shared_kb').source}", "computed")
    if "sm.shared_memory_banks" in g.numbers and "sm.shared_memory_bank_bytes" in g.numbers:
        per_clock = g["sm.shared_memory_banks"] * g["sm.shared_memory_bank_bytes"]
        smem_bw = LevelNumber(
            per_clock * sms * clock,
            f"{g['sm.shared_memory_banks']:g} banks × {g['sm.shared_memory_bank_bytes']:g} B "
            f"per clock × {sms} SMs × {g['chip.clock_ghz']:g} GHz; "
            f"{g.source('sm.shared_memory_banks').source}{clock_note}",
            "estimate" if clock_src.estimate else "computed")
    else:
        smem_bw = _none(NO_MEASUREMENT)
    smem_lat, smem_cycles = ns("shared")
    shared = MemoryLevel("shared", "Shared memory / L1", "onchip", smem_size, smem_bw,
                         smem_lat, smem_cycles)

    # L2
    l2_lat, l2_cycles = ns("l2")
    l2_bw = (_sourced(g, "chip.l2_bandwidth_tbs", 1e12, "measured")
             if "chip.l2_bandwidth_tbs" in g.numbers else _none(NO_MEASUREMENT))
    l2 = MemoryLevel("l2", "L2 cache", "onchip", _sourced(g, "chip.l2_mb", 1e6), l2_bw,
                     l2_lat, l2_cycles)

    # HBM
    hbm_lat, hbm_cycles = ns("hbm")
    hbm = MemoryLevel("hbm", "HBM", "memory", _sourced(g, "chip.hbm_gb", 1e9),
                      _sourced(g, "chip.hbm_bandwidth_tbs", 1e12), hbm_lat, hbm_cycles)

    # Links: they move data between GPUs and store none.
    no_size = _none("a link stores nothing, so it has no size")
    nvlink = MemoryLevel("nvlink", "NVLink", "network", no_size,
                         _sourced(g, "links.nvlink_gbs", 1e9),
                         _sourced(g, "links.nvlink_latency_us", 1e3), None)
    network = MemoryLevel("network", "InfiniBand / NIC", "network", no_size,
                          _sourced(g, "links.nic_gbs", 1e9),
                          _sourced(g, "links.nic_latency_us", 1e3), None)
    return (registers, shared, l2, hbm, nvlink, network)


@dataclass(frozen=True)
class MemoryHierarchy:
    levels: tuple[MemoryLevel, ...]  # the levels drawn (links only when shown)
    hbm_over_l2_size: float
    l2_over_hbm_bandwidth: float | None  # None when L2 has no sourced bandwidth


def memory_hierarchy(g: GPU, show_links: bool) -> MemoryHierarchy:
    levels = memory_levels(g)
    by_key = {level.key: level for level in levels}
    l2, hbm = by_key["l2"], by_key["hbm"]
    l2_bw = l2.bandwidth_bytes_s.value
    ratio = l2_bw / hbm.bandwidth_bytes_s.value if l2_bw else None
    shown = levels if show_links else tuple(lv for lv in levels if lv.key not in LINK_LEVELS)
    return MemoryHierarchy(shown, hbm.size_bytes.value / l2.size_bytes.value, ratio)


QUANTITY_UNITS = {
    "size": (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)),
    "bandwidth": (("PB/s", 1e15), ("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("B/s", 1.0)),
    "latency": (("µs", 1e3), ("ns", 1.0)),
}


def scaled_quantity(quantity: str, value: float) -> tuple[float, str]:
    """Bytes as kB/MB/GB (decimal), bandwidth as GB/s or TB/s, latency (given in ns) as
    ns or µs: the number before the unit, and the unit."""
    units = QUANTITY_UNITS[quantity]
    unit, scale = next(((u, s) for u, s in units if value >= s), units[-1])
    return value / scale, unit


def format_quantity(quantity: str, value: float | None) -> str:
    if value is None:
        return NO_MEASUREMENT
    number, unit = scaled_quantity(quantity, value)
    return f"{format_g(number, 3)} {unit}"


class MemoryHierarchyModel(FigureModel):
    """Figure 1.4: size, bandwidth and latency of registers, shared memory/L1, L2, HBM
    and (optionally) NVLink and the network, on a log axis. Numbers and their sources in
    `memory_levels()`; no bar is drawn where no sourced value exists."""

    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Sizes, bandwidths and latencies of this GPU")
    quantity = Parameter("size", label="Quantity", choices=QUANTITIES,
                         help="What the bars measure (log axis: each grid line is x10)")
    show_links = Parameter(False, label="Show NVLink and network",
                           help="Add the links between GPUs (lessons 7 to 10)")
    level = Parameter("hbm", label="Level", choices=MEMORY_LEVELS,
                      help="The level whose numbers and sources are shown")

    def parameter_changed(self, name: str) -> None:
        if name == "show_links" and not self.show_links and self.level in LINK_LEVELS:
            self.set("level", "hbm")

    def compute(self) -> MemoryHierarchy:
        return memory_hierarchy(gpu(self.gpu), self.show_links)

    def selected(self) -> MemoryLevel:
        return next(lv for lv in memory_levels(gpu(self.gpu)) if lv.key == self.level)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        level = self.selected()

        def quantity_readout(label: str, quantity: str) -> Readout:
            number = level.number(quantity)
            if not number.shown:
                return Readout(label, shown="none" if quantity == "size" else "no data")
            tag = {"computed": " (computed)", "estimate": " (est.)"}.get(number.status, "")
            text = format_quantity(quantity, number.value) + tag
            if quantity == "latency" and level.latency_cycles is not None:
                text = f"{format_g(level.latency_cycles)} cyc = {text}"
            return Readout(label, *scaled_quantity(quantity, number.value), shown=text)

        ratio = out.l2_over_hbm_bandwidth
        return {
            "level": Readout("Level", name=level.label),
            "size": quantity_readout("Size", "size"),
            "bandwidth": quantity_readout("Bandwidth", "bandwidth"),
            "latency": quantity_readout("Latency", "latency"),
            "hbm_over_l2_size": Readout("HBM / L2 size", round(out.hbm_over_l2_size), "×"),
            "l2_over_hbm_bandwidth": (Readout("L2 / HBM bandwidth", round(ratio, 2), "×")
                                      if ratio is not None else
                                      Readout("L2 / HBM bandwidth", shown="no data")),
        }
