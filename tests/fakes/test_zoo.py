"""The deeper zoo models (resnet, transformer): size after fusion, determinism, sane activations,
and faults that land exactly at their op on every kind of op the models have."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dumpcmp.commands.sim import simulate
from dumpcmp.errors import ModelError
from dumpcmp.fakes.executor import Execution, Executor
from dumpcmp.fakes.faults import FaultKind, FaultPlan
from dumpcmp.fakes.zoo import build, zoo_names

DEEP = ("resnet", "transformer")


@pytest.mark.parametrize("model", DEEP)
def test_a_deep_model_dumps_at_least_100_ops_after_fusion(tmp_path: Path, model: str) -> None:
    result = simulate(f"zoo:{model}", tmp_path)
    dumped = [p for p in result.dump_files if p.parent.name == "0"]  # step 0
    rule = json.loads(result.fusion_rule.read_text(encoding="utf-8"))
    tasks = [op for op in rule["graph"][0]["op"] if op["type"] not in ("Data", "Const", "NetOutput")]
    assert len(dumped) == len(tasks)  # one dump file per op that runs (the default acl.json)
    # Even without GE's inserted trans_ ops (TransData, Cast), the model's own ops are 100 or more.
    assert len([op for op in tasks if not op["name"].startswith("trans_")]) >= 100


@pytest.mark.parametrize("model", DEEP)
def test_the_same_seed_gives_the_same_bytes(model: str) -> None:
    first = build(model, seed=7).SerializeToString()
    assert build(model, seed=7).SerializeToString() == first
    assert build(model, seed=8).SerializeToString() != first


def test_the_zoo_lists_the_deep_models_and_refuses_an_unknown_one() -> None:
    assert set(DEEP) <= set(zoo_names())
    with pytest.raises(ModelError, match="the zoo has small_cnn, transformer_block, resnet, transformer"):
        build("zoo:vgg")


@pytest.mark.parametrize("model", DEEP)
def test_activations_stay_o1_through_the_depth(zoo_case: Callable[..., Any], model: str) -> None:
    """No overflow or vanishing in float16 anywhere, softmaxes neither saturated nor uniform: a
    statistics detector judged on these models is judged on ordinary scales."""
    for tensor in zoo_case(model).golden.tensors:
        data = tensor.array.astype(np.float64)
        assert np.abs(data).max() <= 64, tensor.op_name
        if tensor.op_name.endswith("Softmax"):
            assert 2.0 / data.shape[-1] < data.max() <= 0.95, tensor.op_name
        else:
            assert data.std() >= 0.1, tensor.op_name


_CLEAN: dict[str, Execution] = {}


def clean_run(case: Any) -> Execution:
    """The fault-free run of a zoo case, made once per model."""
    if case.name not in _CLEAN:
        _CLEAN[case.name] = Executor(case.compiled).run(case.inputs)
    return _CLEAN[case.name]


# Early, middle and late ops of each model, on every op type of them, ops that fusion folds into
# another NPU op (BN and ReLU into a Conv, a bias Add into its MatMul, Erf inside the GELU), and
# every kind the hunt's benchmark seeds.
FAULTS = [
    ("resnet", "/stem/bn/BatchNormalization", "bias:0.5"),
    ("resnet", "/layer1/block3/bn1/BatchNormalization", "nan:0"),
    ("resnet", "/layer1/block2/Add", "scale"),
    ("resnet", "/layer3/block1/downsample/bn/BatchNormalization", "overflow"),
    ("resnet", "/layer3/block1/conv2/Conv", "noise:0.2"),
    ("resnet", "/stem/pool/MaxPool", "inf:0"),
    ("resnet", "/layer4/block5/relu/Relu", "bias:0.5"),
    ("resnet", "/head/GlobalAveragePool", "scale:2"),
    ("resnet", "/head/Flatten", "overflow"),
    ("resnet", "/head/fc/Gemm", "noise:0.5"),
    ("resnet", "/head/Softmax", "nan:0"),
    ("transformer", "/layers.0/attn.k_proj/Add", "bias:0.5"),
    ("transformer", "/layers.0/attn/Softmax", "nan:0"),
    ("transformer", "/layers.1/attn/q/Transpose", "scale"),
    ("transformer", "/layers.1/attn/scores/Div", "inf:0"),
    ("transformer", "/layers.2/mlp/act/Erf", "scale:0.5"),
    ("transformer", "/layers.2/ln2/LayerNormalization", "overflow"),
    ("transformer", "/layers.3/attn/context/Reshape", "noise:0.2"),
    ("transformer", "/layers.3/mlp/act/Mul_1", "bias:0.5"),
    ("transformer", "/layers.4/mlp.fc2/MatMul", "overflow"),
    ("transformer", "/proj/Add", "scale:0.5"),
]


@pytest.mark.parametrize(("model", "op", "fault"), FAULTS, ids=[f"{c[2]}@{c[1]}" for c in FAULTS])
def test_a_fault_changes_its_op_and_nothing_before_it(
    zoo_case: Callable[..., Any], model: str, op: str, fault: str
) -> None:
    case = zoo_case(model)
    executor = Executor(case.compiled, FaultPlan.parse([f"{op}={fault}"], seed=2))
    target = executor.fault_ops()[op]
    faulted = executor.run(case.inputs)
    clean = clean_run(case)
    names = [r.op.name for r in clean.runs]
    at = names.index(target)
    for bad, good in zip(faulted.runs[:at], clean.runs[:at], strict=True):
        assert all(np.array_equal(b, g) for b, g in zip(bad.outputs, good.outputs, strict=True)), bad.op.name
    hit, before = faulted.runs[at].outputs[0], clean.runs[at].outputs[0]
    assert not np.array_equal(hit, before, equal_nan=True)
    kind = FaultKind(fault.partition(":")[0])
    if kind in (FaultKind.NAN, FaultKind.INF):  # amount 0: exactly one element
        assert np.count_nonzero(~np.isfinite(hit)) == 1
    if kind is FaultKind.OVERFLOW:  # past float16's range
        assert hit.dtype == np.float16 and np.isinf(hit).any()
    if op == "/proj/Add":  # the last op: the scale is the whole change
        np.testing.assert_allclose(hit.astype(np.float32), before.astype(np.float32) * 0.5, rtol=1e-3)
