"""Convolution: gpudl.conv's descriptors (the course edition), and lab 05's references
(``gpudl_instructor.references.lab05``): every forward algorithm against torch's conv2d, workspaces, find, backward."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings, strategies as st

from gpudl import bench, benchmarks, conv, layout
from gpudl.conv import descriptors
from gpudl.conv import Algo, ConvolutionDescriptor as CD, FilterDescriptor, Mode, Status, TensorDescriptor
from gpudl.grading import assert_close, tolerance
from gpudl_instructor.references import lab05 as R

MiB = 2**20


def torch_conv(x, w, cd: CD):
    """What every algorithm must compute, written with torch: CONVOLUTION mode is
    cross-correlation with the filter flipped in both spatial dims."""
    w = w.flip(-2, -1) if cd.mode is Mode.CONVOLUTION else w
    return F.conv2d(x, w, stride=cd.stride, padding=cd.pad, dilation=cd.dilation, groups=cd.groups)


@st.composite
def problems(draw, max_hw=9):
    groups = draw(st.integers(1, 3))
    cg, kg = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n = draw(st.integers(1, 2))
    h, w = draw(st.integers(1, max_hw)), draw(st.integers(1, max_hw))
    r, s = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    cd = CD(pad=(draw(st.integers(0, 2)), draw(st.integers(0, 2))),
            stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
            dilation=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
            mode=draw(st.sampled_from(list(Mode))), groups=groups)
    assume(h + 2 * cd.pad[0] >= (r - 1) * cd.dilation[0] + 1 and w + 2 * cd.pad[1] >= (s - 1) * cd.dilation[1] + 1)
    fmt = draw(st.sampled_from(["NCHW", "NHWC"]))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, groups * cg, h, w, generator=gen, dtype=torch.float64)
    wt = torch.randn(groups * kg, cg, r, s, generator=gen, dtype=torch.float64)
    return R.to_format(x, fmt), wt, cd


def winograd_case(fmt="NCHW", mode=Mode.CROSS_CORRELATION, groups=1, dtype=torch.float64, hw=(7, 6), pad=1):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 2 * groups, *hw, generator=gen, dtype=dtype)
    w = torch.randn(3 * groups, 2, 3, 3, generator=gen, dtype=dtype)
    return R.to_format(x, fmt), w, CD(pad=pad, mode=mode, groups=groups)


# --- descriptors -------------------------------------------------------------------------------

def test_tensor_descriptor_from_strides_and_tensor():
    d = TensorDescriptor("float32", (1, 64, 5, 4), R.format_strides((1, 64, 5, 4), "NHWC"))
    assert d.strides == (1280, 1, 256, 64) and d.format == "NHWC" and d.nbytes == 1280 * 4
    t = torch.empty(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert TensorDescriptor.from_tensor(t).format == "NHWC"
    assert TensorDescriptor.from_tensor(torch.empty(2, 3, 4, 5)).format == "NCHW"
    assert TensorDescriptor("fp16", (1, 2, 3)).strides == (6, 3, 1)              # 3-D, packed by default
    assert TensorDescriptor("fp32", (2, 3, 4, 5, 6)).strides == torch.empty(2, 3, 4, 5, 6).stride()
    t5 = torch.empty(1, 2, 3, 4, 5, memory_format=torch.channels_last_3d)
    assert TensorDescriptor.from_tensor(t5).format == "NDHWC"
    assert R.format_strides((1, 2, 3, 4, 5), "NDHWC") == t5.stride()


def test_the_course_edition_keeps_no_answer():
    # lab 05's answers (strides, offsets, conversions, output dims, the algorithms, workspaces, find) are the
    # instructor's; the course edition keeps the vocabulary
    for name in ("format_strides", "row_major_strides", "permutation_strides", "format_layout", "offset",
                 "nchw_to_nhwc", "nhwc_to_nchw", "convert", "to_format"):
        assert not hasattr(layout, name), name
    assert not callable(layout.Layout((2, 3), (3, 1)))
    for name in ("output_size", "output_dims", "im2col", "conv_forward", "conv_winograd", "winograd_1d",
                 "workspace_size", "find_algorithms", "WINOGRAD_BT", "conv_backward_data", "supported"):
        assert not hasattr(conv, name), name
    assert not hasattr(TensorDescriptor, "from_format") and not hasattr(FilterDescriptor, "strides")


@pytest.mark.parametrize("dims", [(4, 5), tuple(range(1, 10))])
def test_tensor_descriptor_needs_3_to_8_dims(dims):
    with pytest.raises(conv.ConvError, match="3 to 8 dims"):
        TensorDescriptor("fp32", dims)


def test_descriptors_reject_nonsense():
    with pytest.raises(conv.ConvError, match="one stride per dim"):
        TensorDescriptor("fp32", (1, 2, 3, 4), (24, 12, 4))
    with pytest.raises(conv.ConvError, match="KCRS or KRSC"):
        FilterDescriptor("fp32", "CHWN", 4, 3, 3, 3)
    with pytest.raises(conv.ConvError, match="positive"):
        FilterDescriptor("fp32", "NCHW", 4, 0, 3, 3)
    with pytest.raises(conv.ConvError, match="stride must be >= 1"):
        CD(stride=0)
    with pytest.raises(conv.ConvError, match="pad must be >= 0"):
        CD(pad=(1, -1))
    with pytest.raises(conv.ConvError, match="groups"):
        CD(groups=0)
    with pytest.raises(ValueError, match="unknown Mode"):
        CD(mode="FLIPPED")
    assert CD(pad=1, mode="convolution").pad == (1, 1) and CD(mode="convolution").mode is Mode.CONVOLUTION
    assert descriptors._algo("CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM") is Algo.IMPLICIT_GEMM
    assert descriptors._algo("im2col") is Algo.GEMM


def test_filter_descriptor_from_tensor():
    w = torch.empty(8, 3, 3, 3)
    assert FilterDescriptor.from_tensor(w).format == "NCHW"
    assert FilterDescriptor.from_tensor(w.contiguous(memory_format=torch.channels_last)).format == "NHWC"
    with pytest.raises(conv.ConvError, match="neither packed"):
        FilterDescriptor.from_tensor(w.transpose(0, 1))


# --- output dims -------------------------------------------------------------------------------

def test_output_size_formula():
    assert R.output_size(128, 3, 1, 1) == 128                 # the seed's "same" 3x3
    assert R.output_size(7, 3, 0, 2) == 3                     # the seed's NHWC CNN: 7x7 -> 3x3 with stride 2
    assert R.output_size(5, 3, 0, 1) == 3                     # the seed's 5x5 * 3x3 -> 3x3
    assert R.output_size(10, 3, 0, 1, dilation=2) == 6        # a dilated 3x3 spans 5
    with pytest.raises(conv.ConvError, match="output would be empty"):
        R.output_size(4, 3, 0, 1, dilation=3)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_output_dims_match_torch(problem):
    x, w, cd = problem
    got = R.output_dims(TensorDescriptor.from_tensor(x), FilterDescriptor.from_tensor(w), cd)
    assert got == tuple(torch_conv(x, w, cd).shape)


def test_impossible_configurations_say_why():
    x = TensorDescriptor("fp32", (1, 6, 8, 8))
    with pytest.raises(conv.ConvError, match="the filter's C is per group"):
        R.output_dims(x, FilterDescriptor("fp32", "NCHW", 4, 6, 3, 3), CD(groups=2))
    with pytest.raises(conv.ConvError, match="does not divide the input"):
        R.output_dims(x, FilterDescriptor("fp32", "NCHW", 4, 2, 3, 3), CD(groups=4))
    with pytest.raises(conv.ConvError, match="does not divide the filter"):
        R.output_dims(x, FilterDescriptor("fp32", "NCHW", 5, 3, 3, 3), CD(groups=2))
    with pytest.raises(conv.ConvError, match="input has C=6"):
        R.output_dims(x, FilterDescriptor("fp32", "NCHW", 4, 5, 3, 3), CD())
    with pytest.raises(conv.ConvError, match="output would be empty"):
        R.output_dims(x, FilterDescriptor("fp32", "NCHW", 4, 6, 11, 11), CD())
    with pytest.raises(conv.ConvError, match="fp16"):
        R.output_dims(x, FilterDescriptor("fp16", "NCHW", 4, 6, 3, 3), CD())
    with pytest.raises(conv.ConvError, match="4-D input"):
        R.output_dims(TensorDescriptor("fp32", (1, 6, 8)), FilterDescriptor("fp32", "NCHW", 4, 6, 3, 3), CD())


# --- every algorithm agrees with torch -----------------------------------------------------------

def _check(y, x, w, cd, name):
    expected = torch_conv(x, w, cd)
    assert_close(y, expected, dtype=y.dtype, k=w.shape[1] * w.shape[2] * w.shape[3] * 4, name=name)
    want = "NHWC" if R._is_nhwc(x) else "NCHW"
    if y.shape[1] > 1 and min(y.shape[2:]) > 1:
        assert layout.format_of(layout.layout_of(y)) == want, f"{name} returned the wrong memory format"


@settings(max_examples=60, deadline=None)
@given(problems())
def test_every_algorithm_matches_torch(problem):
    x, w, cd = problem
    x_desc, w_desc = TensorDescriptor.from_tensor(x), FilterDescriptor.from_tensor(w)
    for algo in Algo:
        status, reason = R.supported(algo, x_desc, w_desc, cd)
        if status is Status.NOT_SUPPORTED:
            with pytest.raises(conv.NotSupportedError):
                R.conv_forward(x, w, cd, algo)
            continue
        _check(R.conv_forward(x, w, cd, algo), x, w, cd, algo.value)


@settings(max_examples=25, deadline=None)
@given(problems(max_hw=7))
def test_the_one_kernel_implicit_gemm_matches_torch(problem):
    # the GPU's one-launch kernel, run by Triton's interpreter (every stride, pad, dilation, group, mode, format)
    x, w, cd = problem
    x, w = x.float(), w.float()
    _check(R._implicit_gemm_one_kernel(x, w, R._geometry(x, w, cd), cd), x, w, cd, "one-kernel implicit GEMM")


def test_the_one_kernel_implicit_gemm_in_fp16_with_more_channels_than_a_chunk():
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(1, 40, 6, 5, generator=gen)
    w = torch.randn(36, 40, 3, 3, generator=gen)
    cd = CD(pad=1)
    y = R._implicit_gemm_one_kernel(x.half(), w.half(), R._geometry(x, w, cd), cd)
    assert y.dtype == torch.float16
    rtol, atol = tolerance("fp16", 40 * 9)
    assert_close(y.float(), torch_conv(x, w, cd), rtol=rtol, atol=atol)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("hw", [(7, 6), (6, 6)])
def test_winograd_transform_kernels_match_the_gemm_transforms(fmt, hw, monkeypatch):
    # the GPU's elementwise transform kernels, run by Triton's interpreter, against the CPU's GEMM transforms
    x, w, cd = winograd_case(fmt, groups=2, dtype=torch.float32, hw=hw)
    expected = R.conv_winograd(x, w, cd)
    monkeypatch.setattr(R, "_use_kernels", lambda x: True)
    _check(R.conv_winograd(x, w, cd), x, w, cd, "winograd with its transform kernels")
    assert_close(R.conv_winograd(x, w, cd), expected, dtype=torch.float32, k=18)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("hw, pad", [((7, 6), 1), ((6, 6), 0), ((3, 3), 1), ((9, 4), 2)])
def test_winograd_on_its_own_cases(fmt, mode, groups, hw, pad):
    # odd and even output sizes: the last 2x2 tile is cropped
    x, w, cd = winograd_case(fmt, mode, groups, hw=hw, pad=pad)
    _check(R.conv_winograd(x, w, cd), x, w, cd, "winograd")


@pytest.mark.parametrize("algo", list(Algo))
def test_fp32_and_non_block_sizes(algo):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3, 5, 13, 11, generator=gen)
    w = torch.randn(7, 5, 3, 3, generator=gen)
    cd = CD(pad=1)
    _check(R.conv_forward(x, w, cd, algo), x, w, cd, algo.value)


@pytest.mark.parametrize("algo", list(Algo))
def test_inputs_that_are_strided_views(algo):
    # a slice of a bigger tensor: a storage offset, and strides that are no format's
    big = torch.randn(3, 7, 12, 11, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    x = big[1:, 2:6, 1:10, 2:]
    w = torch.randn(6, 2, 3, 3, dtype=torch.float64)
    cd = CD(pad=(1, 2), groups=2, dilation=(1, 2) if algo is not Algo.WINOGRAD else 1)
    _check(R.conv_forward(x, w, cd, algo), x, w, cd, algo.value)


@pytest.mark.parametrize("rs, stride, dilation", [((5, 5), 1, 1), ((3, 3), 2, 1), ((3, 3), 1, 2), ((1, 3), 1, 1)])
def test_winograd_reports_not_supported_rather_than_a_wrong_answer(rs, stride, dilation):
    x = torch.randn(1, 2, 9, 9)
    w = torch.randn(2, 2, *rs)
    cd = CD(pad=1, stride=stride, dilation=dilation)
    status, reason = R.supported(Algo.WINOGRAD, TensorDescriptor.from_tensor(x), FilterDescriptor.from_tensor(w), cd)
    assert status is Status.NOT_SUPPORTED and "Winograd" in reason
    with pytest.raises(conv.NotSupportedError, match="Winograd"):
        R.conv_forward(x, w, cd, Algo.WINOGRAD)
    with pytest.raises(conv.NotSupportedError):
        R.workspace_size(Algo.WINOGRAD, TensorDescriptor.from_tensor(x), FilterDescriptor.from_tensor(w), cd)


def test_fft_needs_stride_1():
    x, w = torch.randn(1, 2, 9, 9), torch.randn(2, 2, 3, 3)
    with pytest.raises(conv.NotSupportedError, match="stride 1"):
        R.conv_forward(x, w, CD(stride=2), Algo.FFT)


def test_the_seeds_5x5_example():
    # seed 004: a 5x5 input and a vertical-border 3x3 kernel; the highlighted output is 7
    x = torch.tensor([[3, 0, 1, 2, 7], [1, 5, 8, 9, 3], [2, 7, 2, 5, 1], [0, 1, 3, 1, 7], [4, 2, 1, 6, 2]],
                     dtype=torch.float64)
    k = torch.tensor([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=torch.float64)
    # the seed's sum: -1*1 + 0*4 + 1*6 - 2*5 + 0*3 + 2*8 - 1*6 + 0*7 + 1*2 = 7 for the window [[1,4,6],[5,3,8],[6,7,2]]
    window = torch.tensor([[1, 4, 6], [5, 3, 8], [6, 7, 2]], dtype=torch.float64)
    assert (window * k).sum().item() == 7
    for algo in Algo:
        y = R.conv_forward(window.view(1, 1, 3, 3), k.view(1, 1, 3, 3), CD(), algo)
        assert y.shape == (1, 1, 1, 1) and y.item() == pytest.approx(7)
    assert R.conv_forward(x.view(1, 1, 5, 5), k.view(1, 1, 3, 3), CD(), Algo.GEMM).shape == (1, 1, 3, 3)


# --- alpha, beta, given outputs, workspaces -------------------------------------------------------

def test_alpha_beta_blend():
    x, w, cd = winograd_case()
    ref = torch_conv(x, w, cd)
    prior = torch.randn_like(ref)
    for algo in (Algo.GEMM, Algo.IMPLICIT_GEMM, Algo.WINOGRAD):
        y = prior.clone()
        out = R.conv_forward(x, w, cd, algo, alpha=2.0, beta=0.5, y=y)
        assert out is y
        assert_close(y, 2.0 * ref + 0.5 * prior, name=algo.value)


def test_beta_zero_does_not_read_the_output():
    x, w, cd = winograd_case()
    y = torch.full(tuple(torch_conv(x, w, cd).shape), float("nan"), dtype=x.dtype)
    R.conv_forward(x, w, cd, Algo.GEMM, alpha=3.0, y=y)
    assert_close(y, 3.0 * torch_conv(x, w, cd))


def test_output_in_its_own_format_and_errors():
    x, w, cd = winograd_case("NCHW")
    ref = torch_conv(x, w, cd)
    y = torch.empty_like(ref).contiguous(memory_format=torch.channels_last)
    R.conv_forward(x, w, cd, Algo.GEMM, y=y)
    assert_close(y, ref)
    assert layout.format_of(layout.layout_of(y)) == "NHWC"
    with pytest.raises(conv.ConvError, match="pass it"):
        R.conv_forward(x, w, cd, beta=1.0)
    with pytest.raises(conv.ConvError, match="shape"):
        R.conv_forward(x, w, cd, y=torch.empty(1, 2, 3, 4, dtype=x.dtype))
    overlapping = torch.empty(1, dtype=x.dtype).expand(*ref.shape)
    with pytest.raises(conv.ConvError, match="overlap"):
        R.conv_forward(x, w, cd, y=overlapping)
    with pytest.raises(conv.ConvError, match="float32"):
        R.conv_forward(x, w.float(), cd)


def test_gemm_runs_in_a_callers_workspace():
    x, w, cd = winograd_case()
    need = R.workspace_size(Algo.GEMM, TensorDescriptor.from_tensor(x), FilterDescriptor.from_tensor(w), cd)
    ws = torch.full((need,), 255, dtype=torch.uint8)             # garbage in the workspace must not matter
    _check(R.conv_forward(x, w, cd, Algo.GEMM, workspace=ws), x, w, cd, "GEMM in a workspace")
    assert (ws != 255).any()                                      # it was used
    with pytest.raises(conv.ConvError, match="needs"):
        R.conv_forward(x, w, cd, Algo.GEMM, workspace=ws[:need - 1])


# --- workspace sizes ------------------------------------------------------------------------------

def _descs(n, c, hw, k, r, pad, dtype="fp32", stride=1, groups=1):
    return (TensorDescriptor(dtype, (n, c, hw, hw)), FilterDescriptor(dtype, "NCHW", k, c // groups, r, r),
            CD(pad=pad, stride=stride, groups=groups))


def test_the_seeds_gemm_workspaces():
    # seed 001: 128x128x128x128 FP32 NCHW: GEMM needs 72 MB with 3x3 filters, 968 MB with 11x11;
    # IMPLICIT_GEMM none; WINOGRAD is "Unsupported" for 11x11
    assert R.workspace_size(Algo.GEMM, *_descs(1, 128, 128, 128, 3, 1)) == 72 * MiB
    assert R.workspace_size(Algo.GEMM, *_descs(1, 128, 128, 128, 11, 5)) == 968 * MiB
    assert R.workspace_size(Algo.IMPLICIT_GEMM, *_descs(1, 128, 128, 128, 3, 1)) == 0
    assert R.supported(Algo.WINOGRAD, *_descs(1, 128, 128, 128, 11, 5))[0] is Status.NOT_SUPPORTED
    assert R.supported(Algo.WINOGRAD, *_descs(1, 128, 128, 128, 3, 1))[0] is Status.SUCCESS


@pytest.mark.parametrize("n, c, hw, k, r, pad, stride, groups", [(2, 4, 9, 6, 3, 1, 1, 1), (3, 6, 10, 4, 5, 0, 2, 2)])
def test_gemm_workspace_is_the_unfolded_input(n, c, hw, k, r, pad, stride, groups):
    x = torch.zeros(n, c, hw, hw, dtype=torch.float64)
    unfolded = F.unfold(x, r, padding=pad, stride=stride)
    got = R.workspace_size(Algo.GEMM, *_descs(n, c, hw, k, r, pad, "fp64", stride, groups))
    assert got == unfolded.numel() * 8


def test_winograd_and_fft_workspaces_count_their_buffers():
    x_d, w_d, cd = _descs(2, 4, 8, 6, 3, 1)
    tiles = 2 * 4 * 4                                     # N x ceil(8/2) x ceil(8/2)
    assert R.workspace_size(Algo.WINOGRAD, x_d, w_d, cd) == 16 * (4 * tiles + 6 * 4 + 6 * tiles) * 4
    assert R.workspace_size(Algo.FFT, x_d, w_d, cd) == (2 * 4 + 6 * 4 + 2 * 6) * 10 * 6 * 2 * 4
    assert R.workspace_size(Algo.DIRECT, x_d, w_d, cd) == 0


# --- im2col, col2im, Winograd pieces -----------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(problems())
def test_im2col_is_unfold_and_col2im_is_fold(problem):
    x, w, cd = problem
    r, s = w.shape[2:]
    kw = dict(kernel_size=(r, s), dilation=cd.dilation, padding=cd.pad, stride=cd.stride)
    cols = R.im2col(x, r, s, cd)
    assert torch.equal(cols, F.unfold(x, **kw))
    back = R.col2im(cols, tuple(x.shape), r, s, cd)
    assert_close(back, F.fold(cols, x.shape[2:], **kw))
    # adjoint: <im2col(x), c> == <x, col2im(c)>
    c = torch.randn_like(cols)
    lhs, rhs = (cols * c).sum().item(), (x * R.col2im(c, tuple(x.shape), r, s, cd)).sum().item()
    magnitude = (cols.abs() * c.abs()).sum().item()             # the sums may cancel: judge against their terms
    rtol, _ = tolerance("fp64", cols.numel())
    assert abs(lhs - rhs) <= rtol * max(magnitude, 1e-300)


def test_winograd_1d_is_a_3_tap_correlation():
    rng = np.random.default_rng(0)
    for _ in range(20):
        d, g = rng.standard_normal(4), rng.standard_normal(3)
        got = R.winograd_1d(torch.tensor(d), torch.tensor(g))
        assert_close(got, np.correlate(d, g, mode="valid"))
    bt, gm, at = (np.array(m) for m in (R.WINOGRAD_BT, R.WINOGRAD_G, R.WINOGRAD_AT))
    assert bt.shape == (4, 4) and gm.shape == (4, 3) and at.shape == (2, 4)      # 4 multiplies for 2 outputs


def test_winograd_2d_tile_by_the_formula():
    # one 4x4 tile, one 3x3 filter: Y = A^T [(G g G^T) * (B^T d B)] A equals the 2x2 valid correlation
    rng = np.random.default_rng(1)
    d, g = rng.standard_normal((4, 4)), rng.standard_normal((3, 3))
    bt, gm, at = (np.array(m) for m in (R.WINOGRAD_BT, R.WINOGRAD_G, R.WINOGRAD_AT))
    y = at @ ((gm @ g @ gm.T) * (bt @ d @ bt.T)) @ at.T
    expected = np.array([[np.sum(d[i:i + 3, j:j + 3] * g) for j in range(2)] for i in range(2)])
    assert_close(y, expected)
    got = R.conv_winograd(torch.tensor(d).view(1, 1, 4, 4), torch.tensor(g).view(1, 1, 3, 3), CD())
    assert_close(got[0, 0], expected)


# --- backward ----------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(problems(max_hw=7))
def test_backward_matches_autograd(problem):
    x, w, cd = problem
    xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    y = torch_conv(xg, wg, cd)
    dy = torch.randn_like(y)
    y.backward(dy)
    for algo in R.BACKWARD_ALGOS:
        dx = R.conv_backward_data(w, dy, cd, tuple(x.shape), algo)
        dw = R.conv_backward_filter(x, dy, cd, tuple(w.shape), algo)
        assert_close(dx, xg.grad, k=w.shape[0] * w.shape[2] * w.shape[3], name=f"{algo.value} dx")
        assert_close(dw, wg.grad, k=x.shape[0] * y.shape[2] * y.shape[3], name=f"{algo.value} dw")


def test_backward_by_central_differences():
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(1, 2, 4, 5, generator=gen, dtype=torch.float64)
    w = torch.randn(2, 1, 2, 3, generator=gen, dtype=torch.float64)
    cd = CD(pad=(1, 0), stride=(1, 2), mode=Mode.CONVOLUTION, groups=2)
    y, cache = R.forward(x, w, cd, Algo.DIRECT)
    dy = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    dx, dw = R.backward(dy, cache)

    def loss(xx, ww):
        return float((R.conv_direct(xx, ww, cd) * dy).sum())

    eps = 1e-6
    for tensor, grad, which in ((x, dx, 0), (w, dw, 1)):
        numeric = torch.zeros_like(tensor)
        for i in range(tensor.numel()):
            plus, minus = tensor.clone(), tensor.clone()
            plus.view(-1)[i] += eps
            minus.view(-1)[i] -= eps
            args_p = (plus, w) if which == 0 else (x, plus)
            args_m = (minus, w) if which == 0 else (x, minus)
            numeric.view(-1)[i] = (loss(*args_p) - loss(*args_m)) / (2 * eps)
        assert_close(grad, numeric, rtol=1e-6, atol=1e-6)


def test_backward_keeps_the_layout_and_refuses_fft():
    x, w, cd = winograd_case("NHWC")
    y, cache = R.forward(x, w, cd, Algo.WINOGRAD)
    dx, dw = R.backward(torch.ones_like(y), cache)          # Winograd has no backward: GEMM does it
    assert layout.format_of(layout.layout_of(dx)) == "NHWC" and dw.shape == w.shape
    with pytest.raises(conv.NotSupportedError, match="backward"):
        R.conv_backward_data(w, torch.ones_like(y), cd, tuple(x.shape), Algo.FFT)
    with pytest.raises(conv.ConvError, match="dy has shape"):
        R.conv_backward_filter(x, torch.ones(1, 1, 1, 1, dtype=x.dtype), cd, tuple(w.shape))


# --- find ---------------------------------------------------------------------------------------------

def _fake_timer(costs):
    """A timer whose times are known: it runs the work once (so it must work) and reports
    the cost of whichever algorithm ran."""
    def timer(fn, **_):
        calls = []
        original = dict(R.ALGORITHMS)
        try:
            for a, f in original.items():
                R.ALGORITHMS[a] = (lambda f, a: lambda *args, **kw: (calls.append(a), f(*args, **kw))[1])(f, a)
            fn()
        finally:
            R.ALGORITHMS.update(original)
        algo = calls[0] if calls else Algo.GEMM               # GEMM is called directly (it takes the workspace)
        return bench.Measurement((costs[algo],) * 3, what=algo.value)
    return timer


def test_find_ranks_by_time_and_reports_what_did_not_run():
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(1, 3, 8, 8, generator=gen), torch.randn(4, 3, 5, 5, generator=gen)    # 5x5: no Winograd
    costs = {Algo.GEMM: 3e-3, Algo.IMPLICIT_GEMM: 1e-3, Algo.FFT: 2e-3, Algo.WINOGRAD: 1e-4, Algo.DIRECT: 9.0}
    perfs = R.find_algorithms(x, w, CD(pad=2), timer=_fake_timer(costs))
    assert [(p.algo, p.status) for p in perfs] == [
        (Algo.IMPLICIT_GEMM, Status.SUCCESS), (Algo.FFT, Status.SUCCESS), (Algo.GEMM, Status.SUCCESS),
        (Algo.WINOGRAD, Status.NOT_SUPPORTED)]
    assert [p.time for p in perfs[:3]] == [1e-3, 2e-3, 3e-3] and math.isinf(perfs[3].time)
    gemm = next(p for p in perfs if p.algo is Algo.GEMM)
    assert gemm.memory == F.unfold(x, 5, padding=2).numel() * 4
    assert "algo: IMPLICIT_GEMM, 1.000 ms, 0 B, status: SUCCESS" == str(perfs[0])
    limited = R.find_algorithms(x, w, CD(pad=2), timer=_fake_timer(costs), workspace_limit=1000, requested=3)
    assert len(limited) == 3 and limited[0].algo is Algo.IMPLICIT_GEMM
    assert {p.algo: p.status for p in R.find_algorithms(x, w, CD(pad=2), timer=_fake_timer(costs),
                                                             workspace_limit=1000)}[Algo.GEMM] is Status.ALLOC_FAILED


def test_find_with_the_real_timer():
    x, w, cd = winograd_case(dtype=torch.float32)
    perfs = R.find_algorithms(x, w, cd, budget_s=0.02, min_runs=2)
    assert {p.algo for p in perfs} == set(conv.DEFAULT_FIND)
    times = [p.time for p in perfs]
    assert all(p.status is Status.SUCCESS for p in perfs) and times == sorted(times)
    assert all(p.measurement.warmup >= 1 and p.measurement.count >= 2 for p in perfs)


# --- math type, benchmark -------------------------------------------------------------------------------

def _flags_seen_inside(device):
    seen = []
    x, w, _ = winograd_case(dtype=torch.float32)
    original = R.ALGORITHMS[Algo.IMPLICIT_GEMM]
    R.ALGORITHMS[Algo.IMPLICIT_GEMM] = lambda *a: (seen.append(torch.backends.cuda.matmul.allow_tf32), original(*a))[1]
    try:
        for math_type in ("TENSOR_OP_MATH", "DEFAULT_MATH"):
            R.conv_forward(x.to(device), w.to(device), CD(pad=1, math_type=math_type), Algo.IMPLICIT_GEMM)
    finally:
        R.ALGORITHMS[Algo.IMPLICIT_GEMM] = original
    return seen


def test_math_type_changes_nothing_on_the_cpu():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision(),
              torch.backends.mkldnn.matmul.fp32_precision)
    assert _flags_seen_inside("cpu") == [before[0], before[0]]
    assert (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision(),
            torch.backends.mkldnn.matmul.fp32_precision) == before


def test_benchmark_table_has_every_algorithm():
    # the instructor's `gpudl bench conv` (gpudl_instructor.benchmarks.conv: it measures the references)
    assert benchmarks.load("conv").__name__ == "gpudl_instructor.benchmarks.conv"
    table = benchmarks.run("conv", ["--quick", "--n", "1", "--c", "4", "--hw", "8", "--k", "4"])
    names = [row["algorithm"] for row in table.rows]
    assert set(a.value for a in conv.DEFAULT_FIND) <= set(names) and any("torch" in n for n in names)
    assert all(row["median ms"] > 0 for row in table.rows)


# --- on a GPU ------------------------------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@cuda
@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("algo", list(Algo))
def test_algorithms_on_the_gpu_in_fp32(algo, fmt, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)     # the reference must be true FP32 too
    gen = torch.Generator().manual_seed(2)
    x = R.to_format(torch.randn(2, 6, 13, 12, generator=gen), fmt).cuda()
    w = torch.randn(8, 3, 3, 3, generator=gen).cuda()
    cd = CD(pad=1, groups=2, mode=Mode.CONVOLUTION)
    _check(R.conv_forward(x, w, cd, algo), x, w, cd, f"{algo.value} on cuda")


@cuda
@pytest.mark.gpu
@pytest.mark.parametrize("algo", [Algo.GEMM, Algo.IMPLICIT_GEMM, Algo.WINOGRAD, Algo.FFT])
def test_algorithms_on_the_gpu_in_fp16(algo):
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 8, 16, 16, generator=gen).cuda()
    w = torch.randn(8, 8, 3, 3, generator=gen).cuda()
    cd = CD(pad=1)
    y = R.conv_forward(x.half(), w.half(), cd, algo)
    assert y.dtype == torch.float16
    rtol, atol = tolerance("fp16", 72)
    assert_close(y.float(), F.conv2d(x, w, padding=1), rtol=rtol, atol=atol)


@cuda
@pytest.mark.gpu
def test_math_type_sets_tf32_only_inside_the_call_on_the_gpu():
    before = torch.backends.cuda.matmul.allow_tf32
    assert _flags_seen_inside("cuda") == [True, False]
    assert torch.backends.cuda.matmul.allow_tf32 == before


@cuda
@pytest.mark.gpu
def test_backward_on_the_gpu():
    x, w, cd = winograd_case(dtype=torch.float64, groups=2)
    x, w = x.cuda(), w.cuda()
    xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    y = torch_conv(xg, wg, cd)
    dy = torch.randn_like(y)
    y.backward(dy)
    for algo in R.BACKWARD_ALGOS:
        assert_close(R.conv_backward_data(w, dy, cd, tuple(x.shape), algo), xg.grad)
        assert_close(R.conv_backward_filter(x, dy, cd, tuple(w.shape), algo), wg.grad)


def test_winograds_check_allows_the_rounding_of_an_output_that_nearly_cancels():
    """A correct F(2,3) on d, g whose second output nearly cancels (a result 1000x smaller than its
    terms) carries the terms' rounding; `gpudl sweep` found three seeds in 300 that lost points
    to it. A wrong matrix still fails on the same cases."""
    from gpudl.grading import GradingError, lab05 as checks

    bt, gm, at = (np.array(R.WINOGRAD_BT), np.array(R.WINOGRAD_G), np.array(R.WINOGRAD_AT))
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(500):
        d, g = rng.standard_normal(4), rng.standard_normal(3)
        d[3] = (1e-3 * rng.standard_normal() - d[1] * g[0] - d[2] * g[1]) / g[2]     # y[1] ~ 1e-3
        pairs.append((d, g))
    checks._compare_winograd_f23(R.winograd_1d, bt, gm, at, pairs)
    wrong = gm.copy()
    wrong[1:3] *= 2                                                                   # G without its halves
    with pytest.raises(GradingError, match="your matrices"):
        checks._compare_winograd_f23(R.winograd_1d, bt, wrong, at, pairs)
