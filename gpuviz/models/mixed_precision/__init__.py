"""Lesson 5, mixed-precision training (being split into one module per figure)."""

from gpuviz.models.mixed_precision.float_formats import *  # noqa: F403
