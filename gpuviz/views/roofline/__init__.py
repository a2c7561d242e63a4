"""Lesson 2 figures: roofline, matmul batch, layer ops, calculator."""
