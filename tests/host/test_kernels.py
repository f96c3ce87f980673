"""The compiled metric kernels: where their cache goes, and the logarithm they use."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import llvmlite.binding
import numba
import numpy as np
import pytest

import dumpcmp
from dumpcmp.host.metrics._kernels import _CONTRACT, _NEAR_ONE, _log_near_one, _log_of_ratio, kl_terms, log

PACKAGE = Path(dumpcmp.__file__).resolve().parent

_COMPARE = """
import numpy as np
from dumpcmp.host.metrics import compare_arrays

v = compare_arrays(np.arange(300, dtype=np.float32), np.arange(300, dtype=np.float32))
assert v.cosine_similarity == 1.0, v
"""


def _compare_with_package_copy(tmp_path: Path, cache_home: Path) -> Path:
    """Run a compare from a copy of the package (as an install would be), return the copy."""
    copy = tmp_path / "site"
    shutil.copytree(PACKAGE, copy / "dumpcmp", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(PYTHONPATH=str(copy), XDG_CACHE_HOME=str(cache_home), HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-c", _COMPARE], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return copy


def _cache_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.suffix in (".nbi", ".nbc", ".o")]


def test_kernel_cache_goes_to_the_user_cache_dir_not_the_package(tmp_path: Path) -> None:
    # A cache written next to an installed package outlives its uninstall and shadows the next
    # install (formerly: ModuleNotFoundError after `pip install .` then `pip install -e .`).
    copy = _compare_with_package_copy(tmp_path, tmp_path / "cache")
    assert _cache_files(copy) == []
    assert _cache_files(tmp_path / "cache" / "dumpcmp" / "numba")


def test_unwritable_cache_dir_compiles_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    copy = _compare_with_package_copy(tmp_path, blocker / "cache")
    assert _cache_files(tmp_path) == []
    assert copy.is_dir()


@numba.njit(error_model="numpy")
def _logs(values: np.ndarray, out: np.ndarray) -> None:
    for i in range(values.shape[0]):
        out[i] = log(values[i])


def test_log_is_within_one_ulp_of_the_c_library() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            rng.random(20000) * 4,
            1 + rng.uniform(-1e-6, 1e-6, 20000),  # near 1, where cancellation would show
            np.exp(rng.uniform(-745, 709, 20000)),  # every exponent, subnormals included
            [5e-324, 1e-310, 2.2250738585072014e-308, 1.0, 2.0, 0.5, np.sqrt(2), 1.7976931348623157e308],
        ]
    )
    got = np.empty_like(values)
    _logs(values, got)
    want = np.log(values)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 1.0
    assert got[-5] == 0.0  # log(1) exactly


@numba.njit(error_model="numpy", fastmath=_CONTRACT)
def _contracted_logs(values: np.ndarray, out: np.ndarray) -> None:
    for i in range(values.shape[0]):
        out[i] = log(values[i])


def test_log_fused_as_the_passes_compile_it_is_within_one_ulp() -> None:
    """The passes let LLVM fuse multiply-adds; log's polynomial must stay within 1 ulp."""
    rng = np.random.default_rng(8)
    values = np.concatenate(
        [rng.random(50000) * 4, 1 + rng.uniform(-1e-6, 1e-6, 50000), np.exp(rng.uniform(-745, 709, 50000))]
    )
    got = np.empty_like(values)
    _contracted_logs(values, got)
    want = np.log(values)
    assert (np.abs(got - want) / np.spacing(np.abs(want))).max() <= 1.0


@pytest.mark.parametrize(("value", "want"), [(0.0, -np.inf), (-0.0, -np.inf), (np.inf, np.inf)])
def test_log_of_ieee_specials(value: float, want: float) -> None:
    got = np.empty(1)
    _logs(np.array([value]), got)
    assert got[0] == want


@pytest.mark.parametrize("value", [-1.0, -np.inf, np.nan, -5e-324])
def test_log_of_negatives_and_nan_is_nan(value: float) -> None:
    got = np.empty(1)
    _logs(np.array([value]), got)
    assert np.isnan(got[0])


_PASS1_ASM = """
import numpy as np
from dumpcmp.host.metrics import _kernels as k

x = np.zeros(1000, np.float32)
k.first_pass(x, x)
print(k.first_pass.inspect_asm(k.first_pass.signatures[0]))
"""


