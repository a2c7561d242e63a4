"""Figure 13.4: what torch.compile makes of one small function: eager kernels against
fused ones, graph breaks, and recompiles when a call brings new shapes.

Nothing here is modelled: every count is read from resources/profiling/compile_groupings.json,
which tools/regenerate/compile_groupings.py writes by running torch.compile (Dynamo and
Inductor) on a CPU. For each variant of the function (with or without a print of
`.item()`, with or without a data-dependent `if`) the file gives
  eager      each ATen op that runs a kernel, with its source line
  graphs     the source lines Dynamo captured in each graph; a break ends one graph and
             the code after it starts the next
  kernels    what Inductor made of each graph after fusion: calls into a library (addmm:
             the matmul with the bias add) and generated kernels (elementwise ops and
             reductions fused)
  calls      per dynamic setting (None, the default, True, False), each call of a sequence
             with new row counts: graphs compiled, dynamic or not, the guard that failed
Left out: the backward pass, GPU code generation (Triton fuses the random mask of dropout
into its consumer; the C++ back end used here keeps it a kernel of its own) and run times.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, SteppedModel, plural
from gpuviz.data import DataError, read_json
from gpuviz.paths import resource

MODES = [("eager", "Eager"), ("compiled", "torch.compile")]
DYNAMIC = [("auto", "None (default)"), ("true", "True"), ("false", "False")]
# What a kernel is called in the figure: Inductor's names for dropout's random numbers.
KERNEL_NAMES = {"inductor_seeds": "seed", "inductor_random": "random mask"}


@dataclass(frozen=True)
class Kernel:
    label: str
    lines: tuple[int, ...]  # source lines (1 = the def line) whose ops it runs
    graph: int  # index of its graph; -1 in eager mode
    library: bool  # a call into a library (addmm) rather than a generated kernel


@dataclass(frozen=True)
class Call:
    rows: int  # rows of x
    graphs_compiled: int
    dynamic: bool  # the graphs compiled take any row count
    guard_failed: str  # Dynamo's guard that sent the call to the compiler ("" for none)

    def status(self, first: bool) -> str:
        if not self.graphs_compiled:
            return "reuse"
        return "compile" if first else "recompile"


@dataclass(frozen=True)
class Variant:
    source: tuple[str, ...]
    eager: tuple[Kernel, ...]
    host_reads: tuple[int, ...]  # lines where the host reads a value (.item(), an if)
    graphs: tuple[tuple[int, ...], ...]  # source lines of each graph
    compiled: tuple[Kernel, ...]
    breaks: tuple[int, ...]  # lines of the graph breaks
    calls: dict[str, tuple[Call, ...]]  # per DYNAMIC key


@dataclass(frozen=True)
class Groupings:
    torch_version: str
    generated: str
    x_columns: int  # x is (rows, x_columns)
    variants: dict[tuple[bool, bool], Variant]  # by (print line, if line)


def _field(data: object, key: str, kind: type | tuple[type, ...], path: Path, where: str,
           expected: str) -> object:
    """data[key], checked: DataError names the file, the field and what it should be."""
    value = data.get(key) if isinstance(data, dict) else None
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is int)
    if not ok:
        raise DataError(path, f"{where}{key}", f"expected {expected}")
    return value


def _lines(data: dict, key: str, path: Path, where: str) -> tuple[int, ...]:
    values = _field(data, key, list, path, where, "a list of line numbers")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise DataError(path, f"{where}{key}", "expected a list of line numbers (1 or more)")
    return tuple(values)


def kernel_label(ops: list[str], lines: tuple[int, ...], library: bool) -> str:
    for op, name in KERNEL_NAMES.items():
        if op in ops:
            return name
    if library or len(lines) == 1:
        return ops[0]
    return "fused"


def _variant(data: object, path: Path, where: str) -> Variant:
    source = _field(data, "source", list, path, where, "the function's lines as texts")
    eager = []
    for i, entry in enumerate(_field(data, "eager", list, path, where, "a list of ops")):
        at = f"{where}eager[{i}]."
        op = _field(entry, "op", str, path, at, "an op name")
        line = _field(entry, "line", int, path, at, "a line number")
        # An in-place op's trailing _ (bernoulli_) left out: the figure names the work.
        eager.append(Kernel(op.rstrip("_"), (line,), -1, False))
    host_reads = tuple(_field(entry, "line", int, path, f"{where}host_reads[{i}].",
                              "a line number") for i, entry in
                       enumerate(_field(data, "host_reads", list, path, where, "a list")))
    graphs, compiled = [], []
    for g, graph in enumerate(_field(data, "graphs", list, path, where, "a list of graphs")):
        at = f"{where}graphs[{g}]."
        graphs.append(_lines(graph, "lines", path, at))
        for k, kernel in enumerate(_field(graph, "kernels", list, path, at, "a list")):
            kat = f"{at}kernels[{k}]."
            kind = _field(kernel, "kind", str, path, kat, "'library' or 'generated'")
            if kind not in ("library", "generated"):
                raise DataError(path, f"{kat}kind", "expected 'library' or 'generated'")
            ops = _field(kernel, "ops", list, path, kat, "a list of op names")
            if not ops or not all(isinstance(op, str) for op in ops):
                raise DataError(path, f"{kat}ops", "expected a list of op names")
            lines = _lines(kernel, "lines", path, kat)
            library = kind == "library"
            compiled.append(Kernel(kernel_label(ops, lines, library), lines, g, library))
    breaks = tuple(_field(b, "line", int, path, f"{where}graph_breaks[{i}].", "a line number")
                   for i, b in enumerate(_field(data, "graph_breaks", list, path, where,
                                                "a list")))
    sequences = _field(data, "calls", dict, path, where, "a table of call sequences")
    calls = {}
    for key, _label in DYNAMIC:
        sequence = []
        for i, call in enumerate(_field(sequences, key, list, path, f"{where}calls.",
                                        "a list of calls")):
            at = f"{where}calls.{key}[{i}]."
            sequence.append(Call(
                _field(call, "rows", int, path, at, "a whole number of rows"),
                _field(call, "graphs_compiled", int, path, at, "a whole number"),
                _field(call, "dynamic", bool, path, at, "true or false"),
                _field(call, "guard_failed", str, path, at, "a text")))
        calls[key] = tuple(sequence)
    if len({len(s) for s in calls.values()}) != 1:
        raise DataError(path, f"{where}calls", "expected as many calls for every setting")
    return Variant(tuple(source), tuple(eager), host_reads, tuple(graphs), tuple(compiled),
                   breaks, calls)


def read_groupings(path: Path) -> Groupings:
    """The groupings file; DataError names the file and field that is wrong."""
    data = read_json(path)
    version = _field(data, "torch_version", str, path, "", "the PyTorch version")
    generated = _field(data, "generated", str, path, "", "a date")
    x = _field(_field(data, "shapes", dict, path, "", "a table of shapes"), "x", list, path,
               "shapes.", "the shape of x, [\"rows\", columns]")
    if len(x) != 2 or not isinstance(x[1], int):
        raise DataError(path, "shapes.x", 'expected the shape of x, ["rows", columns]')
    variants = {}
    for i, entry in enumerate(_field(data, "variants", list, path, "", "a list")):
        where = f"variants[{i}]."
        key = (_field(entry, "print", bool, path, where, "true or false"),
               _field(entry, "if", bool, path, where, "true or false"))
        variants[key] = _variant(entry, path, where)
    missing = [key for key in ((p, i) for p in (False, True) for i in (False, True))
               if key not in variants]
    if missing:
        raise DataError(path, "variants", "expected all four of print and if on and off")
    return Groupings(version, generated, x[1], variants)


@functools.cache
def groupings() -> Groupings:
    return read_groupings(resource("profiling", "compile_groupings.json"))


@dataclass(frozen=True)
class CompileOut:
    variant: Variant
    calls: tuple[Call, ...]  # the sequence under the chosen dynamic setting
    calls_done: int
    eager: bool = False  # run eagerly: nothing is compiled, whatever the shapes

    @property
    def graphs_compiled(self) -> int:
        """Graphs compiled by the calls made so far (none in eager mode)."""
        return 0 if self.eager else sum(c.graphs_compiled for c in self.calls[:self.calls_done])

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return self.variant.compiled

    def statuses(self) -> list[str]:
        """compile, recompile or reuse for each call made so far; eager for each in eager
        mode, which compiles nothing."""
        if self.eager:
            return ["eager"] * self.calls_done
        return [call.status(i == 0) for i, call in enumerate(self.calls[:self.calls_done])]


class CompileModel(SteppedModel, PredictFirstModel):
    """Figure 13.4: a small function in eager mode and under torch.compile (see the module
    docstring); Next call runs the compiled function on the next shape. Predict first:
    the kernels of the compiled function."""

    mode = Parameter("compiled", label="Run", choices=MODES,
                     help="Eager: one kernel per op. torch.compile: graphs of fused kernels")
    with_print = Parameter(False, label="print(.item())",
                           help="Add print(y.sum().item()): the host reads a value (graph "
                                "break)")
    with_if = Parameter(False, label="if on data",
                        help="Add a NaN check, an if on a tensor's value (graph break)")
    dynamic = Parameter("auto", label="dynamic=", choices=DYNAMIC,
                        help="torch.compile's dynamic argument: None compiles for the first "
                             "shape and makes the rows dynamic at the first recompile")
    guess_kernels = Parameter(3, label="Kernels compiled", minimum=1, maximum=12, step=1,
                              help="How many kernels does the compiled function run?")
    guess_parameter = "guess_kernels"
    hidden_again_by = ("with_print", "with_if")

    @property
    def total_steps(self) -> int:
        return len(groupings().variants[(False, False)].calls["auto"])

    def parameter_changed(self, name: str) -> None:
        if name == "mode":  # the same function and calls, drawn another way
            PredictFirstModel.parameter_changed(self, name)
        else:
            super().parameter_changed(name)

    def compute(self) -> CompileOut:
        variant = groupings().variants[(self.with_print, self.with_if)]
        return CompileOut(variant, variant.calls[self.dynamic], self.steps_done,
                          self.mode == "eager")

    def answer_text(self) -> str:
        answer = len(self.out.kernels)
        graphs = plural(len(self.out.variant.graphs), "graph")
        return (f"{answer} kernels in {graphs}. Your guess of "
                f"{self.guess_kernels} is {self.how_close(self.guess_kernels, answer)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        statuses = out.statuses()
        return {
            "eager_kernels": Readout("Kernels eager", len(out.variant.eager)),
            "compiled_kernels": self.answer(Readout("Kernels compiled", len(out.kernels))),
            "graphs": Readout("Graphs", len(out.variant.graphs)),
            "graph_breaks": Readout("Graph breaks", len(out.variant.breaks)),
            "calls": Readout("Calls", out.calls_done, total=len(out.calls)),
            "recompiles": Readout("Recompiles", statuses.count("recompile")),
            "graphs_compiled": Readout("Graphs compiled", out.graphs_compiled),
        }
