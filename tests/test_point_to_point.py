"""Point-to-point messages and the uneven all-to-all beside the alpha-beta collectives
(gpuviz.models.alpha_beta), for Lessons 9, 10 and 12."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gpuviz.models import alpha_beta as ab

ALPHA, BETA = 5e-6, 1 / 50e9


def test_named_messages_count_their_bytes():
    # Llama-2-7B sized: micro-batch 1 of 4,096 tokens, hidden 4,096, bf16: 32 MiB.
    acts = ab.pipeline_activations(1, 4096, 4096)
    assert acts.nbytes == 4096 * 4096 * 2 == 33_554_432
    assert acts.time(ALPHA, BETA) == pytest.approx(ALPHA + acts.nbytes * BETA)
    # A ring-attention block of 4,096 tokens, 8 KV heads of 128: K and V, 16 MiB.
    assert ab.ring_attention_kv(4096, 8, 128).nbytes == 2 * 4096 * 8 * 128 * 2
    # Llama-3-8B's KV cache of a 32,768-token prompt: 32 layers, 8 KV heads of 128, 4 GiB.
    kv = ab.kv_cache_transfer(32768, 32, 8, 128)
    assert kv.nbytes == 2 * 32 * 32768 * 8 * 128 * 2 == 4 * 2**30
    link = ab.network()
    assert kv.time_on(link) == pytest.approx(link.alpha + kv.nbytes / link.bandwidth)
    assert ab.P2P.time(kv.nbytes, ALPHA, BETA) == kv.time(ALPHA, BETA)


@pytest.mark.parametrize("p", range(2, 17))
def test_even_all_to_all_is_the_collective_cost(p):
    n = 64e6  # each rank's buffer; n / P to every rank
    even = ab.uneven_all_to_all(np.full((p, p), n / p))
    cost = ab.collective_cost("all_to_all", "pairwise", p)
    if p % 2 == 0:  # the pairwise swaps of an odd P rest one rank per round
        assert even.time(ALPHA, BETA) == pytest.approx(cost.time(n, ALPHA, BETA))
    assert even.rounds == cost.steps


def test_the_busiest_rank_sets_the_time():
    """Rank 2 receives from everyone (a popular expert): it sets the time, and a rank that
    sends a lot is as slow as one that receives a lot."""
    traffic = np.ones((4, 4))
    traffic[:, 2] = 10.0
    result = ab.uneven_all_to_all(traffic)
    assert result.received.tolist() == [3.0, 3.0, 30.0, 3.0]
    assert result.sent.tolist() == [12.0, 12.0, 3.0, 12.0]
    assert result.slowest(ALPHA, BETA) == 2
    assert result.time(ALPHA, BETA) == pytest.approx(3 * ALPHA + 30 * BETA)
    assert ab.uneven_all_to_all(traffic.T).time(ALPHA, BETA) == result.time(ALPHA, BETA)


@pytest.mark.parametrize("traffic", [np.ones((2, 3)), np.ones(4), -np.ones((2, 2)),
                                     np.full((2, 2), np.nan)])
def test_bad_traffic_is_refused(traffic):
    with pytest.raises(ValueError, match="traffic"):
        ab.uneven_all_to_all(traffic)


@given(arrays(float, st.tuples(st.integers(1, 12)).map(lambda s: (s[0], s[0])),
              elements=st.floats(0, 1e9)))
def test_uneven_all_to_all_invariants(traffic):
    """Never below the even all-to-all of the same total, never above every byte through
    one link; the diagonal never counts."""
    result = ab.uneven_all_to_all(traffic)
    p = len(traffic)
    t = result.time(ALPHA, BETA)
    assert np.isfinite(t) and t >= result.rounds * ALPHA
    moved = traffic[~np.eye(p, dtype=bool)].sum()  # not sum - trace: that cancels
    assert result.sent.sum() == pytest.approx(moved) == pytest.approx(result.received.sum())
    assert t >= result.rounds * ALPHA + moved / p * BETA * (1 - 1e-12)
    assert t <= result.rounds * ALPHA + moved * BETA * (1 + 1e-12)
    bumped = traffic + np.eye(p) * 1e9
    assert ab.uneven_all_to_all(bumped).time(ALPHA, BETA) == pytest.approx(t)
