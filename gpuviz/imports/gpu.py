"""A GPU of your own: a TOML file in the format of resources/hardware/*.toml.

Every number is an inline table {value = ..., source = "..."} whose field name carries
its unit (clock_ghz, hbm_bandwidth_tbs, nvlink_gbs, ...), as in the shipped files: the
easiest start is a copy of one of them. The shipped checks apply (a missing, negative or
bare number is refused); on top, a user's file must have every field all the shipped GPUs
have (the figures read them) and no field none of them has (a name without its unit,
such as hbm_bandwidth, is a field gpuviz would never read).
"""

from __future__ import annotations

import functools
from pathlib import Path

from gpuviz.data import DataError
from gpuviz.data.hardware import GPU, parse_gpu, shipped_gpus


@functools.cache
def _shipped_fields() -> tuple[frozenset[str], frozenset[str]]:
    """(the fields every shipped GPU has, the fields any of them has)."""
    fields = [set(g.numbers) for g in shipped_gpus().values()]
    return frozenset(set.intersection(*fields)), frozenset(set.union(*fields))


def read_gpu(path: Path) -> GPU:
    gpu = parse_gpu(path)
    required, known = _shipped_fields()
    missing = sorted(required - set(gpu.numbers))
    if missing:
        raise DataError(path, missing[0], "missing (every built-in GPU has it)")
    unknown = sorted(set(gpu.numbers) - known)
    if unknown:
        raise DataError(path, unknown[0], "not a field gpuviz reads; the field names say "
                                          "their unit, as in resources/hardware/*.toml "
                                          "(e.g. chip.hbm_bandwidth_tbs)")
    return gpu
