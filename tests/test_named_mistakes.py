"""Messages name the mistake: when a wrong output is what a known mistake gives on the same case,
the check's message says which mistake (``gpudl.grading.likely_mistake``).

Each mutant below is planted in the lab's solution, its visible test cell run as a student runs it
(``test_visible.visible_notebook``), and the failure's message must name the mistake; the hidden
cases (the instructor's checks, on random cases) must name it too. A check that names a mistake
the student did not make would mislead, so the solution's own cells pass and a mutant with another
mistake gets no such line.
"""
from __future__ import annotations

import numpy as np
import pytest

import inprocess
from conftest import all_mutants
from gpudl.grading import GradingError, assert_close, check_cases, Case, likely_mistake
from test_visible import _planted_source, visible_notebook

pytestmark = pytest.mark.slow

MUTANTS = {m.id: m for m in all_mutants()}
NAMED = "that is what a known mistake gives on this case"

# mutant -> words its visible failure must show (after the line that names a known mistake)
EXPECTED = {
    "lab01_performance_basics/peak_from_spec__fp32_on_tensor_cores": 'did you run "fp32" on the tensor cores',
    "lab01_performance_basics/peak_from_spec__ignores_flag": "although tensor_cores=False",
    "lab01_performance_basics/peak_from_spec__ignores_tensor_cores": "did you always use the CUDA-core rate?",
    "lab06_lstm_bptt/lstm_cell_forward__i_f_swapped": "did you swap the gates i and f?",
    "lab06_lstm_bptt/lstm_cell_forward__sigmoid_on_a": "did you put the sigmoid on a?",
    "lab06_lstm_bptt/lstm_cell_forward__returns_c_h": "did you return (c, h, cache)?",
    "lab06_lstm_bptt/lstm_cell_forward__tanh_of_o_times_c": "did you compute tanh(o * c)?",
    "lab06_lstm_bptt/lstm_cell_forward__h_without_tanh": "did you leave out the tanh?",
    "lab06_lstm_bptt/lstm_forward__final_states_swapped": "did you return (c_T, h_T)?",
    "lab06_lstm_bptt/lstm_cell_backward__dc_prev_without_f": "did you return delta state itself as dc_prev?",
    "lab06_lstm_bptt/sgd_step__in_place": "your sgd_step changed the params it was given",
    "lab06_lstm_bptt/sgd_step__new_dict_of_updated_arrays": "your sgd_step changed the params it was given",
    "lab07_attention/attention_kernel__no_key_bounds": "padding keys",
    "lab07_attention/sdpa__mask_after_softmax": "after the softmax",
    "lab07_attention/sdpa__no_scaling": "1/sqrt(d)",
    "lab07_attention/sdpa__scale_by_d": "by d",
    "lab07_attention/sdpa__causal_bottom_right": "bottom right",
    "lab07_attention/sdpa__causal_off_by_one": "did you hide the diagonal too?",
    "lab07_attention/sdpa__ignores_mask": "did you ignore the mask?",
    "lab07_attention/sdpa__mask_inverted": "did you read the mask upside down?",
    "lab07_attention/attention_kernel__no_scale": "did you leave out the scale?",
    "lab07_attention/mhsa__ignores_causal": "did you pass causal on",
    "lab09_profiling_and_inference/tune__mean": "its mean is pulled up, its median is not",
}
# the mistakes their check names in its own words (not through likely_mistake)
OWN_WORDS = {"lab06_lstm_bptt/sgd_step__in_place", "lab06_lstm_bptt/sgd_step__new_dict_of_updated_arrays",
             "lab09_profiling_and_inference/tune__mean"}


def _visible_failure(mutant_id: str) -> str:
    mutant = MUTANTS[mutant_id]
    nb = visible_notebook(mutant.lab, set(mutant.fails), mutant.cell, _planted_source(mutant))
    with pytest.raises(RuntimeError) as info:
        inprocess.execute(nb)
    return str(info.value)


@pytest.mark.parametrize("mutant_id", sorted(EXPECTED))
def test_the_visible_message_names_the_mistake(mutant_id):
    message = _visible_failure(mutant_id)
    assert EXPECTED[mutant_id] in message, message
    if mutant_id not in OWN_WORDS:
        assert NAMED in message, message


def test_another_mistake_is_not_named_as_one_it_is_not():
    """cs231n's gate order gives gates no single known mistake gives: the numbers, and no named mistake."""
    message = _visible_failure("lab06_lstm_bptt/lstm_cell_forward__cs231n_gate_order")
    assert "gates (a, i, f, o) in the cache" in message and NAMED not in message, message


# --- the hidden cases (the instructor's checks) name it too ------------------------------------------

