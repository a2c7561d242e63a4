"""GPU specifications from resources/hardware/*.toml, each number with its source.

Every number in a file is an inline table {value = ..., source = "...", estimate = bool}.
`load_gpus()` reads and validates them once; a bad file raises DataError naming the file
and the field, so the application can say exactly what to fix.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from gpuviz.data import DataError, UserEntries, read_header, read_toml
from gpuviz.paths import resource

DEFAULT_GPU = "h100_sxm"

SM_FIELDS = (
    "count", "max_threads", "max_warps", "max_blocks", "max_threads_per_block", "registers",
    "max_registers_per_block", "max_registers_per_thread", "register_alloc_unit",
    "register_subpartitions", "shared_memory_kb", "shared_memory_per_block_kb",
    "shared_memory_default_per_block_kb", "shared_memory_reserved_per_block_kb",
    "shared_memory_alloc_unit_bytes", "l1_shared_kb",
)
CHIP_FIELDS = ("clock_ghz", "l2_mb", "hbm_gb", "hbm_bandwidth_tbs")
LINK_FIELDS = ("nvlink_gbs", "nic_gbs", "nvlink_latency_us", "nic_latency_us")
LATENCY_FIELDS = ("l1", "shared", "l2", "hbm")
REQUIRED_PEAKS = ("bf16", "fp16", "fp32")
SECTIONS = {"sm": SM_FIELDS, "chip": CHIP_FIELDS, "links": LINK_FIELDS,
            "latency_cycles": LATENCY_FIELDS, "peak_tflops": REQUIRED_PEAKS}


@dataclass(frozen=True)
class Sourced:
    value: float
    source: str
    estimate: bool = False


@dataclass(frozen=True)
class GPU:
    key: str
    name: str
    short_name: str
    order: int
    numbers: dict[str, Sourced]  # "sm.count" -> Sourced

    def __getitem__(self, field: str) -> float:
        return self.numbers[field].value

    def source(self, field: str) -> Sourced:
        return self.numbers[field]

    @property
    def sms(self) -> int:
        return int(self["sm.count"])

    @property
    def hbm_bandwidth(self) -> float:
        """Bytes per second."""
        return self["chip.hbm_bandwidth_tbs"] * 1e12

    def peak_flops(self, precision: str = "bf16") -> float:
        """Dense FLOP/s at a precision ("bf16", "fp16", "fp8", "tf32", "fp32")."""
        return self[f"peak_tflops.{precision}"] * 1e12

    def precisions(self) -> list[str]:
        return [f.split(".", 1)[1] for f in self.numbers if f.startswith("peak_tflops.")]

    def ridge(self, precision: str = "bf16") -> float:
        """FLOP per byte where the memory roof meets the compute roof."""
        return self.peak_flops(precision) / self.hbm_bandwidth


def parse_gpu(path: Path) -> GPU:
    data = read_toml(path)
    title, short_name, order = read_header(path, data)
    numbers: dict[str, Sourced] = {}
    for section, required in SECTIONS.items():
        table = data.get(section)
        if not isinstance(table, dict):
            raise DataError(path, section, "missing section")
        for field in list(required) + [f for f in table if f not in required]:
            numbers[f"{section}.{field}"] = _number(path, f"{section}.{field}", table.get(field))
    return GPU(path.stem, title, short_name, order, numbers)


def _number(path: Path, field: str, entry: object) -> Sourced:
    if entry is None:
        raise DataError(path, field, "missing")
    if not isinstance(entry, dict) or "value" not in entry:
        raise DataError(path, field, "must be a table {value = ..., source = \"...\"}")
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise DataError(path, field, f"value must be a positive number, not {value!r}")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise DataError(path, field, "needs a source")
    return Sourced(float(value), source, bool(entry.get("estimate", False)))


@functools.cache
def hardware_dir() -> Path:
    return resource("hardware")


@functools.cache
def _load(directory: Path) -> tuple[dict[str, GPU], tuple[DataError, ...]]:
    paths = sorted(directory.glob("*.toml"))
    if not paths:
        raise DataError(directory, "", "holds no hardware files (*.toml)")
    gpus: list[GPU] = []
    problems: list[DataError] = []
    for path in paths:
        try:
            gpus.append(parse_gpu(path))
        except DataError as error:
            problems.append(error)
    by_key = {g.key: g for g in sorted(gpus, key=lambda g: (g.order, g.key))}
    if DEFAULT_GPU not in by_key:
        # Every figure starts on this GPU; without it there is no safe default.
        bad = next((p for p in problems if Path(p.path).stem == DEFAULT_GPU), None)
        raise bad or DataError(directory / f"{DEFAULT_GPU}.toml", "", "is missing")
    return by_key, tuple(problems)


def load_gpus(directory: Path | None = None) -> dict[str, GPU]:
    """The GPUs whose files are valid, in display order, then the user's (`USER_GPUS`) when
    no directory is given. A broken file is left out (see `load_problems`); a broken or
    missing default GPU raises DataError."""
    return _load(directory)[0] if directory else USER_GPUS.all()


def shipped_gpus() -> dict[str, GPU]:
    return _load(hardware_dir())[0]


# The GPUs the user added (gpuviz.imports fills it); every selector lists them too.
USER_GPUS: UserEntries[GPU] = UserEntries(shipped_gpus)


def load_problems(directory: Path | None = None) -> tuple[DataError, ...]:
    """The files `load_gpus` had to leave out, each with what is wrong."""
    return _load(directory or hardware_dir())[1]


def gpu(key: str) -> GPU:
    return load_gpus()[key]


def gpu_choices() -> list[tuple[str, str]]:
    return [(key, USER_GPUS.label(key, g.name)) for key, g in load_gpus().items()]


