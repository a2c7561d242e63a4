"""Lesson 7: the collectives simulator, the alpha-beta cost model and figures 7.1-7.4."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.data.hardware import gpu_choices
from gpuviz.models import alpha_beta as ab
from gpuviz.models import collective_sim as cs
from gpuviz.models.collectives import (
    AlphaBetaModel,
    CollectiveStepsModel,
    MultiNodeModel,
    RingAllReduceModel,
)

PS = range(2, 17)


def _cases():
    for collective in cs.COLLECTIVES:
        for algorithm in cs.ALGORITHMS[collective]:
            for p in PS:
                per_node = [g for g in range(1, p + 1) if p % g == 0] if (
                    algorithm == "hierarchical") else [0]
                for g in per_node:
                    if cs.supports(collective, algorithm, p, g):
                        yield collective, algorithm, p, g


CASES = list(_cases())


# --- the simulator ----------------------------------------------------------------------
def test_every_algorithm_is_simulated_for_p_2_to_16():
    seen = {(c, a) for c, a, _, _ in CASES}
    assert seen == {(c, a) for c in cs.COLLECTIVES for a in cs.ALGORITHMS[c]}
    for collective, algorithm, _, _ in CASES:  # the power-of-two-only ones are marked
        if (collective, algorithm) in (("reduce_scatter", "recursive_doubling"),
                                       ("all_gather", "recursive_doubling")):
            assert not cs.supports(collective, algorithm, 6)
    assert all(cs.supports(c, a, p) for c, a in seen - {
        ("reduce_scatter", "recursive_doubling"), ("all_gather", "recursive_doubling"),
        ("all_reduce", "hierarchical")} for p in PS)


@pytest.mark.parametrize(("collective", "algorithm", "p", "g"), CASES)
def test_end_state_is_the_definition_on_random_numbers(collective, algorithm, p, g):
    sched = cs.schedule(collective, algorithm, p, gpus_per_node=g)
    data = np.random.default_rng(p * 100 + g).normal(size=(p, sched.chunks))
    end = cs.simulate(sched, data)[-1]
    values, mask = cs.expected_final(collective, data)
    np.testing.assert_allclose(end.values[mask], values[mask], rtol=1e-12, atol=1e-12)
    holds = cs.expected_holds(collective, p, sched.chunks)
    assert (end.holds[mask] == holds[mask]).all()
    if collective == "all_reduce":
        np.testing.assert_allclose(end.values, np.tile(data.sum(axis=0), (p, 1)))
    if collective == "all_to_all":
        np.testing.assert_allclose(end.values, data.T)


@pytest.mark.parametrize(("collective", "algorithm", "p", "g"),
                         [c for c in CASES if c[1] != "hierarchical"])
def test_steps_and_bytes_equal_the_cost_model(collective, algorithm, p, g):
    sched = cs.schedule(collective, algorithm, p)
    cost = ab.collective_cost(collective, algorithm, p, sched.chunks)
    assert sched.step_count() == cost.steps
    n = 1e9
    assert sched.critical_bytes(n) == pytest.approx(cost.volume * n)
    alpha, beta = 3e-6, 1 / 50e9
    assert sched.time(n, {cs.INTRA: (alpha, beta)}) == pytest.approx(
        cost.time(n, alpha, beta))


@pytest.mark.parametrize("p", PS)
def test_mpich_formulas_for_every_p(p):
    q = cs.floor_power_of_two(p)
    lg = int(math.log2(q))
    extra = 0 if p == q else 2
    assert ab.recursive_doubling_cost(p) == ab.Cost(lg + extra, lg + extra)
    assert ab.rabenseifner_cost(p) == ab.Cost(2 * lg + extra, 2 * (q - 1) / q + extra)
    assert ab.ring_allreduce_cost(p) == ab.Cost(2 * (p - 1), 2 * (p - 1) / p)


@pytest.mark.parametrize(("p", "g"), [(p, g) for p in range(2, 33) for g in (1, 2, 4, 8)
                                      if p % g == 0])
def test_hierarchical_and_flat_schedules_cost_what_the_model_says(p, g):
    intra, inter = ab.nvlink(), ab.network()
    links = {cs.INTRA: (intra.alpha, intra.beta), cs.INTER: (inter.alpha, inter.beta)}
    n, nodes = 1e9, p // g
    sched = cs.schedule("all_reduce", "hierarchical", p, gpus_per_node=g)
    model = ab.hierarchical_allreduce(n, nodes, g, intra, inter)
    assert sched.step_count() == sum(ph.steps for ph in model.phases)
    assert sched.time(n, links) == pytest.approx(model.total)
    flat = cs.schedule("all_reduce", "ring", p, gpus_per_node=g)
    assert flat.time(n, links) == pytest.approx(
        ab.flat_ring_allreduce(n, nodes, g, intra, inter).total)


@pytest.mark.parametrize("p", PS)
def test_ring_sends_2_p_minus_1_over_p_n_from_every_gpu_and_fills_the_diagonal(p):
    sched = cs.schedule("all_reduce", "ring", p)
    assert sched.step_count() == 2 * (p - 1)
    np.testing.assert_allclose(sched.bytes_per_rank(1e9), 2 * (p - 1) / p * 1e9)
    for s, step in enumerate(sched.steps[:p - 1]):  # GPU i sends chunk (i - s - 1) mod P
        assert {(t.src, t.src_slot) for t in step.transfers} == {
            (i, (i - s - 1) % p) for i in range(p)}
    states = cs.simulate(sched, np.ones((p, p)))
    counts = states[p - 1].counts()
    assert (np.diag(counts) == p).all()
    assert (counts == p).sum() == p  # only the diagonal is full after the reduce-scatter


def test_labels_come_from_the_simulation():
    holds = np.zeros((4, 4), dtype=bool)
    holds[[0, 1, 3], 2] = True
    assert cs.cell_label(holds) == "ABD₂"
    holds[2, 2] = True
    assert cs.cell_label(holds) == "Σ₂"
    sched = cs.schedule("all_reduce", "ring", 4)
    for state in cs.simulate(sched, np.ones((4, 4))):
        for r in range(4):
            for s in range(4):
                label = cs.cell_label(state.holds[r, s])
                assert label == "Σ" + cs.chunk_label(s) or len(label) - 1 == (
                    state.counts()[r, s])


def test_all_to_all_ends_as_the_transpose():
    model = CollectiveStepsModel()
    model.collective = "all_to_all"
    start = model.out.labels
    model.finish()
    end = model.out.labels
    assert end == [list(row) for row in zip(*start, strict=True)]
    assert end[1] == ["A₁", "B₁", "C₁", "D₁"]  # GPU B holds chunk 1 of every GPU


def test_collective_stepper_defaults_and_readouts():
    model = CollectiveStepsModel()
    assert model.total_steps == 6
    assert model.out.labels[0] == ["A₀", "A₁", "A₂", "A₃"]
    model.step()
    assert model.out.arrived.sum() == 4
    model.finish()
    assert all(label.startswith("Σ") for row in model.out.labels for label in row)
    assert model.readouts()["matches"].value is True
    assert model.readouts()["matches"].text.startswith("yes")
    model.algorithm = "rabenseifner"
    assert model.steps_done == 0 and model.total_steps == 4  # 2 log2 4
    model.collective = "broadcast"  # Rabenseifner does not apply: the ring runs
    assert model.out.algorithm == "ring"
    assert "fallback" in model.readouts()["algorithm"].text


# --- figure 7.2 -------------------------------------------------------------------------
def test_ring_figure_worked_example_p4_1gb():
    model = RingAllReduceModel()
    assert model.total_steps == 6
    for _ in range(3):
        model.step()
    out = model.out
    assert (np.diag(out.counts) == 4).all()
    assert out.counts.tolist() == [[4, 3, 2, 1], [1, 4, 3, 2], [2, 1, 4, 3], [3, 2, 1, 4]]
    assert out.chunk_bytes == 250e6 and out.sent_bytes == 750e6
    assert out.total_bytes == pytest.approx(1.5e9) == out.formula_bytes
    assert out.sending.sum() == 4 and out.arrived.sum() == 4
    model.finish()
    assert (model.out.counts == 4).all()


@given(p=st.integers(2, 16), n=st.floats(1e6, 1e10), steps=st.integers(0, 40),
       key=st.sampled_from([k for k, _ in gpu_choices()]))
@settings(max_examples=60, deadline=None)
def test_ring_figure_sweep(p, n, steps, key):
    model = RingAllReduceModel()
    with model.batch():
        model.gpus, model.message_bytes, model.gpu = p, n, key
    for _ in range(steps):
        model.step_once()
    out = model.out
    assert out.steps == min(steps, 2 * (p - 1))
    assert (out.counts >= 1).all() and (out.counts <= p).all()
    assert out.total_bytes == pytest.approx(2 * (p - 1) / p * n)
    assert math.isfinite(out.time) and out.time > 0
    assert all(r.text for r in model.readouts().values())


# --- figure 7.3 -------------------------------------------------------------------------
def test_crossovers_for_p8_in_units_of_alpha_over_beta():
    rd, rab, ring = (ab.allreduce_cost(a, 8) for a in
                     ("recursive_doubling", "rabenseifner", "ring"))
    assert ab.crossover(rd, rab, 1.0, 1.0) == pytest.approx(2.4)
    assert ab.crossover(ring, rd, 1.0, 1.0) == pytest.approx(8.8)
    assert ab.crossover(ring, rab, 1.0, 1.0) is None  # same bandwidth term


@pytest.mark.parametrize("p", [2, 4, 8, 16, 32, 64])
def test_for_a_power_of_two_the_ring_never_beats_rabenseifner(p):
    n = np.geomspace(1, 1e11, 200)
    assert (ab.allreduce_time("ring", p, n, 1e-5, 1 / 50e9)
            >= ab.allreduce_time("rabenseifner", p, n, 1e-5, 1 / 50e9)).all()


@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 24, 48])
def test_for_other_p_the_ring_wins_large_messages(p):
    big = 1e10
    assert ab.allreduce_time("ring", p, big, 1e-5, 1 / 50e9) < min(
        ab.allreduce_time(a, p, big, 1e-5, 1 / 50e9)
        for a in ("recursive_doubling", "rabenseifner"))


def test_alpha_beta_figure_defaults():
    model = AlphaBetaModel()
    out = model.out
    assert model.alpha_us == 10 and model.bandwidth_gbs == 50  # the network preset
    assert out.rd_rab == pytest.approx(2.4 * out.alpha / out.beta)
    assert [(a, b) for a, b, _ in out.crossovers] == [("recursive_doubling", "rabenseifner")]
    assert model.readouts()["rd_rab"].text == "press Reveal"
    assert model.readouts()["rd_rab"].hidden  # its value is there for --readout
    model.revealed = True
    assert model.readouts()["rd_rab"].value == pytest.approx(1.2)  # MB
    assert not model.readouts()["rd_rab"].hidden
    model.guess_bytes = 2e6
    assert not model.revealed
    model.link = "nvlink"
    assert (model.alpha_us, model.bandwidth_gbs) == (3, 450)
    model.message_bytes = 1e9
    assert model.out.winner == "rabenseifner"
    model.gpus = 6
    assert model.out.winner == "ring"


@given(p=st.integers(2, 64), alpha=st.floats(0.1, 100), bw=st.floats(1, 1000),
       n=st.floats(1, 1e10), guess=st.floats(1, 1e10))
@settings(max_examples=80, deadline=None)
def test_alpha_beta_figure_sweep(p, alpha, bw, n, guess):
    model = AlphaBetaModel()
    with model.batch():
        model.gpus, model.alpha_us, model.bandwidth_gbs = p, alpha, bw
        model.message_bytes, model.guess_bytes, model.revealed = n, guess, True
    out = model.out
    for times in out.times.values():
        assert np.isfinite(times).all() and (np.diff(times) >= 0).all()
    assert out.at_marker[out.winner] == min(out.at_marker.values())
    for a, b, cross in out.crossovers:
        ta = out.costs[a].time(cross, out.alpha, out.beta)
        assert ta == pytest.approx(out.costs[b].time(cross, out.alpha, out.beta))
    if out.power_of_two:
        assert out.at_marker["ring"] >= out.at_marker["rabenseifner"] * (1 - 1e-12)
    assert model.answer_text()
    assert all(r.text for r in model.readouts().values())


# --- figure 7.4 -------------------------------------------------------------------------
def test_bus_bandwidth_factors_of_nccl_tests():
    assert ab.bus_bandwidth("all_reduce", 8, 1e9, 1e-2) == pytest.approx(1e11 * 14 / 8)
    assert ab.bus_bandwidth("all_gather", 8, 1e9, 1e-2) == pytest.approx(1e11 * 7 / 8)
    assert ab.bus_bandwidth("reduce_scatter", 4, 1e9, 1e-2) == pytest.approx(1e11 * 3 / 4)
    assert ab.bus_bandwidth("broadcast", 4, 1e9, 1e-2) == pytest.approx(1e11)


def test_four_nodes_one_gb_hierarchical_and_flat():
    intra, inter = ab.nvlink(), ab.network()
    assert (intra.bandwidth, inter.bandwidth) == (450e9, 50e9)
    assert (intra.alpha, inter.alpha) == pytest.approx((3e-6, 10e-6))
    hier = ab.hierarchical_allreduce(1e9, 4, 8, intra, inter)
    assert [ph.time * 1e3 for ph in hier.phases] == pytest.approx([1.965, 3.810, 1.965],
                                                                  abs=5e-4)
    assert hier.bus_bandwidth(1e9, 32) / 1e9 == pytest.approx(250.3, abs=0.05)
    bare = ab.hierarchical_allreduce(1e9, 4, 8, intra, inter, latency=False)
    assert bare.bus_bandwidth(1e9, 32) / 1e9 == pytest.approx(253.6, abs=0.05)
    flat = ab.flat_ring_allreduce(1e9, 4, 8, intra, inter)
    assert flat.bus_bandwidth(1e9, 32) / 1e9 == pytest.approx(49.2, abs=0.05)
    assert ab.network_lower_bound(1e9, 4, 8, inter) == pytest.approx(3.75e-3)


def test_multi_node_figure_shows_the_latency_numbers_by_default():
    model = MultiNodeModel()
    rows = model.readouts()
    assert rows["busbw"].value == pytest.approx(250.3, abs=0.05)
    assert rows["other"].value == pytest.approx(49.2, abs=0.05)
    assert rows["nic"].value == 50
    model.latency = False
    assert model.readouts()["busbw"].value == pytest.approx(253.6, abs=0.05)
    model.scheme = "flat"
    assert model.readouts()["busbw"].value == pytest.approx(50.0)


@given(nodes=st.integers(1, 32), g=st.integers(2, 8), n=st.floats(1e6, 1e10),
       latency=st.booleans(), key=st.sampled_from([k for k, _ in gpu_choices()]),
       scheme=st.sampled_from(["hierarchical", "flat"]))
@settings(max_examples=80, deadline=None)
def test_multi_node_sweep(nodes, g, n, latency, key, scheme):
    model = MultiNodeModel()
    with model.batch():
        model.nodes, model.gpus_per_node, model.message_bytes = nodes, g, n
        model.latency, model.gpu, model.scheme = latency, key, scheme
    out = model.out
    assert out.hierarchical.total <= out.flat.total * (1 + 1e-12)
    assert out.hierarchical.total > 0 and out.flat.total > 0
    assert np.isfinite(out.busbw_hierarchical).all() and np.isfinite(out.busbw_flat).all()
    if nodes > 1:  # the network phase can never beat the lower bound
        assert out.hierarchical.phases[1].time >= out.lower_bound * (1 - 1e-12)
    assert all(r.text for r in model.readouts().values())


@given(collective=st.sampled_from(cs.COLLECTIVES), p=st.integers(2, 8),
       algorithm=st.sampled_from(["ring", "recursive_doubling", "rabenseifner",
                                  "hierarchical"]), steps=st.integers(0, 30))
@settings(max_examples=80, deadline=None)
def test_collective_stepper_sweep(collective, p, algorithm, steps):
    model = CollectiveStepsModel()
    with model.batch():
        model.collective, model.gpus, model.algorithm = collective, p, algorithm
    for _ in range(steps):
        model.step_once()
    out = model.out
    assert out.steps == min(steps, out.total_steps)
    assert out.kinds.shape == (p, out.chunks)
    assert out.matches
    assert all(r.text for r in model.readouts().values())


def test_ring_figure_chunks_in_flight_follow_the_clock():
    model = RingAllReduceModel()
    model.set_playing(True)
    model.advance(1.5 * model.step_seconds)
    out = model.out
    assert out.steps == 1 and out.progress == pytest.approx(0.5)
    assert len(out.next_moves) == 4 and out.next_sending.sum() == 4
    model.step()  # Step lands the chunks: nothing is in flight
    assert model.out.progress == 0 and model.out.steps == 2
    model.advance(1e9)
    model.set_playing(True)
    model.advance(1e9)
    assert model.finished and model.out.progress == 0 and model.out.next_moves == ()


def test_cost_on_a_link_for_other_lessons():
    link = ab.nvlink()
    cost = ab.ring_allreduce_cost(4)
    assert cost.time_on(link, 1e9) == pytest.approx(6 * (3e-6 + 250e6 / 450e9))
    assert ab.collective_cost("all_gather", "ring", 8).time_on(ab.network(), 8e9) == (
        pytest.approx(7 * (10e-6 + 1e9 / 50e9)))


def test_ring_names_a_chunk_beside_its_arrow_only_where_the_rows_leave_room(qapp):
    """The arrows' chunk names lie in the gap between two rows: with 16 GPUs on a small
    screen that gap is thinner than the text, and the names (given by the columns' heads)
    are left out rather than drawn across the cells."""
    from gpuviz import catalog
    from tests import figure_driver as drive

    spec = next(spec for spec in catalog.all_figures() if spec.number == "7.2")
    page = drive.build_page(spec)
    try:
        page.model.go_to_step(3)
        drive.settle()
        shown = [label for label in page.view.arrow_labels if label.isVisible()]
        assert [label.toPlainText() for label in shown] == ["c1", "c2", "c3", "c0", "c0"]
        page.model.set("gpus", 16)
        page.model.go_to_step(3)
        page.resize(1280, 560)  # rows closer than the names are tall
        drive.settle()
        assert not any(label.isVisible() for label in page.view.arrow_labels)
        page.resize(1280, 1600)  # far apart again
        drive.settle()
        assert sum(label.isVisible() for label in page.view.arrow_labels) == 17
    finally:
        page.close()
