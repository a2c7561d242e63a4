"""Lesson 11 views: quantization."""
