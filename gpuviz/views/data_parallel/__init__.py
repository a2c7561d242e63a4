"""Lesson 8 figures: data parallelism, ZeRO and FSDP."""
