"""numpy implementations of the supported ONNX ops, one small function per op.

A kernel takes its inputs (None for an absent optional one) and the node's decoded attributes,
and returns its outputs. Floating inputs are computed in float32 whatever their storage type —
the way a cube unit accumulates fp16 operands in fp32 — and the caller rounds the results to
the device type. ``KERNELS`` is the explicit registry; the tests check every entry against
onnx's ReferenceEvaluator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from onnx import helper

__all__ = ["KERNELS", "Kernel", "erf"]

Array = np.ndarray
Inputs = Sequence[Array | None]
Attrs = Mapping[str, Any]
Kernel = Callable[[Inputs, Attrs], tuple[Array, ...]]


def _f32(x: Array | None) -> Array:
    assert x is not None
    return x.astype(np.float32) if np.issubdtype(x.dtype, np.floating) else x


# --------------------------------------------------------------------------- elementwise


def erf(x: Array) -> Array:
    """Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7, far below fp16 resolution); float32 in and out."""
    x64 = x.astype(np.float64)
    sign = np.sign(x64)
    a = np.abs(x64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _unary(fn: Callable[[Array], Array]) -> Kernel:
    def kernel(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
        return (fn(_f32(inputs[0])),)

    return kernel


def _binary(fn: Callable[[Array, Array], Array]) -> Kernel:
    def kernel(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
        return (np.asarray(fn(_f32(inputs[0]), _f32(inputs[1]))),)

    return kernel


def _div(a: Array, b: Array) -> Array:
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return np.trunc(a / b).astype(a.dtype)  # ONNX integer Div truncates toward zero
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / b


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def _leaky_relu(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    return (np.where(x >= 0, x, x * np.float32(attrs.get("alpha", 0.01))),)


def _gelu(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    if attrs.get("approximate", "none") == "tanh":
        inner = np.float32(math.sqrt(2.0 / math.pi)) * (x + np.float32(0.044715) * x**3)
        return (np.float32(0.5) * x * (1 + np.tanh(inner)),)
    return (np.float32(0.5) * x * (1 + erf(x / np.float32(math.sqrt(2.0)))),)


def _sqrt(x: Array) -> Array:
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


def _pow(a: Array, b: Array) -> Array:
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return np.power(a, b)


def _cast(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(attrs["to"])))
    x = inputs[0]
    assert x is not None
    if np.issubdtype(target, np.integer) and np.issubdtype(x.dtype, np.floating):
        with np.errstate(invalid="ignore"):
            return (np.trunc(x).astype(target),)
    return (x.astype(target),)


# --------------------------------------------------------------------------- convolution and pooling


def _pads(
    attrs: Attrs,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """ONNX pads (begins then ends) with auto_pad resolved."""
    rank = len(spatial)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
            out = -(-size // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
            small, big = total // 2, total - total // 2
            begins.append(small if auto == "SAME_UPPER" else big)
            ends.append(big if auto == "SAME_UPPER" else small)
        return begins + ends
    if auto == "VALID":
        return [0] * (2 * rank)
    return list(attrs.get("pads", [0] * (2 * rank)))


def _windows(
    x: Array, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
) -> Array:
    """A strided view (N, C, *out, *kernel) of the padded input x (N, C, *spatial)."""
    n, c = x.shape[:2]
    sn, sc, *ss = x.strides
    shape = (n, c, *out, *kernel)
    strides_ = (
        sn,
        sc,
        *(st * s for st, s in zip(ss, strides, strict=True)),
        *(st * d for st, d in zip(ss, dilations, strict=True)),
    )
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides_, writeable=False)


def _conv(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x, w = _f32(inputs[0]), _f32(inputs[1])
    bias = inputs[2] if len(inputs) > 2 else None
    spatial = x.shape[2:]
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    rank = len(kernel)
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    group = int(attrs.get("group", 1))
    pads = _pads(attrs, spatial, kernel, strides, dilations)
    padded = np.pad(x, [(0, 0), (0, 0), *zip(pads[:rank], pads[rank:], strict=True)])
    out = [
        (size + pads[i] + pads[i + rank] - (k - 1) * dilations[i] - 1) // strides[i] + 1
        for i, (size, k) in enumerate(zip(spatial, kernel, strict=True))
    ]
    win = _windows(padded, kernel, strides, dilations, out)  # N, C, *out, *k
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    win = win.reshape(n, group, cg, *out, *kernel)
    wg = w.reshape(group, mg, cg, *kernel)
    letters = "hwd"[:rank]
    kl = "ijk"[:rank]
    spec = f"ngc{letters}{kl},gmc{kl}->ngm{letters}"
    y = np.einsum(spec, win, wg, optimize=True).reshape(n, m, *out)
    if bias is not None:
        y = y + _f32(bias).reshape(1, m, *([1] * rank))
    return (y.astype(np.float32),)


def _pool(inputs: Inputs, attrs: Attrs, kind: str) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    spatial = x.shape[2:]
    kernel = list(attrs["kernel_shape"])
    rank = len(kernel)
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = _pads(attrs, spatial, kernel, strides, dilations)
    ceil = bool(attrs.get("ceil_mode", 0))
    out, extra = [], []
    for i, (size, k) in enumerate(zip(spatial, kernel, strict=True)):
        span = size + pads[i] + pads[i + rank] - (k - 1) * dilations[i] - 1
        n_out = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
        if ceil and (n_out - 1) * strides[i] >= size + pads[i]:
            n_out -= 1  # a window may not start in the end padding (PyTorch / onnxruntime rule)
        out.append(n_out)
        extra.append(
            max(0, (n_out - 1) * strides[i] + (k - 1) * dilations[i] + 1 - (size + pads[i] + pads[i + rank]))
        )
    widths = [(0, 0), (0, 0), *((pads[i], pads[i + rank] + extra[i]) for i in range(rank))]
    axes = tuple(range(-rank, 0))
    if kind == "max":
        padded = np.pad(x, widths, constant_values=-np.inf)
        return (_windows(padded, kernel, strides, dilations, out).max(axis=axes),)
    total = _windows(np.pad(x, widths), kernel, strides, dilations, out).sum(axis=axes)
    # The divisor counts real elements, plus the declared padding when count_include_pad is set;
    # the extra end padding ceil_mode adds is never counted.
    if attrs.get("count_include_pad", 0):
        ones = np.ones(
            (1, 1, *(size + pads[i] + pads[i + rank] for i, size in enumerate(spatial))), np.float32
        )
        ones_widths = [(0, 0), (0, 0), *((0, e) for e in extra)]
    else:
        ones, ones_widths = np.ones((1, 1, *spatial), np.float32), widths
    counts = _windows(np.pad(ones, ones_widths), kernel, strides, dilations, out).sum(axis=axes)
    return ((total / counts).astype(np.float32),)


def _global_average_pool(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    return (x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float32),)


def _batch_norm(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x, scale, bias, mean, var = (_f32(i) for i in inputs[:5])
    shape = (1, -1, *([1] * (x.ndim - 2)))
    inv = scale / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))
    return ((x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape),)


# --------------------------------------------------------------------------- matrix, norms, reductions


def _gemm(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    a, b = _f32(inputs[0]), _f32(inputs[1])
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0):
        b = b.T
    y = np.float32(attrs.get("alpha", 1.0)) * (a @ b)
    if len(inputs) > 2 and inputs[2] is not None:
        y = y + np.float32(attrs.get("beta", 1.0)) * _f32(inputs[2])
    return (y,)


def _matmul(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    return (np.matmul(_f32(inputs[0]), _f32(inputs[1])),)


def _softmax(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    axis = int(attrs.get("axis", -1))
    shifted = x - x.max(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(shifted)
        return (e / e.sum(axis=axis, keepdims=True),)


def _layer_norm(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    axis = int(attrs.get("axis", -1)) % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5))) * _f32(inputs[1])
    if len(inputs) > 2 and inputs[2] is not None:
        y = y + _f32(inputs[2])
    return (y,)


def _axes(inputs: Inputs, attrs: Attrs, index: int) -> list[int] | None:
    """Axes from the attribute (older opsets) or from input ``index`` (newer ones)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(inputs) > index and inputs[index] is not None:
        return [int(a) for a in np.asarray(inputs[index]).reshape(-1)]
    return None


