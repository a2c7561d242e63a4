"""Lesson 4, FlashAttention and online softmax (being split into one module per figure)."""

from gpuviz.models.flash_attention.tiling import *  # noqa: F403
