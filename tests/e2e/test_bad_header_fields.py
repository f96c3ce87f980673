"""A dump whose header holds an out-of-range enum costs that tensor its numbers, not the run."""

from __future__ import annotations

import csv
import struct
from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app
from dumpcmp.commands.sim import simulate
from dumpcmp.proto._gen import dump_data_pb2
from dumpcmp.proto.walker import walk_dump_tree

_U64 = struct.Struct("<Q")


def _set_output_format(path: Path, value: int) -> None:
    data = path.read_bytes()
    (length,) = _U64.unpack_from(data, 0)
    message = dump_data_pb2.DumpData()
    message.ParseFromString(data[8 : 8 + length])
    message.output[0].format = value  # type: ignore[assignment]
    header = message.SerializeToString()
    path.write_bytes(_U64.pack(len(header)) + header + data[8 + length :])


def test_compare_gives_the_bad_tensor_a_reason_and_the_others_numbers(tmp_path: Path) -> None:
    sim = simulate("zoo:small_cnn", tmp_path / "sim")
    entries = [e for e in walk_dump_tree(sim.npu_dump_dir).entries if e.name.op_type == "Conv2D"]
    victim = entries[0]
    _set_output_format(victim.path, 67)
    out = tmp_path / "out"
    args = ["-m", "offline_data", "-tp", sim.npu_dump_dir, "-gp", sim.golden_dir, "-fr", sim.fusion_rule]
    result = CliRunner().invoke(app, ["compare", *map(str, args), "-o", str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    (path,) = out.glob("result_*.csv")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    bad = [r for r in rows if "unknown format 67" in r["CompareFailReason"]]
    assert len(bad) == 1
    assert victim.name.op_name.split("_")[-1] in bad[0]["NPUDump"].replace("/", "_")
    compared = [r for r in rows if r["CosineSimilarity"] not in ("", "NaN")]
    assert len(compared) > 10
