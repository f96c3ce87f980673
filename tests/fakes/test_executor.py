"""fp16 execution: within fp16 noise of the float32 golden without faults, wrong from op K with one."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dumpcmp.errors import ConfigError, ModelError
from dumpcmp.fakes.executor import Executor
from dumpcmp.fakes.faults import Fault, FaultKind, FaultPlan, apply_fault

ZOO = ("small_cnn", "transformer_block", "resnet", "transformer")


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("model", ZOO)
def test_without_faults_every_op_is_within_fp16_noise_of_golden(
    zoo_case: Callable[..., Any], cos: Callable[..., float], model: str, fusion: bool
) -> None:
    case = zoo_case(model, fusion)
    execution = Executor(case.compiled).run(case.inputs)
    compared = 0
    for run in execution.runs:
        assert all(v.dtype != np.float32 for v in run.outputs if run.op.type != "Cast"), run.op.name
        for value, out in zip(run.outputs, run.op.outputs, strict=True):
            if out.origin_name:
                score = cos(value, case.golden.of(out.origin_name, out.origin_index))
                assert score >= 0.999, (run.op.name, score)
                compared += 1
    assert compared == sum(len(r.op.outputs) for r in execution.runs)
    assert cos(execution.outputs[0], case.golden.value(case.compiled.outputs[0].name)) >= 0.9999


# One fault per kind, at ops of different shapes: inside a fused op, one-to-one ops, matmuls.
FAULT_CASES = [
    ("small_cnn", "/stem/bn/BatchNormalization", "bias:1"),
    ("small_cnn", "/block1.dw/act/Relu", "noise:0.2"),
    ("small_cnn", "/block2/Add", "nan"),
    ("small_cnn", "/block3/pool/AveragePool", "inf:0.05"),
    ("small_cnn", "/block1.pw/conv/Conv", "overflow"),
    ("small_cnn", "/block2.gconv/act/Relu", "layout"),
    ("small_cnn", "/block2/act/Relu", "drop"),
    ("transformer_block", "/attn.k_proj/Add", "bias:0.5"),
    ("transformer_block", "/attn/Softmax", "layout"),
    ("transformer_block", "/mlp/act/Erf", "drop"),
    ("transformer_block", "/ln2/LayerNormalization", "noise:0.1"),
    ("transformer_block", "/mlp.fc2/MatMul", "overflow"),
]


@pytest.mark.parametrize(("model", "op", "fault"), FAULT_CASES, ids=[f"{c[2]}@{c[1]}" for c in FAULT_CASES])
def test_the_first_bad_op_is_the_one_holding_the_fault(
    zoo_case: Callable[..., Any], first_bad: Callable[..., str | None], model: str, op: str, fault: str
) -> None:
    case = zoo_case(model)
    executor = Executor(case.compiled, FaultPlan.parse([f"{op}={fault}"], seed=5))
    target = executor.fault_ops()[op]
    assert target == case.compiled.containing(op).name  # type: ignore[union-attr]
    assert first_bad(executor.run(case.inputs), case.golden) == target


def test_faults_propagate_downstream(zoo_case: Callable[..., Any]) -> None:
    case = zoo_case("small_cnn")
    executor = Executor(case.compiled, FaultPlan.parse(["/block2/Add=bias:3"]))
    execution = executor.run(case.inputs)
    add = execution.run_of("/block2/Add")
    relu = execution.run_of("/block2/act/Relu")
    assert np.array_equal(relu.inputs[0], add.outputs[0])  # the next op reads the faulty tensor
    clean = Executor(case.compiled).run(case.inputs)
    assert not np.allclose(execution.outputs[0], clean.outputs[0])


def test_faults_are_deterministic_per_seed(zoo_case: Callable[..., Any]) -> None:
    case = zoo_case("small_cnn")

    def output(seed: int) -> np.ndarray:
        return (
            Executor(case.compiled, FaultPlan.parse(["/stem/act/Relu=noise:0.5"], seed))
            .run(case.inputs)
            .outputs[0]
        )

    assert np.array_equal(output(1), output(1))
    assert not np.array_equal(output(1), output(2))


def test_overflow_becomes_inf_in_fp16_and_nan_marks_elements() -> None:
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(4, 16)
    with np.errstate(over="ignore"):
        over = apply_fault(Fault("k", FaultKind.OVERFLOW), x, None, seed=0, step=0).astype(np.float16)
    assert np.isinf(over).any()
    nan = apply_fault(Fault("k", FaultKind.NAN, 0.25), x, None, seed=0, step=0)
    assert np.isnan(nan).sum() == 16
    layout = apply_fault(Fault("k", FaultKind.LAYOUT), x.reshape(1, 4, 4, 4), None, seed=0, step=0)
    assert not np.array_equal(layout, x.reshape(1, 4, 4, 4))
    assert np.array_equal(np.sort(layout, axis=None), np.sort(x, axis=None))  # same values, moved channels
    assert np.array_equal(apply_fault(Fault("k", FaultKind.DROP), x, x * 2, seed=0, step=0), x * 2)
    assert not apply_fault(Fault("k", FaultKind.DROP), x, x[:1], seed=0, step=0).any()


def test_scale_multiplies_every_element_by_its_amount() -> None:
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(4, 16)
    assert Fault.parse("/l/Add=scale") == Fault("/l/Add", FaultKind.SCALE)
    assert Fault.parse("/l/Add=Scale:0.25") == Fault("/l/Add", FaultKind.SCALE, 0.25)
    assert str(Fault.parse("/l/Add=scale:0.25")) == "/l/Add=scale:0.25"
    scaled = apply_fault(Fault.parse("k=scale"), x, None, seed=0, step=0)
    assert np.array_equal(scaled, x * np.float32(1.5))  # the default amount
    assert np.array_equal(apply_fault(Fault.parse("k=scale:-2"), x, None, seed=0, step=0), x * -2)
    assert np.array_equal(x, np.linspace(-2, 2, 64, dtype=np.float32).reshape(4, 16))  # not in place
    with pytest.raises(ConfigError, match="amount 'big' is not a number"):
        Fault.parse("k=scale:big")


def test_fault_specs_parse_and_reject() -> None:
    assert Fault.parse("/a/b=c:d=noise:0.5") == Fault("/a/b=c:d", FaultKind.NOISE, 0.5)
    assert str(Fault.parse("conv1=nan")) == "conv1=nan"
    for bad in ("conv1", "conv1=melt", "conv1=bias:lots", "=bias"):
        with pytest.raises(ConfigError):
            Fault.parse(bad)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("k=noise:-1", "noise takes its size in units of the tensor's std: above 0"),
        ("k=noise:0", "above 0"),
        ("k=bias:nan", "bias takes a finite number"),
        ("k=bias:1e400", "bias takes a finite number"),
        ("k=scale:1e39", "within ±3.403e+38 (float32)"),  # finite, but inf once float32
        ("k=overflow:-5", "overflow takes the factor the output is scaled by, above 1"),
        ("k=overflow:0.5", "above 1"),
        ("k=nan:2", "nan takes a fraction of the elements in [0, 1]"),
        ("k=inf:-0.1", "inf takes a fraction"),
        ("k=drop:2", "drop takes no amount"),
        ("k=layout:7", "layout takes no amount"),
    ],
)
def test_an_amount_out_of_its_kinds_range_is_refused_naming_the_range(spec: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"fault {spec!r}: ") + ".*" + re.escape(says)):
        Fault.parse(spec)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("k=bias:0", "bias 0 injects nothing: it adds 0 to every element; give an amount that does, "
         "e.g. k=bias:0.5"),
        ("k=bias:-0.0", "bias -0.0 injects nothing"),
        ("k=bias:1e-50", "bias 1e-50 injects nothing (it is 0 as float32)"),
        ("k=scale:1", "scale 1 injects nothing: it multiplies every element by 1; give an amount that "
         "does, e.g. k=scale:1.5"),
        ("k=scale:1.00000001", "scale 1.00000001 injects nothing (it is 1 as float32)"),
        ("k=noise:1e-50", "noise 1e-50 injects nothing (it is 0 as float32): it adds noise of size 0; "
         "give an amount that does, e.g. k=noise:0.1"),
        ("k=overflow:1.00000001", "overflow 1.00000001 injects nothing (it is 1 as float32): it scales "
         "the output by 1; give an amount that does, e.g. k=overflow:100"),
    ],
)  # fmt: skip
def test_an_amount_that_injects_nothing_is_refused_with_one_that_does(spec: str, says: str) -> None:
    # bias:0 and scale:1 ran, and the comparison's "all clear" read as the fault going unnoticed.
    with pytest.raises(ConfigError, match=re.escape(f"fault {spec!r}: {says}")):
        Fault.parse(spec)


@pytest.mark.parametrize(
    "spec",
    [
        "k=nan:0",
        "k=inf:1",
        "k=bias:-3",
        "k=scale:0",
        "k=scale:-1",
        "k=overflow:100",
        "k=drop",
        "k=noise:1e-06",
    ],
)
def test_amounts_within_their_kinds_range_are_taken(spec: str) -> None:
    assert str(Fault.parse(spec)) == spec


def test_a_fault_at_an_unknown_op_is_a_model_error(zoo_case: Callable[..., Any]) -> None:
    with pytest.raises(ModelError, match="cannot inject a fault at 'nope'"):
        Executor(zoo_case("small_cnn").compiled, FaultPlan.parse(["nope=bias"]))


def test_wrong_inputs_are_model_errors(zoo_case: Callable[..., Any]) -> None:
    executor = Executor(zoo_case("small_cnn").compiled)
    with pytest.raises(ModelError, match="takes 1 input"):
        executor.run([])
    with pytest.raises(ModelError, match="has shape"):
        executor.run([np.zeros((1, 3, 8, 8), np.float32)])
