"""gpudl.grading: comparisons that teach, seeded cases, the guard, and quietness."""
from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import threading
import warnings
from typing import List, Optional

import numpy as np
import pytest
import torch

from gpudl import grading
from gpudl.grading import Case, GradingError, ReferenceUsedError, assert_close, check_cases, reference
from gpudl.hardware import peak_flops

from conftest import GUARD_BESIDE_A_CHILD


def message(fn, *args, **kwargs) -> str:
    with pytest.raises(GradingError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# --- tolerances ------------------------------------------------------------------------

def test_tolerance_grows_with_eps_and_reduction_length():
    rt32, _ = grading.tolerance("fp32")
    rt16, _ = grading.tolerance("fp16")
    assert rt16 > rt32 * 1000
    assert grading.tolerance("fp32", 1024)[0] == pytest.approx(32 * rt32)
    assert grading.tolerance("int8") == (0.0, 0.0)
    with pytest.raises(ValueError):
        grading.tolerance("fp32", 0)


def test_fp32_rounding_passes_and_fp16_rounding_fails_in_fp32():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 256)), rng.standard_normal((256, 32))
    exact = a @ b
    assert_close((a.astype(np.float32) @ b.astype(np.float32)), exact, dtype="fp32", k=256)
    rounded16 = (a.astype(np.float16).astype(np.float32) @ b.astype(np.float16).astype(np.float32))
    assert "differ from the reference" in message(assert_close, rounded16, exact, dtype="fp32", k=256)
    assert_close(rounded16, exact, dtype="fp16", k=256)


# --- messages ------------------------------------------------------------------------------

def test_shape_messages_name_the_likely_mistake():
    assert "swap axes" in message(assert_close, np.zeros((2, 4, 3)), np.zeros((2, 3, 4)))
    assert "reshape" in message(assert_close, np.zeros((6, 4)), np.zeros((3, 8)))
    assert "size-1" in message(assert_close, np.zeros((3, 1)), np.zeros((3,)))
    assert "one dimension fewer" in message(assert_close, np.zeros((3,)), np.zeros((2, 3)))


def test_value_messages_count_locate_and_hint():
    expected = np.arange(1.0, 13.0).reshape(3, 4)
    actual = expected.copy()
    actual[2, 1] += 5
    msg = message(assert_close, actual, expected)
    assert "1 of 12 values" in msg and "(2, 1)" in msg and "got 15" in msg and "expected 10" in msg
    assert "factor of 2" in message(assert_close, 2 * expected, expected)
    assert "transpose" in message(assert_close, np.arange(9.0).reshape(3, 3).T, np.arange(9.0).reshape(3, 3))
    assert "1e3" in message(assert_close, 1.5e15, 1.5e12)
    assert "percentage" in message(assert_close, 20.0, 0.2)


def test_nan_inf_and_none_are_reported():
    assert "NaN" in message(assert_close, np.array([1.0, np.nan]), np.array([1.0, 2.0]))
    assert "infinite" in message(assert_close, np.array([np.inf, 1.0]), np.array([1.0, 2.0]))
    assert "return" in message(assert_close, None, 1.0)
    assert_close(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]))   # same non-finite values agree


def test_torch_tensors_and_scalars_compare():
    assert_close(torch.tensor([1.0, 2.0], dtype=torch.bfloat16), np.array([1.0, 2.0]), dtype="bf16")
    assert_close(np.float32(3.0), 3.0)
    assert_close([[1.0]], 1.0)


def test_extra_hints_take_precedence():
    msg = message(assert_close, 1e-6, 1.0, hints={1e-6: "the clock is in MHz"})
    assert "the clock is in MHz" in msg


def test_assert_equal():
    grading.assert_equal("Memory ", "memory")
    assert "compute" in message(grading.assert_equal, "compute", "memory", hint="below the ridge")


# --- seeded randomness -------------------------------------------------------------------

def test_rng_depends_on_the_secret_and_the_exercise(monkeypatch):
    monkeypatch.setenv(grading.SEED_ENV, "secret-1")
    a = grading.rng("lab01.x").integers(0, 2**31, 4)
    b = grading.rng("lab01.x").integers(0, 2**31, 4)
    c = grading.rng("lab01.y").integers(0, 2**31, 4)
    monkeypatch.setenv(grading.SEED_ENV, "secret-2")
    d = grading.rng("lab01.x").integers(0, 2**31, 4)
    assert (a == b).all() and not (a == c).all() and not (a == d).all()


# --- the guard ----------------------------------------------------------------------------

@reference
def _ref_square(x):
    return x * x


def test_guard_refuses_the_reference_only_inside_and_only_from_outside():
    def cheat(x):
        return _ref_square(x)

    assert cheat(3) == 9
    with pytest.raises(ReferenceUsedError, match="reference"):
        grading.call_student(cheat, 3, forbid=[_ref_square])
    assert cheat(3) == 9                              # restored afterwards


