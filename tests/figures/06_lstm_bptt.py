"""Figures quoted by course/06_lstm_bptt.ipynb."""
import math

import numpy as np

from gpudl import hardware, lstm

from figures import Figure


_PRINTED = lstm.lecture_printed()


def _lstm_rows(gpu="H100-SXM"):
    """The GPU rows `gpudl bench lstm --record` kept for ``gpu`` (course/data)."""
    from gpudl import benchmarks

    return benchmarks.recorded_table("lstm", gpu, keep=lambda r: r["device"].startswith("cuda")).rows


def _lstm_size(batch, gpu="H100-SXM"):
    """(T, N, D, H) of the GPU case with batch N recorded for ``gpu``."""
    for r in _lstm_rows(gpu):
        size = dict(kv.split("=") for kv in r["device"].split()[1:])
        if int(size["N"]) == batch:
            return int(size["T"]), batch, int(size["D"]), int(size["H"])
    raise KeyError(f"no recorded GPU case with batch {batch} for {gpu}")


def _lstm(what, batch, key="median ms", gpu="H100-SXM"):
    size = "cuda T={} N={} D={} H={}".format(*_lstm_size(batch, gpu))
    return next(r[key] for r in _lstm_rows(gpu) if r["implementation"] == what and r["device"] == size)


def _under(x, limit):
    """``limit`` when ``x`` is below it (the prose says "under"), else ``x`` itself, which then fails."""
    return limit if x < limit else x


def _sigmoid(z):
    return 1 / (1 + math.exp(-z))


