"""Seeded fuzz of the dump reader: every mutant of a real dump is read cleanly or refused cleanly.

Mutants are made from the shared fixture dumps by the damage real files suffer (bit flips,
truncation, a wrong header length, junk, varint bombs, repeated headers) and by headers whose
enum fields hold values outside their enums. Each must give a result or a DumpcmpError through
``read_dump`` and ``DumpTensor.logical()``, and ``convert dump2npy`` of a tree of them must
account for every file (converted or named as skipped) without a traceback.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dumpcmp.commands import convert
from dumpcmp.errors import DumpcmpError
from dumpcmp.proto._gen import dump_data_pb2
from dumpcmp.proto.codec import iter_tensors, read_dump

SEED = 20261123
_U64 = struct.Struct("<Q")

Mutation = Callable[[random.Random, bytes], bytes]


def _split(data: bytes) -> tuple[bytes, bytes]:
    """(header, payloads) of a 2.0 file; a legacy file is all header."""
    (length,) = _U64.unpack_from(data, 0)
    if 8 + length <= len(data):
        return data[8 : 8 + length], data[8 + length :]
    return data, b""


def _join(header: bytes, payloads: bytes) -> bytes:
    return _U64.pack(len(header)) + header + payloads


def _bit_flips(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        position = rng.randrange(min(len(out), 8 + 400))  # mostly the header, where flips hurt
        out[position] ^= 1 << rng.randrange(8)
    return bytes(out)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def _header_length(rng: random.Random, data: bytes) -> bytes:
    value = rng.choice([0, 1, len(data), len(data) - 9, 2**63, 2**64 - 1, rng.randrange(2**64)])
    return _U64.pack(value) + data[8:]


def _junk(rng: random.Random, data: bytes) -> bytes:
    junk = rng.randbytes(rng.randint(1, 64))
    where = rng.randrange(len(data) + 1)
    return data[:where] + junk + data[where + rng.choice([0, len(junk)]) :]


def _varint_bomb(rng: random.Random, data: bytes) -> bytes:
    header, payloads = _split(data)
    where = rng.randrange(len(header) + 1)
    bomb = b"\xff" * rng.randint(10, 4000) + rng.choice([b"", b"\x01", b"\x7f"])
    return _join(header[:where] + bomb + header[where:], payloads)


def _repeated_header(rng: random.Random, data: bytes) -> bytes:
    header, payloads = _split(data)
    return _join(header * rng.randint(2, 3), payloads)


def _enum_out_of_range(rng: random.Random, data: bytes) -> bytes:
    header, payloads = _split(data)
    message = dump_data_pb2.DumpData()
    message.ParseFromString(header)
    tensors: list[object] = [*message.input, *message.output]
    if not tensors:
        return data
    values = [67, 256, -1, -rng.randint(2, 2**31), 2**31 - 1, rng.randint(52, 254)]
    for tensor in rng.sample(tensors, rng.randint(1, len(tensors))):
        field = rng.choice(["format", "data_type", "both", "original_op"])
        if field in ("format", "both"):
            tensor.format = rng.choice(values)  # type: ignore[assignment]
        if field in ("data_type", "both"):
            tensor.data_type = rng.choice(values)  # type: ignore[assignment]
        if field == "original_op" and tensor in message.output:
            tensor.original_op.format = rng.choice(values)  # type: ignore[assignment]
            tensor.original_op.data_type = rng.choice(values)  # type: ignore[assignment]
    if header is data:  # the legacy layout: the whole file is the message
        return message.SerializeToString()
    return _join(message.SerializeToString(), payloads)


MUTATIONS: dict[str, Mutation] = {
    "bit flips": _bit_flips,
    "truncation": _truncate,
    "header length": _header_length,
    "junk": _junk,
    "varint bomb": _varint_bomb,
    "repeated header": _repeated_header,
    "enum out of range": _enum_out_of_range,
}


def _mutants(sources: list[Path], count: int) -> list[tuple[str, str, bytes]]:
    rng = random.Random(SEED)
    originals = [(p.name, p.read_bytes()) for p in sources]
    made = []
    for number in range(count):
        name, data = rng.choice(originals)
        kind = rng.choice(sorted(MUTATIONS))
        made.append((f"{kind} #{number} of {name}", name, MUTATIONS[kind](rng, data)))
    return made


@pytest.fixture(scope="module")
def fixture_dumps(shared_fixtures: Path) -> list[Path]:
    found = sorted(p for p in (shared_fixtures / "dumps").rglob("*") if p.is_file() and p.parent.name == "0")
    if not found:
        pytest.skip("no shared fixture dumps")
    return found


def _read_everything(path: Path) -> str:
    """'ok' or the error line; anything but a DumpcmpError propagates and fails the test."""
    try:
        dump = read_dump(path)
    except DumpcmpError as exc:
        return str(exc)
    for tensor in iter_tensors(dump):
        try:
            tensor.logical()
        except DumpcmpError:
            continue
    return "ok"


def test_every_mutant_reads_cleanly_or_fails_cleanly(fixture_dumps: list[Path], tmp_path: Path) -> None:
    outcomes: dict[str, set[str]] = {}
    for label, _name, data in _mutants(fixture_dumps, 3000):
        path = tmp_path / "mutant"
        path.write_bytes(data)
        try:
            result = _read_everything(path)
        except Exception as exc:  # the point: name the mutant that escaped
            pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
        outcomes.setdefault(label.split(" #")[0], set()).add("ok" if result == "ok" else "error")
    # The run must exercise both outcomes, or the mutations are too weak (or too strong) to test.
    assert set(outcomes) == set(MUTATIONS)
    assert "error" in outcomes["truncation"]
    assert outcomes["enum out of range"] == {"ok"}  # a bad enum is a per-tensor reason, not a bad file


def test_out_of_range_format_is_a_per_tensor_reason(fixture_dumps: list[Path], tmp_path: Path) -> None:
    data = fixture_dumps[0].read_bytes()
    header, payloads = _split(data)
    message = dump_data_pb2.DumpData()
    message.ParseFromString(header)
    message.input[0].format = 67  # type: ignore[assignment]
    message.output[0].data_type = -3  # type: ignore[assignment]
    path = tmp_path / fixture_dumps[0].name
    path.write_bytes(_join(message.SerializeToString(), payloads))
    dump = read_dump(path)
    with pytest.raises(DumpcmpError, match="input:0: unknown format 67"):
        dump.inputs[0].logical()
    with pytest.raises(DumpcmpError, match="unsupported dtype"):
        dump.outputs[0].logical()


def test_convert_of_a_mutant_tree_accounts_for_every_file(fixture_dumps: list[Path], tmp_path: Path) -> None:
    step = tmp_path / "dumps" / "20261121093000" / "0" / "net" / "1" / "0"
    step.mkdir(parents=True)
    names = []
    for number, (_label, name, data) in enumerate(_mutants(fixture_dumps, 300)):
        op_type, op_name, *_ = name.split(".")
        file_name = f"{op_type}.{op_name}.{number}.2.{1_763_700_000_000_000 + number}"
        (step / file_name).write_bytes(data)
        names.append(file_name)
    app = typer.Typer()
    app.add_typer(convert.app, name="convert")
    result = CliRunner().invoke(
        app, ["convert", "dump2npy", "-i", str(tmp_path / "dumps"), "-o", str(tmp_path / "out")]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    converted = {p.name.split(".input.")[0].split(".output.")[0] for p in (tmp_path / "out").rglob("*.npy")}
    skipped = {
        line.split("/")[-1].split(":")[0]
        for line in result.output.splitlines()
        if line.startswith("skipped ")
    }
    missing = [n for n in names if n not in converted and n not in skipped]
    assert not missing, f"files neither converted nor reported: {missing[:5]}"