def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _cell_forward(x_t, h_prev, c_prev, W, U, b, *, swap_if=False, returns_c_h=False):
    H = h_prev.shape[1]
    z = x_t @ W.T + h_prev @ U.T + b
    a = np.tanh(z[:, :H])
    i, f = _sigmoid(z[:, H:2 * H]), _sigmoid(z[:, 2 * H:3 * H])
    if swap_if:
        i, f = f, i
    o = _sigmoid(z[:, 3 * H:])
    c = a * i + f * c_prev
    h = o * np.tanh(c)
    cache = {"x": x_t, "h_prev": h_prev, "c_prev": c_prev, "a": a, "i": i, "f": f, "o": o, "c": c, "W": W, "U": U}
    return (c, h, cache) if returns_c_h else (h, c, cache)


def test_the_hidden_cases_name_swapped_gates_and_swapped_returns():
    from gpudl_instructor.checks import lab06 as hidden

    def swapped_gates(x_t, h_prev, c_prev, W, U, b):
        return _cell_forward(x_t, h_prev, c_prev, W, U, b, swap_if=True)

    def c_first(x_t, h_prev, c_prev, W, U, b):
        return _cell_forward(x_t, h_prev, c_prev, W, U, b, returns_c_h=True)

    with pytest.raises(GradingError, match=r"(?s)cache\['i'\].*did you swap the gates i and f\?"):
        hidden.lstm_cell_forward(swapped_gates)
    with pytest.raises(GradingError, match=r"(?s)your c .*did you return \(c, h, cache\)\?"):
        hidden.lstm_cell_forward(c_first)


def test_the_hidden_cases_name_sgd_step_in_place():
    from gpudl_instructor.checks import lab06 as hidden

    def in_place(params, grads, lr):
        for k in params:
            params[k] -= lr * grads[k]
        return params

    with pytest.raises(GradingError, match="changed the params it was given"):
        hidden.sgd_step(in_place)


# --- the helper ------------------------------------------------------------------------------------

def test_likely_mistake_names_the_first_mistake_that_matches_to_the_tolerance():
    right, wrong = np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])
    mistakes = {"never": np.zeros(3), "swapped?": lambda: wrong.copy(), "also swapped?": wrong}
    assert likely_mistake(wrong + 1e-15, mistakes) == "swapped?"
    assert likely_mistake(wrong + 1e-3, mistakes) == ""
    assert likely_mistake(right, {"broken": lambda: 1 / 0, "shape": np.zeros(4)}) == ""   # skipped, not raised
    with pytest.raises(GradingError, match=r"(?s)2 of 3 values.*known mistake gives on this case: swapped\?"):
        assert_close(wrong, right, mistakes=mistakes)
    with pytest.raises(GradingError) as info:
        assert_close(wrong + 0.5, right, mistakes=mistakes)
    assert NAMED not in str(info.value)
    assert_close(right, right, mistakes={"bad": lambda: 1 / 0})          # a pass consults nothing


def test_a_named_mistake_replaces_the_guess_from_the_ratio():
    with pytest.raises(GradingError) as info:
        assert_close(8.0, 1.0)
    assert "bits vs bytes" in str(info.value)
    with pytest.raises(GradingError) as info:
        assert_close(8.0, 1.0, mistakes={"did you use TF32's rate?": 8.0})
    assert "bits vs bytes" not in str(info.value) and "did you use TF32's rate?" in str(info.value)
    with pytest.raises(GradingError) as info:
        check_cases(lambda x: 8 * x, lambda x: x, [Case((2.0,))], mistakes=lambda x: {"eight times?": 8 * x})
    assert "bits vs bytes" not in str(info.value) and "eight times?" in str(info.value)


def test_check_cases_computes_the_mistakes_of_the_failing_case_only():
    calls = []

    def mistakes(x):
        calls.append(x)
        return {"did you flip the sign?": -x}

    cases = [Case((np.arange(1.0, 4.0),)), Case((np.arange(2.0, 5.0),))]
    check_cases(lambda x: x, lambda x: x, cases, mistakes=mistakes)
    assert calls == []
    with pytest.raises(GradingError, match=r"did you flip the sign\?"):
        check_cases(lambda x: -x, lambda x: x, cases, mistakes=mistakes)
    assert len(calls) == 1


def test_the_hidden_cases_name_an_ignored_mask():
    from gpudl_instructor.checks import lab07 as hidden

    def without_mask(q, k, v, mask=None, causal=False):
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return p / p.sum(axis=-1, keepdims=True) @ v

    with pytest.raises(GradingError, match=r"(?s)a random mask.*did you ignore the mask\?"):
        hidden.scaled_dot_product_attention(without_mask)