def test_pass1_maxima_are_packed_max_not_masked_stores(tmp_path: Path) -> None:
    """LLVM's x86 backend turned ``acc[i] = v if v > acc[i] else acc[i]`` in the vectorised
    loop into masked stores (vmaskmovpd), microcoded on AMD: pass 1 ran ~4 ns per element."""
    if not llvmlite.binding.get_host_cpu_features().get("avx2", False):
        pytest.skip("the masked stores and packed maxima in question are AVX2 instructions")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    # numba only shows the assembly of code it compiled in this process, never of cached code.
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(PACKAGE.parent))
    done = subprocess.run([sys.executable, "-c", _PASS1_ASM], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "vmaskmovpd" not in done.stdout
    assert "vmaxpd" in done.stdout


@numba.njit(error_model="numpy")
def _ratio_logs(values: np.ndarray, out: np.ndarray) -> None:
    for i in range(values.shape[0]):
        out[i] = _log_of_ratio(values[i])


def test_log_of_a_kl_ratio_is_log_over_every_ratio_finite_data_gives() -> None:
    eps32 = float(np.finfo(np.float32).eps)
    rng = np.random.default_rng(3)
    p = np.concatenate([np.exp(rng.uniform(np.log(eps32), 0.0, 30000)), [eps32, 1.0, 1.0 + 2e-16]])
    q = np.concatenate([np.exp(rng.uniform(np.log(eps32), 0.0, 30000)), [1.0, eps32, 1.0]])
    ratios = p / q
    want, got = np.empty_like(ratios), np.empty_like(ratios)
    _logs(ratios, want)
    _ratio_logs(ratios, got)
    assert np.array_equal(got, want)


def test_log_of_a_kl_ratio_propagates_nan_and_inf() -> None:
    got = np.empty(2)
    _ratio_logs(np.array([np.nan, np.inf]), got)
    assert np.isnan(got[0])
    assert got[1] == np.inf


@numba.njit(error_model="numpy", fastmath=_CONTRACT)
def _near_one_logs(values: np.ndarray, out: np.ndarray) -> None:
    for i in range(values.shape[0]):
        out[i] = _log_near_one(values[i])


def test_log_near_one_is_within_one_ulp_of_the_c_library_over_its_range() -> None:
    """Blocks of ratios near 1 (tensors that agree) take the short series instead of ``log``."""
    rng = np.random.default_rng(12)
    below = np.nextafter(1 + _NEAR_ONE, 0.0)
    values = np.concatenate(
        [1 + rng.uniform(-_NEAR_ONE, _NEAR_ONE, 100000), 1 + rng.uniform(-1e-9, 1e-9, 20000),
         [below, 2 - below, 1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0)]]
    )  # fmt: skip
    got = np.empty_like(values)
    _near_one_logs(values, got)
    want = np.log(values)
    nonzero = want != 0
    assert (np.abs(got - want)[nonzero] / np.spacing(np.abs(want[nonzero]))).max() <= 1.0
    assert got[-3] == 0.0
    nan = np.empty(1)
    _near_one_logs(np.array([np.nan]), nan)
    assert np.isnan(nan[0])


def _kl_sum_reference(x: np.ndarray, y: np.ndarray, sx: float, sy: float, kx: float, ky: float) -> float:
    """Σp·log(p/q) as the pass computes it: values as float32 (the spec's), then float64."""
    eps32 = float(np.finfo(np.float32).eps)
    p = np.maximum((x.astype(np.float32).astype(np.float64) - sx) * kx, eps32)
    q = np.maximum((y.astype(np.float32).astype(np.float64) - sy) * ky, eps32)
    return float(np.sum(p * np.log(p / q)))


@pytest.mark.parametrize("far_at", [None, 0, 77, 40000])
def test_kl_sum_is_exact_whichever_way_each_block_goes(far_at: int | None) -> None:
    """Ratios near 1 everywhere, or one far ratio in a block: Σp·log(p/q) agrees with float64
    numpy to rounding, wherever the far ratio is (first block, inside one, the partial tail)."""
    rng = np.random.default_rng(13)
    y = rng.uniform(1.0, 2.0, 40001)
    x = y * (1 + rng.uniform(-1e-3, 1e-3, y.size))
    if far_at is not None:
        x[far_at] = 3 * y[far_at]
    sums = kl_terms(x, y, 0.0, 0.0, 0.5, 0.5, 0.4, 0.4)
    want = _kl_sum_reference(x, y, 0.5, 0.5, 0.4, 0.4)
    assert sums[4] == pytest.approx(want, rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------------------------------------
# Native code: the pipeline's kernels, loaded without numba


@pytest.mark.parametrize(("x_dtype", "y_dtype"), [(np.float16, np.float32), (np.float32, np.float32),
                                                  (np.float64, np.float32)])  # fmt: skip
def test_native_kernels_give_the_njit_kernels_bits(x_dtype: type, y_dtype: type) -> None:
    from dumpcmp.host.metrics import _kernels, _native

    rng = np.random.default_rng(11)
    x = (rng.standard_normal(70001) * 3).astype(x_dtype)
    y = (rng.standard_normal(70001) * 3).astype(y_dtype)
    x[5], x[9], y[9], y[100] = np.nan, np.inf, np.inf, -np.inf
    if x_dtype == np.float16 and _native.FLOAT16_BITS:
        x = x.view(np.uint16)
    for a, b in ((x[:70000], y[:70000]), (x[200:], y[200:])):  # special values in and out
        assert _bits(_native.first_pass(a, b)) == _bits(_kernels.first_pass(a, b))
        assert _native.special_counts(a, b) == _kernels.special_counts(a, b)
        args = (0.1, -0.2, -4.0, -3.5, 0.125, 0.15)
        assert _bits(_native.kl_terms(a, b, *args)) == _bits(_kernels.kl_terms(a, b, *args))


def _bits(values: tuple[float, ...]) -> list[int]:
    return np.array(values, dtype=np.float64).view(np.int64).tolist()


_NATIVE_RUN = """
import sys
import numpy as np
from dumpcmp.host.metrics import compare_arrays

x = np.linspace(-3, 5, 4099, dtype=np.float32)
print(repr(compare_arrays(x, x[::-1].copy())), "numba" in sys.modules)
"""


def test_native_kernels_load_from_the_cache_without_numba_and_recompile_a_damaged_file(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(PACKAGE.parent))

    def run() -> tuple[str, bool]:
        done = subprocess.run([sys.executable, "-c", _NATIVE_RUN], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        values, imported = done.stdout.rsplit(" ", 1)
        return values, imported.strip() == "True"

    first, compiled = run()
    assert compiled
    (cached,) = (tmp_path / "cache").glob("kernels-*.o")
    again, compiled = run()
    assert (again, compiled) == (first, False)
    whole = cached.read_bytes()
    cached.write_bytes(whole[: len(whole) - 100])  # a torn write: executing it could crash
    again, compiled = run()
    assert (again, compiled) == (first, True)
    assert cached.read_bytes() == whole
