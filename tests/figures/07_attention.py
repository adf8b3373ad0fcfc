"""Figures quoted by course/07_attention.ipynb."""
from gpudl import attention

from figures import Figure, value

D = 1024


def _attention(method: str, length: int, key: str = "TFLOP/s") -> float:
    """The H200's recorded `gpudl bench attention` row (not causal) of ``method`` at ``length``."""
    return value("attention", key, "H200", causal=False, method=method, L=length)


def _n_where_projections_equal_attention_over_d(ns):
    """N / D at N = 2D, scaled by attention / projection FLOPs there (1 when they are equal), from
    the lecture's cell (its ``proj`` is 8 N D^2; its ``attn`` what the package's count leaves)."""
    i = list(ns["ns"]).index(2 * D)
    return 2 * ns["attn"][i] / ns["proj"][i]


FIGURES = [
    # 4. Where the FLOPs are
    Figure("They are equal at $N = 2D$", 2, _n_where_projections_equal_attention_over_d),
    # 5. The memory of naive attention, and the corrected 1 GiB
    Figure("bytes = 64 GiB", 64, lambda ns: ns["scores_gib"]),
    Figure("whose inputs and output are 1 GiB", 1, lambda ns: 4 * ns["qkvo_mib"] / 1024),
    Figure("$O$ are 256 MiB each", 256, lambda ns: ns["qkvo_mib"]),
    Figure("at the head dimension $d = 64$", 64, lambda ns: ns["big"]["d"]),
    Figure("holds about three $L \\times L$ arrays at its peak", 3,
           lambda ns: ns["naive_mib"][-1] / (ns["lengths"][-1] ** 2 * 4 / 2**20), rtol=0.02),
    # 8. Recorded on a GPU (course/data/bench_attention.json, the H200's `gpudl bench attention --record`)
    Figure("at L = 4096, SDPA 443 TFLOP/s", 443, lambda ns: _attention("torch SDPA", 4096), atol=0.5, rtol=0),
    Figure("the tuned kernel 0.96x of that", 0.96, lambda ns: _attention("flash_attention_triton", 4096, "vs SDPA"),
           atol=0.005, rtol=0),
    Figure("the plain one 0.71x", 0.71, lambda ns: _attention("flash_attention_triton_plain", 4096, "vs SDPA"),
           atol=0.005, rtol=0),
    Figure("limited by its DRAM traffic, 49", 49, lambda ns: _attention("naive (3 kernels)", 4096), atol=0.5, rtol=0),
    Figure("At L = 256 SDPA's kernel ran for 14 microseconds", 14, lambda ns: 1e3 * _attention("torch SDPA", 256, "ms"),
           atol=0.5, rtol=0),
    Figure("and the tuned kernel for 13", 13, lambda ns: 1e3 * _attention("flash_attention_triton", 256, "ms"),
           atol=0.5, rtol=0),
    Figure("took 25 and 68 microseconds of the host's", 25, lambda ns: _attention("torch SDPA", 256, "host us/call"),
           atol=0.5, rtol=0),
    Figure("took 25 and 68 microseconds of the host's", 68,
           lambda ns: _attention("flash_attention_triton", 256, "host us/call"), atol=0.5, rtol=0),
    Figure("the tuned kernel read 0.59x SDPA", 0.59, lambda ns: _attention("flash_attention_triton", 512, "vs SDPA"),
           atol=0.005, rtol=0),
    Figure("the tuned kernel read 0.59x SDPA", 0.59,
           lambda ns: next(r["vs SDPA"] for r in ns["attention_record"].rows
                           if r["L"] == 512 and r["method"] == "flash_attention_triton"), atol=0.005, rtol=0),
    # 9. Transformer sizes, and the slide's "6 heads"
    Figure("so about $12 D^2$ per block", 12, lambda ns: attention.transformer_block_params(D) / D**2, rtol=0.01),
    Figure("which brings BERT-Base to its 110M", 110, lambda ns: ns["bert_base_params"] / 1e6, rtol=0.01),
    Figure("give Transformer-Base **8** heads", 8, lambda ns: ns["base"].heads),
    Figure("heads, of 64 columns each", 64, lambda ns: ns["head_width"][ns["base"].heads]),
    Figure("6 heads could not even split 512 columns evenly", 512, lambda ns: ns["base"].width),
    Figure("\"12 blocks, $D_Q$=512, 6 heads\"", 6, None,
           why="the lecture's slip, quoted; the right figure (8 heads) and why 6 cannot be are computed above"),
    Figure("For GPT-3 (175B parameters)", 175, lambda ns: ns["gpt3"].params / 1e9),
]
