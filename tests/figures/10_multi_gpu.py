"""Figures quoted in course/10_multi_gpu.ipynb."""
from gpudl.collectives import cost
from figures import Figure

FIGURES = [
    Figure("4 GPUs at 12 GB/s", 12, lambda ns: cost.LECTURE_EXAMPLE["bandwidth"] / 1e9),
    Figure("a 100 MB message, the unpipelined ring takes 25 ms", 25, lambda ns: ns["broadcast_ms"][1]),
    Figure("4 chunks take 12.5 ms", 12.5, lambda ns: ns["broadcast_ms"][4]),
    Figure("100 chunks take 8.5 ms", 8.5, lambda ns: ns["broadcast_ms"][100]),
    Figure("the limit $N/B$ is 8.33 ms", 8.33, lambda ns: ns["limit_ms"], rtol=1e-3),
    Figure("the best is 41 pieces", 41, lambda ns: ns["best"], rtol=0),
    Figure("41 pieces, 9.17 ms", 9.17, lambda ns: ns["best_ms"], rtol=1e-3),
    Figure("each sends 150 MB", 150, lambda ns: ns["per_rank_mb"][4]),
    Figure("on 8, 175 MB", 175, lambda ns: ns["per_rank_mb"][8]),
    Figure("the lecture's A100: 600 GB/s of NVLink", 600, lambda ns: cost.NVLINK_BANDWIDTH["A100"] / 1e9),
    Figure("90 epochs of the 1,281,167 training images", 1_281_167, lambda ns: cost.IMAGENET_TRAIN_IMAGES, rtol=0),
    Figure("8 GPUs process about 1,100 images per second", 1100, lambda ns: ns["he"]["images_per_s"], rtol=0.01),
    Figure("2,176 GPUs about 515,000", 515_000, lambda ns: ns["mikami"]["images_per_s"], rtol=1e-3),
    Figure("466 times faster", 466, lambda ns: ns["mikami"]["speedup"], rtol=1e-3),
    Figure("232 P100-hours", 232, lambda ns: ns["he"]["proc_hours"]),
    Figure("135 V100-hours", 135, lambda ns: ns["mikami"]["proc_hours"], rtol=5e-3),
    Figure("about 0.58 ms", 0.58, lambda ns: ns["dgx_ms"], rtol=0.01),
    Figure("In that time an A100 does 0.18 TFLOP", 0.18, lambda ns: ns["flop_in_all_reduce"] / 1e12, rtol=0.03),
    Figure("its FP16 tensor-core peak of 312 TFLOP/s", 312, lambda ns: ns["a100_fp16"] / 1e12, rtol=2e-3),
    Figure("the FP32 gradients of 25 M parameters", 25, lambda ns: ns["parameters"] / 1e6),
    Figure("about 1,200 tokens per GPU", 1200, lambda ns: ns["tokens_in_all_reduce"], rtol=0.02),
    Figure("27,648 GPUs", 27_648, lambda ns: ns["summit_gpus"], rtol=0),
    Figure("4,608 nodes with 6 V100 GPUs", 4608, None, why="the lecture's figure for Summit, an input of the cell "
           "that computes 27,648"),
    Figure("buckets of about 25 MB", 25, None, why="DDP's documented default bucket_cap_mb, not computed here"),
    Figure("6 NVSwitches", 6, None, why="the lecture's DGX A100 specification"),
]