def test_package_internal_calls_are_allowed():
    # hardware.ridge_point calls hardware.peak_flops internally: that is not the student's call
    from gpudl import hardware
    assert grading.call_student(lambda: hardware.ridge_point("A100"), forbid=[peak_flops]) > 0
    with pytest.raises(ReferenceUsedError):
        grading.call_student(lambda: peak_flops("A100"), forbid=[peak_flops])


def test_guard_refuses_library_routines_even_when_imported_early():
    from torch.nn.functional import conv2d as early_conv
    import torch.nn.functional as F

    x, w = torch.ones(1, 1, 3, 3), torch.ones(1, 1, 1, 1)
    for fn in (lambda: F.conv2d(x, w), lambda: early_conv(x, w)):
        with pytest.raises(ReferenceUsedError, match="conv2d"):
            grading.call_student(fn, forbid=["torch.nn.functional.conv2d"])
    assert F.conv2d(x, w).shape == (1, 1, 3, 3)       # restored
    assert sys.getprofile() is None


def test_guard_refuses_numpys_functions_imported_early():
    """numpy's functions are dispatchers written in C around a Python implementation: a name bound
    before the block (``from numpy import einsum``) is caught through the implementation's code."""
    from numpy import einsum as early_einsum, tensordot as early_tensordot

    a = np.ones((2, 2))
    for fn, name in ((lambda: early_einsum("ij,jk->ik", a, a), "numpy.einsum"),
                     (lambda: early_tensordot(a, a, 1), "numpy.tensordot")):
        with pytest.raises(ReferenceUsedError, match=name):
            grading.call_student(fn, forbid=[name])
    assert early_einsum("ij,jk->ik", a, a).shape == (2, 2)


def test_guard_refuses_torchs_private_binding_of_a_routine():
    a = torch.ones(2, 2)
    with pytest.raises(ReferenceUsedError, match="einsum"):
        grading.call_student(lambda: torch._VF.einsum("ij,jk->ik", [a, a]), forbid=["torch.einsum"])


def test_guard_refuses_a_routine_reached_through_torch_ops():
    """``torch.ops.aten.bmm`` is torch.bmm's operator: refused with it, as a packet or an overload."""
    b = torch.randn(2, 3, 3)
    for call in (lambda: torch.ops.aten.bmm(b, b), lambda: torch.ops.aten.bmm.default(b, b)):
        with pytest.raises(ReferenceUsedError, match=r"torch\.ops\.aten\.bmm"):
            grading.call_student(call, forbid=["torch.bmm"])
    assert grading.call_student(lambda: torch.ops.aten.add(b, b), forbid=["torch.bmm"]).shape == (2, 3, 3)


def test_lab_lists_refuse_torchs_private_operators_through_torch_ops():
    from gpudl.grading import lab05, lab07

    x = np.random.default_rng(0).standard_normal((3, 4))
    with pytest.raises(GradingError, match=r"torch\.ops\.aten\._softmax"):
        lab07.softmax(lambda s, axis=-1: torch.ops.aten._softmax(torch.from_numpy(s), axis, False).numpy())
    conv = lambda: torch.ops.aten.convolution(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 1, 1), None, [1, 1], [0, 0],
                                              [1, 1], False, [0, 0], 1)
    with pytest.raises(ReferenceUsedError, match=r"torch\.ops\.aten\.convolution"):
        grading.call_student(conv, forbid=lab05.TORCH_CONV)


@pytest.mark.parametrize("cheat", ["dot", "einsum", "matmul", "baddbmm", "mm"])
def test_lab03_batched_refuses_library_products_bound_before_the_check(cheat):
    """Names a notebook binds at its top (``from numpy import dot``) before the check runs."""
    from numpy import dot, einsum, matmul

    from gpudl.grading import lab03

    def batched(A, B):
        if cheat == "dot":                       # every A[b] @ B[c], then the diagonal b = c
            return dot(A, B)[np.arange(A.shape[0]), :, np.arange(A.shape[0]), :]
        if cheat == "einsum":
            return einsum("bik,bkj->bij", A, B)
        if cheat == "matmul":
            return matmul(A, B)
        if cheat == "mm":                        # one matrix product, mapped over the batch
            return torch.vmap(torch.mm)(torch.from_numpy(np.asarray(A)), torch.from_numpy(np.asarray(B))).numpy()
        zeros = torch.zeros(A.shape[0], A.shape[1], B.shape[2], dtype=torch.float64)
        return torch.baddbmm(zeros, torch.from_numpy(np.asarray(A)), torch.from_numpy(np.asarray(B))).numpy()

    with pytest.raises(GradingError, match=cheat):
        lab03.batched(batched)


def _underneath(ref):
    """The function under a @reference wrapper, fished out of its closure as a student could."""
    from gpudl.references import code_of
    return next(c.cell_contents for c in ref.__closure__
                if getattr(c.cell_contents, "__code__", None) is code_of(ref))


def test_reference_wrapper_keeps_no_wrapped_function():
    import inspect

    assert not hasattr(_ref_square, "__wrapped__")
    assert inspect.unwrap(_ref_square) is _ref_square
    assert list(inspect.signature(_ref_square).parameters) == ["x"]     # help() still shows the arguments


