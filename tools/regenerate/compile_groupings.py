"""Regenerate resources/profiling/compile_groupings.json (figure 13.4) with torch.compile.

Runs on a CPU (no GPU needed) in a virtualenv with PyTorch; the app itself never imports
torch. See tools/regenerate/README.md.

    python tools/regenerate/compile_groupings.py [--out FILE] [--date YYYY-MM-DD]

For each variant of one small function (with or without a print of `.item()`, with or
without a data-dependent `if`) it records:
  eager     every ATen op that runs a kernel, with its source line (a dispatch mode sees
            them); reads of a value by the host (`.item()`, `bool(tensor)`) apart
  graphs    what Dynamo captured: graph count, break reasons and lines (torch._dynamo.explain),
            and for each graph the source lines of its nodes
  kernels   what Inductor made of each graph: its scheduler nodes after fusion, one per
            kernel (a generated C++ kernel, or a call into a library such as addmm), with
            the source lines of the FX nodes each one holds
  calls     a sequence of calls with new row counts under dynamic=None (the default), True
            and False: per call the graphs compiled, whether they are dynamic in the rows,
            and the guard that failed
The output is sorted and has no timestamps but the `generated` date.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import io
import json
import logging
import os
import re
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")  # a cached graph skips
# the scheduler, whose fused nodes are what this script records

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config  # noqa: E402
from torch._inductor import scheduler as inductor_scheduler  # noqa: E402
from torch._inductor.compile_fx import compile_fx  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "resources" / "profiling" / "compile_groupings.json"

# The function: {print} and {if} are the optional lines (the figure's switches).
TEMPLATE = '''\
def layer(x, w, b):
    y = x @ w
    y = y + b
{print}    y = F.gelu(y)
{if}    y = F.dropout(y, p=0.1)
    return y.sum(dim=1)
'''
PRINT_LINE = "    print(y.sum().item())\n"
IF_LINES = "    if y.isnan().any():\n        raise ValueError(\"NaN\")\n"
HEADER = "import torch.nn.functional as F\n\n\n"
COLUMNS, OUTPUTS = 64, 32  # x is (rows, 64), w (64, 32), b (32,)
FIRST_ROWS = 8
CALL_ROWS = (8, 16, 32, 16, 1)  # the calls of the sequence: rows of x
DYNAMIC = (("auto", None), ("true", True), ("false", False))
NOT_KERNELS = ("empty", "empty_like", "empty_strided")  # allocations, no kernel runs


def variant_source(with_print: bool, with_if: bool) -> str:
    return TEMPLATE.format(print=PRINT_LINE if with_print else "",
                           **{"if": IF_LINES if with_if else ""})


def load(source: str, folder: Path, name: str) -> tuple[object, Path]:
    """The function `layer` of `source`, imported from a file (stack traces need one)."""
    path = folder / f"{name}.py"
    path.write_text(HEADER + source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.layer, path


def inputs(rows: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(rows, COLUMNS), torch.randn(COLUMNS, OUTPUTS), torch.randn(OUTPUTS)


class Lines:
    """Source lines of `layer` (1 = its def line) from stack traces into its file."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.pattern = re.compile(rf'File "{re.escape(self.path)}", line (\d+)')
        self.offset = HEADER.count("\n")

    def of_trace(self, stack_trace: str | None) -> int | None:
        found = self.pattern.findall(stack_trace or "")
        return int(found[-1]) - self.offset if found else None

    def of_frames(self, frames: list) -> int | None:
        lines = [f.lineno for f in frames if f.filename == self.path]
        return lines[-1] - self.offset if lines else None


def op_name(target: object) -> str:
    """aten.addmm.default -> addmm; prims.inductor_seeds.default -> inductor_seeds."""
    return str(target).split(".")[1] if str(target).count(".") >= 2 else str(target)


class EagerOps(TorchDispatchMode):
    """Every ATen op the function dispatches, with the line of `layer` it comes from."""

    def __init__(self, path: Path, lines: Lines) -> None:
        super().__init__()
        self.path, self.lines, self.ops = str(path), lines, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        frame = sys._getframe(1)
        while frame and frame.f_code.co_filename != self.path:
            frame = frame.f_back
        if frame is not None:
            self.ops.append((func, frame.f_lineno - self.lines.offset))
        return func(*args, **(kwargs or {}))


def eager_kernels(layer: object, path: Path, lines: Lines) -> tuple[list, list]:
    """(kernels, host reads) of one eager call, in the order they run."""
    x, w, b = inputs(FIRST_ROWS)
    with EagerOps(path, lines) as mode:
        layer(x, w, b)
    kernels, host_reads = [], []
    for func, line in mode.ops:
        name = op_name(func)
        if torch.Tag.data_dependent_output in func.tags:
            host_reads.append({"line": line, "op": name})
        elif not func.is_view and name not in NOT_KERNELS:
            kernels.append({"line": line, "op": name})
    return kernels, host_reads


