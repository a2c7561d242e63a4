"""Figure 10.4 (Ulysses): the all-to-all between token and head sharding."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuviz.models.sequence_expert.ulysses import (
    HEAD_DIM,
    HEADS,
    KV_HEADS,
    RANKS,
    ROWS,
    UlyssesModel,
    all_to_all_sent,
    head_owner,
    sequence_owner,
    shard_bytes,
)


@pytest.mark.parametrize("ranks", RANKS)
def test_each_rank_sends_all_but_its_own_share_of_the_shard(ranks):
    shard = shard_bytes(65536, ranks)
    assert shard == 65536 * HEADS * HEAD_DIM * 2 / ranks
    np.testing.assert_allclose(all_to_all_sent(shard, ranks), (ranks - 1) / ranks * shard)


@pytest.mark.parametrize("ranks", RANKS)
def test_both_shardings_give_every_rank_an_equal_part(ranks):
    for owner in (sequence_owner(ranks), head_owner(ranks)):
        assert np.bincount(owner.ravel()).tolist() == [ROWS * HEADS // ranks] * ranks
    moved = sequence_owner(ranks) != head_owner(ranks)
    assert moved.sum() == ROWS * HEADS * (ranks - 1) // ranks


def test_defaults_and_the_switch():
    model = UlyssesModel()
    r = model.readouts()
    assert r["shard"].text == "33.6 MB" and r["sent"].text == "25.2 MB"
    assert r["sent_share"].value == 75.0
    assert (r["moved"].value, r["moved"].total) == (96, 128)
    assert model.out.owner[0].tolist() == [0] * HEADS
    model.set("sharding", "heads")
    assert model.out.owner[0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_fewer_kv_heads_than_ranks_warns():
    model = UlyssesModel()
    assert not model.out.warning and model.readouts()["kv_split"].value
    model.set("kv_heads", "2")
    assert "Only 2 K/V heads for 4 ranks" in model.out.warning
    assert model.readouts()["kv_split"].value is False
    model.set("ranks", "2")
    assert not model.out.warning


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([str(p) for p in RANKS]), st.sampled_from([str(k) for k in KV_HEADS]),
       st.integers(0, 7), st.integers(4096, 1048576), st.sampled_from(["sequence", "heads"]))
def test_sweep(ranks, kv, rank, tokens, sharding):
    model = UlyssesModel()
    for name, value in (("ranks", ranks), ("kv_heads", kv), ("rank", rank),
                        ("tokens", tokens), ("sharding", sharding)):
        model.set(name, value)
    out, p = model.out, int(ranks)
    assert 0 <= out.rank < p and out.owner.max() == p - 1
    assert np.all(np.isfinite(out.sent)) and np.all(out.sent < out.shard)
    assert bool(out.warning) == (int(kv) < p)
    for readout in model.readouts().values():
        assert readout.text