FIGURES = [
    # 2. The lecture's step t = 0
    Figure("lecture's step t = 0, `x_0 = [1, 2]`", 1, lambda ns: ns["ex"]["x"][0].ravel()[0]),
    Figure("lecture's step t = 0, `x_0 = [1, 2]`", 2, lambda ns: ns["ex"]["x"][0].ravel()[1]),
    Figure("`x_1 = [0.5, 3]`", 0.5, lambda ns: ns["ex"]["x"][1].ravel()[0]),
    Figure("`x_1 = [0.5, 3]`", 3, lambda ns: ns["ex"]["x"][1].ravel()[1]),
    # 4. The worked example, and the label slip Y1 = -1.25
    Figure("`Y0 = 0.5`", 0.5, lambda ns: ns["ex"]["y"].ravel()[0]),
    Figure("The numbers follow the label **+1.25**", 1.25, lambda ns: ns["ex"]["y"].ravel()[1]),
    Figure("$\\Delta_1 = 0.77197 - 1.25 = -0.47803$", 0.77197, lambda ns: ns["out"].ravel()[1], rtol=2e-5),
    Figure("$\\Delta_1 = 0.77197 - 1.25 = -0.47803$", -0.47803, lambda ns: ns["dout"].ravel()[1], rtol=5e-5),
    Figure("`Y1 = -1.25`", -1.25, None, why="the lecture's slip, quoted; the label its numbers follow (+1.25) is "
                                           "checked above"),
    Figure("the slides' rounding, all under 1e-4", 1e-4, lambda ns: _under(max(ns["max_diffs"].values()), 1e-4)),
    # The Delta out_-1 label slip
    Figure("is $U^T \\delta gates_0$ = -0.00343", -0.00343, lambda ns: ns["delta_out_sent_back"][0], rtol=2e-3),
    Figure("is $U^T \\delta gates_0$ = -0.00343", -0.00343, lambda ns: ns["printed"]["delta_out_prev_0"]),
    # The dE/db_o label slip
    Figure("gives the **f** row, -0.00631", -0.00631, lambda ns: ns["bias_grad_numeric"]["f"], rtol=2e-3),
    Figure("gives the **f** row, -0.00631", -0.00631, lambda ns: ns["grads"]["b"][2], rtol=2e-3),
    Figure("the output gate's row is about -0.0536", -0.0536, lambda ns: ns["bias_grad_numeric"]["o"], rtol=2e-3),
    Figure("learning rate 0.1", 0.1, lambda ns: ns["ex"]["lr"]),
    # lambda: not given by the slide, implied by its printed weights
    Figure("$(W - W^{new}) / \\delta W$ is 0.1 for every weight", 0.1, lambda ns: ns["implied_lr"].min(), rtol=3e-3),
    Figure("$(W - W^{new}) / \\delta W$ is 0.1 for every weight", 0.1, lambda ns: ns["implied_lr"].max(), rtol=3e-3),
    Figure("$(W - W^{new}) / \\delta W$ is 0.1 for every weight", 0.1,
           lambda ns: (0.40 - _PRINTED["new_W"][3][1]) / _PRINTED["dW"][3][1], rtol=1e-3),   # the largest gradient
    # the delta-b index: the slide's arithmetic sums delta gates_0 and delta gates_1
    Figure("adds $\\delta gates_0 + \\delta gates_1$", 1,
           lambda ns: 1 if ns["lecture_db_sums_gates"] else math.nan),
    Figure("adds $\\delta gates_0 + \\delta gates_1$", 1,
           lambda ns: 1 if np.allclose(_PRINTED["db"], _PRINTED["delta_gates_0"] + _PRINTED["delta_gates_1"], atol=2e-5)
           else math.nan),
    # 6. The forget gate's bias
    Figure("set the forget gate's bias to 0 (f around 0.5)", 0.5, lambda ns: _sigmoid(0)),
    Figure("or to 3 (f around 0.95)", 0.95, lambda ns: _sigmoid(3), rtol=0.01),
    # 7. Where the GEMMs are
    Figure("a `(16, 128) x (128, 512)` product", 16, lambda ns: ns["h32"].shape[0]),
    Figure("a `(16, 128) x (128, 512)` product", 128, lambda ns: ns["U32"].shape[1]),
    Figure("a `(16, 128) x (128, 512)` product", 512, lambda ns: ns["U32"].shape[0]),
    Figure("an H100's 132 SMs", 132, lambda ns: hardware.SPECS["H100-SXM"].sms),
    # measured on an H100 and an H200: `gpudl bench lstm --record` (course/data/bench_lstm.json)
    Figure("took\n4.87 ms for forward and backward", 4.87, lambda ns: _lstm("cuDNN nn.LSTM", 32), atol=0.005, rtol=0),
    Figure("the per-step loop of `nn.LSTMCell` 34.0 ms", 34.0,
           lambda ns: _lstm("per-step loop of nn.LSTMCell", 32), atol=0.05, rtol=0),
    Figure("6.97x as long", 6.97, lambda ns: _lstm("per-step loop of nn.LSTMCell", 32, "time / nn.LSTM"), atol=0.005,
           rtol=0),
    Figure("6.97x as long", 6.97,
           lambda ns: _lstm("per-step loop of nn.LSTMCell", 32) / _lstm("cuDNN nn.LSTM", 32), atol=0.005, rtol=0),
    Figure("at T = 64 steps of a batch of 32 with D = H = 256", 64, lambda ns: _lstm_size(32)[0]),
    Figure("at T = 64 steps of a batch of 32 with D = H = 256", 256, lambda ns: _lstm_size(32)[2]),
    Figure("products of (32, 256) x (256, 1024)", 1024, lambda ns: 4 * _lstm_size(32)[3]),
    Figure("With a batch\nof 256 and D = H = 1024", 1024, lambda ns: _lstm_size(256)[3]),
    Figure("the loop took 1.65x cuDNN's 20.0 ms", 1.65,
           lambda ns: _lstm("per-step loop of nn.LSTMCell", 256, "time / nn.LSTM"), atol=0.005, rtol=0),
    Figure("the loop took 1.65x cuDNN's 20.0 ms", 20.0, lambda ns: _lstm("cuDNN nn.LSTM", 256), atol=0.05, rtol=0),
    # the H200's entry of the same record
    Figure("cuDNN's `nn.LSTM` in 3.42 ms", 3.42, lambda ns: _lstm("cuDNN nn.LSTM", 32, gpu="H200"), atol=0.005, rtol=0),
    Figure("the loop in 23.8 ms", 23.8, lambda ns: _lstm("per-step loop of nn.LSTMCell", 32, gpu="H200"), atol=0.05,
           rtol=0),
    Figure("the loop took 6.96x as long", 6.96,
           lambda ns: _lstm("per-step loop of nn.LSTMCell", 32, "time / nn.LSTM", gpu="H200"), atol=0.005, rtol=0),
    Figure("the loop took 6.96x as long", 6.96,
           lambda ns: _lstm("per-step loop of nn.LSTMCell", 32, gpu="H200") / _lstm("cuDNN nn.LSTM", 32, gpu="H200"),
           atol=0.005, rtol=0),
    Figure("With a batch of 256, cuDNN took 20.0 ms there too", 20.0,
           lambda ns: _lstm("cuDNN nn.LSTM", 256, gpu="H200"), atol=0.05, rtol=0),
    Figure("and the loop 1.53x", 1.53,
           lambda ns: _lstm("per-step loop of nn.LSTMCell", 256, "time / nn.LSTM", gpu="H200"), atol=0.005, rtol=0),
]
