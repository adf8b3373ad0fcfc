"""Layouts: (shape, stride) maps coordinates to offsets the way cuDNN and torch do.

The course edition's ``gpudl.layout`` (``Layout``, ``format_of``, ``layout_of``, ``is_view``) and lab 05's
references for strides, offsets and conversions (``gpudl_instructor.references.lab05``)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from gpudl import layout as L
from gpudl_instructor.references import lab05 as R

dims4 = st.tuples(*[st.integers(1, 5)] * 4)
dims5 = st.tuples(*[st.integers(1, 4)] * 5)


# --- the seed's table ----------------------------------------------------------------------

def test_the_seeds_nchw_example():
    # seed 004, N=1 C=64 H=5 W=4 in NCHW: c=0 holds 0..19, c=1 starts at 20, c=32 at 640, c=63 ends at 1279
    lay = R.format_layout((1, 64, 5, 4), "NCHW")

    def at(*coord):
        return R.offset(coord, lay.stride)

    assert at(0, 0, 0, 0) == 0 and at(0, 0, 4, 3) == 19
    assert at(0, 1, 0, 0) == 20
    assert at(0, 1, 1, 0) == 24            # second row of c=1: 24 25 26 27
    assert at(0, 31, 4, 3) == 639
    assert at(0, 32, 0, 0) == 640
    assert at(0, 62, 0, 0) == 1240
    assert at(0, 63, 4, 3) == 1279
    assert lay.cosize == lay.size == 1280
    table = R.offsets(lay)[0]               # the seed's figure: one 5x4 block per channel
    assert table[2].tolist() == [[40, 41, 42, 43], [44, 45, 46, 47], [48, 49, 50, 51], [52, 53, 54, 55], [56, 57, 58, 59]]
    assert table[30, 0].tolist() == [600, 601, 602, 603]


def test_the_seeds_example_in_nhwc_and_chwn():
    nhwc = R.format_layout((1, 64, 5, 4), "NHWC")
    assert nhwc.stride == (1280, 1, 256, 64)
    assert [R.offset((0, c, 0, 0), nhwc.stride) for c in range(3)] == [0, 1, 2]   # channels of a pixel side by side
    assert R.offset((0, 0, 0, 1), nhwc.stride) == 64 and R.offset((0, 63, 4, 3), nhwc.stride) == 1279
    chwn = R.format_layout((2, 3, 5, 4), "CHWN")
    assert chwn.stride == (1, 40, 8, 2)                                # N fastest, C slowest


# --- invariants for every index ---------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(dims=dims4, fmt=st.sampled_from(["NCHW", "NHWC", "CHWN", "NWHC", "WHCN"]))
def test_offset_is_the_dot_product_and_matches_memory(dims, fmt):
    lay = R.format_layout(dims, fmt)
    memory = np.arange(lay.size)
    # a tensor over that memory with these strides holds, at each coordinate, its offset
    viewed = np.lib.stride_tricks.as_strided(memory, dims, [d * memory.itemsize for d in lay.stride])
    offs = R.offsets(lay)
    for coord in itertools.product(*map(range, dims)):
        assert R.offset(coord, lay.stride) == sum(i * d for i, d in zip(coord, lay.stride)) == viewed[coord] \
            == offs[coord]
    assert lay.is_compact()
    assert sorted(offs.ravel().tolist()) == list(range(lay.size))        # a bijection onto 0..size-1
    for off in range(lay.size):
        assert R.offset(R.coordinate(lay, off), lay.stride) == off


@settings(max_examples=60, deadline=None)
@given(dims=dims4)
def test_format_strides_match_torch(dims):
    t = torch.empty(dims)
    assert R.format_strides(dims, "NCHW") == t.stride() == R.row_major_strides(dims)
    # torch.empty computes a format's strides afresh (.contiguous() keeps a tensor whose
    # size-1 dims make it already "channels_last", whatever their strides)
    assert R.format_strides(dims, "NHWC") == torch.empty(dims, memory_format=torch.channels_last).stride()
    if min(dims) > 1:
        assert R.format_strides(dims, "NHWC") == t.contiguous(memory_format=torch.channels_last).stride()


@settings(max_examples=40, deadline=None)
@given(dims=dims5)
def test_5d_formats_match_torch(dims):
    t = torch.empty(dims)
    assert R.format_strides(dims, "NCDHW") == t.stride()
    assert R.format_strides(dims, "NDHWC") == torch.empty(dims, memory_format=torch.channels_last_3d).stride()
    cdhwn = R.format_strides(dims, "CDHWN")
    assert cdhwn[0] == 1 and cdhwn[1] == dims[2] * dims[3] * dims[4] * dims[0]


@settings(max_examples=40, deadline=None)
@given(dims=st.tuples(*[st.integers(2, 5)] * 4), order=st.permutations(range(4)))
def test_any_permutation_matches_permute_contiguous(dims, order):
    # storing the dims in `order` is what torch does for permute(order).contiguous() seen back in logical order
    t = torch.empty(dims).permute(*order).contiguous().permute(*np.argsort(order))
    assert R.permutation_strides(dims, order) == t.stride()
    letters = "".join("NCHW"[i] for i in order)
    assert R.format_strides(dims, letters) == t.stride()
    assert L.format_of(R.permutation_strides(dims, order), dims) == letters


def test_format_of_breaks_ties_in_logical_order():
    # with C=1 an NHWC tensor's strides are NCHW's: torch calls it contiguous too
    assert L.format_of(R.format_layout((2, 1, 3, 3), "NHWC")) == "NCHW"
    assert L.format_of(R.format_layout((2, 4, 3, 3), "NHWC")) == "NHWC"


# --- views and copies -------------------------------------------------------------------------

def test_permute_is_a_view_and_keeps_offsets():
    x = torch.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    v = x.permute(0, 2, 3, 1)
    assert L.is_view(v, x)
    assert not v.is_contiguous()
    assert L.layout_of(v) == L.layout_of(x).permute(0, 2, 3, 1)
    lay = L.layout_of(x).permute(0, 2, 3, 1)
    for coord in itertools.product(*map(range, v.shape)):
        assert v[coord].item() == R.offset(coord, lay.stride)     # values are offsets: a view moves nothing


def test_nchw_nhwc_conversions_match_torch_and_copy():
    x = torch.randn(2, 3, 4, 5)
    y = R.nchw_to_nhwc(x)
    assert torch.equal(y, x.permute(0, 2, 3, 1)) and y.is_contiguous() and not L.is_view(y, x)
    assert torch.equal(R.nhwc_to_nchw(y), x) and R.nhwc_to_nchw(y).is_contiguous()
    a = x.numpy()
    assert np.array_equal(R.nchw_to_nhwc(a), a.transpose(0, 2, 3, 1)) and R.nchw_to_nhwc(a).flags.c_contiguous
    # the same memory as torch's channels_last, read in order
    cl = x.contiguous(memory_format=torch.channels_last)
    assert torch.equal(torch.as_strided(cl, (cl.numel(),), (1,)), y.reshape(-1))


def test_convert_and_to_format():
    x = torch.randn(2, 3, 4, 5)
    chwn = R.convert(x, "NCHW", "CHWN")
    assert torch.equal(chwn, x.permute(1, 2, 3, 0)) and chwn.is_contiguous()
    assert torch.equal(R.convert(chwn, "CHWN", "NCHW"), x)
    cl = R.to_format(x, "NHWC")
    assert torch.equal(cl, x) and cl.stride() == x.contiguous(memory_format=torch.channels_last).stride()
    assert R.to_format(cl, "NHWC") is cl                 # already there: no copy
    x5 = torch.randn(2, 3, 2, 4, 5)
    assert R.to_format(x5, "NDHWC").stride() == x5.contiguous(memory_format=torch.channels_last_3d).stride()


def test_flatten_order_depends_on_the_layout():
    # seed 004's NHWC CNN: the 1x2x2x2 pooled tensor flattens to [9 9 9 9 7 1 6 0], channel by channel
    qc = np.array([[[[9, 7], [9, 1]], [[9, 6], [9, 0]]]])        # (N, H, W, C) as the seed prints it
    assert R.nhwc_to_nchw(qc).reshape(1, -1).tolist() == [[9, 9, 9, 9, 7, 1, 6, 0]]
    assert qc.reshape(1, -1).tolist() == [[9, 7, 9, 1, 9, 6, 9, 0]]   # row-major NHWC would interleave


# --- overlap, compactness, errors -------------------------------------------------------------

def test_overlap_and_gaps():
    assert not L.Layout((3, 4), (1, 1)).is_non_overlapping()      # (0, 1) and (1, 0) share offset 1
    assert L.Layout((3, 4), (8, 1)).is_non_overlapping()          # padded rows: no overlap ...
    assert not L.Layout((3, 4), (8, 1)).is_compact()              # ... but gaps
    assert L.Layout((3, 4), (0, 1)).cosize == 4                   # a broadcast (stride 0) dim
    exhaustive = R.offsets(L.Layout((3, 4), (1, 1))).ravel()
    assert len(set(exhaustive.tolist())) < exhaustive.size


@pytest.mark.parametrize("args, match", [
    (((2, 3), (1,)), "one stride per dim"),
    (((2, 0), (1, 1)), "at least 1"),
    (((2, 3), (3, -1)), "negative"),
    (((2.0, 3), (3, 1)), "integers"),
])
def test_bad_layouts_say_why(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        L.Layout(*args)


def test_bad_formats_and_coordinates_say_why():
    with pytest.raises(ValueError, match="5-D formats add D"):
        R.format_strides((1, 2, 3, 4, 5), "NHWC")
    with pytest.raises(ValueError, match="not an ordering"):
        R.format_strides((1, 2, 3, 4), "NHWX")
    with pytest.raises(IndexError, match="outside"):
        R.coordinate(R.format_layout((1, 64, 5, 4), "NCHW"), 1280)
    with pytest.raises(ValueError, match="4-D NCHW"):
        R.nchw_to_nhwc(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="not compact"):
        R.coordinate(L.Layout((3, 4), (8, 1)), 5)
