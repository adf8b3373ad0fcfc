"""gpudl.sparsity and lab 08's references of it: 2:4 pruning along the reduction dimension, compression,
storage, sparse matmul (the references, ``gpudl_instructor.references.lab08``), and the course edition's
torch-backed tools (torch's pruning of a model, torch's CUTLASS conversion) against them."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from gpudl import sparsity as S
from gpudl_instructor.references import lab08 as R

CUDA = torch.cuda.is_available()


def test_pruning_keeps_the_two_largest_magnitudes_of_each_group_along_k():
    g = np.random.default_rng(0)
    a = g.standard_normal((7, 24))
    p = R.prune_2_4(a)
    for i, j in itertools.product(range(7), range(0, 24, 4)):
        group, kept = a[i, j:j + 4], p[i, j:j + 4]
        biggest = set(np.argsort(-np.abs(group))[:2])
        assert set(np.flatnonzero(kept)) == biggest
        assert np.array_equal(kept[list(biggest)], group[list(biggest)])
    assert S.is_2_4(p) and not S.is_2_4(a)
    square = g.standard_normal((8, 8))
    wrong_way = R.prune_2_4(square.T).T                      # groups along M instead of K
    assert not S.is_2_4(wrong_way) and S.is_2_4(wrong_way.T)


def test_ties_go_to_the_lower_index_and_negative_values_count_by_magnitude():
    a = np.array([[1.0, -1.0, 1.0, 0.5, -3.0, 2.0, -2.5, 0.0]])
    assert R.prune_2_4(a).tolist() == [[1.0, -1.0, 0.0, 0.0, -3.0, 0.0, -2.5, 0.0]]
    assert R.mask_2_4(np.zeros((1, 4))).tolist() == [[True, True, False, False]]


def test_compression_round_trip_and_metadata():
    g = np.random.default_rng(1)
    p = R.prune_2_4(g.standard_normal((5, 32)))
    sp = R.compress_2_4(p)
    assert sp.values.shape == sp.indices.shape == (5, 16) and sp.shape == (5, 32)
    assert sp.indices.dtype == np.uint8 and sp.indices.max() <= 3
    pairs = sp.indices.reshape(5, 8, 2)
    assert np.all(pairs[..., 0] < pairs[..., 1])             # two distinct positions, in order
    assert np.array_equal(R.decompress_2_4(sp.values, sp.indices), p)
    assert np.array_equal(S.unpack_metadata(S.pack_metadata(sp.indices)), sp.indices)
    assert S.pack_metadata(sp.indices).nbytes * 8 == sp.indices.size * 2      # 2 bits per kept value


def test_groups_with_fewer_than_two_nonzeros_store_zeros():
    a = np.array([[0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0]])
    sp = R.compress_2_4(a)
    assert sp.values.tolist() == [[0.0, 5.0, 0.0, 0.0]] and sp.indices.tolist() == [[0, 3, 0, 1]]
    with pytest.raises(ValueError, match="prune"):
        R.compress_2_4(np.ones((2, 8)))
    with pytest.raises(ValueError, match="multiple of 4"):
        R.prune_2_4(np.ones((2, 6)))


@pytest.mark.parametrize("bits, overhead, of_dense", [(16, 0.125, 0.5625), (8, 0.25, 0.625)])
def test_storage_figures_of_the_lecture(bits, overhead, of_dense):
    st = R.storage_2_4(128, 256, bits)
    assert st.overhead == overhead and st.fraction_of_dense == of_dense
    assert st.metadata_bits == 128 * 128 * 2 and st.dense_bits == 128 * 256 * bits


def test_sparse_matmul_is_the_dense_product_of_the_pruned_matrix():
    g = np.random.default_rng(2)
    a = R.prune_2_4(g.integers(-8, 8, (9, 40)).astype(np.float64))
    b = g.integers(-8, 8, (40, 7)).astype(np.float64)
    sp = R.compress_2_4(a)
    assert np.array_equal(R.sparse_matmul(sp.values, sp.indices, b), a @ b)       # integers: exact
    a = R.prune_2_4(g.standard_normal((16, 64)))
    b = g.standard_normal((64, 8))
    sp = R.compress_2_4(a)
    assert np.allclose(R.sparse_matmul(sp.values, sp.indices, b), a @ b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="B must be"):
        R.sparse_matmul(sp.values, sp.indices, b.T)


def test_pruning_a_model_and_keeping_it_pruned():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    masks = S.prune_model_2_4(model)
    assert set(masks) == {"0.weight", "2.weight"}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(32, 16)).pow(2).mean()
    loss.backward()
    opt.step()
    assert not S.is_2_4(model[0].weight.detach().numpy())                # the update refilled the zeros ...
    S.apply_masks(model, masks)
    for layer in (model[0], model[2]):                                   # ... the masks put the pattern back
        assert S.is_2_4(layer.weight.detach().numpy())
        assert np.count_nonzero(layer.weight.detach().numpy()) == layer.weight.numel() // 2


def test_torchs_pruning_of_a_model_is_the_reference_mask():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 6), torch.nn.Linear(6, 2))
    before = {name: p.detach().clone().numpy() for name, p in model.named_parameters()}
    masks = S.prune_model_2_4(model)
    assert set(masks) == {"0.weight", "2.weight"}                         # in_features 6 is no multiple of 4
    for name, mask in masks.items():
        assert np.array_equal(mask.numpy(), R.mask_2_4(before[name]))
        assert np.array_equal(dict(model.named_parameters())[name].detach().numpy(), R.prune_2_4(before[name]))
    assert not hasattr(model[0], "parametrizations")                      # plain weights again
    layer = torch.nn.Linear(8, 2)
    assert set(S.prune_model_2_4(layer)) == {"weight"} and S.is_2_4(layer.weight.detach().numpy())


@pytest.mark.parametrize("bits, dtype", [(16, torch.float16), (16, torch.bfloat16), (8, torch.int8)])
def test_torchs_cutlass_compression_costs_what_the_reference_counts(bits, dtype):
    g = np.random.default_rng(4)
    dense = R.prune_2_4(g.standard_normal((64, 128)) * 50)
    a = torch.from_numpy(dense).round().to(dtype) if dtype == torch.int8 else torch.from_numpy(dense).to(dtype)
    values, metadata = S.compress_cutlass(a)
    assert torch.equal(S.decompress_cutlass(values, metadata), a)
    st = R.storage_2_4(64, 128, bits)
    assert values.numel() * bits == st.value_bits and metadata.nbytes * 8 == st.metadata_bits
    assert metadata.nbytes / values.nbytes == st.overhead


def test_semi_structured_says_why_not_on_a_cpu():
    t, why = S.semi_structured(torch.zeros(64, 64))
    assert t is None and "CUDA" in why


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (sparse tensor cores)")
def test_semi_structured_matmul_equals_the_dense_product():
    g = np.random.default_rng(3)
    a = torch.from_numpy(R.prune_2_4(g.standard_normal((128, 256)))).half().cuda()
    b = torch.randn(256, 64, device="cuda", dtype=torch.float16)
    sparse, why = S.semi_structured(a)
    if sparse is None:
        pytest.skip(f"2:4 semi-structured sparsity unsupported here: {why}")
    got = torch.mm(sparse, b).float()
    want = a.float() @ b.float()
    assert torch.allclose(got, want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
