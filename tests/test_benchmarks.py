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


def test_the_median_verdict_judges_each_figure_by_the_median_of_its_passes(
        latency, capsys) -> None:  # noqa: ANN001
    def run(p95s: dict[str, float | None]) -> dict:
        return {"wide": {"figures": {number: {"p95_ms": p95}
                                     for number, p95 in p95s.items()}}}
    # 1.1 over budget in one pass of three (a slow minute of the host), 1.2 in two.
    passes = [run({"1.1": 9.0, "1.2": 9.0, "1.3": None}),
              run({"1.1": 3.0, "1.2": 8.5, "1.3": None}),
              run({"1.1": 3.5, "1.2": 3.0, "1.3": None})]
    fastest = 2 * latency.BUDGET_REFERENCE_MS  # p95 x 0.5
    latency.print_median_verdict(passes, {"wide": 4.0}, fastest)
    lines = capsys.readouterr().out.strip().splitlines()
    assert "median (highest) of 3 passes" in lines[0] and "p95 x 0.50" in lines[0]
    rows = {line.split()[0]: line.split(maxsplit=1)[1] for line in lines[2:5]}
    assert rows == {"1.1": "1.75 (4.50)", "1.2": "4.25 (4.50)", "1.3": "-"}
    assert lines[-2:] == ["median over budget:", "  wide: 1.2 4.25"]
