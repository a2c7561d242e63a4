"""gpuviz: interactive figures that teach GPU and LLM-systems performance."""

__version__ = "0.1.0"
