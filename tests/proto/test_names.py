"""File-name grammar (formats.md §2.3, §2.4): parse/format round trips and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumpcmp.errors import BadFileNameError
from dumpcmp.proto.names import (
    DumpName,
    FftsFields,
    GoldenName,
    converted_npy_name,
    dump_file_name,
    format_dump_name,
    golden_file_name,
    parse_dump_name,
    parse_golden_name,
    read_mapping,
    sanitize_dump_name,
    sanitize_golden_name,
)
from dumpcmp.proto.wire_paths import wire_path_problem

# Every character GE leaves in a name (it replaces only space, '.', '/', '\\'; §2.3).
_FIELD = st.text(
    st.characters(blacklist_characters=" ./\\", blacklist_categories=("Cc", "Cs")), min_size=1, max_size=12
)
_NUMBER = st.integers(0, 10**20)
_FFTS = st.builds(FftsFields, st.integers(0, 4), _NUMBER, _NUMBER, st.integers(0, 15))
_NAMES = st.builds(
    DumpName,
    op_type=_FIELD,
    op_name=_FIELD,
    task_id=_NUMBER,
    stream_id=st.none() | _NUMBER,
    timestamp=st.integers(10**15, 10**16 - 1),
    ffts=st.none() | _FFTS,
)


@given(_NAMES)
def test_format_then_parse_is_identity(name: DumpName) -> None:
    text = format_dump_name(name)
    assert parse_dump_name(text) == name
    assert format_dump_name(parse_dump_name(text)) == text


@given(st.text(st.sampled_from("Ab0_-.9:/ \n"), max_size=40))
def test_any_text_parses_to_a_name_that_formats_back_or_is_refused(text: str) -> None:
    try:
        name = parse_dump_name(text)
    except BadFileNameError as exc:
        assert exc.name == text
        assert exc.reason
        return
    # Numbers lose leading zeros; otherwise the text is reproduced exactly.
    assert parse_dump_name(format_dump_name(name)) == name
    numbers = text.split(".")[2:]
    if not any(len(n) > 1 and n.startswith("0") for n in numbers):
        assert format_dump_name(name) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Conv2D.conv1_Conv2D.3.7.1700000000123456",
            DumpName("Conv2D", "conv1_Conv2D", 3, 7, 1700000000123456),
        ),
        ("Add.add_1.12.1700000000123456", DumpName("Add", "add_1", 12, None, 1700000000123456)),
        (  # FFTS+ with stream: stream.task.timestamp.task_type.context.thread.device
            "MatMul.mm_lxslice1.2.30.1700000000123456.4.5.6.0",
            DumpName("MatMul", "mm_lxslice1", 30, 2, 1700000000123456, FftsFields(4, 5, 6, 0)),
        ),
        (  # FFTS+ without stream
            "MatMul.mm.30.1700000000123456.4.5.6.1",
            DumpName("MatMul", "mm", 30, None, 1700000000123456, FftsFields(4, 5, 6, 1)),
        ),
        ("Op-x.n-1.0.0.0", DumpName("Op-x", "n-1", 0, 0, 0)),
    ],
)
def test_known_variants(text: str, expected: DumpName) -> None:
    assert parse_dump_name(text) == expected
    assert format_dump_name(expected) == text


@pytest.mark.parametrize(
    ("op_name", "match_name"),
    [
        ("conv1_lxslice0", "conv1"),
        ("conv1_lxslice12", "conv1"),
        ("conv1", "conv1"),
        ("conv1_lxslice", "conv1_lxslice"),  # no slice number: not the manual-slice suffix
        ("a_lxslice1_b", "a_lxslice1_b"),  # only a trailing suffix is stripped
    ],
)
def test_lxslice_suffix_is_dropped_for_matching(op_name: str, match_name: str) -> None:
    name = parse_dump_name(f"Conv2D.{op_name}.1.2.1700000000123456")
    assert name.op_name == op_name  # the file's own name is kept
    assert name.match_name == match_name


@pytest.mark.parametrize(
    ("text", "op_type", "op_name"),
    [
        ("Add.ln_add:0.17.2.1700000000000123", "Add", "ln_add:0"),  # op ln/add:0
        ("Conv2D.convé.1.2.1700000000123456", "Conv2D", "convé"),
        ("MatMul.层_1(x)+y[0],z=2.3.2.1700000000000001", "MatMul", "层_1(x)+y[0],z=2"),
        ("Add:V2.a#b%c@d.1.2.1700000000000001", "Add:V2", "a#b%c@d"),
    ],
)
def test_every_character_ge_keeps_is_accepted(text: str, op_type: str, op_name: str) -> None:
    name = parse_dump_name(text)
    assert (name.op_type, name.op_name) == (op_type, op_name)
    assert format_dump_name(name) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Conv2D",
        "Conv2D.conv1.1",  # 3 fields
        "Conv2D.conv1.x.1700000000123456",
        "Conv2D.conv1.1.-2.1700000000123456",
        "Conv2D.conv 1.1.2.1700000000123456",  # GE replaces spaces, so this is no GE name
        "Conv2D.conv\\1.1.2.1700000000123456",
        "Conv2D.conv\x01.1.2.1700000000123456",  # control characters come from no op name
        ".conv1.1.2.1700000000123456",  # empty op type
        "Conv2D..1.2.1700000000123456",  # empty op name
        "Conv2D.conv1..2.1700000000123456",
        "Conv2D.conv1.1.2.3.1700000000123456",  # 4 numbers: no variant
        "Conv2D.conv1.1.2.3.4.5.6.7.8",  # 8 numbers
        "Conv2D.conv1.1.2.1700000000123456\n",  # a trailing newline is not part of a number
        "Conv2D.conv1\n.1.2.1700000000123456",
        "Conv2D.conv1.1.2.1700000000123456.csv",
    ],
)
def test_bad_names_are_refused(text: str) -> None:
    with pytest.raises(BadFileNameError) as info:
        parse_dump_name(text)
    assert info.value.name == text
    assert repr(text) in str(info.value)


def test_sanitising_matches_the_runtime() -> None:
    # GE replaces space, '.', '/', '\\'; the shared fixture's file was named this way.
    assert sanitize_dump_name("stem/conv1/Conv2D.fused relu") == "stem_conv1_Conv2D_fused_relu"
    assert sanitize_dump_name("a\\b:c") == "a_b:c"
    assert (
        dump_file_name("Conv2D", "stem/conv1/Conv2D.fused relu", 11, 2, 1763700000001111)
        == "Conv2D.stem_conv1_Conv2D_fused_relu.11.2.1763700000001111"
    )


@given(op_name=st.text(st.characters(codec="utf-8", exclude_characters=" ./\\"), min_size=1, max_size=20))
def test_names_made_here_hold_no_control_character(op_name: str) -> None:
    # A tab in an ONNX node's name went into the simulator's dump file name (which compare
    # refuses) and its golden file's (which no agent can send). GE has no rule for them: they
    # become '_' as a space does, on both sides of every lookup; every other character stays.
    dump = parse_dump_name(dump_file_name("Relu", op_name, 3, 1, 1763700000001111))
    golden = parse_golden_name(golden_file_name(op_name, 0, 1763700000001111))
    assert dump.op_name == golden.op_name == sanitize_golden_name(op_name) == sanitize_dump_name(op_name)
    assert wire_path_problem(golden_file_name(op_name, 0, 1)) is None
    assert sanitize_dump_name('a,b"c;d\te\x7f') == 'a,b"c;d_e_'


# --------------------------------------------------------------------------- golden / npy names


@given(
    op_name=st.from_regex(r"[A-Za-z0-9_./-]{1,20}", fullmatch=True),
    index=st.integers(0, 99),
    stamp=st.integers(0, 10**17),
)
def test_golden_names_round_trip(op_name: str, index: int, stamp: int) -> None:
    text = golden_file_name(op_name, index, stamp)
    parsed = parse_golden_name(text)
    assert parsed == GoldenName(sanitize_golden_name(op_name), index, stamp)
    assert "/" not in parsed.op_name
    assert "." not in parsed.op_name
    assert parsed.key == f"{parsed.op_name}.{index}"


def test_golden_name_examples() -> None:
    assert (
        golden_file_name("stem/conv1.relu", 0, 1700000000123456) == "stem_conv1_relu.0.1700000000123456.npy"
    )
    assert parse_golden_name("a.b.2.17.npy") == GoldenName("a.b", 2, 17)  # op names may keep dots
    assert parse_golden_name("x.1.5.pb").suffix == ".pb"
    assert parse_golden_name("x.1.5.quant").suffix == ".quant"


@pytest.mark.parametrize(
    "text", ["x.npy", "x.1.npy", "x.a.5.npy", "x.1.b.npy", ".1.5.npy", "x.1.5.bin", "x.1.5\n.npy"]
)
def test_bad_golden_names_are_refused(text: str) -> None:
    with pytest.raises(BadFileNameError):
        parse_golden_name(text)


def test_converted_npy_names() -> None:
    base = "Conv2D.conv1.3.7.1700000000123456"
    assert converted_npy_name(base, "output", 0) == f"{base}.output.0.npy"
    assert converted_npy_name(base, "input", 2, (1, 3, 224, 224)) == f"{base}.input.2.1x3x224x224.npy"


# --------------------------------------------------------------------------- mapping.csv


def test_mapping_csv_resolves_numeric_names(tmp_path: Path) -> None:
    long_name = "Conv2D." + "x" * 240 + ".1.2.1700000000123456"
    (tmp_path / "mapping.csv").write_text(f"1700000000000001,{long_name}\n 42 , Add.a.1.2.3 \n\nbad-row\n")
    mapping = read_mapping(tmp_path)
    assert mapping == {"1700000000000001": long_name, "42": "Add.a.1.2.3"}
    assert parse_dump_name(mapping["1700000000000001"]).op_name == "x" * 240


def test_no_mapping_csv_is_an_empty_mapping(tmp_path: Path) -> None:
    assert read_mapping(tmp_path) == {}
