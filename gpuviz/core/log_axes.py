"""Log axes drawn in log10 data coordinates: decade ticks, time labels, nice limits.

The plots hold log10 values and label the ticks with the plain numbers, so points can be
dragged, labelled and hit-tested in one linear coordinate system.
"""

from __future__ import annotations

import math

import pyqtgraph as pg

from gpuviz.core.model import format_g, superscript

SUFFIXES = ((15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""))


def decade_label(exponent: int, unit: str = "") -> str:
    """10^exponent as short text: 0.01, 1, 100, 10k, 1 G (with a unit prefix), 10⁻⁵."""
    if exponent < 0:
        return format_g(10.0 ** exponent)
    for power, suffix in SUFFIXES:
        if exponent >= power:
            number = f"{10 ** (exponent - power):d}"
            if unit:
                return f"{number} {suffix}{unit}"
            return f"{number}{suffix}"
    return str(10 ** exponent)


def set_log_ticks(axis: pg.AxisItem, low: float, high: float, unit: str = "") -> None:
    """Major ticks at every decade between low and high (log10 values), minor ticks at
    2..9 times each decade."""
    major = [(float(k), decade_label(k, unit)) for k in range(math.ceil(low),
                                                               math.floor(high) + 1)]
    minor = [(k + math.log10(m), "") for k in range(math.floor(low), math.ceil(high))
             for m in range(2, 10) if low <= k + math.log10(m) <= high]
    axis.setTicks([major, minor])


def set_log_ranges(plot: pg.PlotItem, x_range: tuple[float, float],
                   y_range: tuple[float, float], y_unit: str = "") -> None:
    """Fix a log-log plot (log10 coordinates) to these ranges, with decade ticks."""
    plot.setXRange(*x_range, padding=0)
    plot.setYRange(*y_range, padding=0)
    set_log_ticks(plot.getAxis("bottom"), *x_range)
    set_log_ticks(plot.getAxis("left"), *y_range, unit=y_unit)


TIME_NAMES = ((0, "s"), (-3, "ms"), (-6, "µs"), (-9, "ns"), (-12, "ps"))


def time_label(exponent: int) -> str:
    """10^exponent seconds as text: 1 µs, 10 µs, 100 µs, 1 ms."""
    for power, unit in TIME_NAMES:
        if exponent >= power:
            return f"{10 ** (exponent - power):,d} {unit}"
    return f"10{superscript(exponent)} s"


def set_time_ticks(axis: pg.AxisItem, low: float, high: float) -> None:
    major = [(float(k), time_label(k)) for k in range(math.ceil(low), math.floor(high) + 1)]
    axis.setTicks([major, []])
