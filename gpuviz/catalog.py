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
            "1.3", "occupancy", "Occupancy: what limits resident blocks",
            "Each bar is the number of blocks one SM could hold if only that resource "
            "counted; the shortest one wins and turns magenta. <i>Try this:</i> from 256 "
            "threads, 32 registers and 16 KB, raise shared memory to 100 KB, or registers "
            "to 128. Then set 1,024 threads and 65 registers: the block no longer fits "
            "and the launch fails.",
            "gpu_architecture:OccupancyModel", "gpu_architecture.occupancy:OccupancyView",
            "occupancy"),
    )),
    Lesson(2, "roofline", "Roofline and arithmetic intensity", "02-roofline.md", (
        # lesson 2 figures
    )),
    Lesson(3, "kernels", "Kernels, tiling and fusion", "03-kernels.md", (
        # lesson 3 figures
    )),
    Lesson(4, "flash_attention", "FlashAttention and online softmax",
           "04-flash-attention.md", (
        # lesson 4 figures
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
