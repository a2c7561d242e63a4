"""The ordered list of lessons and figures: the single source of truth.

The sidebar, search, next/previous navigation, the command line, the generic tests and
the benchmark all iterate LESSONS. Models and views are named as "module:Class" paths
under gpuviz.models and gpuviz.views and imported only when a figure is first shown, so
start-up does not pay for pyqtgraph or for figures nobody opens.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FigureSpec:
    number: str  # "L.F", stable: used by the command line, the settings and the tests
    slug: str
    title: str
    caption: str  # our words, with one or two "try this" prompts; rich text
    model: str  # "module:Class" under gpuviz.models
    view: str  # "module:Class" under gpuviz.views
    lesson_anchor: str  # heading anchor in the lesson's Markdown file
    animated: bool = False

    def make_model(self):  # noqa: ANN201 - returns the figure's FigureModel subclass
        return _resolve("gpuviz.models", self.model)()

    def make_view(self, model):  # noqa: ANN001, ANN201
        return _resolve("gpuviz.views", self.view)(model)


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    text_file: str  # under resources/lessons
    figures: tuple[FigureSpec, ...] = field(default=())


def _resolve(package: str, path: str) -> type:
    module, name = path.split(":")
    return getattr(importlib.import_module(f"{package}.{module}"), name)


LESSONS: tuple[Lesson, ...] = (
    Lesson(1, "gpu_architecture", "GPU architecture", "01-gpu-architecture.md", (
        # lesson 1 figures
        FigureSpec(
            "1.1", "hierarchy", "Grid, block, warp, thread and SM",
            "A launch of N threads cut into blocks, warps and threads, and the blocks dealt "
            "to the SMs in waves. Blue is busy, violet is idle: the unused threads of the "
            "last block and the SMs left without a block in the last wave. <i>Try this:</i> "
            "click each level and read what it is. Then set the block size to 1,024 and "
            "count the idle SMs; go down to 128 and watch them disappear.",
            "gpu_architecture:HierarchyModel", "gpu_architecture.hierarchy:HierarchyView",
            "hierarchy"),
        FigureSpec(
            "1.2", "warp_scheduler", "Hiding memory latency by switching warps",
            "One scheduler and its warps over time. A warp issues (blue), then waits for "
            "memory (orange); the bottom row shows the scheduler, violet when no warp can "
            "issue. <i>Try this:</i> start from one warp and add warps one at a time until "
            "the violet gaps are gone; compare with 1 + ⌈L/c⌉. Then raise the latency to "
            "an HBM-like 700 cycles: 16 warps are no longer enough.",
            "gpu_architecture:WarpSchedulerModel",
            "gpu_architecture.warp_scheduler:WarpSchedulerView", "latency-hiding",
            animated=True),
        FigureSpec(
            "1.3", "occupancy", "Occupancy: what limits resident blocks",
            "Each bar is the number of blocks one SM could hold if only that resource "
            "counted; the shortest one wins and turns magenta. <i>Try this:</i> from 256 "
            "threads, 32 registers and 16 KB, raise shared memory to 100 KB, or registers "
            "to 128. Then set 1,024 threads and 65 registers: the block no longer fits "
            "and the launch fails.",
            "gpu_architecture:OccupancyModel", "gpu_architecture.occupancy:OccupancyView",
            "occupancy"),
        FigureSpec(
            "1.4", "memory_hierarchy", "The memory hierarchy on a log scale",
            "Registers, shared memory/L1, L2 and HBM (yellow on chip, orange off chip), "
            "and, if you add them, the aqua links to other GPUs. Each grid line is ten "
            "times the previous one. Hollow bars are computed or estimated; a level "
            "without a sourced number has no bar. <i>Try this:</i> compare the sizes of "
            "L2 and HBM, then switch to bandwidth: the big memory is the slower one. "
            "Click a bar to read its numbers and where they come from.",
            "gpu_architecture:MemoryHierarchyModel",
            "gpu_architecture.memory_hierarchy:MemoryHierarchyView", "memory-hierarchy"),
    )),
    Lesson(2, "roofline", "Roofline and arithmetic intensity", "02-roofline.md", (
        # lesson 2 figures
        FigureSpec(
            "2.1", "roofline", "The roofline of one GPU",
            "Both axes are logarithmic. A kernel can run no faster than the lower of two "
            "limits: the orange slope (bytes per second times FLOPs per byte) and the blue "
            "ceiling (the tensor-core peak); they meet at the ridge. Each dot is one "
            "kernel of a GPT-3 6.7B layer, blue when compute-bound, orange when "
            "memory-bound. <i>Try this:</i> click a dot to read its numbers, then drag it "
            "sideways. Switch from H100 to H200: the orange dots rise by the bandwidth "
            "ratio (4.8 / 3.35) and no more, while the blue ones stay put.",
            "roofline:RooflineModel", "roofline.roofline_plot:RooflineView",
            "roofline-model"),
        FigureSpec(
            "2.2", "matmul_batch", "When does a matmul become compute-bound?",
            "A bf16 matmul of B tokens by a d × d weight. Top: its intensity against B, "
            "with the GPU's ridge (blue) and the limit d/2 that no batch can pass "
            "(dashed). Middle: its compute and memory times. <i>Try this:</i> guess the "
            "batch where the curve crosses the ridge and press Reveal. Then move B from "
            "1 to 64 and compare the work and time columns; finally set d to 512.",
            "roofline:MatmulBatchModel", "roofline.matmul_batch:MatmulBatchView",
            "matmul-intensity"),
        FigureSpec(
            "2.3", "layer_ops", "One transformer layer, kernel by kernel",
            "Each bar is the shortest possible time of one kernel of a single layer, blue "
            "if its FLOPs limit it, orange if its bytes do; click a bar for its numbers. "
            "<i>Try this:</i> in decode, raise the batch from 1 to 256: the projection and "
            "MLP bars barely move, while attention grows in step with the batch. Then "
            "pick GQA, and then prefill, where the weight matmuls turn blue.",
            "roofline:LayerModel", "roofline.layer_ops:LayerOpsView", "decode-prefill"),
        FigureSpec(
            "2.4", "calculator", "The four-step roofline calculator",
            "Steps 1 to 4 are written out above the bars: work and traffic, compute time, "
            "memory time, and the larger of the two, outlined in magenta. The lower chart "
            "shows "
            "what three changes would buy. <i>Try this:</i> for the decode matmul, compare "
            "twice the FLOP/s with half the bytes; then pick the prefill matmul, or type "
            "your own kernel's numbers.",
            "roofline:CalculatorModel", "roofline.calculator:CalculatorView",
            "four-steps"),
    )),
    Lesson(3, "kernels", "Kernels, tiling and fusion", "03-kernels.md", (
        # lesson 3 figures
        FigureSpec(
            "3.1", "fusion", "Fusion: one kernel instead of a chain",
            "Time for a chain of k elementwise kernels (orange) and for the same work fused "
            "into one kernel (yellow), as the tensor grows. In the violet band every kernel "
            "of the chain finishes its memory traffic faster than it can be launched. "
            "<i>Try this:</i> drag N from 1 G elements down to a few thousand and watch "
            "the speed-up at the dot. Then pick ops with a second input: the gap shrinks "
            "for big tensors but not for small ones.",
            "kernels:FusionModel", "kernels.fusion:FusionView", "fusion"),
        FigureSpec(
            "3.2", "tiling", "Tiled matmul: how often each element leaves HBM",
            "Each step copies one tile of A and one of B (yellow outlines) from HBM to "
            "shared memory, multiplies them and accumulates the result in the C tile that "
            "stays on chip (yellow). The numbers count "
            "HBM reads of every element over the whole kernel. <i>Try this:</i> press Next "
            "step a few times, then Jump to end: with N = 8 and T = 2 each element was "
            "read 4 times. Double T and count again. Then slide the full-size tile until "
            "the shared-memory bar turns magenta.",
            "kernels:TiledMatmulModel", "kernels.tiling:TiledMatmulView", "tiling",
            animated=True),
        FigureSpec(
            "3.3", "coalescing", "Coalescing: the sectors one warp fetches",
            "Memory as rows of 4-byte elements grouped into 32-byte sectors. The solid "
            "boxes are what the 32 threads of a warp asked for (numbered by thread); a "
            "framed group is a sector the hardware had to fetch, pale hatched boxes are "
            "bytes fetched for nothing. <i>Try this:</i> raise the stride from 1 to 8 and watch "
            "the efficiency fall. Then compare the contiguous row with the one that starts "
            "4 bytes late.",
            "kernels:CoalescingModel", "kernels.coalescing:CoalescingView", "coalescing"),
        FigureSpec(
            "3.4", "banks", "Shared-memory banks and padding",
            "Shared memory as 32 banks (columns), one 4-byte word per bank per row. Yellow "
            "words are those a warp reads at once; the bars count the different words each "
            "bank has to deliver, one per cycle, magenta where they conflict. "
            "<i>Try this:</i> read a column of a 32 × 32 tile, then of the same tile "
            "padded to 33 words per row. Then try the two diagonals.",
            "kernels:BankConflictModel", "kernels.banks:BankConflictView", "banks"),
    )),
    Lesson(4, "flash_attention", "FlashAttention and online softmax",
           "04-flash-attention.md", (
        # lesson 4 figures
        FigureSpec(
            "4.1", "online_softmax", "Online softmax, one block at a time",
            "The top rows hold one query's attention scores and the values they weight, "
            "cut into blocks; the yellow boxes are the only state kept on chip: the "
            "running max m, the running sum l and the running output o. The bars are "
            "e<sup>x−m</sup> for the scores read so far; dashed outlines show them before "
            "the latest block. <i>Try this:</i> step until a block brings a new maximum "
            "and watch every old bar shrink by one common factor. Then tick the huge "
            "score: the naive formula turns into inf and NaN, the online one does not.",
            "flash_attention:OnlineSoftmaxModel",
            "flash_attention.online_softmax:OnlineSoftmaxView", "online-softmax",
            animated=True),
        FigureSpec(
            "4.2", "tiling", "FlashAttention tiles against standard attention",
            "Each square is one B×B tile of the N×N score matrix, with Q blocks on the "
            "left, K/V blocks on top and the output O on the right. FlashAttention keeps "
            "a Q block on chip (yellow), streams K/V blocks past it (magenta) and never "
            "stores a score tile (blue); standard attention writes the whole matrix to "
            "HBM (orange) and reads it back twice. <i>Try this:</i> play both modes and "
            "compare the counters; then switch on the causal mask and halve the block "
            "size.",
            "flash_attention:FlashTilingModel", "flash_attention.tiling:FlashTilingView",
            "tiling", animated=True),
        FigureSpec(
            "4.3", "merge", "Merging two partial softmaxes",
            "Eight keys are divided at the split: those left of it form set A, the rest "
            "set B, and each side keeps its own max m, sum l and output o. The lower "
            "chart draws the output vector: the merged result lies exactly on full "
            "attention, the plain average (magenta) does not. <i>Try this:</i> drag the "
            "split (or its slider) through all positions and watch the error readout "
            "stay at rounding level. Then mask B entirely: its l is 0 and its m is −∞, "
            "and the merge still gives no NaN.",
            "flash_attention:MergeModel", "flash_attention.merge:MergeView", "merge"),
        FigureSpec(
            "4.4", "head_roofline", "One attention head on the roofline",
            "Lowest possible time of one head's forward pass as the sequence grows, log "
            "scales: standard attention (orange), FlashAttention (yellow) and the pure "
            "compute time (blue); dots mark the chosen length. <i>Try this:</i> halve the "
            "head dimension and watch the standard line climb away from compute; then "
            "raise the query block past the ridge point, or let L2 serve the re-reads, "
            "and FlashAttention lands on the compute line.",
            "flash_attention:HeadRooflineModel",
            "flash_attention.head_roofline:HeadRooflineView", "io-complexity"),
        FigureSpec(
            "4.5", "split_kv", "Split-KV decoding fills the GPU",
            "Each square is one SM during a decoding step: orange SMs stream the K/V "
            "cache, violet ones have no work; the number is how many work units each runs. "
            "The chart gives the step's time for every split count. <i>Try this:</i> with "
            "one sequence, raise the splits until the SMs fill. Then set the batch to 64, "
            "or the cache to 256 tokens, and see how little splitting still buys.",
            "flash_attention:SplitKVModel", "flash_attention.split_kv:SplitKVView",
            "split-kv"),
    )),
    Lesson(5, "mixed_precision", "Mixed-precision training", "05-mixed-precision.md"),
    Lesson(6, "training_memory", "Training memory and checkpointing",
           "06-training-memory.md"),
    Lesson(7, "collectives", "Collectives and the α-β model", "07-collectives.md"),
    Lesson(8, "data_parallel", "Data parallelism, ZeRO and FSDP", "08-data-parallel.md"),
    Lesson(9, "tensor_pipeline", "Tensor and pipeline parallelism", "09-tensor-pipeline.md"),
    Lesson(10, "sequence_expert", "Sequence, context and expert parallelism",
           "10-sequence-expert.md"),
    Lesson(11, "quantization", "Quantization", "11-quantization.md"),
    Lesson(12, "serving", "LLM inference serving", "12-serving.md"),
    Lesson(13, "profiling", "Profiling, MFU and compilation", "13-profiling.md"),
)


def all_figures() -> list[FigureSpec]:
    return [figure for lesson in LESSONS for figure in lesson.figures]


def figure(number: str) -> FigureSpec:
    for spec in all_figures():
        if spec.number == number:
            return spec
    known = ", ".join(spec.number for spec in all_figures())
    raise KeyError(f"unknown figure '{number}'; built figures: {known}")


def lesson_of(spec: FigureSpec) -> Lesson:
    return next(lesson for lesson in LESSONS if spec in lesson.figures)
