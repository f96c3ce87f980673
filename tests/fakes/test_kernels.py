"""Every numpy kernel against onnx's ReferenceEvaluator, on float32 inputs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from dumpcmp.fakes.kernels import KERNELS, erf
from dumpcmp.fakes.onnx_model import SUPPORTED_OPS

RNG = np.random.default_rng(7)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# (op, inputs, attrs, opset); constant inputs are given as arrays like the others.
CASES = [
    ("Conv", [_x(1, 3, 7, 6), _x(5, 3, 3, 3), _x(5)], {"pads": [1, 1, 1, 1]}, 17),
    ("Conv", [_x(2, 4, 9, 9), _x(6, 2, 3, 2)], {"group": 2, "strides": [2, 1], "dilations": [1, 2]}, 17),
    ("Conv", [_x(1, 6, 8, 8), _x(6, 1, 3, 3)], {"group": 6, "auto_pad": "SAME_UPPER"}, 17),
    ("Conv", [_x(1, 4, 10), _x(3, 4, 3)], {"pads": [2, 0]}, 17),
    ("BatchNormalization", [_x(2, 3, 4, 4), _x(3), _x(3), _x(3), np.abs(_x(3)) + 0.5], {"epsilon": 1e-3}, 15),
    ("Relu", [_x(3, 4)], {}, 17),
    ("LeakyRelu", [_x(3, 4)], {"alpha": 0.2}, 17),
    ("Sigmoid", [_x(3, 4)], {}, 17),
    ("Tanh", [_x(3, 4)], {}, 17),
    ("Gelu", [_x(3, 4)], {}, 20),
    ("Gelu", [_x(3, 4)], {"approximate": "tanh"}, 20),
    ("Erf", [_x(5, 7)], {}, 17),
    ("Sqrt", [np.abs(_x(3, 4))], {}, 17),
    ("Gemm", [_x(3, 5), _x(4, 5), _x(4)], {"transB": 1, "alpha": 0.5, "beta": 2.0}, 17),
    ("Gemm", [_x(5, 3), _x(5, 4)], {"transA": 1}, 17),
    ("MatMul", [_x(2, 3, 4, 5), _x(2, 3, 5, 6)], {}, 17),
    ("Add", [_x(2, 3, 4), _x(4)], {}, 17),
    ("Sub", [_x(2, 3), _x(2, 3)], {}, 17),
    ("Mul", [_x(2, 3), _x(1, 3)], {}, 17),
    ("Div", [_x(2, 3), np.abs(_x(2, 3)) + 1], {}, 17),
    ("Pow", [np.abs(_x(2, 3)), np.array(2.0, np.float32)], {}, 17),
    ("MaxPool", [_x(1, 2, 7, 7)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 17),
    ("MaxPool", [_x(1, 2, 6, 6)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, 17),
    ("MaxPool", [_x(1, 2, 8, 8)], {"kernel_shape": [2, 2], "dilations": [2, 2]}, 17),
    ("AveragePool", [_x(1, 2, 7, 7)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 17),
    (
        "AveragePool",
        [_x(1, 2, 7, 7)],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
        17,
    ),
    ("AveragePool", [_x(1, 2, 6, 6)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, 17),
    ("GlobalAveragePool", [_x(2, 3, 5, 4)], {}, 17),
    ("Softmax", [_x(2, 3, 5)], {"axis": 1}, 17),
    ("LayerNormalization", [_x(2, 3, 8), _x(8), _x(8)], {"axis": -1, "epsilon": 1e-5}, 17),
    ("ReduceMean", [_x(2, 3, 4)], {"axes": [1], "keepdims": 0}, 17),
    ("ReduceMean", [_x(2, 3, 4), np.array([-1, 0], np.int64)], {}, 18),
    ("Reshape", [_x(2, 3, 4), np.array([0, -1], np.int64)], {}, 17),
    ("Flatten", [_x(2, 3, 4, 5)], {"axis": 2}, 17),
    ("Transpose", [_x(2, 3, 4)], {"perm": [2, 0, 1]}, 17),
    ("Squeeze", [_x(2, 1, 4, 1), np.array([1], np.int64)], {}, 17),
    ("Unsqueeze", [_x(2, 4), np.array([0, -1], np.int64)], {}, 17),
    ("Concat", [_x(2, 3), _x(2, 5)], {"axis": 1}, 17),
    ("Split", [_x(6, 4), np.array([2, 4], np.int64)], {"axis": 0}, 17),
    ("Split", [_x(2, 7)], {"axis": 1, "num_outputs": 3}, 18),
    ("Cast", [_x(3, 4) * 10], {"to": TensorProto.INT32}, 17),
    ("Identity", [_x(3)], {}, 17),
]


def _reference(
    op: str, inputs: list[np.ndarray], attrs: dict[str, object], opset: int, n_out: int
) -> list[np.ndarray]:
    names = [f"in{i}" for i in range(len(inputs))]
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, inputs, strict=True)
        ],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return list(ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True))))


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "opset"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_kernel_matches_reference_evaluator(
    op: str, inputs: list[np.ndarray], attrs: dict[str, object], opset: int
) -> None:
    ours = KERNELS[op](inputs, attrs)
    expected = _reference(op, inputs, attrs, opset, len(ours))
    assert len(ours) == len(expected)
    for got, want in zip(ours, expected, strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-5, atol=2e-5)


def test_every_supported_op_has_a_kernel() -> None:
    assert SUPPORTED_OPS - {"Constant"} == set(KERNELS)


def test_erf_is_accurate_far_below_fp16_resolution() -> None:
    import math

    x = np.linspace(-5, 5, 2001, dtype=np.float32)
    exact = np.array([math.erf(float(v)) for v in x])
    assert np.max(np.abs(erf(x) - exact)) < 2e-7


def test_kernels_compute_fp16_operands_in_float32() -> None:
    a = np.full((1, 4096), 1.0, np.float16)
    b = np.full((4096, 1), 1.0, np.float16)
    (y,) = KERNELS["MatMul"]([a, b], {})
    assert y.dtype == np.float32 and y[0, 0] == 4096.0  # an fp16 accumulator would stop at 2048
