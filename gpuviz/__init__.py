"""gpuviz: interactive figures that teach GPU and LLM-systems performance."""

import os

__version__ = "0.1.0"

# The figures compute on arrays of a few thousand numbers at most: BLAS worker threads
# gain nothing there and spin on the second core while the UI thread paints.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
