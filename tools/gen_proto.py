"""Regenerate dumpcmp/proto/_gen/*_pb2*.py from the .proto files.

    python tools/gen_proto.py            # write the generated modules
    python tools/gen_proto.py --out DIR  # write them elsewhere (the staleness test does this)

Needs grpcio-tools (in the `test` extra).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "dumpcmp" / "proto"
GEN_DIR = PROTO_DIR / "_gen"
PROTOS = sorted(p.name for p in PROTO_DIR.glob("*.proto"))


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc  # imported here: only this script needs the compiler

    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *PROTOS,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed for {PROTOS}")
    for grpc_file in out_dir.glob("*_pb2_grpc.py"):
        text = grpc_file.read_text()
        if "add_" not in text:  # messages-only protos get an empty grpc module: drop it
            grpc_file.unlink()
            continue
        # protoc writes absolute imports; the package lives under dumpcmp.proto._gen.
        grpc_file.write_text(_relative(text))


def _relative(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if line.startswith("import ") and "_pb2 as " in line:
            line = "from . " + line
        lines.append(line)
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=GEN_DIR)
    generate(parser.parse_args(argv).out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
