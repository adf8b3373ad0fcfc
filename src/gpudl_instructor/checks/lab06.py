"""The hidden cases of lab06_lstm_bptt's checks: drawn from the student's seed (the labels of
``gpudl.grading.rng`` are the ones the checks always used, so the cases are unchanged) and
judged with the comparisons of the visible checks (``gpudl.grading.lab06._compare_*``) against
the live references (``gpudl_instructor.references.lab06``), central differences and
torch.nn.LSTM's autograd. The dependent exercises get the calls of the earlier ones that the
references make on exactly these cases (``lstm_forward_calls``, ``lstm_backward_calls``,
``train_step_calls``). The questions' answers are judged here only, by their hashes.
"""
from __future__ import annotations

from typing import Any, Callable

from gpudl.grading import Case, check_choice, lab06 as visible, rng

from ..references import lab06 as ref
from . import hidden

LAB = "lab06"


@hidden(visible.lstm_cell_forward)
def lstm_cell_forward(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.lstm_cell_forward")
    cases = [visible._random_lstm(g, 1, int(g.integers(1, 7)), int(g.integers(1, 8)), int(g.integers(1, 7)),
                                  scale=float(g.uniform(0.5, 3))) for _ in range(4)]
    cases.append(visible._random_lstm(g, 1, 2, 3, 1))                     # H = 1
    cases.append(visible._random_lstm(g, 1, 3, 2, 4, scale=40.0))         # saturated gates: no overflow, no NaN
    visible._compare_cell_forward(fn, cases, ref)


@hidden(visible.lstm_forward)
def lstm_forward(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.lstm_forward")
    cases = [visible._random_lstm(g, int(g.integers(2, 8)), int(g.integers(1, 6)), int(g.integers(1, 6)),
                                  int(g.integers(1, 6)), scale=float(g.uniform(0.5, 3))) for _ in range(4)]
    cases.append(visible._random_lstm(g, 1, 2, 3, 2))                    # a single step
    visible._compare_forward(fn, cases, ref)


@hidden(visible.lstm_flops)
def lstm_flops(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.lstm_flops")
    cases = [Case(tuple(int(v) for v in (g.integers(1, 500), g.integers(1, 256), g.integers(1, 2048),
                                         g.integers(1, 2048)))) for _ in range(5)]
    cases.append(Case((1, 1, 1, 1)))
    visible._compare_flops(fn, cases, ref)


@hidden(visible.lstm_cell_backward)
def lstm_cell_backward(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.lstm_cell_backward")
    drawn = [visible._random_lstm(g, 1, int(g.integers(1, 6)), int(g.integers(1, 6)), int(g.integers(1, 6)),
                                  scale=float(g.uniform(0.5, 2.5))) for _ in range(3)]
    drawn.append(visible._random_lstm(g, 1, 1, 1, 1))
    cases: list[tuple[Any, ...]] = []
    for args in drawn:
        N, H = args[1].shape
        cases.append((args, g.standard_normal((N, H)), g.standard_normal((N, H)), "reference"))
    # against central differences of the forward pass: no reference backward involved
    args = visible._random_lstm(g, 1, 2, 3, 2, scale=2.0)
    cases.append((args, g.standard_normal((2, 2)), g.standard_normal((2, 2)), "central differences"))
    visible._compare_cell_backward(fn, cases, ref)


@hidden(visible.lstm_backward)
def lstm_backward(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.lstm_backward")
    oracles = [("central differences", visible._random_lstm(g, 3, 2, 2, 2, scale=2.0)),
               ("central differences", visible._random_lstm(g, 1, 1, 2, 1, scale=2.0)),
               ("torch", visible._random_lstm(g, int(g.integers(3, 9)), int(g.integers(1, 6)), int(g.integers(1, 6)),
                                              int(g.integers(1, 6)))),
               ("torch", visible._random_lstm(g, 6, 4, 3, 5, scale=2.0))]
    cases = []
    for oracle, args in oracles:
        T, N, _ = args[0].shape
        H = args[1].shape[1]
        cases.append((oracle, args, g.standard_normal((T, N, H)), g.standard_normal((N, H)),
                      g.standard_normal((N, H))))
    visible._compare_backward(fn, cases, ref)


@hidden(visible.to_torch_weights)
def to_torch_weights(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.to_torch_weights")
    cases = [visible._random_lstm(g, int(g.integers(1, 6)), int(g.integers(1, 5)), int(g.integers(1, 7)),
                                  int(g.integers(1, 7))) for _ in range(3)] + [visible._random_lstm(g, 2, 2, 1, 1)]
    visible._compare_to_torch_weights(fn, cases)


@hidden(visible.sgd_step)
def sgd_step(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.sgd_step")
    cases = [(visible._random_params(g, int(g.integers(1, 6)), int(g.integers(1, 6)), int(g.integers(1, 3))),
              float(g.uniform(1e-3, 2))) for _ in range(4)]
    visible._compare_sgd_step(fn, cases, ref)


@hidden(visible.train_step)
def train_step(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.train_step")
    cases = []
    for _ in range(3):
        D, H, K = int(g.integers(1, 4)), int(g.integers(1, 7)), int(g.integers(1, 3))
        T, N = int(g.integers(1, 8)), int(g.integers(1, 6))
        params = visible.init_params(g, D, H, K)
        params["by"] = g.standard_normal(K)
        cases.append((params, g.standard_normal((T, N, D)), g.standard_normal((T, N, K)), float(g.uniform(0.01, 1))))
    visible._compare_train_step(fn, cases, ref)


# --- questions ----------------------------------------------------------------------------

# The accepted letters, hashed (gpudl.grading.answer_digest("lab06", "question:LETTERS")).
_ANSWERS = {"cell_gradient": "6f0ccbb04322fd37ddccad7ad2b3eb79",
            "batched_gemms": "0b13a603ba72b82a5db9f84e7972276c"}


@hidden(visible.cell_gradient_question)
def cell_gradient_question(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _ANSWERS["cell_gradient"], "write dc_{t-1} in terms of dc_t, as in your "
                 "lstm_cell_backward; what multiplies it at each step?", question="cell_gradient")


@hidden(visible.batched_gemms_question)
def batched_gemms_question(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _ANSWERS["batched_gemms"], "a product can wait until after the time "
                 "loop when nothing inside the loop needs its result; pick every such product.",
                 question="batched_gemms")
