"""Floats numpy has no type for, decoded through a lookup table of every code (formats.md §1.5).

HiFloat8 (dump dtype 33) is the only one today: ml_dtypes does not implement it, and the one
package that does (``en-dtypes``, 0.0.x, a single author) is not a dependency worth its 9 MB
extension. A 256-entry float32 table built from the published definition, indexed by the raw
bytes, decodes a tensor in one vectorised gather; every HiF8 value is exact in float32.

HiF8 code: sign bit, then a prefix-coded *dot* field giving D, the number of exponent bits
(``11``→4, ``10``→3, ``01``→2, ``001``→1, ``0001``→0, ``0000``→denormal). The D exponent bits are
sign-magnitude with an implicit leading magnitude bit: E = ±(2^(D−1) + stored magnitude), the
first bit set meaning negative (D = 0: E = 0). The remaining bits are the mantissa M:
value = ±2^E × (1 + M / 2^bits). Denormals carry 3 bits m: ±2^(m−23). Specials: 0x00 zero,
0x80 NaN, 0x6F +inf, 0xEF −inf.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HIFLOAT8", "CodeTable"]

# (prefix, prefix length, exponent bits D) of the dot field, longest first is not needed: the
# prefixes are prefix-free.
_DOTS = ((0b11, 2, 4), (0b10, 2, 3), (0b01, 2, 2), (0b001, 3, 1), (0b0001, 4, 0))


def _hifloat8_value(code: int) -> float:
    special = {0x00: 0.0, 0x80: float("nan"), 0x6F: float("inf"), 0xEF: float("-inf")}
    if code in special:
        return special[code]
    sign = -1.0 if code & 0x80 else 1.0
    rest = code & 0x7F
    for prefix, length, exp_bits in _DOTS:
        if rest >> (7 - length) == prefix:
            mant_bits = 7 - length - exp_bits
            field = (rest >> mant_bits) & ((1 << exp_bits) - 1)
            mantissa = rest & ((1 << mant_bits) - 1)
            exponent = 0
            if exp_bits:
                top = 1 << (exp_bits - 1)
                magnitude = top + (field & (top - 1))
                exponent = -magnitude if field & top else magnitude
            return sign * 2.0**exponent * (1 + mantissa / (1 << mant_bits))
    # dot field 0000: denormal; m = 0 is zero (+) or NaN (−), both handled as specials above
    return sign * 2.0 ** ((rest & 0b111) - 23)


class CodeTable:
    """An 8-bit float format as the float32 value of each of its 256 codes."""

    def __init__(self, name: str, values: np.ndarray) -> None:
        self.name = name
        self.values = values.astype(np.float32)
        self.values.flags.writeable = False
        finite = np.flatnonzero(np.isfinite(self.values))
        order = np.argsort(self.values[finite], kind="stable")
        self._sorted_codes = finite[order].astype(np.uint8)
        self._sorted_values = self.values[self._sorted_codes].astype(np.float64)
        self._nan = np.uint8(np.flatnonzero(np.isnan(self.values))[0])
        self._inf = {sign: np.flatnonzero(self.values == sign * np.inf) for sign in (1, -1)}

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """float32 values of uint8 codes (a gather: one pass, no Python loop)."""
        return self.values[codes]

    def encode(self, values: np.ndarray) -> np.ndarray:
        """The nearest code of each value (ties away from zero); more than half a step beyond
        the largest finite value: ±inf if the format has it, else the largest finite code."""
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
        grid = self._sorted_values
        right = np.clip(np.searchsorted(grid, flat), 1, grid.size - 1)
        left = right - 1
        lower, upper = grid[left], grid[right]
        below, above = flat - lower, upper - flat
        take_upper = (above < below) | ((above == below) & (flat > 0))
        codes = self._sorted_codes[np.where(take_upper, right, left)]
        codes = np.where(flat < grid[0], self._sorted_codes[0], codes)
        codes = np.where(flat > grid[-1], self._sorted_codes[-1], codes)
        for sign, found in self._inf.items():
            edge = grid[-1] if sign > 0 else -grid[0]
            step = grid[-1] - grid[-2] if sign > 0 else grid[1] - grid[0]
            if found.size:
                codes = np.where(sign * flat >= edge + step / 2, np.uint8(found[0]), codes)
        codes = np.where(np.isnan(flat), self._nan, codes)
        return codes.astype(np.uint8).reshape(np.shape(values))


HIFLOAT8 = CodeTable("hifloat8", np.array([_hifloat8_value(code) for code in range(256)]))