def _reduce_mean(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = _f32(inputs[0])
    axes = _axes(inputs, attrs, 1)
    keep = bool(attrs.get("keepdims", 1))
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return (x,)
        axes = list(range(x.ndim))
    return (np.asarray(x.mean(axis=tuple(axes), keepdims=keep)),)


# --------------------------------------------------------------------------- shape and data movement


def _reshape(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None and inputs[1] is not None
    shape = [int(d) for d in np.asarray(inputs[1]).reshape(-1)]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return (x.reshape(shape),)


def _flatten(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None
    axis = int(attrs.get("axis", 1)) % (x.ndim + 1) if x.ndim else 0
    lead = int(np.prod(x.shape[:axis], dtype=np.int64))
    return (x.reshape(lead, -1),)


def _transpose(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None
    perm = attrs.get("perm")
    return (np.ascontiguousarray(np.transpose(x, perm)),)


def _squeeze(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None
    axes = _axes(inputs, attrs, 1)
    return (np.squeeze(x, axis=tuple(axes)) if axes else np.squeeze(x),)


def _unsqueeze(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None
    axes = _axes(inputs, attrs, 1) or []
    rank = x.ndim + len(axes)
    return (x.reshape(_unsqueezed_shape(x.shape, sorted(a % rank for a in axes))),)


def _unsqueezed_shape(shape: tuple[int, ...], axes: list[int]) -> list[int]:
    dims = list(shape)
    for axis in axes:
        dims.insert(axis, 1)
    return dims


def _concat(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    arrays = [i for i in inputs if i is not None]
    return (np.concatenate(arrays, axis=int(attrs["axis"])),)


def _split(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None
    axis = int(attrs.get("axis", 0))
    sizes = attrs.get("split")
    if sizes is None and len(inputs) > 1 and inputs[1] is not None:
        sizes = [int(s) for s in np.asarray(inputs[1]).reshape(-1)]
    if sizes is None:
        parts = int(attrs["num_outputs"])
        size = -(-x.shape[axis] // parts)
        sizes = [min(size, x.shape[axis] - i * size) for i in range(parts)]
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.split(x, bounds, axis=axis))


def _identity(inputs: Inputs, attrs: Attrs) -> tuple[Array, ...]:
    x = inputs[0]
    assert x is not None
    return (x,)


KERNELS: dict[str, Kernel] = {
    "Conv": _conv,
    "BatchNormalization": _batch_norm,
    "Relu": _unary(lambda x: np.maximum(x, np.zeros((), x.dtype))),
    "LeakyRelu": _leaky_relu,
    "Sigmoid": _unary(_sigmoid),
    "Tanh": _unary(np.tanh),
    "Gelu": _gelu,
    "Erf": _unary(erf),
    "Sqrt": _unary(_sqrt),
    "Gemm": _gemm,
    "MatMul": _matmul,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Pow": _binary(_pow),
    "MaxPool": lambda inputs, attrs: _pool(inputs, attrs, "max"),
    "AveragePool": lambda inputs, attrs: _pool(inputs, attrs, "avg"),
    "GlobalAveragePool": _global_average_pool,
    "Softmax": _softmax,
    "LayerNormalization": _layer_norm,
    "ReduceMean": _reduce_mean,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": _concat,
    "Split": _split,
    "Cast": _cast,
    "Identity": _identity,
}
