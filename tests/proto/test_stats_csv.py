"""Statistics-mode dump files (formats.md §3.4): read, format, round trip, refusals."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.errors import DumpFormatError
from dumpcmp.proto.stats_csv import (
    DEFAULT_STATS,
    FIXED_COLUMNS,
    STAT_COLUMNS,
    StatsRow,
    format_stats_csv,
    header_for,
    read_stats_csv,
)

SPEC_EXAMPLE = (
    "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,"
    "Nan Count,Negative Inf Count,Positive Inf Count\n"
    "Input,0,36,DT_FLOAT,NCHW,3,3,-2,0.666667,3,0,0,0\n"
    "Output,0,640000,DT_FLOAT,NHWC,4x50x50x16,1.99999,1,1.50004,160000,0,0,0\n"
)


def _write(tmp_path: Path, text: str, name: str = "Add.add.1.2.1700000000000000.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_reads_the_spec_example(tmp_path: Path) -> None:
    rows = read_stats_csv(_write(tmp_path, SPEC_EXAMPLE))
    first, second = rows
    assert (first.kind, first.index, first.data_size, first.data_type, first.format) == (
        "input",
        0,
        36,
        "DT_FLOAT",
        "NCHW",
    )
    assert first.shape == (3,)
    assert first.count == 3
    assert first.stats == {
        "Max Value": 3.0,
        "Min Value": -2.0,
        "Avg Value": 0.666667,
        "Nan Count": 0.0,
        "Negative Inf Count": 0.0,
        "Positive Inf Count": 0.0,
    }
    assert second.kind == "output"
    assert second.shape == (4, 50, 50, 16)
    assert second.stats["Max Value"] == 1.99999


def test_default_header_puts_count_after_the_averages() -> None:
    assert header_for() == SPEC_EXAMPLE.splitlines()[0].split(",")
    assert header_for(DEFAULT_STATS) == header_for()


def test_spec_example_formats_back_byte_for_byte(tmp_path: Path) -> None:
    assert format_stats_csv(read_stats_csv(_write(tmp_path, SPEC_EXAMPLE))) == SPEC_EXAMPLE


def test_custom_subset_header_and_round_trip(tmp_path: Path) -> None:
    stats = ("L2norm", "Max", "Nan")  # given in any order, written in the fixed order
    header = header_for(stats)
    assert header == [*FIXED_COLUMNS, "Count", "Max Value", "Nan Count", "l2norm"]
    row = StatsRow(
        "output", 1, 8, "DT_FLOAT16", "ND", (2, 2), 4, {"Max Value": 2.5, "Nan Count": 1, "l2norm": 3.5}
    )
    text = format_stats_csv([row], stats)
    assert text.splitlines()[1] == "Output,1,8,DT_FLOAT16,ND,2x2,4,2.5,1,3.5"
    (back,) = read_stats_csv(_write(tmp_path, text))
    assert back == row


def test_na_values_and_unknown_shapes(tmp_path: Path) -> None:
    text = (
        ",".join(header_for()) + "\n"
        "Input,0,5,DT_STRING,ND,-,NA,NA,NA,5,NA,NA,NA\n"
    )  # fmt: skip
    (row,) = read_stats_csv(_write(tmp_path, text))
    assert row.shape is None
    assert row.data_type == "DT_STRING"
    assert all(math.isnan(v) for v in row.stats.values())
    assert format_stats_csv([row]) == text  # NaN is written back as NA, an unknown shape as '-'


def test_a_scalar_shape_is_written_na(tmp_path: Path) -> None:
    text = ",".join(header_for()) + "\nOutput,0,4,DT_FLOAT,ND,NA,2,2,2,1,0,0,0\n"
    (row,) = read_stats_csv(_write(tmp_path, text))
    assert row.shape == ()
    assert format_stats_csv([row]) == text


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("Output,0,4,DT_WHAT,ND,1,2,2,2,1,0,0,0", "line 2: unknown data type 'DT_WHAT'"),
        ("Output,0,4,DT_FLOAT,ND,1x32x-1,2,2,2,1,0,0,0", "line 2: negative dimension in shape '1x32x-1'"),
    ],
)
def test_a_corrupt_dtype_or_shape_is_refused(tmp_path: Path, line: str, why: str) -> None:
    with pytest.raises(DumpFormatError, match=why):
        read_stats_csv(_write(tmp_path, ",".join(header_for()) + "\n" + line + "\n"))


def test_a_misspelt_statistic_column_is_refused(tmp_path: Path) -> None:
    header = ",".join(header_for()).replace("Max Value", "Maxx Value")
    with pytest.raises(DumpFormatError, match="unknown column 'Maxx Value' in the header"):
        read_stats_csv(_write(tmp_path, header + "\nOutput,0,4,DT_FLOAT,ND,1,2,2,2,1,0,0,0\n"))


def test_windows_line_endings_and_blank_lines(tmp_path: Path) -> None:
    rows = read_stats_csv(_write(tmp_path, SPEC_EXAMPLE.replace("\n", "\r\n") + "\r\n"))
    assert len(rows) == 2


# Values the device's 6-significant-digit text can carry exactly (as "%g" prints them).
_VALUES = st.one_of(
    st.integers(-(10**6), 10**6).map(float),
    st.floats(allow_nan=False, allow_infinity=True, width=32).map(lambda v: float(f"{v:g}")),
    st.just(math.nan),
)
_ROWS = st.builds(
    StatsRow,
    kind=st.sampled_from(["input", "output"]),
    index=st.integers(0, 20),
    data_size=st.integers(0, 2**40),
    data_type=st.sampled_from(["DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_INT8", "DT_BOOL"]),
    format=st.sampled_from(["ND", "NCHW", "NC1HWC0", "FRACTAL_NZ"]),
    shape=st.none() | st.lists(st.integers(0, 4096), max_size=5).map(tuple),
    count=st.integers(0, 2**40),
    stats=st.just({}),
)


@settings(deadline=None)
@given(
    rows=st.lists(_ROWS, max_size=5),
    chosen=st.sets(st.sampled_from(list(STAT_COLUMNS)), min_size=1),
    data=st.data(),
)
def test_rows_round_trip_through_text(
    tmp_path_factory: pytest.TempPathFactory, rows: list[StatsRow], chosen: set[str], data: st.DataObject
) -> None:
    columns = [STAT_COLUMNS[name] for name in STAT_COLUMNS if name in chosen]
    rows = [
        StatsRow(r.kind, r.index, r.data_size, r.data_type, r.format, r.shape, r.count,
                 {c: data.draw(_VALUES) for c in columns})
        for r in rows
    ]  # fmt: skip
    text = format_stats_csv(rows, tuple(chosen))
    path = tmp_path_factory.getbasetemp() / "roundtrip.csv"
    path.write_text(text)
    back = read_stats_csv(path)
    assert len(back) == len(rows)
    for got, want in zip(back, rows, strict=True):
        assert (got.kind, got.index, got.data_size, got.data_type, got.format, got.shape, got.count) == (
            want.kind,
            want.index,
            want.data_size,
            want.data_type,
            want.format,
            want.shape,
            want.count,
        )
        assert list(got.stats) == columns
        assert all(_same(got.stats[c], want.stats[c]) for c in columns)
    assert format_stats_csv(back, tuple(chosen)) == text


# --------------------------------------------------------------------------- malformed files


def test_wrong_field_count_names_the_line(tmp_path: Path) -> None:
    lines = SPEC_EXAMPLE.splitlines(keepends=True)
    text = lines[0] + lines[1] + "Output,0,640000,DT_FLOAT\n"
    path = _write(tmp_path, text)
    with pytest.raises(DumpFormatError, match="line 3 has 4 fields") as info:
        read_stats_csv(path)
    assert info.value.path == str(path)
    assert info.value.offset == len((lines[0] + lines[1]).encode())  # where line 3 starts


def test_bad_number_names_the_line(tmp_path: Path) -> None:
    lines = SPEC_EXAMPLE.splitlines(keepends=True)
    path = _write(tmp_path, lines[0] + lines[1].replace(",36,", ",lots,"))
    with pytest.raises(DumpFormatError, match="line 2") as info:
        read_stats_csv(path)
    assert info.value.offset == len(lines[0].encode())


@pytest.mark.parametrize(
    "text",
    ["", "not,a,stats,file\n1,2,3,4\n", ",".join(FIXED_COLUMNS) + ",Max Value\n"],  # no Count column
)
def test_files_that_are_not_stats_csv(tmp_path: Path, text: str) -> None:
    with pytest.raises(DumpFormatError, match="not a stats CSV") as info:
        read_stats_csv(_write(tmp_path, text))
    assert info.value.offset == 0


def test_unreadable_stats_files(tmp_path: Path) -> None:
    bad_utf8 = tmp_path / "x.csv"
    bad_utf8.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DumpFormatError, match="cannot read"):
        read_stats_csv(bad_utf8)
    with pytest.raises(DumpFormatError, match="cannot read"):
        read_stats_csv(tmp_path / "missing.csv")
