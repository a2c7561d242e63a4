"""The benchmark's judgement (its speed numbers are the benchmark's to report, not tests')."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "latency.py"


@pytest.fixture(scope="module")
def latency():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location("latency", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scaled_verdict_judges_each_p95_on_the_machine_the_budgets_were_set_on(
        latency, capsys) -> None:  # noqa: ANN001
    runs = {"wide": {"figures": {"1.1": {"p95_ms": 7.9}, "1.2": {"p95_ms": 8.1},
                                 "1.3": {"p95_ms": None}}},
            "high": {"figures": {"1.1": {"p95_ms": 9.0}, "1.2": {"p95_ms": 5.0},
                                 "1.3": {"p95_ms": 1.0}}}}
    fastest = 2 * latency.BUDGET_REFERENCE_MS  # a machine at half the speed: p95 x 0.5
    latency.print_scaled_verdict(runs, {"wide": 4.0, "high": 4.0}, fastest)
    lines = capsys.readouterr().out.strip().splitlines()
    assert "p95 x 0.50" in lines[0]
    assert lines[1:] == ["  wide: 1.2 4.05", "  high: 1.1 4.50"]
