"""File-name grammar of CANN dumps and golden npy files (formats.md §2.3, §2.4)."""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.errors import BadFileNameError
from dumpcmp.outputs import NAME_MAX, writing
from dumpcmp.proto.records import pickled_as_values, set_through_slots

# Chained str.replace, not str.translate: translate with a mapping costs ~1.3 us a name, the
# replaces ~0.15 us, and names are sanitised several times for every dump file.


def sanitize_dump_name(name: str) -> str:
    """GE's ReplaceStringElem: space, '.', '/', '\\' become '_' in op types, op and model names;
    and control characters (``_printable``)."""
    return _printable(name.replace(" ", "_").replace(".", "_").replace("/", "_").replace("\\", "_"))


def sanitize_golden_name(name: str) -> str:
    """How golden npy files are keyed: '/' and '.' become '_' (msaccucmp's lookup rule); and
    control characters (``_printable``)."""
    return _printable(name.replace(".", "_").replace("/", "_"))


# GE's and msaccucmp's rules have no case for control characters: no real op name holds one, and
# neither a dump file name nor a file sent to a host may (a tab in an ONNX node's name made a
# dump file compare refuses and a golden file no agent could send). Names made here replace them
# with '_' as a space is, on both sides of every lookup. isprintable first: one C loop a name.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _printable(name: str) -> str:
    return name if name.isprintable() else _CONTROL.sub("_", name)


# --------------------------------------------------------------------------- dump file names

# GE replaces only space, '.', '/' and '\\' in names (§2.3), so ':', '+', '(', non-ASCII letters
# and the like do occur in real file names. Control characters never come from an op name; a
# name holding one is a damaged or foreign file. \Z, not $: '$' also matches before a trailing
# newline, which would let "1\n" pass as a number.
_FIELD = r"[^ ./\\\x00-\x1f\x7f]+"
_NAME_FIELD = re.compile(rf"^{_FIELD}\Z")
_DIGITS = re.compile(r"^[0-9]+\Z")
_LXSLICE = re.compile(r"_lxslice[0-9]+\Z")
STATS_SUFFIX = ".csv"
MAPPING_FILE = "mapping.csv"


@pickled_as_values
@dataclass(frozen=True, slots=True)
class FftsFields:
    """The four extra fields of FFTS+/sgt task file names."""

    task_type: int
    context_id: int
    thread_id: int
    device_id: int


@pickled_as_values
@set_through_slots
@dataclass(frozen=True, slots=True)
class DumpName:
    """``{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}[+FFTS fields]`` (formats.md §2.3)."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    ffts: FftsFields | None = None

    @property
    def match_name(self) -> str:
        """The op name used for matching: manual-slice suffixes ``_lxsliceN`` removed."""
        return _LXSLICE.sub("", self.op_name)

    @property
    def op_key(self) -> tuple[str, str]:
        return (self.op_type, self.op_name)


# A whole well-formed name in one match (two name fields, then two or more numbers): one regex
# call instead of one a field, for every file of every walk. Names it refuses are parsed field by
# field below, which says what is wrong.
_WELL_FORMED = re.compile(rf"({_FIELD})\.({_FIELD})\.([0-9]+(?:\.[0-9]+)+)\Z")


def parse_dump_name(name: str) -> DumpName:
    """Parse a dump file name in any of its variants; raise BadFileNameError when it is none."""
    whole = _WELL_FORMED.match(name)
    if whole is not None:
        op_type, op_name, numbers = whole.groups()
        return _dump_name(name, op_type, op_name, [int(n) for n in numbers.split(".")])
    parts = name.split(".")
    if len(parts) < 4:
        raise BadFileNameError(name, "a dump file name has at least 4 dot-separated fields")
    op_type, op_name, *numbers = parts
    for label, value in (("op type", op_type), ("op name", op_name)):
        if not _NAME_FIELD.match(value):
            raise BadFileNameError(
                name, f"{label} {value!r} is empty or holds a space, '/', '\\' or a control character"
            )
    if not all(_DIGITS.match(n) for n in numbers):
        raise BadFileNameError(name, "the fields after the op name must be numbers")
    return _dump_name(name, op_type, op_name, [int(n) for n in numbers])


def _dump_name(name: str, op_type: str, op_name: str, values: list[int]) -> DumpName:
    """The dump name of ``name``'s fields, by the count of its numbers."""
    if len(values) == 2:
        return DumpName(op_type, op_name, values[0], None, values[1])
    if len(values) == 3:
        return DumpName(op_type, op_name, values[0], values[1], values[2])
    if len(values) == 6:
        task, stamp, *ffts = values
        return DumpName(op_type, op_name, task, None, stamp, FftsFields(*ffts))
    if len(values) == 7:
        stream, task, stamp, *ffts = values
        return DumpName(op_type, op_name, task, stream, stamp, FftsFields(*ffts))
    raise BadFileNameError(name, f"{len(values)} numeric fields fit no dump-name variant (2, 3, 6 or 7)")


