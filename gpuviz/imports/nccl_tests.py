"""The text output of an nccl-tests run (NVIDIA/nccl-tests), read for Lesson 7's figures.

nccl-tests prints (src/util.cu): a header of `#` lines (the collective's name in
`# Collective test starting: all_reduce_perf`, one `#  Rank  r Group g Pid p on host
device d [bus] NAME` line per rank), the column titles, then one row per message size:

    size (B)  count  type  redop  root  | time (us)  algbw  busbw  #wrong | the same in place

and a footer (`# Out of bounds values`, `# Avg bus bandwidth`). `size` is the whole
buffer (for all-gather the gathered one), algbw = size / time and busbw = algbw times
2(P-1)/P for all-reduce, (P-1)/P for all-gather, reduce-scatter and all-to-all
(doc/PERFORMANCE.md). Older versions leave out `root`, some the `redop`; `#wrong` is
`N/A` when the check is off. Lines may carry a launcher's prefix (`0: ` from srun,
`[1,0]<stdout>:` from Open MPI), which is dropped.

Every problem is one `DataError` line naming the file, the line and what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuviz.data import DataError

# nccl-tests' program name -> the collective as gpuviz.models.alpha_beta names it
COLLECTIVES = {"all_reduce_perf": "all_reduce", "all_gather_perf": "all_gather",
               "reduce_scatter_perf": "reduce_scatter", "alltoall_perf": "all_to_all"}
SUPPORTED = ", ".join(COLLECTIVES)
RESULT_FIELDS = 8  # time, algbw, busbw, #wrong; out of place, then in place
MAX_BYTES = 1 << 20  # a longer file is not an nccl-tests table

_PREFIX = re.compile(r"^\s*(?:\d+:|\[\d+,\d+\]<std(?:out|err)>:)")
_COLUMNS = re.compile(r"^#.*\bsize\b.*\balgbw\b.*\bbusbw\b")
_PROGRAM = re.compile(r"\b(\w+_perf)(?:_mpi)?\b")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s.*?\bon\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$")
_FOOTER = re.compile(r"^#\s*Avg bus bandwidth\b")


@dataclass(frozen=True)
class NcclMeasurements:
    """One nccl-tests table: sizes in bytes, times in seconds, bandwidths in B/s (the
    file's GB/s are 10^9 B/s); out of place, the run nccl-tests leads with."""

    path: str
    collective: str  # all_reduce, all_gather, reduce_scatter or all_to_all
    ranks: int
    nodes: int  # servers: the distinct host names of the ranks
    device: str  # the first rank's GPU as nccl-tests names it
    sizes: np.ndarray
    times: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    in_place_times: np.ndarray

    @property
    def collective_name(self) -> str:
        return self.collective.replace("_", "-")

    @property
    def name(self) -> str:
        return f"{self.collective_name} on {self.ranks} × {self.device.removeprefix('NVIDIA ')}"


def _lines(text: str) -> list[str]:
    return [_PREFIX.sub("", line, count=1).strip() for line in text.splitlines()]


def looks_like_nccl_tests(text: str) -> bool:
    """Whether the text has nccl-tests' column titles (size ... algbw ... busbw)."""
    return any(_COLUMNS.match(line) for line in _lines(text[:MAX_BYTES]))


def read_nccl_tests(path: str | Path) -> NcclMeasurements:
    """Read an nccl-tests output file; DataError (one line) when it is not one we can use."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise DataError(path, "", f"cannot be read ({error.strerror})") from None
    return parse_nccl_tests(text, str(path))


def parse_nccl_tests(text: str, path: str = "<text>") -> NcclMeasurements:
    def fail(line: int, problem: str) -> DataError:
        return DataError(path, "", f"line {line}: {problem}")

    lines = _lines(text[:MAX_BYTES])
    if not any(lines):
        raise fail(1, "the file is empty; expected the text output of nccl-tests "
                      f"({SUPPORTED})")
    program, program_line, ranks, hosts, devices, rows = None, 1, {}, set(), [], []
    header = footer = None
    for number, line in enumerate(lines, start=1):
        if line.startswith("#"):
            if (rank := _RANK.match(line)) is not None:
                ranks[int(rank.group(1))] = number
                hosts.add(rank.group(2))
                devices.append(rank.group(3).strip())
            elif _COLUMNS.match(line):
                header = number
            elif _FOOTER.match(line) and header is not None:
                footer = number
                break
            elif program is None and "Collective test starting" in line:
                program, program_line = _program(line), number
            continue
        if program is None and (found := _program(line)):  # the command line above
            program, program_line = found, number
        if header is not None and line[:1].isdigit():  # not a log line NCCL mixed in
            rows.append((number, line))
    if program is None:
        raise fail(1, "no test name found: expected a '# Collective test starting: "
                      f"<name>' line or the command (one of {SUPPORTED})")
    if program not in COLLECTIVES:
        raise fail(program_line, f"{program} is not supported; expected one of "
                                 f"{SUPPORTED}")
    if not ranks:
        raise fail(1, "no '#  Rank r ... device d [bus] NAME' lines: expected the list "
                      "of ranks nccl-tests prints before its table")
    if header is None:
        raise fail(len(lines), "no table: expected the column titles "
                               "'#  size  count  type ... time  algbw  busbw  #wrong'")
    if not rows:
        raise fail(header, "the table has no rows")
    parsed = [_row(number, line, fail) for number, line in rows]
    if footer is None:
        raise fail(rows[-1][0], "the table stops without nccl-tests' closing '# Avg bus "
                                "bandwidth' line: the file was cut mid-table")
    values = np.array(parsed, dtype=float)
    return NcclMeasurements(path, COLLECTIVES[program], max(ranks) + 1, len(hosts),
                            devices[0],
                            values[:, 0], values[:, 1] * 1e-6, values[:, 2] * 1e9,
                            values[:, 3] * 1e9, values[:, 4] * 1e-6)


def _program(line: str) -> str | None:
    found = _PROGRAM.search(line)
    return found.group(1) if found else None


def _row(number: int, line: str, fail) -> tuple[float, ...]:  # noqa: ANN001 - fail(line, what)
    """size, time, algbw, busbw, in-place time of one row; #wrong must be 0 or N/A."""
    fields = line.split()
    expected = ("expected size, count, type, redop, root, then time, algbw, busbw and "
                "#wrong out of place and in place")
    if len(fields) < 3 + RESULT_FIELDS:
        raise fail(number, f"a row with {len(fields)} fields: {expected} (the file was "
                           "cut mid-table?)")
    results = fields[-RESULT_FIELDS:]
    try:
        size = int(fields[0])
        time, algbw, busbw, in_place = (float(results[i]) for i in (0, 1, 2, 4))
    except ValueError:
        raise fail(number, f"not a row of numbers: {expected}") from None
    for wrong in (results[3], results[7]):
        if wrong != "N/A" and _number(wrong) != 0:
            raise fail(number, f"#wrong is {wrong} at {size} B: the collective gave wrong "
                               "results, so its times are no measurement; expected 0")
    if size <= 0 or not all(np.isfinite(v) and v > 0 for v in (time, in_place)):
        raise fail(number, "size and times must be positive numbers")
    return size, time, algbw, busbw, in_place


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")