class Recorder:
    """A torch.compile backend: Inductor, recording each graph's source lines, its
    kernels after fusion (the scheduler's nodes) and whether its rows are symbolic."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.graphs: list[dict] = []
        self._nodes: list | None = None

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graph_lines = {self.lines.of_trace(node.meta.get("stack_trace"))
                       for node in gm.graph.nodes
                       if node.op in ("call_function", "call_method", "call_module")}
        examples = [n.meta["example_value"] for n in gm.graph.nodes if n.op == "placeholder"]
        dynamic = any(isinstance(e, torch.SymInt) or (isinstance(e, torch.Tensor) and any(
            isinstance(size, torch.SymInt) for size in e.shape)) for e in examples)
        self._nodes = []
        compiled = compile_fx(gm, example_inputs)
        kernels, self._nodes = [self._kernel(n) for n in self._nodes], None
        if graph_lines:  # Dynamo also hands over empty graphs (after a break, dynamic)
            self.graphs.append({"lines": sorted(graph_lines - {None}), "dynamic": dynamic,
                                "kernels": kernels})
        return compiled

    def scheduled(self, nodes: list) -> None:
        if self._nodes is not None:
            self._nodes.extend(n for n in nodes
                               if not isinstance(n, inductor_scheduler.NopKernelSchedulerNode))

    def _kernel(self, node: object) -> dict:
        origins = [o for part in node.get_nodes() if part.node is not None
                   for o in part.node.origins]
        lines = {self.lines.of_trace(o.meta.get("stack_trace")) for o in origins}
        if lines == {None}:  # made by a pass (the random seed): the lines it serves
            lines = {self.lines.of_trace(user.meta.get("stack_trace"))
                     for o in origins for user in o.users}
        extern = isinstance(node, inductor_scheduler.ExternKernelSchedulerNode)
        return {"kind": "library" if extern else "generated",
                "ops": sorted({op_name(o.target) for o in origins}),
                "lines": sorted(lines - {None})}


def hook_scheduler(recorder_of: list) -> None:
    """Let the current Recorder see the scheduler's nodes after fusion."""
    codegen = inductor_scheduler.Scheduler.codegen

    def recording_codegen(self: inductor_scheduler.Scheduler) -> object:
        if recorder_of:
            recorder_of[0].scheduled(self.nodes)
        return codegen(self)

    inductor_scheduler.Scheduler.codegen = recording_codegen


class RecompileLog(logging.Handler):
    """The guard failures Dynamo logs when it recompiles."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def first_guard_failure(messages: list[str]) -> str:
    """The first failed guard, without Dynamo's comment: "tensor 'x' size mismatch at
    index 0. expected 8, actual 16", "2 <= x.size()[0]"."""
    for message in messages:
        found = re.search(r"^\s*- \d+/\d+: (.*)$", message, re.MULTILINE)
        if found:
            return found.group(1).split("  #")[0].strip()
    return ""


def groupings(layer: object, path: Path, lines: Lines, recorder_of: list) -> dict:
    kernels, host_reads = eager_kernels(layer, path, lines)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(layer)(*inputs(FIRST_ROWS))
    breaks = [{"line": lines.of_frames(reason.user_stack),
               "reason": reason.reason.splitlines()[0].strip()}
              for reason in explained.break_reasons]
    torch._dynamo.reset()
    recorder = Recorder(lines)
    recorder_of[:] = [recorder]
    torch.compile(layer, backend=recorder)(*inputs(FIRST_ROWS))
    if len(recorder.graphs) != explained.graph_count:
        raise SystemExit(f"explain found {explained.graph_count} graphs, the backend "
                         f"{len(recorder.graphs)}")
    graphs = [{"kernels": g["kernels"], "lines": g["lines"]} for g in recorder.graphs]
    return {"eager": kernels, "host_reads": host_reads, "graph_breaks": breaks,
            "graphs": graphs}


def calls(layer: object, lines: Lines, recorder_of: list, log: RecompileLog) -> dict:
    """Per dynamic setting, each call of CALL_ROWS: graphs compiled, dynamic or not, and
    the guard that failed."""
    sequences = {}
    for key, dynamic in DYNAMIC:
        torch._dynamo.reset()
        recorder = Recorder(lines)
        recorder_of[:] = [recorder]
        compiled = torch.compile(layer, backend=recorder, dynamic=dynamic)
        sequence = []
        for rows in CALL_ROWS:
            before = len(recorder.graphs)
            log.messages.clear()
            compiled(*inputs(rows))
            new = recorder.graphs[before:]
            sequence.append({"rows": rows, "graphs_compiled": len(new),
                             "dynamic": any(g["dynamic"] for g in new),
                             "guard_failed": first_guard_failure(log.messages)})
        sequences[key] = sequence
    return sequences


def generate(date: str) -> dict:
    recorder_of: list = []
    hook_scheduler(recorder_of)
    log = RecompileLog()
    recompiles = logging.getLogger("torch._dynamo.guards.__recompiles")
    torch._logging.set_logs(recompiles=True)
    recompiles.addHandler(log)
    recompiles.propagate = False  # keep the console quiet
    variants = []
    with tempfile.TemporaryDirectory() as folder:
        for n, (with_print, with_if) in enumerate(
                [(False, False), (True, False), (False, True), (True, True)]):
            source = variant_source(with_print, with_if)
            layer, path = load(source, Path(folder), f"layer_{n}")
            lines = Lines(path)
            variants.append({"print": with_print, "if": with_if,
                             "source": source.rstrip("\n").split("\n"),
                             **groupings(layer, path, lines, recorder_of),
                             "calls": calls(layer, lines, recorder_of, log)})
    return {
        "about": "What torch.compile (Dynamo and Inductor, on a CPU) does with one small "
                 "function: eager kernels, graphs, graph breaks, fused kernels and the "
                 "recompiles of calls with new row counts. Written by "
                 "tools/regenerate/compile_groupings.py; do not edit by hand.",
        "generated": date,
        "torch_version": torch.__version__,
        "device": "cpu",
        "shapes": {"x": ["rows", COLUMNS], "w": [COLUMNS, OUTPUTS], "b": [OUTPUTS],
                   "first_rows": FIRST_ROWS, "call_rows": list(CALL_ROWS)},
        "variants": variants,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--date", default=datetime.date.today().isoformat(),
                        help="the 'generated' date written to the file")
    args = parser.parse_args()
    with contextlib.redirect_stdout(io.StringIO()):  # the function's own print
        data = generate(args.date)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