def format_dump_name(dump_name: DumpName) -> str:
    """Inverse of ``parse_dump_name``."""
    d = dump_name
    fields = [d.op_type, d.op_name]
    if d.ffts is None:
        fields += (
            [str(d.task_id)] + ([str(d.stream_id)] if d.stream_id is not None else []) + [str(d.timestamp)]
        )
    else:
        f = d.ffts
        fields += ([str(d.stream_id)] if d.stream_id is not None else []) + [str(d.task_id), str(d.timestamp)]
        fields += [str(f.task_type), str(f.context_id), str(f.thread_id), str(f.device_id)]
    return ".".join(fields)


def dump_file_name(op_type: str, op_name: str, task_id: int, stream_id: int, timestamp: int) -> str:
    """The modern 5-field name, from unsanitised names, as the runtime writes it."""
    return format_dump_name(
        DumpName(sanitize_dump_name(op_type), sanitize_dump_name(op_name), task_id, stream_id, timestamp)
    )


def read_mapping(directory: Path) -> dict[str, str]:
    """``mapping.csv`` (``numeric_name,original_name`` per line) of a directory, or {} if absent."""
    path = directory / MAPPING_FILE
    if not path.is_file():
        return {}
    mapping: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        for row in csv.reader(handle):
            if len(row) >= 2 and row[0].strip():
                mapping[row[0].strip()] = row[1].strip()
    return mapping


def add_to_mapping(directory: Path, numeric_name: str, original_name: str) -> None:
    """Append one ``numeric_name,original_name`` line to ``directory``'s ``mapping.csv``."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / MAPPING_FILE).open("a", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow((numeric_name, original_name))


def name_that_fits(directory: Path, name: str, stand_in: str, longest: int = NAME_MAX) -> Path:
    """``directory / name``; a name longer than ``longest`` bytes (NAME_MAX, less what a writer
    appends to it) is written under ``stand_in`` instead, recorded in the directory's
    ``mapping.csv`` first (formats.md §2.3, §2.4), so a reader that meets the file can name it."""
    if len(os.fsencode(name)) <= longest:
        return directory / name
    with writing(directory / MAPPING_FILE):
        add_to_mapping(directory, stand_in, name)
    return directory / stand_in


# --------------------------------------------------------------------------- npy names


@pickled_as_values
@set_through_slots
@dataclass(frozen=True, slots=True)
class GoldenName:
    """``{op_name}.{output_index}.{timestamp}.npy`` with the op name sanitised (formats.md §2.4)."""

    op_name: str
    output_index: int
    timestamp: int
    suffix: str = ".npy"

    @property
    def key(self) -> str:
        return f"{self.op_name}.{self.output_index}"


GOLDEN_SUFFIXES = (".npy", ".pb", ".quant")
# The op type ``convert npy2dump`` gives the dump files it makes of golden npy files: a dump file
# of this type is golden data, every output of one golden op in one file.
GOLDEN_OP_TYPE = "Golden"


# A whole well-formed golden name in one match, as the field-by-field parse below reads it (the
# last two dot-separated fields before the suffix are the numbers): one regex call a golden file
# of a listing, where the parse took ~4 µs. Names it refuses are parsed field by field, which
# says what is wrong.
_GOLDEN_WELL_FORMED = re.compile(r"(.+)\.([0-9]+)\.([0-9]+)(\.npy|\.pb|\.quant)\Z", re.DOTALL)


def well_formed_golden_name(name: str) -> GoldenName | None:
    """``parse_golden_name`` of a well-formed name (one regex call), None for any other."""
    whole = _GOLDEN_WELL_FORMED.match(name)
    if whole is None:
        return None
    op_name, index, stamp, suffix = whole.groups()
    return GoldenName(op_name, int(index), int(stamp), suffix)


def parse_golden_name(name: str) -> GoldenName:
    well_formed = well_formed_golden_name(name)
    if well_formed is not None:
        return well_formed
    suffix = next((s for s in GOLDEN_SUFFIXES if name.endswith(s)), None)
    if suffix is None:
        raise BadFileNameError(name, f"golden files end in one of {', '.join(GOLDEN_SUFFIXES)}")
    stem = name[: -len(suffix)]
    head, _, stamp = stem.rpartition(".")
    op_name, _, index = head.rpartition(".")
    if not op_name or not _DIGITS.match(index) or not _DIGITS.match(stamp):
        raise BadFileNameError(name, "expected {op_name}.{output_index}.{timestamp}" + suffix)
    return GoldenName(op_name, int(index), int(stamp), suffix)


def golden_file_name(op_name: str, output_index: int, timestamp: int) -> str:
    return f"{sanitize_golden_name(op_name)}.{output_index}.{timestamp}.npy"


def converted_npy_name(dump_file: str, kind: str, index: int, shape: tuple[int, ...] | None = None) -> str:
    """``{dump file}.{input|output}.{index}[.{d0xd1x…}].npy`` as ``convert`` writes it."""
    dims = f".{'x'.join(str(d) for d in shape)}" if shape is not None else ""
    return f"{dump_file}.{kind}.{index}{dims}.npy"