def test_guard_catches_the_function_underneath_a_reference():
    underneath = _underneath(_ref_square)
    assert underneath(3) == 9                         # outside a guard it is just a function
    with pytest.raises(ReferenceUsedError, match="underneath"):
        grading.call_student(lambda x: underneath(x), 3, forbid=[_ref_square])
    rebuilt = type(underneath)(underneath.__code__, underneath.__globals__)      # a new function, the same code
    with pytest.raises(ReferenceUsedError, match="underneath"):
        grading.call_student(lambda x: rebuilt(x), 3, forbid=[_ref_square])
    assert sys.getprofile() is None and threading.getprofile() is None
    assert grading.call_student(lambda x: underneath(x), 3) == 9     # not forbidden: allowed


def _in_a_thread(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a thread of its own (student code's way around a watch on its thread)."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn(*args, **kwargs)))
    worker.start()
    worker.join()
    return out[0]


def test_guard_catches_the_function_underneath_in_a_thread():
    underneath = _underneath(_ref_square)

    def cheat(x):
        return _in_a_thread(underneath, x)

    with pytest.raises(ReferenceUsedError):
        grading.call_student(cheat, 3, forbid=[_ref_square])


def test_guard_judges_the_caller_by_its_file_not_its_module_name():
    namespace = {"__name__": "gpudl.my_solution", "ref": _ref_square}
    exec("def cheat(x):\n    return ref(x)\n", namespace)
    with pytest.raises(ReferenceUsedError, match="reference"):
        grading.call_student(namespace["cheat"], 3, forbid=[_ref_square])
    namespace = {"__name__": "gpudl.my_solution", "ref": _underneath(_ref_square)}
    exec("def cheat(x):\n    return ref(x)\n", namespace)
    with pytest.raises(ReferenceUsedError):
        grading.call_student(namespace["cheat"], 3, forbid=[_ref_square])


def test_package_code_is_told_apart_by_its_file():
    from gpudl import hardware
    from gpudl.references import code_of, in_package

    assert in_package(code_of(hardware.ridge_point)) and not in_package(code_of(_ref_square))
    assert grading.call_student(lambda: hardware.ridge_point("A100"), forbid=[peak_flops]) > 0


def test_guard_refuses_a_torch_routine_under_every_name_torch_gives_it():
    """Forbidding torch.softmax forbids x.softmax, F.softmax, torch.special.softmax, nn.Softmax and
    an alias made before the block (a student writes x.softmax(-1) as often as torch.softmax)."""
    x = torch.randn(3, 4)
    early = torch.softmax

    def in_a_thread():
        out = []

        def work():
            try:
                out.append(x.softmax(1))
            except Exception:       # noqa: BLE001 - the thread hides its refusal
                pass

        t = threading.Thread(target=work)
        t.start()
        t.join()
        return out[0]       # IndexError when the thread was refused: the guard reports the refusal

    ways = {"torch.Tensor.softmax": lambda: x.softmax(1), "torch.softmax": lambda: early(x, 1),
            "torch.nn.functional.softmax": lambda: torch.nn.Softmax(dim=1)(x),
            "torch.special.softmax": lambda: torch.special.softmax(x, 1)}
    for name, fn in ways.items():
        with pytest.raises(ReferenceUsedError, match=f"calls {name},"):
            grading.call_student(fn, forbid=["torch.softmax"], label="softmax")
    with pytest.raises(ReferenceUsedError, match="calls torch.Tensor.softmax"):
        grading.call_student(in_a_thread, forbid=["torch.softmax"])
    by_hand = grading.call_student(lambda: x.exp() / x.exp().sum(1, keepdim=True), forbid=["torch.softmax"])
    assert torch.allclose(by_hand, x.softmax(1))                 # other routines run; softmax back after
    assert torch._C._len_torch_function_stack() == 0


def test_guard_refuses_matmul_as_the_operator_too_and_not_its_neighbours():
    a, b = torch.ones(2, 3), torch.ones(3, 2)
    for fn in (lambda: a @ b, lambda: a.matmul(b), lambda: torch.linalg.matmul(a, b)):
        with pytest.raises(ReferenceUsedError, match="matmul"):
            grading.call_student(fn, forbid=["torch.matmul"])
    assert grading.call_student(lambda: torch.mm(a, b), forbid=["torch.matmul"]).shape == (2, 2)


def test_guard_refuses_torchs_private_operators_imported_early():
    """torch._softmax and the like are not in torch's list of overridable functions, yet torch hands
    their calls to the mode too: refused without the hook."""
    from torch import _softmax as early

    x = torch.randn(2, 3)
    with pytest.raises(ReferenceUsedError, match="torch._softmax"):
        grading.call_student(lambda: early(x, 1, False), forbid=["torch._softmax"])
    assert torch.allclose(early(x, 1, False), x.softmax(1))


def test_a_caught_refusal_still_fails_the_call():
    x = torch.randn(2, 2)

    def sly():
        try:
            return x.softmax(1)
        except Exception:       # noqa: BLE001 - the student hides the refusal
            return x.exp() / x.exp().sum(1, keepdim=True)

    for forbid, name in (("torch.softmax", "torch.Tensor.softmax"), ("torch.Tensor.softmax", "torch.Tensor.softmax")):
        with pytest.raises(ReferenceUsedError, match=name):      # the mode's refusal, and the name's own
            with grading.guard(forbid):
                sly()


def test_nested_guards_each_keep_their_routines_forbidden():
    x = torch.randn(2, 2)
    for call, label in ((lambda: x.softmax(1), "inner"), (lambda: x @ x, "outer")):
        with pytest.raises(ReferenceUsedError, match=label):
            with grading.guard("torch.matmul", label="outer"), grading.guard("torch.softmax", label="inner"):
                call()
    assert x.softmax(1).shape == (2, 2) and (x @ x).shape == (2, 2)


def test_the_guard_leaves_torchs_mode_stack_as_it_found_it():
    """The guard pops down to the depth it found: a mode the code pushed and left goes too, and a
    mode the code popped (the guard's own) does not cost an outer guard its mode."""
    from torch.overrides import TorchFunctionMode, _pop_mode

    class Theirs(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    x = torch.randn(2, 2)
    depth = torch._C._len_torch_function_stack()
    with grading.guard("torch.softmax", label="softmax"):
        Theirs().__enter__()                 # pushed by the code under the guard and never left
    assert torch._C._len_torch_function_stack() == depth
    with pytest.raises(ReferenceUsedError, match="outer"):
        with grading.guard("torch.matmul", label="outer"):
            with grading.guard("torch.softmax", label="inner"):
                _pop_mode()                  # the code pops the inner guard's mode
            x @ x                            # the outer guard's is still there
    assert torch._C._len_torch_function_stack() == depth
    assert (x @ x).shape == (2, 2)


def test_the_profile_hook_runs_only_when_something_needs_it():
    """The hook costs time on every call (about 3x on the Triton interpreter); a torch routine is
    caught without it, a numpy routine, a class's __init__ and a reference's function underneath need it."""
    inside = {}
    for name, forbid in {"torch": ["torch.softmax", "torch.nn.functional.conv2d"], "numpy": ["numpy.einsum"],
                         "class": ["torch.nn.LSTM"], "reference": [_ref_square],
                         "C type": ["numpy.float16"], "torch's private operators": ["torch._int_mm", "torch._C._nn.im2col"]
                         }.items():
        with grading.guard(*forbid):
            inside[name] = sys.getprofile() is not None
    assert inside == {"torch": False, "numpy": True, "class": True, "reference": True, "C type": False,
                      "torch's private operators": False}
    assert sys.getprofile() is None


def test_guard_catches_a_class_imported_early_through_its_init():
    from torch.nn import LSTM as early_lstm

    with pytest.raises(ReferenceUsedError, match="torch.nn.LSTM"):
        grading.call_student(lambda: early_lstm(4, 4), forbid=["torch.nn.LSTM"])
    assert early_lstm(4, 4).hidden_size == 4


def test_guard_rejects_unknown_things():
    with pytest.raises(TypeError):
        with grading.guard(len):
            pass
    with pytest.raises(AttributeError):                  # a slip in a check's list, in an installed library
        with grading.guard("numpy.no_such_routine"):
            pass


def test_guard_passes_over_a_library_that_is_not_installed():
    """A check may forbid SciPy's softmax where SciPy is installed; where it is not, nothing can call it."""
    with grading.guard("no_such_library_gpudl.softmax", "torch.softmax", label="softmax"):
        assert torch.ones(2).sum() == 2
    with pytest.raises(ReferenceUsedError):
        grading.call_student(lambda: torch.ones(2).softmax(0), forbid=["no_such_library_gpudl.softmax",
                                                                         "torch.softmax"])


def test_lab07_refuses_softmin_of_minus_x():
    from gpudl.grading import lab07

    with pytest.raises(GradingError, match="softmin"):
        lab07.softmax(lambda s, axis=-1: torch.nn.functional.softmin(-torch.from_numpy(s), axis).numpy())


def _torch_naive_attention(q, k, v, block, causal=False):
    """tiled_attention's interface, computed the naive way in torch (no forbidden routine: the
    whole (Lq, Lk) score matrix at once, softmax written out)."""
    q, k, v = (torch.from_numpy(x) for x in (q, k, v))
    s = q @ k.T / q.shape[1] ** 0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape, dtype=torch.bool).triu(1), float("-inf"))
    p = (s - s.amax(1, keepdim=True)).exp()
    return (p / p.sum(1, keepdim=True) @ v).numpy()


def test_lab07_tiled_attention_sees_a_torch_score_matrix():
    """The memory check sees torch's tensors too (tracemalloc alone does not): naive attention in
    torch passes the small cases, then fails the check at L = 1024."""
    from gpudl.grading import lab07

    with pytest.raises(GradingError, match="full score matrix"):
        lab07.tiled_attention(_torch_naive_attention)


def _in_a_pool(*args, **kwargs):
    """``_torch_naive_attention`` in a thread of a ``ThreadPoolExecutor``."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_torch_naive_attention, *args, **kwargs).result()


def test_a_thread_under_the_guards_mode_ends_without_crashing():
    """A thread started under a guard that watches torch carries the guard's mode; the mode is
    popped as the thread's Python state is cleared. Left to torch's thread-local teardown, which
    runs without the GIL, it crashed the process while the main thread ran Python (6 runs of
    6 before the fix)."""
    script = textwrap.dedent('''
        import torch
        from gpudl.grading import lab07
    ''') + inspect.getsource(_torch_naive_attention) + inspect.getsource(_in_a_pool) + textwrap.dedent('''
        for _ in range(10):
            try:
                lab07.tiled_attention(_in_a_pool)
            except Exception:
                pass
        print("done")
    ''')
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr[-2000:]


def test_lab07_tiled_attention_sees_a_torch_score_matrix_made_in_a_thread():
    """The memory check's watch reaches the threads the student's code starts: the guard's own
    mode, which those threads get, hands it torch's tensors (one mode per thread)."""
    from gpudl.grading import lab07

    with pytest.raises(GradingError, match="full score matrix"):
        lab07.tiled_attention(_in_a_pool)


@pytest.mark.parametrize("fmt, cast", [
    ("bf16", lambda x: torch.tensor(x, dtype=torch.bfloat16)),
    ("bf16", lambda x: torch.empty(x.shape, dtype=torch.int16).view(torch.bfloat16).copy_(torch.from_numpy(x))),
    ("fp16", lambda x: torch.as_tensor(x, dtype=torch.float16)),
], ids=["torch.tensor(dtype=)", "copy_ into a view", "torch.as_tensor(dtype=)"])
def test_lab08_rounding_refuses_torchs_casts_under_any_name(fmt, cast):
    """Rounding to BF16 or FP16 is checked against torch's cast: any torch function that makes a
    tensor of the format is refused (the guard's list names only some casts), even when the code
    catches the refusal and answers some other way."""
    from gpudl.grading import lab08

    check = lab08.round_to_bf16 if fmt == "bf16" else lab08.round_to_fp16

    def rounded(x):
        return cast(x).view(torch.int16).numpy().view(np.uint16)

    def caught(x):
        try:
            return rounded(x)
        except Exception:
            return np.zeros(x.shape, np.uint16)

    def threaded(x):
        return _in_a_thread(caught, x)

    for fn in (rounded, caught, threaded):
        with pytest.raises(ReferenceUsedError, match=f"makes a torch.{'bfloat16' if fmt == 'bf16' else 'float16'}"):
            check(fn)


def test_guard_refuses_making_a_tensor_of_a_named_dtype_and_leaves_the_name():
    """A torch dtype in the guard's list: any torch function that returns a tensor of it is
    refused (a factory, a cast, a view), the dtype itself stays usable (it is not replaced), and
    tensors of other dtypes pass."""
    bf16 = torch.bfloat16
    for make in (lambda: torch.zeros(2, dtype=torch.bfloat16), lambda: torch.ones(2).to(bf16),
                 lambda: torch.ones(2, dtype=torch.int16).view(bf16)):
        with pytest.raises(ReferenceUsedError, match="makes a torch.bfloat16 tensor"):
            with grading.guard("torch.bfloat16", label="this check"):
                make()
    with grading.guard("torch.bfloat16"):
        assert torch.bfloat16 is bf16
        assert torch.zeros(2, dtype=torch.float16).dtype == torch.float16
    assert torch.zeros(2, dtype=bf16).dtype == bf16          # after the block, as before


# --- running student code -------------------------------------------------------------

def test_call_student_is_quiet_and_explains_failures(capfd):
    def noisy(x):
        print("hello")
        print("oops", file=sys.stderr)
        warnings.warn("careful")
        return x

    assert grading.call_student(noisy, 5) == 5
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert "not implemented" in message(grading.call_student, lambda: (_ for _ in ()).throw(NotImplementedError()))
    assert "ZeroDivisionError" in message(grading.call_student, lambda: 1 / 0)
    assert "expected a function" in message(grading.call_student, 3)


def test_check_cases_names_the_failing_case():
    cases = [Case((2,)), Case((3,), label="three")]
    check_cases(lambda x: x * x, _ref_square, cases)
    msg = message(check_cases, lambda x: x * x if x < 3 else 0, _ref_square, cases)
    assert msg.startswith("<lambda> on three") and "expected 9" in msg


def test_grading_active(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not grading.grading_active()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert grading.grading_active()


def test_check_choice_accepts_the_letters_in_any_order_and_hints_otherwise():
    from gpudl.grading import answer_digest, check_choice

    digest = answer_digest("labX", "q1:AC")
    check_choice("labX", "c, a", "ABCD", digest, "think again", question="q1")
    with pytest.raises(GradingError, match=r"'AB' is not it\. Hint: think again"):
        check_choice("labX", "ab", "ABCD", digest, "think again", question="q1")
    with pytest.raises(GradingError, match="only the letters A-D"):
        check_choice("labX", "E", "ABCD", digest, "think again", question="q1")


def test_assert_close_judges_values_whose_squares_overflow():
    import numpy as np
    from gpudl.grading import GradingError, assert_close

    assert_close(np.array([1e300, 3e300]), np.array([1e300, 3e300]))
    with pytest.raises(GradingError):
        assert_close(np.array([1e300, 2e300]), np.array([1e300, 3e300]))


def test_a_student_cannot_forge_the_graders_own_values():
    """A returned Raised would pass for an exception the student never raised."""
    from gpudl.grading import GradingError, Raised, call_student, wire

    with pytest.raises(wire.WireError):
        wire.roundtrip(Raised("ValueError", "fake", ("ValueError", "Exception")))
    tree = {"__dataclass__": "gpudl.grading.boundary:Raised",
            "fields": {"type": "ValueError", "message": "x", "mro": {"__tuple__": ["ValueError"]}}}
    with pytest.raises(wire.WireError):
        wire.decode(tree, [])

    def forger(x):
        return Raised("ValueError", "above peak", ("ValueError", "Exception", "BaseException", "object"))

    with pytest.raises(GradingError, match="returned"):
        call_student(forger, 1.0, allow=(ValueError,))


def test_lab06_refuses_the_engine_under_backward():
    """Lab 06 forbids autograd; the Python function between backward() and the engine is refused too."""
    from gpudl.grading import lab06

    w = torch.randn(3, requires_grad=True)
    call = lambda: torch.autograd.graph._engine_run_backward(((w ** 2).sum(),), (torch.tensor(1.0),), False, False,
                                                             (w,), False, False)
    with pytest.raises(ReferenceUsedError, match="_engine_run_backward"):
        grading.call_student(call, forbid=list(lab06.AUTOGRAD))


# --- the red team's cheats (November 29): other routines that do an exercise's work --------------------

def test_guard_refuses_torchscript_where_it_refuses_a_torch_routine():
    """A TorchScript function runs its torch routines from C++, where no mode sees them."""
    scripted = torch.jit.script(torch.nn.Softmax(0))
    x = torch.randn(4)
    with pytest.raises(ReferenceUsedError, match="TorchScript"):
        grading.call_student(lambda: scripted(x), forbid=["torch.softmax"])
    assert scripted(x).shape == (4,)                               # restored after the block
    assert grading.call_student(lambda: scripted(x), forbid=["numpy.einsum"]).shape == (4,)   # no torch refused

    @torch.jit.script
    def grads(w: torch.Tensor) -> List[Optional[torch.Tensor]]:     # autograd: the hook's, not a mode's
        return torch.autograd.grad([(w ** 2).sum()], [w])

    with pytest.raises(ReferenceUsedError, match="TorchScript"):
        grading.call_student(lambda: grads(torch.ones(3, requires_grad=True)), forbid=["torch.autograd.grad"])


def _mp_start(method):
    """Start (and join) a process of multiprocessing's ``method`` running ``os.getpid``."""
    import multiprocessing
    import os

    def start():
        if method == "forkserver":
            # A forkserver already running (the grading pipeline's, started earlier in this test process)
            # forks the worker itself: no process starts here, as with any server started before a check
            # (which the sandbox's check for other live processes refuses). Stopped, the start is this one's.
            from multiprocessing import forkserver
            forkserver._forkserver._stop()
        worker = multiprocessing.get_context(method).Process(target=os.getpid)
        worker.start()
        worker.join()
    return start


def _launch_one():
    from gpudl.collectives import launch

    return launch(_rank_plus_one, 1, echo=False)


def _rank_plus_one(rank, world_size):
    return rank + 1


_STARTS = {"subprocess.run": lambda: subprocess.run(["true"], check=True),
           "os.system": lambda: __import__("os").system("true"),
           "os.popen": lambda: __import__("os").popen("true").read(),
           "multiprocessing fork": _mp_start("fork"),
           "multiprocessing spawn": _mp_start("spawn"),
           "multiprocessing forkserver": _mp_start("forkserver"),
           "os.system as a thread's target": lambda: _in_a_thread(__import__("os").system, "true"),
           "gpudl.collectives.launch": _launch_one}


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")   # the thread's refusal
@pytest.mark.parametrize("start", list(_STARTS.values()), ids=list(_STARTS))
def test_guard_refuses_starting_another_process(start):
    """A child process would run any forbidden routine unwatched: while a guard is open, the code it
    watches may not start one, by any of Python's ways or the package's launcher, even when it
    catches the refusal; outside a guard the same call works."""
    with pytest.raises(ReferenceUsedError, match="starts another process"):
        with grading.guard(label="this check"):
            start()

    def caught():
        try:
            start()
        except ReferenceUsedError:
            pass

    with pytest.raises(ReferenceUsedError, match="starts another process"):
        with grading.guard(label="this check"):
            caught()
    start()


def test_every_lab_says_its_checks_refuse_a_process_and_every_check_does():
    """Each lab's "How this lab is graded" names the rule, and the one door every check calls
    student code through (``boundary.execute``) enforces it with nothing else forbidden."""
    from pathlib import Path

    import nbformat

    from gpudl.grading import boundary

    root = Path(__file__).resolve().parents[1]
    labs = sorted(root.glob("labs/lab*/lab*.ipynb"))
    assert len(labs) == 10
    for lab in labs:
        intro = nbformat.read(str(lab), as_version=4).cells[0].source
        graded = intro[intro.index("**How this lab is graded"):]
        assert "start a process of its own" in graded and "subprocess" in graded, f"{lab.name} does not say it"
    outcome = boundary.execute(_STARTS["subprocess.run"], None, (), {}, [], "this exercise")
    assert outcome.raised and outcome.raised.isa(ReferenceUsedError), outcome
    assert "starts another process" in outcome.raised.message
    assert boundary.execute(len, None, ("abc",), {}, [], "this exercise").value == 3


def test_the_packages_sanitizer_refuses_a_caller_under_a_guard(monkeypatch):
    """``gpudl.cuda_model.sanitize`` runs the kernel it is given in another process, as
    ``launch`` runs a function: under a guard only the package's own checks may call it."""
    from gpudl.cuda_model import device

    with pytest.raises(ReferenceUsedError, match=r"starts another process \(gpudl.cuda_model.sanitize\)"):
        with grading.guard(label="this check"):
            device.sanitize(None, 1, 1, [])
    monkeypatch.setattr(device, "sanitizer_path", lambda: None)
    assert [r.ran for r in device.sanitize(None, 1, 1, [])] == [False, False]


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="no /proc here")
def test_a_students_own_kernel_refuses_a_check_while_a_process_it_started_lives():
    """The visible tests, in the student's own Jupyter kernel (no sandbox), keep the rule the graded
    run keeps: a process the kernel started and left running makes a check refuse, so a student
    sees it before handing in."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        msg_id = kc.execute(GUARD_BESIDE_A_CHILD)
        printed = []
        while True:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                printed.append("\n".join(msg["content"]["traceback"]))
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert "".join(printed).splitlines() == ["alone ran", "child refused True", "ended ran"], printed


def test_guard_lets_only_the_listed_libraries_start_a_process(monkeypatch):
    """A library that runs any command it is given (IPython's getoutput) is refused as the student's
    code is; a package on the list (Triton runs ptxas, torch its compilers) may start one."""
    from IPython.utils.process import getoutput

    from gpudl.grading import forbidden

    with pytest.raises(ReferenceUsedError, match="starts another process"):
        with grading.guard():
            getoutput("echo hello")
    monkeypatch.setattr(forbidden, "_PROCESS_STARTERS", forbidden._PROCESS_STARTERS | {"IPython"})
    with grading.guard():
        assert getoutput("echo hello").strip() == "hello"


def test_guard_judges_who_starts_a_process_by_a_real_file():
    """Code compiled under a made-up file name inside torch's folder is not torch's."""
    import os

    fake = os.path.join(os.path.dirname(torch.__file__), "not_a_file_of_torch.py")
    code = compile("import os\nos.system('true')\n", fake, "exec")
    with pytest.raises(ReferenceUsedError, match="starts another process"):
        with grading.guard():
            exec(code, {})


def test_lab07_softmax_computed_by_a_child_python_is_refused():
    """The whole cheat: torch.softmax in a child Python, the array through pipes."""
    from gpudl.grading import lab07

    def softmax(x, axis=-1):
        import pickle

        code = ("import pickle, sys, torch; x, axis = pickle.load(sys.stdin.buffer); "
                "pickle.dump(torch.softmax(torch.from_numpy(x), axis).numpy(), sys.stdout.buffer)")
        child = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((np.asarray(x), axis)),
                               capture_output=True, check=True)
        return pickle.loads(child.stdout)

    with pytest.raises(ReferenceUsedError, match=r"starts another process \(subprocess.Popen\)"):
        lab07.softmax(softmax)


def test_guard_refuses_a_routine_of_the_same_name_elsewhere_in_torch():
    """torch.ops.aten.softmax.int under torch.softmax, and _amp_update_scale, the out-of-place twin of the
    _amp_update_scale_ lab08 forbids; lab07 names torch.sparse.softmax (another name) itself."""
    from gpudl.grading import lab07, lab08

    x = torch.randn(3, 4)
    with pytest.raises(ReferenceUsedError, match="softmax"):
        grading.call_student(lambda: torch.ops.aten.softmax.int(x, 1), forbid=["torch.softmax"])
    with pytest.raises(ReferenceUsedError, match="softmax"):
        grading.call_student(lambda: torch.sparse.softmax(x.to_sparse(), 1).to_dense(), forbid=lab07._LIBRARY_SOFTMAX)
    update = lambda: torch.ops.aten._amp_update_scale(torch.ones(1), torch.zeros(1, dtype=torch.int32),  # noqa: E731
                                                      torch.zeros(1), 2.0, 0.5, 10)
    with pytest.raises(ReferenceUsedError, match="_amp_update_scale"):
        grading.call_student(update, forbid=lab08._SCALER_FORBID)


@pytest.mark.parametrize("lab, forbid, call", [
    ("lab06", "AUTOGRAD", lambda: torch.func.jacfwd(lambda w: (w ** 2).sum())(torch.ones(3))),
    ("lab07", "_TORCH_ATTENTION", lambda: torch._scaled_dot_product_attention_math(*[torch.ones(1, 2, 4)] * 3)),
    ("lab07", "_TORCH_ATTENTION", lambda: __import__("torch.nn.attention.flex_attention", fromlist=["x"])
        .flex_attention(*[torch.ones(1, 1, 8, 16)] * 3)),
    ("lab09", "_FOLD_FORBID", lambda: torch.nn.utils.fusion.fuse_linear_bn_weights(
        torch.ones(2, 3), torch.ones(2), torch.zeros(2), torch.ones(2), 1e-5, torch.ones(2), torch.zeros(2))),
    ("lab09", "_QUANTIZE_FORBID", lambda: __import__("torch.ao.quantization.fx._decomposed", fromlist=["x"])
        .quantize_per_tensor(torch.ones(3), 0.1, 0, -127, 127, torch.int8)),
    ("lab10", "_TORCH_COLLECTIVES", lambda: __import__("torch.distributed._functional_collectives", fromlist=["x"])
        .all_reduce(torch.ones(3), "sum", [0])),
])
def test_lab_lists_refuse_the_red_teams_neighbours(lab, forbid, call):
    """Each a routine that does the exercise's work under a name the lab did not list before. (flex_attention
    runs its operator under torch.compile, which turns the refusal into an error of its own: the call fails
    all the same, naming the operator.)"""
    import importlib

    names = list(getattr(importlib.import_module(f"gpudl.grading.{lab}"), forbid))
    with pytest.raises((ReferenceUsedError, GradingError), match="asks you to do without"):
        grading.call_student(call, forbid=names)


def test_lab05_refuses_numpys_windows_correlation_and_torchs_fft():
    from gpudl.grading import lab05

    def im2col(x, r, s, pad, stride, dilation=1):
        n, c, h, w = x.shape
        xp = np.pad(x.numpy(), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        win = np.lib.stride_tricks.sliding_window_view(xp, ((r - 1) * dilation + 1, (s - 1) * dilation + 1),
                                                       axis=(2, 3))[:, :, ::stride, ::stride, ::dilation, ::dilation]
        p, q = win.shape[2:4]
        return torch.from_numpy(np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * r * s, p * q))

    def winograd_conv(x, w):
        n, c, h, wd = x.shape
        X, W = torch.fft.rfft2(x), torch.fft.rfft2(w.flip(-2, -1), s=(h, wd))
        return torch.fft.irfft2(torch.einsum("ncab,kcab->nkab", X, W), s=(h, wd))[:, :, 2:, 2:]

    for check, cheat, routine in ((lab05.im2col, im2col, "sliding_window_view"),
                                  (lab05.winograd_f23, lambda d, g: torch.from_numpy(
                                      np.correlate(d.numpy(), g.numpy(), mode="valid")), "correlate"),
                                  (lab05.winograd_conv, winograd_conv, "rfft2")):
        with pytest.raises(GradingError, match=routine):
            if check is lab05.winograd_f23:                  # the lab's transforms, as its cell passes them
                bt = torch.tensor([[1.0, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=torch.float64)
                gm = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=torch.float64)
                at = torch.tensor([[1.0, 1, 1, 0], [0, 1, -1, -1]], dtype=torch.float64)
                check(cheat, bt, gm, at)
            else:
                check(cheat)


@pytest.mark.parametrize("cheat", ["vecdot", "course"])
def test_lab03_batched_refuses_numpys_vecdot_and_the_courses_own_batched_call(cheat):
    from gpudl import gemm
    from gpudl.grading import lab03

    def batched(A, B):
        if cheat == "vecdot":
            return np.vecdot(A[:, :, None, :], np.swapaxes(B, 1, 2)[:, None, :, :])
        return gemm.gemm_batched(np.asarray(A), np.asarray(B))

    with pytest.raises(GradingError, match="vecdot" if cheat == "vecdot" else "gemm_batched"):
        lab03.batched(batched)


def test_lab02_timer_refuses_the_standard_librarys_timers():
    import statistics
    import timeit

    from gpudl.grading import lab02

    def cpu_timer(fn, warmup=1, repeats=5):
        return statistics.median(timeit.repeat(fn, number=1, repeat=repeats))

    with pytest.raises(GradingError, match="timeit.repeat"):
        lab02.cpu_timer(cpu_timer)


def test_lab10_workers_guard_the_functional_collectives():
    """torch.distributed.NAME is blocked by lab10's own _without; the functional collectives, one module
    further down, must reach the workers' guard (they never pass through torch.distributed.NAME)."""
    from gpudl.grading import lab10

    guarded = lab10._resolve(list(lab10._TORCH_COLLECTIVES))
    assert "torch.distributed._functional_collectives.all_reduce" in guarded
    assert "torch.distributed.all_reduce" not in guarded
