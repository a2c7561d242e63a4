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

    def parse_step(self, text: str, model=None) -> int | str:  # noqa: ANN001
        """Typed `step=` text (a step number or "end") checked against the figure's
        animation as `model` is set (default: at its defaults); ValueError saying what is
        allowed otherwise, also for a figure that is not animated."""
        if not self.animated:
            animated = ", ".join(spec.number for spec in all_figures() if spec.animated)
            raise ValueError(f"figure {self.number} is not animated, so it has no steps; "
                             f"animated figures: {animated}")
        return (model if model is not None else self.make_model()).parse_step(text)


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
            "stays on chip (yellow). The numbers (in every cell with room for one) count "
            "HBM reads of every element over the whole kernel. <i>Try this:</i> press Next "
            "step a few times, then Jump to end: with N = 8 and T = 2 each element was "
            "read 4 times. Double T and count again. Then slide the full-size tile until "
            "the shared-memory bar turns magenta.",
            "kernels:TiledMatmulModel", "kernels.tiling:TiledMatmulView", "tiling",
            animated=True),
        FigureSpec(
            "3.3", "coalescing", "Coalescing: the sectors one warp fetches",
            "Memory as rows of 4-byte elements grouped into 32-byte sectors. The solid "
            "boxes are what the 32 threads of a warp asked for (numbered by thread where "
            "the boxes have room); a "
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
            "score: the naive formula turns into inf and NaN, the online one does not; "
            "or tick the causal mask, whose first block read is all −∞.",
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
            "size, or play FlashAttention-1's loop order (K/V outside).",
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
            "The chart gives the step's time for every split count; it flattens once the "
            "busy SMs together ask for more than HBM delivers. <i>Try this:</i> with "
            "one sequence, raise the splits until the SMs fill. Then set the batch to 64, "
            "or the cache to 256 tokens, and see how little splitting still buys.",
            "flash_attention:SplitKVModel", "flash_attention.split_kv:SplitKVView",
            "split-kv"),
    )),
    Lesson(5, "mixed_precision", "Mixed-precision training", "05-mixed-precision.md", (
        # lesson 5 figures
        FigureSpec(
            "5.1", "float_formats", "Float formats: bits, neighbours and range",
            "The value you type, stored in the chosen format. Top: its bits (grey sign, "
            "blue exponent, orange mantissa). Middle: the numbers the format can hold "
            "around it, with the gap (one ulp) written under each space; the dashed "
            "magenta line is what you typed. Bottom: every format's range on a log₂ axis, "
            "magenta where values are lost. <i>Try this:</i> store 1+2**-8 in BF16, then "
            "70000 in FP16. Then type 1e-8 and switch between FP16 and BF16: BF16 reaches "
            "as far as FP32, on a far coarser grid.",
            "mixed_precision:FloatFormatsModel",
            "mixed_precision.float_formats:FloatFormatsView", "float-formats"),
        FigureSpec(
            "5.2", "accumulation", "Accumulating many small terms",
            "The same term t is added again and again, and every addition is rounded to "
            "the accumulator's format. Magenta: the computed sum; dashed: the exact one; "
            "dotted: t × 2ᵖ, where p counts the significand bits. <i>Try this:</i> with "
            "BF16 and the naive method the sum gets stuck at 32; switch the accumulator to "
            "FP32, then back to BF16 with pairwise and with Kahan. Then set t to 1 and "
            "compare BF16 (stuck at 256) with the 3-bit toy format (stuck at 16).",
            "mixed_precision:AccumulationModel",
            "mixed_precision.accumulation:AccumulationView", "accumulation"),
        FigureSpec(
            "5.3", "training_step", "One mixed-precision training step",
            "The steps of one training step, left to right along the top and back along "
            "the bottom, each coloured by the format it computes in: blue FP32, aqua "
            "16-bit, yellow FP8, magenta the loss-scaling steps. <i>Try this:</i> click "
            "any box to read why it uses that format. Switch to FP16 + loss scaling and "
            "find the two magenta steps; then pick FP8 matmuls and see which boxes change "
            "and which stay blue.",
            "mixed_precision:TrainingStepModel",
            "mixed_precision.training_step:TrainingStepView", "training-step"),
        FigureSpec(
            "5.4", "loss_scaling", "Loss scaling: moving gradients into FP16's range",
            "Bars: how many gradients of a synthetic network have each magnitude, on a "
            "log₂ axis, after the loss (and so every gradient) is multiplied by S. In the "
            "magenta zones a value is lost: too small, it becomes 0; too large, inf. "
            "<i>Try this:</i> at S = 1 about 42% flush to zero; predict the one S that "
            "loses nothing, press Reveal, then raise S to 2¹⁵, 2¹⁹ and 2²⁰. Finally "
            "switch to BF16 with S = 1.",
            "mixed_precision:LossScalingModel",
            "mixed_precision.loss_scaling:LossScalingView", "loss-scaling"),
    )),
    Lesson(6, "training_memory", "Training memory and checkpointing",
           "06-training-memory.md", (
        # lesson 6 figures
        FigureSpec(
            "6.1", "step_memory", "Memory over one training step",
            "One GPU training the 24-layer GPT-3 1.3B. Grey: weights, gradients and Adam "
            "states, 16 bytes per parameter, there all the time. Orange: what the layers "
            "keep for the backward pass; magenta on top: the logits of the loss. "
            "<i>Try this:</i> guess the peak, press Reveal, then Play (or drag the time "
            "slider) and find where it happens. Then tick checkpointing and play again: "
            "a sawtooth, and a longer step.",
            "training_memory:StepMemoryModel", "training_memory.step_memory:StepMemoryView",
            "step-timeline", animated=True),
        FigureSpec(
            "6.2", "layer_parameters", "Counting the parameters of a layer",
            "Each bar is one weight matrix of a layer, or all its biases and norm gains "
            "together, measured in d² (d × d numbers). The lower bar is the whole model, "
            "with the dashed line at 12 L d². <i>Try this:</i> switch GPT-3 1.3B to the "
            "Llama-style layer and cut the KV heads to 1; then pick Llama 3.1 405B and see "
            "the share of 12 L d² climb as the embedding stops mattering.",
            "training_memory:LayerParametersModel",
            "training_memory.layer_parameters:LayerParametersView", "parameters"),
        FigureSpec(
            "6.3", "layer_activations", "What one layer keeps for the backward pass",
            "One GPT-3 1.3B layer, operation by operation, each adding the tensor its "
            "backward pass will need: orange items are measured in sbh (s tokens × b "
            "sequences × h features, in bytes at 16 bits), magenta ones in as²b, the "
            "score-sized matrices of the attention core. <i>Try this:</i> step to the end "
            "and read the two totals; then tick FlashAttention and watch the magenta rows "
            "drop out. Double the sequence length: which rows grow fourfold?",
            "training_memory:LayerActivationsModel",
            "training_memory.layer_activations:LayerActivationsView", "activations",
            animated=True),
        FigureSpec(
            "6.4", "checkpoint_every_k", "Checkpointing every k layers",
            "Top: the stored memory of one step when only every k-th layer input is kept. "
            "Yellow is those checkpoints, orange the activations of a segment rebuilt by "
            "its recomputed forward (magenta marks) just before its backward pass. Below: "
            "the peak and the step time for each k. <i>Try this:</i> guess the k with the "
            "lowest peak, press Reveal, and compare it with the textbook √L ≈ 5. Then tick "
            "FlashAttention: why does the best k move?",
            "training_memory:CheckpointEveryKModel",
            "training_memory.checkpoint_every_k:CheckpointEveryKView", "checkpointing"),
        FigureSpec(
            "6.5", "fit", "Does it fit on one GPU?",
            "The memory one GPU needs at the peak of a step, stacked: blue for weights, "
            "yellow for their gradients, violet for optimizer states, orange for "
            "activations, magenta for logits; left as set, right with the fixes. The "
            "solid line is the GPU, the dashed one keeps 15% free. <i>Try this:</i> "
            "GPT-3 1.3B with 8 sequences does not fit an H100: try each fix alone and "
            "read the table; which ones touch the orange part? Then pick Llama 2 7B and "
            "find a set of fixes that fits.",
            "training_memory:FitModel", "training_memory.fit:FitView", "fit"),
    )),
    Lesson(7, "collectives", "Collectives and the α-β model", "07-collectives.md", (
        # lesson 7 figures
        FigureSpec(
            "7.1", "collective_steps", "The six collectives, one step at a time",
            "Columns are GPUs A, B, C, ..., rows are the chunks of each buffer. Grey is a "
            "GPU's own data, light aqua data that came over a link or a partial sum "
            "(“ABD₂” = A₂ + B₂ + D₂), aqua a complete sum Σ; magenta frames mark "
            "what the last step changed. The small grids show the start and the end the "
            "definition asks for. <i>Try this:</i> run all-reduce with the ring, then with "
            "recursive doubling, and count the steps. Then pick all-to-all and watch the "
            "grid turn into its transpose.",
            "collectives:CollectiveStepsModel", "collectives.steps:CollectiveStepsView",
            "six-collectives", animated=True),
        FigureSpec(
            "7.2", "ring_allreduce", "Ring all-reduce: reduce-scatter, then all-gather",
            "One row per GPU, one column per chunk; a cell counts the inputs summed into "
            "it. Aqua arrows carry a chunk to the next GPU, dashed cells are the ones "
            "being sent and magenta frames the ones that just landed. <i>Try this:</i> "
            "step to 3 with P = 4 and find the four complete chunks on the diagonal. Then "
            "raise P to 16: 30 steps instead of 6, yet each GPU still sends just under "
            "2n bytes.",
            "collectives:RingAllReduceModel", "collectives.ring:RingAllReduceView",
            "ring-allreduce", animated=True),
        FigureSpec(
            "7.3", "alpha_beta", "Latency or bandwidth: which all-reduce wins",
            "All-reduce time against message size in the α-β model: ring (solid aqua), "
            "recursive doubling (dashed aqua), Rabenseifner (dash-dot grey). Dashed grey lines "
            "mark where the fastest algorithm changes; the magenta line is your message. "
            "For P a power of two Rabenseifner is never slower than the ring here, since it "
            "has the same bandwidth term and fewer steps. <i>Try this:</i> predict where "
            "Rabenseifner overtakes recursive doubling, then reveal it. Then set P = 6: "
            "the extra steps make the ring the winner for large messages.",
            "collectives:AlphaBetaModel", "collectives.alpha_beta:AlphaBetaView",
            "alpha-beta"),
        FigureSpec(
            "7.4", "hierarchical", "Flat ring or hierarchy across nodes",
            "A timeline of one all-reduce over N servers of G GPUs. Hierarchical: light "
            "aqua NVLink phases around a solid aqua network phase; flat ring: every step "
            "waits for its magenta network hop. The dashed grey line is the least time the "
            "network needs, the dotted one where the other scheme ends. Below, bus bandwidth "
            "against N (the flat ring dotted). Latencies are assumptions "
            "(3 µs NVLink, 10 µs network). <i>Try this:</i> with 4 nodes and 1 GB, compare "
            "the hierarchy's bus bandwidth with one NIC's 50 GB/s, then switch to the flat "
            "ring. Then slide N from 1 to 32.",
            "collectives:MultiNodeModel", "collectives.multi_node:MultiNodeView",
            "hierarchical"),
    )),
    Lesson(8, "data_parallel", "Data parallelism, ZeRO and FSDP", "08-data-parallel.md", (
        # lesson 8 figures
        FigureSpec(
            "8.1", "zero_stages", "ZeRO: who keeps which model state",
            "Left, the model states one GPU holds: 16-bit weights (blue), 16-bit gradients "
            "(yellow) and the fp32 optimizer states (violet), against the GPU's memory "
            "(dashed). Right, the bytes each GPU sends in one step (aqua). <i>Try this:</i> "
            "raise the number of GPUs and watch ZeRO-1 shrink the violet part, ZeRO-2 the "
            "yellow one too, and ZeRO-3 everything. Then compare the aqua bars: three are "
            "equal, and ZeRO-3 pays half as much again.",
            "data_parallel:ZeroStagesModel", "data_parallel.zero_stages:ZeroStagesView",
            "zero"),
        FigureSpec(
            "8.2", "bucketing", "Gradient buckets overlap the backward pass",
            "The backward pass of 24 layers of 50 M parameters on 8 GPUs at 400 TFLOP/s, last "
            "layer first (blue), and the all-reduce of each gradient bucket on the network "
            "(aqua); below, the end of the step enlarged. Violet "
            "is time the GPU has finished its backward work and waits. <i>Try this:</i> from "
            "25 MB buckets, where only the last all-reduce sticks out, drop to 1 MB (each "
            "all-reduce pays the ring's latency again) and then go to a single bucket "
            "(nothing overlaps). Then halve the tokens or the bandwidth.",
            "data_parallel:BucketingModel", "data_parallel.bucketing:BucketingView",
            "bucketing"),
        FigureSpec(
            "8.3", "fsdp", "FSDP: gather, compute, scatter, unit by unit",
            "Each FSDP unit's weights are all-gathered (aqua, AG) before it computes (blue, "
            "F forward and B backward); after its backward its gradients are "
            "reduce-scattered (RS). Violet marks compute waiting for the network; the lower "
            "chart counts the units whose full weights are in memory. <i>Try this:</i> press "
            "Play, then switch prefetch off and watch the violet gaps. Switch resharding off: "
            "the backward gathers vanish, but every unit stays in memory.",
            "data_parallel:FsdpModel", "data_parallel.fsdp:FsdpView", "fsdp",
            animated=True),
        FigureSpec(
            "8.4", "overlap", "When does the all-reduce hide?",
            "The dot is the all-reduce time divided by the backward time at your tokens per "
            "GPU; under the dashed line at 1 the communication can hide. The bars are the two "
            "times (log scale). <i>Try this:</i> guess the token count where the ratio "
            "reaches 1 and press Reveal to draw the whole curve. Then drag the model size: "
            "both bars move, yet the curve and its crossing stay where they are.",
            "data_parallel:OverlapModel", "data_parallel.overlap:OverlapView", "overlap"),
    )),
    Lesson(9, "tensor_pipeline", "Tensor and pipeline parallelism", "09-tensor-pipeline.md", (
        # lesson 9 figures
        FigureSpec(
            "9.1", "megatron_mlp", "Megatron's MLP split: one all-reduce",
            "Rows are GPUs, columns the steps of a transformer MLP, GeLU(X A) B. Orange is "
            "what each GPU holds, blue the block it computes alone, aqua the all-reduce "
            "that sums the partial results, magenta an all-reduce the wrong split adds. The "
            "table below runs every split on random float32 matrices. <i>Try this:</i> "
            "press Next step through the forward pass, then switch to the backward pass "
            "and see where the all-reduce went. Then pick the wrong split and compare the "
            "last two checks.",
            "tensor_pipeline.megatron:MegatronModel", "tensor_pipeline.megatron:MegatronView",
            "megatron-split", animated=True),
        FigureSpec(
            "9.2", "pipeline_schedules", "Pipeline schedules and the bubble",
            "Each row is one GPU, a pipeline stage; time runs to the right. Blue boxes are "
            "the forward and backward passes of one micro-batch, in two shades, numbered "
            "by micro-batch (the subscript is the chunk); violet is a stage with nothing "
            "to do. The orange strip under each row rises and falls with the micro-batches "
            "whose activations the stage holds; the bars on the right give its most at "
            "once. "
            "<i>Try this:</i> press Play to watch the pipeline fill and drain, then "
            "switch from GPipe to 1F1B: the step and the bubble stay, the orange shrinks. "
            "Then raise m, and try Interleaved (m a multiple of p) and ZB-H1.",
            "tensor_pipeline.pipeline:PipelineModel", "tensor_pipeline.pipeline:PipelineView",
            "pipeline-schedules", animated=True),
        FigureSpec(
            "9.3", "tp_comm", "Tensor parallelism: all-reduces against matmuls",
            "How long the four all-reduces of one tensor-parallel layer take, divided by "
            "the time of its matmuls, as the layer is split over more GPUs t: over NVLink "
            "(solid aqua) and over InfiniBand (dashed, once revealed). Above the magenta "
            "line the GPUs spend longer talking than computing. The bars are the two times "
            "for your tokens. <i>Try this:</i> guess how much higher the InfiniBand line "
            "runs, then reveal it. Then slide the tokens: both bars change, the dot does "
            "not. Take t past 8 and see the ring leave the server.",
            "tensor_pipeline.tp_comm:TpCommModel", "tensor_pipeline.tp_comm:TpCommView",
            "tp-communication"),
        FigureSpec(
            "9.4", "layout", "Plan a layout: TP × PP × DP",
            "Each box is a server of 8 GPUs, coloured by TP group, PP stage or DP replica "
            "(the colours only tell groups apart; violet GPUs are left out). The bar is "
            "the memory of one GPU of the first pipeline stage against its HBM, with the "
            "10–20% to keep free for what this estimate leaves out; warnings are magenta. "
            "<i>Try this:</i> start from 70B on 8 servers with TP 8 and PP 8, then try PP 4 "
            "with and without ZeRO-1, then TP 16. Then pick the 7B model and find the "
            "smallest TP and PP that fit.",
            "tensor_pipeline.layout:LayoutModel", "tensor_pipeline.layout:LayoutView",
            "plan-a-layout"),
    )),
    Lesson(10, "sequence_expert", "Sequence, context and expert parallelism",
           "10-sequence-expert.md", (
        FigureSpec(
            "10.1", "ring_attention", "Ring attention, round by round",
            "The score matrix of one attention head: queries down, keys across, each row "
            "computed by the rank named beside it. Every round each rank scores its "
            "queries against the K/V block it holds, then passes that block on round the "
            "ring. Blue: this round; faint blue: earlier rounds; grey: hidden by the "
            "causal mask. The bars are each rank's scores this round; violet is waiting "
            "for the busiest one. <i>Try this:</i> press Next round until the pass ends "
            "and read how long rank 0 waits; then switch to zig-zag and do it again.",
            "sequence_expert.ring_attention:RingAttentionModel",
            "sequence_expert.ring_attention:RingAttentionView", "ring-attention",
            animated=True),
        FigureSpec(
            "10.2", "sequence_parallel", "Tensor parallelism with sequence parallelism",
            "One transformer layer as a strip of the activations it keeps for the "
            "backward pass; each box is what GPU 0 stores and the number under it how "
            "much. Blue is split by heads or columns, violet a full copy on every GPU, "
            "magenta split by tokens; the aqua boxes are the collectives of the forward "
            "pass. <i>Try this:</i> switch from TP to TP + SP: every violet box turns "
            "magenta and shrinks t-fold, and each all-reduce becomes a reduce-scatter and "
            "an all-gather: guess what that does to the bytes sent, then Reveal.",
            "sequence_expert.sequence_parallel:SequenceParallelModel",
            "sequence_expert.sequence_parallel:SequenceParallelView", "megatron-sp"),
        FigureSpec(
            "10.3", "kv_overlap", "Ring attention: when the K/V transfer hides",
            "One round of ring attention on an H100, per layer: the blue line is the "
            "time a rank computes its queries against the K/V block it holds (it grows "
            "as c²), the aqua line the time to pass that block to the next rank (it "
            "grows as c). Left of the dashed crossing c* the GPUs wait for the network; "
            "right of it the transfer hides behind the compute. <i>Try this:</i> guess "
            "c* over NVLink and press Reveal, then switch to InfiniBand. Change the "
            "query heads: both lines move, c* does not. Then try GQA and the causal "
            "mask.",
            "sequence_expert.kv_overlap:KvOverlapModel",
            "sequence_expert.kv_overlap:KvOverlapView", "kv-overlap"),
        FigureSpec(
            "10.4", "ulysses", "Ulysses: from token shards to head shards",
            "One activation tensor, its tokens as rows and its 8 heads as columns; the "
            "number in each cell is the rank that holds it, and the selected rank's cells "
            "are magenta. Outside attention every rank holds a block of tokens with all "
            "heads; attention wants all tokens of a few heads. <i>Try this:</i> press "
            "All-to-all and follow the magenta cells: the aqua-framed ones travel, "
            "(P − 1)/P of each shard. Then set fewer K/V heads than ranks and read the "
            "warning.",
            "sequence_expert.ulysses:UlyssesModel",
            "sequence_expert.ulysses:UlyssesView", "ulysses"),
        FigureSpec(
            "10.5", "moe_routing", "Mixture of experts: routing, capacity and waiting",
            "A seeded batch of 128 tokens, each sent to its best k of 8 experts, 2 experts "
            "per GPU. Each bar is a stack of the token copies an expert gets (a brick "
            "each, where the bar is tall enough); once you reveal your guess, the "
            "copies that came after their expert was full (the dashed capacity line) "
            "turn magenta: they are dropped. Below, each "
            "GPU's work, violet where it waits for the busiest. <i>Try this:</i> set the "
            "router skew to 1.5, guess how many copies overflow, and reveal; then raise "
            "the capacity factor to 2.0 and "
            "to \"none\": every copy is kept, yet the busiest GPU still decides how long "
            "the step takes.",
            "sequence_expert.moe_routing:MoeRoutingModel",
            "sequence_expert.moe_routing:MoeRoutingView", "moe-routing"),
    )),
    Lesson(11, "quantization", "Quantization", "11-quantization.md", (
        # lesson 11 figures
        FigureSpec(
            "11.1", "grid", "Rounding onto a symmetric integer grid",
            "The grey dots on the upper line are the numbers to store; each one drops along "
            "its line to the grid point that will stand for it (blue), and the grey ticks "
            "below are all the points a b-bit code can name, zero included. The dashed "
            "orange marks are ±α, the ends of the grid. <i>Try this:</i> step the bits up "
            "from 2 and watch the lines straighten. Then switch on the outlier: one large "
            "value stretches the grid so far that the sixteen small ones share 3 points; "
            "now drag α back towards 1 and see what clipping costs the outlier.",
            "quantization:GridModel", "quantization.grid:GridView", "integer-grid"),
        FigureSpec(
            "11.2", "mse", "Rounding error against clipping error",
            "Mean squared error of quantizing 8,192 random numbers of unit variance, as the "
            "range α grows: blue is the rounding part (it tracks the dashed step²/12), "
            "orange the clipping part, and the bold curve their sum. The dotted line is "
            "min-max, the range that clips nothing. <i>Try this:</i> guess where the bold "
            "curve bottoms out at 4 bits and press Reveal, then click or drag in the plot "
            "to get there. Switch to Laplace, then to 8 bits, and follow the minimum.",
            "quantization:MseModel", "quantization.mse:MseView", "rounding-clipping"),
        FigureSpec(
            "11.3", "granularity", "Which values share a scale",
            "Left: the size of each entry (blue); right: how far its quantized copy is "
            "off (magenta), on a colour scale that stays put as you switch. The "
            "outlines mark the entries that share one scale. Activations are tokens × "
            "channels, with one channel far larger than the rest. <i>Try this:</i> go "
            "from one scale per tensor to one per row, then per column, and watch the "
            "magenta fade; read the verdict under the maps. Then pick the weights, whose "
            "rows differ in size.",
            "quantization:GranularityModel", "quantization.granularity:GranularityView",
            "granularity"),
        FigureSpec(
            "11.4", "smoothquant", "SmoothQuant: moving the outliers into the weights",
            "Per input channel j, the largest activation (blue) and the largest weight "
            "(orange) on a log scale, faint before smoothing and solid after dividing Xⱼ by "
            "sⱼ and multiplying Wⱼ by it. Below, the error of the 8-bit product XW against "
            "α (one scale for X, one per output column of W). <i>Try this:</i> slide α "
            "from 0 to 1 and watch channels 2 and 6 sink in blue while orange rises; at 1 "
            "all blue bars are equal. Find the α with the smallest error, and note the "
            "last readout: the product itself never changes.",
            "quantization:SmoothQuantModel", "quantization.smoothquant:SmoothQuantView",
            "smoothquant"),
        FigureSpec(
            "11.5", "w4a16", "Int4 weights on the roofline: decode against prefill",
            "One weight matmul of n tokens on the H100 in bf16. W16 keeps the weight in "
            "bf16; W4 stores 4-bit codes plus one fp16 scale per group (4.125 bits with "
            "groups of 128) and expands them to bf16 on chip. Blue points are "
            "compute-bound, orange memory-bound; below, both times against n (W16 dashed). "
            "<i>Try this:</i> at n = 1 click each point and compare the times; then raise "
            "n to 64, and on to 4,096, where both points reach the flat roof and the "
            "speed-up is gone.",
            "quantization:W4A16Model", "quantization.w4a16:W4A16View", "weight-only"),
    )),
    Lesson(12, "serving", "LLM inference serving", "12-serving.md", (
        # lesson 12 figures
        FigureSpec(
            "12.1", "decode_batch", "A decode step against the batch",
            "Up top, one decode step as roofline times: orange is reading "
            "the weights (dark) and every sequence's KV cache (light), blue is the "
            "arithmetic; the step takes the longer row. The middle bar is the GPU's "
            "memory, the lower chart tokens per second against the time per output token "
            "for every batch that fits. <i>Try this:</i> guess how much longer a step of 64 "
            "sequences takes and press Reveal; take the batch to 64, then to 186, where the "
            "light part takes over. Then try an 8,192-token context, an FP8 cache, or Llama-2-7B "
            "(no GQA), and watch the largest batch.",
            "serving.decode_batch:DecodeBatchModel", "serving.decode_batch:DecodeBatchView",
            "decode-batch"),
        FigureSpec(
            "12.2", "batching", "Static and continuous batching",
            "The same requests, served two ways. Each row is a batch slot, time runs in "
            "decode steps; every request starts with one prefill step (the narrow box) "
            "and goes on with a decode step per output token. Violet is a slot doing "
            "nothing. In static batching a finished request keeps its slot until the "
            "longest of its batch ends. <i>Try this:</i> press New random requests a few "
            "times, then raise the longest output: the static schedule grows violet, the "
            "continuous one stays nearly full.",
            "serving.batching:BatchingModel", "serving.batching:BatchingView",
            "continuous-batching"),
        FigureSpec(
            "12.3", "kv_blocks", "KV-cache memory: reserved ranges or paged blocks",
            "Each square is one token slot of the KV-cache pool; four of them make a "
            "block. Orange slots hold a token, violet ones are taken but empty (waste), "
            "grey ones are free; a short bar marks where a reserved range starts. The "
            "numbers say which request owns a block; click one to list its block table. "
            "<i>Try this:</i> press Step a few times in contiguous mode and read the used "
            "share, then switch to paged. In paged mode fork the oldest request (magenta "
            "frames, ×2) and Step to see copy-on-write; then add requests until the pool "
            "is full.",
            "serving.kv_blocks:KvBlocksModel", "serving.kv_blocks:KvBlocksView",
            "paged-attention"),
        FigureSpec(
            "12.4", "speculative_sampling", "Speculative sampling at one position",
            "One position, two models. The outlined bar is the draft model's q, the "
            "dashed line the target's p. The stacked bar is the output of the rule: the "
            "draft's token kept with probability min(1, p/q) (blue), and after a "
            "rejection a token redrawn from max(0, p − q), normalised (magenta). "
            "<i>Try this:</i> move the draft quality and watch the blue part grow while "
            "the stacked bar never leaves the dashed line; press Sample to check it with "
            "2,000 random draws, then switch to 4 tokens.",
            "serving.speculative_sampling:SpeculativeSamplingModel",
            "serving.speculative_sampling:SpeculativeSamplingView", "speculative-sampling"),
        FigureSpec(
            "12.5", "speculative_decoding", "Speculative decoding: rounds and the best γ",
            "Each row is one round: the draft model proposes γ tokens and the target "
            "checks them in one pass. Blue tokens are accepted; the first rejected one is "
            "replaced by the target (magenta) and the rest are discarded (violet); if all "
            "pass, the same pass adds a bonus token (aqua). The number at the right is "
            "the round's tokens. The bars are aⁱ, the chance that position i is reached; "
            "their sum is the expected tokens per round. <i>Try this:</i> guess the tokens "
            "per round, press Reveal and Simulate 12 rounds; then raise γ and watch the "
            "new bars shrink while the speed-up passes its best γ.",
            "serving.speculative_decoding:SpeculativeDecodingModel",
            "serving.speculative_decoding:SpeculativeDecodingView", "speculative-decoding"),
        FigureSpec(
            "12.6", "long_prompt", "A long prompt among decoding sequences",
            "A long prompt arrives (magenta line) while a batch decodes. Each bar is one "
            "step of the decode GPU, as high as the time every sequence waits for its next "
            "token (log scale); orange steps only decode, blue ones also carry prompt "
            "tokens. The dashed line is the TPOT target. In the lanes below, violet hatching "
            "is a GPU or the link left idle. <i>Try this:</i> in one piece a "
            "single step lasts over a second; switch to chunked prefill and the steps stay "
            "at the target while the prompt's first token comes a little later; switch to "
            "disaggregated and the decode GPU is left alone, the work moving to a second "
            "GPU and a KV transfer (try the network link).",
            "serving.long_prompt:LongPromptModel", "serving.long_prompt:LongPromptView",
            "chunked-prefill"),
    )),
    Lesson(13, "profiling", "Profiling, MFU and compilation", "13-profiling.md", (
        FigureSpec(
            "13.1", "puzzle", "The profiler puzzle: name the problem",
            "Five profiles of one training step, drawn as a profiler draws them: the CPU "
            "row (grey launches, pink waits), the compute stream (blue kernels, an orange "
            "copy), the NCCL stream (aqua all-reduces) and violet where the GPU has "
            "nothing to run. Each timeline has one problem. <i>Try this:</i> pick a "
            "timeline, name its problem with the buttons, then Apply the fix and compare "
            "the new step with the dashed old one. File &gt; Open trace shows a "
            "torch.profiler trace of your own on the same rows, with the same numbers.",
            "profiling.puzzle:PuzzleModel", "profiling.puzzle:PuzzleView",
            "profiler-puzzle"),
        FigureSpec(
            "13.2", "regime", "Overhead, memory or compute: which fix helps",
            "One bf16 matmul of size n followed by k elementwise ops on an H100, each "
            "kernel launch costing the CPU 3.6 µs. Above, the step time against n; below, "
            "what it is made of: violet overhead (the GPU waiting for launches), orange "
            "memory, blue compute. <i>Try this:</i> at n = 256, 3,072 and 16,384 switch on "
            "fuse, CUDA graph and fp8 one at a time and read each speed-up. Fusing helps "
            "twice: it removes launches as well as memory traffic.",
            "profiling.regime:RegimeModel", "profiling.regime:RegimeView",
            "three-regimes"),
        FigureSpec(
            "13.3", "mfu", "MFU and HFU from a training log line",
            "A training run's log line turned into the share of the chips' peak it uses. "
            "Blue is the FLOPs the model needs (MFU), the second blue what recomputation "
            "runs again on top (HFU), violet the peak left unused. <i>Try this:</i> guess the "
            "MFU of the 7B log line, reveal it, then switch recompute from full to none and "
            "compare the HFU. Load PaLM's run and switch the attention width to the hidden size: "
            "the published 46.2% needs 48 heads of 256.",
            "profiling.mfu:MfuModel", "profiling.mfu:MfuView", "mfu-and-hfu"),
        FigureSpec(
            "13.4", "compile", "What torch.compile fuses, and when it compiles again",
            "One small function (matmul, bias, GeLU, dropout, a sum) as PyTorch ran it on "
            "a CPU, eager and compiled; the kernels stand beside the lines they come from, "
            "coloured by graph. <i>Try this:</i> guess the compiled kernel count and "
            "reveal it, then switch on the print and the if: each cuts the graph (dashed) "
            "and the ops after it get kernels of their own. Press Next call through the "
            "new shapes with each dynamic= setting and count the recompiles.",
            "profiling.compile:CompileModel", "profiling.compile:CompileView",
            "what-torch-compile-fuses", animated=True),
    )),
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
