"""Lesson 3, kernels, tiling and fusion: launch overhead and fusion of elementwise chains,
data reuse in a tiled matmul, coalesced global loads, shared-memory bank conflicts.

Pure functions first (numbers in, frozen dataclasses out), then the figure models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import (
    TIME_UNITS,
    FigureModel,
    Parameter,
    Readout,
    SteppedModel,
    kept_digits,
    time_readout,
)
from gpuviz.data.hardware import DEFAULT_GPU, GPU, gpu, gpu_choices

KB = 1024
US = 1e-6
WARP_SIZE = 32

# Bytes per element of the storage formats an elementwise kernel reads and writes.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
DTYPE_CHOICES = (("fp32", "fp32, 4 B"), ("bf16", "bf16, 2 B"), ("fp16", "fp16, 2 B"),
                 ("fp8", "fp8, 1 B"))

# ---------------------------------------------------------------------------------------
# Figure 3.1: fusing a chain of elementwise kernels
# ---------------------------------------------------------------------------------------

OPS_CHOICES = (("unary", "Unary: f(x)"), ("binary", "Second input: f(x, w)"))
FUSION_N_MIN = 1e3
FUSION_N_MAX = 1e9


def fusion_bytes_per_element(k: int, ops: str, element_bytes: int) -> tuple[int, int]:
    """HBM bytes per element index for one unfused kernel and for the fused kernel.

    Unary chain x -> f1 -> f2 ... -> fk: every unfused kernel reads its input and writes
    its output (2 elements); the fused kernel reads x once and writes y once (2 elements).
    With a second input each op also reads its own operand w_i: an unfused kernel moves 3
    elements (input, w_i, output) and the fused one moves k + 2 (x, w_1..w_k, y).
    """
    if ops == "binary":
        return 3 * element_bytes, (k + 2) * element_bytes
    return 2 * element_bytes, 2 * element_bytes


def kernel_time(n: np.ndarray | float, bytes_per_element: float, bandwidth: float,
                launch_s: float) -> np.ndarray | float:
    """Time of one kernel in seconds: max(launch overhead, bytes / bandwidth).

    The CPU issues launches while the GPU runs earlier kernels, so in a long chain the
    slower of the two sets the pace: each kernel takes its launch overhead when the data
    is small (launch-bound) and its HBM traffic time when it is large (memory-bound).
    n: elements; bytes_per_element: B; bandwidth: B/s; launch_s: s.
    """
    return np.maximum(launch_s, np.asarray(n, dtype=float) * bytes_per_element / bandwidth)


def launch_bound_limit(bytes_per_element: float, bandwidth: float, launch_s: float) -> float:
    """Element count where a kernel's memory time equals its launch overhead:
    N* = launch overhead x bandwidth / bytes per element (elements)."""
    return launch_s * bandwidth / bytes_per_element


@dataclass(frozen=True)
class Fusion:
    n_curve: np.ndarray  # elements
    unfused_curve_s: np.ndarray
    fused_curve_s: np.ndarray
    unfused_s: float  # at the chosen N
    fused_s: float
    speedup: float
    unfused_kernel_bytes: int  # per element index, one unfused kernel
    fused_bytes: int  # per element index, the fused kernel
    boundary_n: float  # below it each unfused kernel is launch-bound
    fused_boundary_n: float  # below it the fused kernel is launch-bound
    speedup_launch_bound: float  # k
    speedup_memory_bound: float  # k x unfused bytes / fused bytes
    launch_bound: bool  # the unfused kernels at the chosen N
    bandwidth: float  # B/s


def fusion(g: GPU, n: float, k: int, ops: str, dtype: str, launch_us: float) -> Fusion:
    """Unfused chain time = k x max(L, b_u N / BW); fused time = max(L, b_f N / BW)
    (seconds; L launch overhead, BW HBM bandwidth, b_u and b_f bytes per element from
    `fusion_bytes_per_element`). Speed-up is k when launch-bound and k b_u / b_f when
    memory-bound: k for unary ops, 3k / (k + 2) with a second input."""
    element_bytes = DTYPE_BYTES[dtype]
    unfused_b, fused_b = fusion_bytes_per_element(k, ops, element_bytes)
    bandwidth = g.hbm_bandwidth
    launch_s = launch_us * US
    boundary = launch_bound_limit(unfused_b, bandwidth, launch_s)
    fused_boundary = launch_bound_limit(fused_b, bandwidth, launch_s)
    # Both times are power laws of N between the kinks, hence straight on log-log axes:
    # the ends and the kinks are all the points a curve needs.
    kinks = [x for x in (boundary, fused_boundary) if FUSION_N_MIN < x < FUSION_N_MAX]
    n_curve = np.unique(np.array([FUSION_N_MIN, *kinks, FUSION_N_MAX]))
    unfused_curve = k * kernel_time(n_curve, unfused_b, bandwidth, launch_s)
    fused_curve = kernel_time(n_curve, fused_b, bandwidth, launch_s)
    unfused_s = float(k * kernel_time(n, unfused_b, bandwidth, launch_s))
    fused_s = float(kernel_time(n, fused_b, bandwidth, launch_s))
    return Fusion(n_curve, unfused_curve, fused_curve, unfused_s, fused_s,
                  unfused_s / fused_s, unfused_b, fused_b, boundary, fused_boundary,
                  float(k), k * unfused_b / fused_b, n < boundary, bandwidth)


class FusionModel(FigureModel):
    """Figure 3.1: a chain of k elementwise kernels against one fused kernel, over the
    element count N, with a fixed launch overhead per kernel. Time model in `fusion()`."""

    elements = Parameter(1e8, label="Elements N", minimum=FUSION_N_MIN,
                         maximum=FUSION_N_MAX, log=True,
                         help="Length of the tensor each kernel of the chain processes")
    k = Parameter(4, label="Kernels in the chain k", minimum=2, maximum=16,
                  step=1, help="Number of elementwise ops, each its own kernel when unfused")
    ops = Parameter("unary", label="Ops", choices=OPS_CHOICES,
                    help="Unary ops read only the running value; ops with a second input "
                         "also read their own tensor (a bias, a residual, a mask)")
    dtype = Parameter("bf16", label="Data type", choices=DTYPE_CHOICES,
                      help="Storage format of every tensor; sets the bytes per element")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="HBM bandwidth comes from this GPU's data sheet")
    launch_overhead_us = Parameter(3.6, label="Launch overhead", unit="µs", minimum=0.5,
                                   maximum=20.0, step=0.1,
                                   help="Fixed cost of one kernel launch (CPU launch path "
                                        "and GPU start-up); CUDA graphs cut it")

    def compute(self) -> Fusion:
        return fusion(gpu(self.gpu), self.elements, self.k, self.ops, self.dtype,
                      self.launch_overhead_us)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        unit = time_readout("", out.unfused_s).unit
        return {
            # Both in the time unit of the slower (time_text's), three significant digits
            # each: "1.00 µs" against "0.500 µs", "19.1 ms" against "2.40 ms".
            "unfused_time": _time_in(f"Unfused, {self.k} kernels", out.unfused_s, unit),
            "fused_time": _time_in("Fused, 1 kernel", out.fused_s, unit),
            "speedup": Readout("Speed-up at this N", out.speedup, "×"),
            "regime": Readout("Unfused kernels are",
                              name="launch-bound" if out.launch_bound else "memory-bound"),
            "boundary": Readout("Launch-bound below N", out.boundary_n / 1e6, "M"),
            "fused_boundary": Readout("Fused launch-bound below", out.fused_boundary_n / 1e6, "M"),
            "speedup_launch_bound": Readout("Speed-up, launch-bound", out.speedup_launch_bound,
                                            "×"),
            "speedup_memory_bound": Readout("Speed-up, memory-bound", out.speedup_memory_bound,
                                            "×"),
            "unfused_kernel_bytes": Readout("Bytes/element, one kernel",
                                            out.unfused_kernel_bytes, "B"),
            "unfused_bytes": Readout("Bytes/element, chain", self.k * out.unfused_kernel_bytes,
                                     "B"),
            "fused_bytes": Readout("Bytes/element, fused", out.fused_bytes, "B"),
            "bandwidth": Readout("HBM bandwidth", out.bandwidth / 1e12, "TB/s"),
        }


def _time_in(label: str, seconds: float, unit: str) -> Readout:
    """A duration in `unit` (one of TIME_UNITS), three significant digits kept."""
    return kept_digits(Readout(label, seconds / dict(
        (name, factor) for factor, name in TIME_UNITS)[unit], unit))


# ---------------------------------------------------------------------------------------
# Figure 3.2: tiled matmul, data reuse and the shared-memory budget
# ---------------------------------------------------------------------------------------

MATRIX_SIZES = (4, 8, 16)
TILE_SIZES = (1, 2, 4, 8)
BF16_BYTES = 2
PLAY_STEPS_PER_SECOND = 2.0  # slowest Play rate, so one tile's steps can be followed
PLAY_RUN_SECONDS = 30.0  # long runs speed up so the whole kernel plays in about this time


@dataclass(frozen=True)
class TiledMatmul:
    """State of C = A B (all N x N, tiles of T x T) after `steps` tile loads.

    One step loads one A tile and one B tile into shared memory and accumulates their
    product into the C tile. Output tiles go row by row; each takes N/T steps.
    reads_a / reads_b count HBM reads of every element over the whole kernel so far.
    """

    n: int
    t: int
    tiles: int  # tiles per side, N / T
    steps: int  # steps done
    total_steps: int  # (N / T)^3
    reads_a: np.ndarray  # (N, N) int
    reads_b: np.ndarray
    c_done: np.ndarray  # (N/T, N/T) bool, output tiles written back
    current_c: tuple[int, int] | None  # output tile on chip (row, column), None before start
    current_k: int  # index of the A column tile / B row tile loaded last, -1 before start
    k_done: int  # steps accumulated into the current C tile

    @property
    def finished(self) -> bool:
        return self.steps >= self.total_steps

    @property
    def reads_so_far(self) -> int:
        return int(self.reads_a.sum() + self.reads_b.sum())


def tiled_matmul_state(n: int, t: int, steps: int) -> TiledMatmul:
    """Read counters after `steps` steps, in closed form (no replay):
    with M = N/T tiles per side, f = steps // M finished output tiles and p = steps % M
    steps into tile f = (i_f, j_f):
      A tile (i, k) reads = #{j : i M + j < f} + [i = i_f and k < p]
      B tile (k, j) reads = #{i : i M + j < f} + [j = j_f and k < p]
    At the end every element of A and B has been read M = N/T times: each A tile is used
    by the M output tiles of its row, each B tile by the M output tiles of its column."""
    t = min(t, n)
    m = n // t
    total = m ** 3
    steps = min(max(steps, 0), total)
    finished_tiles, partial = divmod(steps, m)
    index = np.arange(m)
    row_reads = np.clip(finished_tiles - index * m, 0, m)  # per A tile row i
    col_reads = np.clip(-(-(finished_tiles - index) // m), 0, m)  # per B tile column j
    a_tiles = np.repeat(row_reads[:, None], m, axis=1)
    b_tiles = np.repeat(col_reads[None, :], m, axis=0)
    current_c = None
    current_k = -1
    if steps:
        last = steps - 1
        tile, current_k = divmod(last, m)
        current_c = divmod(tile, m)
    if finished_tiles < m * m and partial:
        i, j = divmod(finished_tiles, m)
        a_tiles[i, :partial] += 1
        b_tiles[:partial, j] += 1
    block = np.ones((t, t), dtype=int)
    c_done = (np.arange(m * m) < finished_tiles).reshape(m, m)
    k_done = m if (steps and partial == 0) else partial
    return TiledMatmul(n, t, m, steps, total, np.kron(a_tiles, block),
                       np.kron(b_tiles, block), c_done, current_c, current_k, k_done)


def tile_pair_shared_bytes(tile: int, element_bytes: int = BF16_BYTES) -> int:
    """Shared memory for one T x T tile of A and one of B: 2 T^2 x bytes per element
    (4 T^2 bytes in bf16)."""
    return 2 * tile * tile * element_bytes


def largest_tile_within(limit_bytes: float, element_bytes: int = BF16_BYTES) -> int:
    """The largest T with 2 T^2 x bytes per element <= limit (elements per side)."""
    return math.isqrt(int(limit_bytes // (2 * element_bytes)))


class TiledMatmulModel(SteppedModel):
    """Figure 3.2: a tiled matmul stepped one tile load at a time, with HBM read counters
    for every element of A and B over the whole kernel (see `tiled_matmul_state`), and the
    shared memory two full-size bf16 tiles need (`tile_pair_shared_bytes`) against the
    GPU's per-block limits."""

    # It starts (and rewinds) with the first pair of tiles loaded: a blank picture with
    # nothing loaded would have nothing to look at.
    first_step = 1

    matrix_size = Parameter("8", label="Matrix size N",
                            choices=[(str(v), f"{v} × {v}") for v in MATRIX_SIZES],
                            help="A, B and C are N × N; the counters start again")
    tile_size = Parameter("2", label="Tile size T",
                          choices=[(str(v), f"{v} × {v}") for v in TILE_SIZES],
                          help="Side of the square tiles loaded into shared memory "
                               "(at most N); the counters start again")
    full_tile = Parameter(64, label="Full-size tile T", unit="elements", minimum=16,
                          maximum=512, step=16,
                          help="Tile side of a real kernel, for the shared-memory bar")
    gpu = Parameter(DEFAULT_GPU, label="GPU", choices=gpu_choices,
                    help="Per-block shared-memory limits come from this GPU's data")

    @property
    def n(self) -> int:
        return int(self.matrix_size)

    @property
    def t(self) -> int:
        return min(int(self.tile_size), self.n)

    @property
    def total_steps(self) -> int:
        return (self.n // self.t) ** 3

    @property
    def step_seconds(self) -> float:
        # At least PLAY_STEPS_PER_SECOND, faster for big settings so a run stays short.
        return 1.0 / max(PLAY_STEPS_PER_SECOND, self.total_steps / PLAY_RUN_SECONDS)

    def parameter_changed(self, name: str) -> None:
        if name in ("matrix_size", "tile_size"):
            self.reset_state()

    def compute(self) -> TiledMatmul:
        return tiled_matmul_state(self.n, self.t, self.steps_done)

    def shared_memory(self) -> tuple[int, float, float]:
        """Bytes two full-size bf16 tiles need, and the default and opt-in limits (B)."""
        g = gpu(self.gpu)
        return (tile_pair_shared_bytes(self.full_tile),
                g["sm.shared_memory_default_per_block_kb"] * KB,
                g["sm.shared_memory_per_block_kb"] * KB)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        need, default_limit, opt_in_limit = self.shared_memory()
        if need > opt_in_limit:
            fits = "no, too big"
        elif need > default_limit:
            fits = "with opt-in"
        else:
            fits = "yes, default"
        tile = "–" if out.current_c is None else f"({out.current_c[0]}, {out.current_c[1]})"
        untiled = 2 * out.n ** 3
        return {
            "step": Readout("Step", out.steps, total=out.total_steps),
            "output_tile": Readout("C tile on chip", name=tile),
            "k_steps": Readout("Products added", out.k_done, total=out.tiles),
            "reads_so_far": Readout("HBM reads so far", out.reads_so_far, "elem."),
            "reads_per_element": Readout("Reads/element (N/T)", out.tiles, ""),
            "reads_total": Readout("All reads (2N³/T)", untiled // out.t, "elem."),
            "reads_untiled": Readout("Untiled (2N³)", untiled, "elem."),
            "stepper_shared": Readout("Smem, these tiles", tile_pair_shared_bytes(out.t), "B"),
            "full_tile_shared": Readout(f"Smem, T = {self.full_tile}", need / KB, "KB"),
            "default_limit": Readout("Default limit", default_limit / KB, "KB"),
            "opt_in_limit": Readout("Opt-in limit", opt_in_limit / KB, "KB"),
            "fits": Readout("Fits", need <= opt_in_limit, shown=fits),
            "largest_default": Readout("Largest T, default", largest_tile_within(default_limit)),
            "largest_opt_in": Readout("Largest T, opt-in", largest_tile_within(opt_in_limit)),
        }


# ---------------------------------------------------------------------------------------
# Figure 3.3: coalescing, one warp's load and the 32-byte sectors it touches
# ---------------------------------------------------------------------------------------

ELEMENT_BYTES = 4
SECTOR_BYTES = 32
ROW_ELEMENTS = 32  # matrix rows of 32 floats (128 bytes) for the column preset

# preset -> (stride in elements, offset in elements); "custom" uses the stride slider.
ACCESS_PRESETS = {
    "stride1": (1, 0),
    "stride2": (2, 0),
    "column": (ROW_ELEMENTS, 0),
    "misaligned": (1, 1),
}
ACCESS_CHOICES = (("stride1", "Stride 1 (contiguous)"), ("stride2", "Stride 2"),
                  ("column", f"Matrix column (rows of {ROW_ELEMENTS} floats)"),
                  ("misaligned", "Misaligned row (starts 4 B late)"),
                  ("custom", "Custom stride (slider)"))


@dataclass(frozen=True)
class WarpLoad:
    elements: np.ndarray  # (32,) element index each thread reads
    sectors: np.ndarray  # sorted indices of the 32-byte sectors fetched
    bytes_fetched: int
    bytes_used: int
    efficiency: float  # used / fetched
    ideal_sectors: int  # sectors a perfectly coalesced load of the same bytes needs


def warp_load(stride: int, offset: int = 0, threads: int = WARP_SIZE,
              element_bytes: int = ELEMENT_BYTES, sector_bytes: int = SECTOR_BYTES) -> WarpLoad:
    """Thread t reads element offset + t x stride (elements of `element_bytes`).
    The memory system moves whole sectors: sector of a byte address = address // 32.
      sectors fetched = number of distinct sectors touched
      bytes fetched   = sectors x 32;  bytes used = threads x element bytes
      efficiency      = bytes used / bytes fetched"""
    elements = offset + np.arange(threads) * stride
    first = elements * element_bytes // sector_bytes
    last = (elements * element_bytes + element_bytes - 1) // sector_bytes
    sectors = np.unique(np.concatenate([first, last]))
    fetched = int(sectors.size * sector_bytes)
    used = threads * element_bytes
    return WarpLoad(elements, sectors, fetched, used, used / fetched,
                    -(-used // sector_bytes))


class CoalescingModel(FigureModel):
    """Figure 3.3: which 32-byte sectors one warp's load touches, for strided, column and
    misaligned access to 4-byte elements. Rules in `warp_load()`.

    `pattern` presets and the `stride` slider are linked: choosing a preset moves the
    slider to its stride, and moving the slider selects "custom"."""

    pattern = Parameter("stride1", label="Pattern", choices=ACCESS_CHOICES,
                        help="Common ways a warp reads memory")
    stride = Parameter(1, label="Stride (elements)", minimum=1, maximum=32, step=1,
                       help="Distance between the elements of neighbouring threads")

    def parameter_changed(self, name: str) -> None:
        # Written straight into the values: the one `changed` of the outer set covers both.
        if name == "pattern" and self.pattern in ACCESS_PRESETS:
            self._values["stride"] = ACCESS_PRESETS[self.pattern][0]
        elif name == "stride":
            matching = [p for p, (s, o) in ACCESS_PRESETS.items() if s == self.stride and not o]
            self._values["pattern"] = matching[0] if matching else "custom"

    @property
    def offset(self) -> int:
        return ACCESS_PRESETS.get(self.pattern, (0, 0))[1]

    def compute(self) -> WarpLoad:
        return warp_load(self.stride, self.offset)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "sectors": Readout("Sectors fetched", int(out.sectors.size), "sectors"),
            "ideal_sectors": Readout("Sectors needed at best", out.ideal_sectors, "sectors"),
            "bytes_fetched": Readout("Bytes fetched", out.bytes_fetched, "B"),
            "bytes_used": Readout("Bytes used", out.bytes_used, "B"),
            "efficiency": Readout("Efficiency", round(100 * out.efficiency, 1), "%"),
            "stride_bytes": Readout("Stride", self.stride * ELEMENT_BYTES, "B"),
            "offset_bytes": Readout("Start offset", self.offset * ELEMENT_BYTES, "B"),
        }


# ---------------------------------------------------------------------------------------
# Figure 3.4: shared-memory banks and padding
# ---------------------------------------------------------------------------------------

BANKS = 32
TILE_ROWS = 32

# pattern -> (words per tile row, how thread t picks its element)
BANK_PATTERNS = {
    "column32": (32, "column"),
    "column33": (33, "column"),
    "row32": (32, "row"),
    "diagonal32": (32, "diagonal"),
    "diagonal33": (33, "diagonal"),
    "one_word": (32, "one"),
}
BANK_CHOICES = (("column32", "Column of tile[32][32]"), ("column33", "Column of tile[32][33]"),
                ("row32", "Row of tile[32][32]"), ("diagonal32", "Diagonal of tile[32][32]"),
                ("diagonal33", "Diagonal of tile[32][33]"),
                ("one_word", "One word, every thread"))


@dataclass(frozen=True)
class BankAccess:
    row_words: int  # words per tile row: 32, or 33 with one padding word
    words: np.ndarray  # (32,) word address each thread reads
    banks: np.ndarray  # (32,) bank of each thread's word
    distinct_per_bank: np.ndarray  # (32,) distinct words each bank must serve
    threads_per_bank: np.ndarray  # (32,)
    degree: int  # the largest number of distinct words one bank serves
    transactions: int  # serialized shared-memory wavefronts
    broadcast: bool  # several threads read the same word (served once)


def bank_access(row_words: int, access: str, threads: int = WARP_SIZE,
                banks: int = BANKS) -> BankAccess:
    """Thread t reads tile[r][c] of a float tile stored row by row with `row_words` words
    per row: word = r x row_words + c, bank = word mod 32.
      column: (r, c) = (t, 0);  row: (0, t);  diagonal: (t, t);  one: (0, 0)
    A bank serves one word per cycle; threads reading the same word share it (broadcast).
      conflict degree = max over banks of distinct words;  transactions = degree"""
    t = np.arange(threads)
    zero = np.zeros_like(t)
    r, c = {"column": (t, zero), "row": (zero, t), "diagonal": (t, t),
            "one": (zero, zero)}[access]
    words = r * row_words + c
    bank_of = words % banks
    distinct = np.zeros(banks, dtype=int)
    for word in np.unique(words):
        distinct[word % banks] += 1
    per_bank = np.bincount(bank_of, minlength=banks)
    degree = int(distinct.max())
    return BankAccess(row_words, words, bank_of, distinct, per_bank, degree, degree,
                      bool(np.unique(words).size < threads))


class BankConflictModel(FigureModel):
    """Figure 3.4: which banks one warp's shared-memory read hits, and how padding a
    tile row to 33 words spreads a column read over all banks. Rules in `bank_access()`."""

    pattern = Parameter("column32", label="Access", choices=BANK_CHOICES,
                        help="Which element of the 32 × 32 float tile each thread t reads")

    def compute(self) -> BankAccess:
        row_words, access = BANK_PATTERNS[self.pattern]
        return bank_access(row_words, access)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        hot = int(np.argmax(out.distinct_per_bank))
        if out.degree > 1:
            verdict = f"{out.degree}-way conflict"
        elif out.broadcast:
            verdict = "broadcast, no conflict"
        else:
            verdict = "conflict-free"
        return {
            "verdict": Readout("Result", out.degree, shown=verdict),
            "degree": Readout("Conflict degree", out.degree, shown=f"{out.degree}-way"),
            "transactions": Readout("Serialized transactions", out.transactions),
            "busiest_bank": Readout("Busiest bank", hot),
            "busiest_words": Readout("Distinct words in it", int(out.distinct_per_bank[hot])),
            "banks_used": Readout("Banks used", int(np.count_nonzero(out.threads_per_bank)),
                                  total=BANKS),
            "distinct_words": Readout("Distinct words read", int(np.unique(out.words).size)),
            "row_words": Readout("Words per tile row", out.row_words, "words"),
        }
