"""What the figures of Lesson 4 share: element sizes, the spread of the random scores
(4.1, 4.3), and readouts that show an overflow as text."""

from __future__ import annotations

import math

from gpuviz.core.model import Readout

BF16_BYTES = 2
FP32_BYTES = 4
SCORE_SPREAD = 1.5  # standard deviation of the random scores of 4.1 and 4.3


def overflow_readout(label: str, value: float, digits: int) -> Readout:
    """Readouts show overflow on purpose, as text with no value: 'inf' or 'NaN'; an empty
    set's max is '−∞'."""
    if math.isfinite(value):
        return Readout(label, float(value), digits=digits)
    return Readout(label, shown="NaN" if math.isnan(value) else "inf" if value > 0 else "−∞")
