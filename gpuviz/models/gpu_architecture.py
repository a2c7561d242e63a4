"""Lesson 1, GPU architecture: occupancy, waves of blocks, warp scheduling, memory levels.

Pure functions first (numbers in, frozen dataclasses out), then the figure models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuviz.core.model import FigureModel, Parameter, Readout
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
        limiter = ", ".join(RESOURCE_LABELS[name].lower() for name in out.limiting)
        return {
            "resident_blocks": Readout("Blocks per SM", out.blocks, "blocks"),
            "active_warps": Readout("Warps per SM", out.active_warps,
                                    f"of {int(g['sm.max_warps'])}"),
            "occupancy": Readout("Occupancy", round(100 * out.occupancy, 1), "%"),
            "limited_by": Readout("Limited by", limiter),
            "registers_per_block": Readout("Registers/block", out.registers_per_block,
                                           "regs"),
            "shared_memory_per_block": Readout("Shared mem./block (+1 KB)",
                                               out.shared_memory_per_block, "B"),
            **{f"limit_{name}": Readout(f"Limit from {RESOURCE_LABELS[name].lower()}",
                                        out.limits[name], "blocks")
               for name in RESOURCES},
            "launch": Readout("Launch", "fails" if out.failure else "succeeds"),
        }
