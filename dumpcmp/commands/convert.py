"""``dumpcmp convert``: dump files → ``.npy``, golden ``.npy`` → dump files, one tensor → a layout.

Names follow formats.md §2.4:

* ``dump2npy`` writes ``{dump file name}.{input|output}.{index}.npy`` per tensor, in the logical
  layout and ``original_shape`` (``--device-layout``: the raw device layout). A directory is
  mirrored under OUT. Files behind a numeric name (``mapping.csv``) keep that name, because the
  original may be too long for the file system; a name that becomes too long is written under its
  uuid3 hex and recorded in that directory's ``mapping.csv``, as msaccucmp's convert does.
* ``npy2dump`` reads golden files ``{op_name}.{output_index}.{timestamp}.npy`` and writes one 2.0
  dump file per (op name, timestamp), named ``{op_type}.{op_name}.0.0.{timestamp}`` with the
  op type ``Golden`` unless ``--op-type`` says otherwise (golden names carry no op type, and task
  and stream ids mean nothing for a framework run). The golden files of one op run become the
  dump's outputs 0..k-1, in ND format with ``original_shape`` = shape; one golden file gives one
  output tensor. Indices must start at 0 without gaps, since a dump's outputs are positional.
* ``format`` converts one tensor to another layout: ``{dump file}.{kind}.{index}.{d0xd1x…}.npy``.

No conversion replaces what is already there: dump2npy and npy2dump refuse an ``-o`` that holds
files of the kind they write (a second run would mix with the first), format an existing file.

bf16, fp8, fp6 and fp4 tensors are written widened exactly to float32, so that a plain
``np.load`` gives their values; ``--keep-dtype`` writes their bit pattern with a ``.npy.json``
sidecar instead (``dumpcmp.proto.npy``). HiFloat8 has no numpy type and is always float32.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console

from dumpcmp.commands._flags import StrictCommand, StrictGroup
from dumpcmp.commands._output import console as _console
from dumpcmp.commands._output import counted
from dumpcmp.commands._output import fail as _fail
from dumpcmp.commands._output import user_errors as _user_errors
from dumpcmp.errors import (
    BadFileNameError,
    DumpcmpError,
    DumpFormatError,
    LayoutError,
    OutputError,
    UnsupportedDtypeError,
)
from dumpcmp.outputs import NAME_MAX, atomic_path, kept_if_written, prepare_output_dir
from dumpcmp.proto.codec import DumpFile, DumpTensor, Layout, TensorKind, read_dump, write_dump
from dumpcmp.proto.dtypes import Format, format_by_name
from dumpcmp.proto.names import (
    GOLDEN_OP_TYPE,
    DumpName,
    GoldenName,
    converted_npy_name,
    format_dump_name,
    name_that_fits,
    parse_dump_name,
    parse_golden_name,
    sanitize_dump_name,
)
from dumpcmp.proto.npy import load_npy, save_npy
from dumpcmp.proto.sniff import named_if_not_a_dump, not_a_dump

__all__ = ["DEFAULT_OP_TYPE", "ScriptTarget", "ScriptType", "app"]

DEFAULT_OP_TYPE = GOLDEN_OP_TYPE
_PROGRESS_MIN_FILES = 20  # below this a progress bar only flickers
_TXT_CHUNK = 1 << 20  # elements per savetxt call: bounds the text buffer for GB tensors

app = typer.Typer(no_args_is_help=True, cls=StrictGroup)


# --------------------------------------------------------------------------- text files


def _save_txt(path: Path, array: np.ndarray) -> None:
    """The tensor flattened, one value per line, written in chunks (no whole-tensor text copy)."""
    flat = array.reshape(-1)
    kind = np.dtype(flat.dtype).kind
    if kind == "b" or kind in "iu":
        fmt = "%d"
    elif kind == "c" or flat.dtype == np.float64:
        fmt = "%.17g"
    else:
        fmt = "%.9g"  # float32 and narrower (fp16, bf16, fp8) round-trip with 9 digits
    with atomic_path(path) as temp, temp.open("w", encoding="ascii") as handle:
        for start in range(0, flat.size, _TXT_CHUNK):
            chunk = flat[start : start + _TXT_CHUNK]
            if kind not in "iubc" and chunk.dtype not in (np.float16, np.float32, np.float64):
                chunk = chunk.astype(np.float32)  # ml_dtypes floats: exact in float32
            np.savetxt(handle, chunk, fmt=fmt)


# --------------------------------------------------------------------------- shared plumbing


def _reason(exc: Exception) -> str:
    if isinstance(exc, DumpFormatError):
        return f"at byte {exc.offset}: {exc.reason}"
    if isinstance(exc, UnsupportedDtypeError):
        return f"unsupported dtype {exc.dtype_name}"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


@dataclass(slots=True)
class _Tally:
    """What a batch command did, for the summary line and the exit code."""

    console: Console
    written: int = 0
    files: int = 0
    skipped_files: int = 0
    skipped_tensors: int = 0
    notes: list[str] = field(default_factory=list)

    def skip(self, path: Path, reason: str, *, whole_file: bool = True) -> None:
        self.console.print(f"skipped {path}: {reason}", markup=False)
        if whole_file:
            self.skipped_files += 1
        else:
            self.skipped_tensors += 1

    def finish(self, line: str) -> None:
        """The summary line; exit 1 when nothing was written."""
        self.console.print(line, markup=False)
        if self.written == 0:
            raise typer.Exit(1)


@contextmanager
def _maybe_progress(console: Console, total: int, what: str) -> Iterator[_Advance]:
    """A rich progress bar on a terminal for large trees; nothing when output is piped."""
    if not console.is_terminal or total < _PROGRESS_MIN_FILES:
        yield _Advance(None, 0)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield _Advance(progress, progress.add_task(what, total=total))


@dataclass(slots=True)
class _Advance:
    progress: object | None
    task: int

    def __call__(self) -> None:
        if self.progress is not None:
            self.progress.advance(self.task)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- dump2npy

_KEEP_DTYPE = typer.Option(
    "--keep-dtype",
    help="Keep bf16/fp8/fp6/fp4 as their bit pattern plus a .npy.json sidecar naming the type "
    "(read back by dumpcmp; plain np.load sees unsigned integers). Default: exact float32.",
)


def _output_dir(path: Path, kind: str, is_kind: Callable[[str], bool]) -> None:
    """``-o`` checked once the input is known good and before anything is converted.

    An ``-o`` that already holds files of ``kind`` (``is_kind`` of their names) is refused: a
    second conversion into it would replace some of them and leave the rest, so the directory
    would mix two runs (a tensor unreadable now keeping its npy of the last run).
    """
    with _user_errors():
        earlier = [p for p in path.rglob("*") if is_kind(p.name) and p.is_file()] if path.is_dir() else []
        if earlier:
            raise OutputError(
                f"-o {path} already holds {counted(len(earlier), kind)} (such as "
                f"{min(earlier).relative_to(path)}) that this conversion would mix with its own: "
                "give a new or empty directory, or remove them first"
            )
        prepare_output_dir(path, "-o")


def _is_npy(name: str) -> bool:
    return name.endswith(".npy") and not name.startswith(".")


def _is_dump(name: str) -> bool:
    try:
        parse_dump_name(name)
    except BadFileNameError:
        return False
    return not name.startswith(".")


def _dump_sources(source: Path, tally: _Tally) -> list[tuple[Path, Path]]:
    """(dump file, its directory relative to the input) for every file worth trying."""
    if source.is_file():
        return [(source, Path())]  # named explicitly: try it whatever its name says
    if not source.is_dir():
        _fail(f"{source}: no such file or directory")
    from dumpcmp.proto.walker import walk_dump_tree

    tree = walk_dump_tree(source)
    for skipped in tree.skipped:
        tally.skip(skipped.path, skipped.reason)
    found = []
    for entry in tree.entries:
        if entry.is_stats:
            tally.skip(entry.path, "statistics CSV (dump_data: stats), it holds no tensor data")
            continue
        found.append((entry.path, entry.path.parent.relative_to(source)))
    if not found and not tree.skipped:
        _fail(f"{source}: no dump files to convert; {_what_it_holds(source)}")
    return found


_NPY_TO_DUMP = "golden data? (npy2dump converts those)"


def _what_it_holds(directory: Path, npy: str = _NPY_TO_DUMP, wanted: str = "a dump file") -> str:
    """What a directory without files to convert holds, for the one line that says why nothing
    converts (the walk passes .npy, .txt, .json … files over without a word); ``npy``: what its
    .npy files are to this conversion, ``wanted``: the files it converts."""
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    found = next((p for p in files if p.suffix == ".npy"), None)
    if found is not None:
        return f"it holds .npy files such as {found.relative_to(directory)}: {npy}"
    if files:
        example = files[0].relative_to(directory)
        return f"it holds {counted(len(files), 'file')} such as {example}, none {wanted}"
    return "the directory holds no files"


def _convert_file(
    path: Path, out_dir: Path, tally: _Tally, *, device_layout: bool, txt: bool, keep_dtype: bool
) -> None:
    try:
        dump = read_dump(path)
    except DumpFormatError as exc:
        tally.skip(path, not_a_dump(path) or _reason(exc))
        return
    written = 0
    for tensor in (*dump.inputs, *dump.outputs):
        try:
            array = tensor.array() if device_layout else tensor.logical()
            name = converted_npy_name(path.name, tensor.kind.value, tensor.index)
            target = _name_that_fits(out_dir, name)
            text = _name_that_fits(out_dir, name.removesuffix(".npy") + ".txt") if txt else None
            save_npy(target, array, keep_dtype=keep_dtype)
            if text is not None:
                _save_txt(text, array)
        except OutputError:
            raise  # a full or read-only disk fails every later tensor too: the run stops here
        except DumpcmpError as exc:
            reason = _reason(exc)
            labelled = reason if reason.startswith(f"{tensor.label}: ") else f"{tensor.label}: {reason}"
            tally.skip(path, labelled, whole_file=False)
            continue
        written += 1
    tally.written += written
    if written:
        tally.files += 1


# The longest name written as it is: its --keep-dtype sidecar ``{name}.json`` must fit NAME_MAX too.
_LONGEST_NAME = NAME_MAX - len(".json")


def _name_that_fits(out_dir: Path, name: str) -> Path:
    """``out_dir / name``, or its uuid3 hex as msaccucmp's convert names one too long (formats.md §2.4)."""
    stand_in = uuid.uuid3(uuid.NAMESPACE_URL, name).hex + Path(name).suffix
    return name_that_fits(out_dir, name, stand_in, _LONGEST_NAME)


@app.command("dump2npy", cls=StrictCommand)
def dump2npy(
    input_: Annotated[Path, typer.Option("-i", "--input", help="A dump file, or a directory of them.")],
    output: Annotated[
        Path,
        typer.Option("-o", "--output", help="Directory for the .npy files (new, or holding no .npy files)."),
    ],
    device_layout: Annotated[
        bool, typer.Option("--device-layout", help="Keep the device layout and shape (padding included).")
    ] = False,
    txt: Annotated[bool, typer.Option("--txt", help="Also write each tensor flattened as text.")] = False,
    keep_dtype: Annotated[bool, _KEEP_DTYPE] = False,
) -> None:
    """Write every input and output tensor of dump files as .npy (logical layout by default).

    bf16, fp8, fp6 and fp4 tensors are written widened exactly to float32 unless --keep-dtype.
    """
    console = _console()
    tally = _Tally(console)
    sources = _dump_sources(input_, tally)
    with kept_if_written(output):
        _output_dir(output, ".npy file", _is_npy)
        with _user_errors(), _maybe_progress(console, len(sources), "dump2npy") as advance:
            for path, relative in sources:
                _convert_file(
                    path,
                    output / relative,
                    tally,
                    device_layout=device_layout,
                    txt=txt,
                    keep_dtype=keep_dtype,
                )
                advance()
        extra = f" and {counted(tally.skipped_tensors, 'tensor')}" if tally.skipped_tensors else ""
        tally.finish(
            f"converted {tally.written} tensors from {tally.files} dump files into {output}; "
            f"skipped {counted(tally.skipped_files, 'file')}{extra}"
        )


# --------------------------------------------------------------------------- npy2dump


@dataclass(slots=True)
class _GoldenRun:
    """The golden files of one op run: same directory, op name and timestamp."""

    relative: Path
    op_name: str
    timestamp: int
    files: dict[int, Path] = field(default_factory=dict)


def _golden_files(
    source: Path, tally: _Tally, suffixes: tuple[str, ...]
) -> list[tuple[Path, Path, GoldenName]]:
    """(file, its directory relative to the input, its parsed name) of each golden file of the
    input whose name ends in one of ``suffixes``; a file named explicitly is tried whatever it is."""
    if source.is_file():
        candidates = [(source, Path())]
    elif source.is_dir():
        candidates = [
            (p, p.parent.relative_to(source))
            for p in sorted(source.rglob("*"))
            if p.name.endswith(suffixes) and p.is_file() and not p.name.startswith(".")
        ]
    else:
        _fail(f"{source}: no such file or directory")
    found = []
    for path, relative in candidates:
        try:
            golden = parse_golden_name(path.name)
        except BadFileNameError as exc:
            tally.skip(path, f"not a golden file name: {exc.reason}")
            continue
        if golden.suffix not in suffixes:
            tally.skip(
                path, f"only {'/'.join(suffixes)} golden files are converted here, not {golden.suffix}"
            )
            continue
        found.append((path, relative, golden))
    return found


def _golden_runs(source: Path, tally: _Tally) -> list[_GoldenRun]:
    runs: dict[tuple[Path, str, int], _GoldenRun] = {}
    for path, relative, golden in _golden_files(source, tally, (".npy",)):
        run = runs.setdefault(
            (relative, golden.op_name, golden.timestamp),
            _GoldenRun(relative, golden.op_name, golden.timestamp),
        )
        if golden.output_index in run.files:
            tally.skip(path, f"output {golden.output_index} given twice")
            continue
        run.files[golden.output_index] = path
    return list(runs.values())


def _write_golden_run(run: _GoldenRun, out_root: Path, op_type: str, tally: _Tally) -> None:
    paths = [run.files[i] for i in sorted(run.files)]

    def skip_all(reason: str) -> None:
        for path in paths:
            tally.skip(path, reason)

    indices = sorted(run.files)
    if indices != list(range(len(indices))):
        skip_all(
            f"output indices {indices} of {run.op_name} leave gaps; a dump's outputs are positional, "
            f"so the golden files must be outputs 0..{len(indices) - 1}"
        )
        return
    if run.timestamp >= 1 << 64:
        skip_all(f"timestamp {run.timestamp} does not fit the dump header's uint64 dump_time")
        return
    try:
        name = format_dump_name(
            DumpName(sanitize_dump_name(op_type), sanitize_dump_name(run.op_name), 0, 0, run.timestamp)
        )
        parse_dump_name(name)  # the name must be one our own walker (and msaccucmp) accepts
    except BadFileNameError as exc:
        skip_all(f"cannot name a dump file after it: {exc.reason}")
        return
    outputs = []
    for index, path in enumerate(paths):
        try:
            array = load_npy(path, mmap=True)
            if not array.dtype.isnative:  # big-endian ">f4", as compare reads it: dumps are little-endian
                array = array.astype(array.dtype.newbyteorder("="))
            outputs.append(
                DumpTensor.from_array(
                    TensorKind.OUTPUT, index, array, format=Format.ND, original_shape=array.shape
                )
            )
        except DumpcmpError as exc:
            skip_all(_reason(exc))  # the reader's message names the file
            return
    target = out_root / run.relative / name
    dump = DumpFile(
        path=str(target),
        layout=Layout.V2,
        version="2.0",
        dump_time=run.timestamp,
        op_name=run.op_name,
        outputs=tuple(outputs),
    )
    try:
        write_dump(target, dump)
    except OSError as exc:
        skip_all(f"cannot write {target}: {_reason(exc)}")
        return
    tally.written += 1
    tally.files += len(paths)


@app.command("npy2dump", cls=StrictCommand)
def npy2dump(
    input_: Annotated[
        Path,
        typer.Option(
            "-i", "--input", help="A golden .npy file ({op}.{index}.{timestamp}.npy) or a directory."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("-o", "--output", help="Directory for the dump files (new, or holding no dump files)."),
    ],
    op_type: Annotated[
        str, typer.Option("--op-type", help="Op type field of the dump file names (golden names have none).")
    ] = DEFAULT_OP_TYPE,
) -> None:
    """Turn golden .npy files into 2.0 dump files (one per op run, outputs in ND format)."""
    console = _console()
    tally = _Tally(console)
    runs = _golden_runs(input_, tally)
    if not runs and not tally.skipped_files and input_.is_dir():
        holds = _what_it_holds(input_, wanted="a golden .npy file")  # .npy files: tried, and said
        _fail(f"{input_}: no golden .npy files to convert; {holds}")
    with kept_if_written(output):
        _output_dir(output, "dump file", _is_dump)
        with _maybe_progress(console, len(runs), "npy2dump") as advance:
            for run in runs:
                _write_golden_run(run, output, op_type, tally)
                advance()
        tally.finish(
            f"wrote {tally.written} dump files from {tally.files} .npy files into {output}; "
            f"skipped {counted(tally.skipped_files, 'file')}"
        )


# --------------------------------------------------------------------------- format


def _parse_shape(text: str) -> tuple[int, ...]:
    parts = [p for p in text.replace("x", ",").split(",") if p.strip()]
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected dims like 1,3,224,224") from None
    if not dims or any(d < 0 for d in dims):
        raise typer.BadParameter(f"{text!r}: expected non-negative dims like 1,3,224,224")
    return dims


def default_shape(
    original_shape: Sequence[int], device_format: Format, target: Format
) -> tuple[int, ...] | None:
    """The shape in ``target`` implied by the dump: ``original_shape`` for the natural logical
    format (§6.5), or it permuted when ``target`` is another axis order of the same letters
    (NCHW → NHWC, HWCN, …). None when the dump cannot tell; then the user passes ``-shape``."""
    from dumpcmp.proto.layouts import target_format

    if not original_shape:
        return None
    natural = target_format(original_shape, device_format)
    shape = tuple(int(d) for d in original_shape)
    if target == natural:
        return shape
    letters, wanted = natural.name, target.name
    if natural != Format.ND and sorted(letters) == sorted(wanted) and len(letters) == len(shape):
        return tuple(shape[letters.index(ch)] for ch in wanted)
    return None


def _axis_rank(fmt: Format) -> int | None:
    """The rank of a format named by its axes (NCHW 4, NCDHW 5, NC 2); None for ND and layouts."""
    name = fmt.name
    if fmt == Format.ND or set(name) - set("NCDHW") or len(set(name)) != len(name):
        return None
    return len(name)


def _check_rank(dst: Format, shape: tuple[int, ...], what: str, given: str | None) -> None:
    """A tensor "in NCHW" has four axes: ND to NCHW is a reshape, and a 2-D tensor was written
    unchanged and labelled NCHW (formats.md §6.5 reshapes between plain formats of one rank only)."""
    rank = _axis_rank(dst)
    if rank is None or len(shape) == rank:
        return
    if given is not None:
        raise LayoutError(f"-shape {given}: {counted(len(shape), 'dim')}; -format {dst.name} needs {rank}")
    raise LayoutError(
        f"-format {dst.name} needs a {rank}-D tensor; {what} is {len(shape)}-D {list(shape)} "
        f"(give -shape with {rank} dims to reshape it, or -format ND)"
    )


def _pick_tensor(dump: DumpFile, kind: str, index: int) -> DumpTensor:
    tensors = dump.tensors(TensorKind(kind))
    if not 0 <= index < len(tensors):
        raise LayoutError(f"{dump.path}: has {len(tensors)} {kind} tensors, there is no {kind} {index}")
    return tensors[index]


@app.command("format", cls=StrictCommand)
def format_(
    input_: Annotated[Path, typer.Option("-i", "--input", help="The dump file.")],
    target: Annotated[str, typer.Option("-format", "--format", help="Target format, e.g. NCHW, NHWC, ND.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Directory for the .npy file.")],
    shape: Annotated[
        str | None,
        typer.Option("-shape", "--shape", help="Target shape d0,d1,…; default: the dump's original shape."),
    ] = None,
    tensor: Annotated[str, typer.Option("-tensor", "--tensor", help="input or output.")] = "output",
    index: Annotated[int, typer.Option("-index", "--index", help="Tensor index.")] = 0,
    custom: Annotated[
        Path | None,
        typer.Option("-custom", "--custom", help="Directory holding format_convert/convert_X_to_Y.py files."),
    ] = None,
    keep_dtype: Annotated[bool, _KEEP_DTYPE] = False,
) -> None:
    """Convert one tensor of a dump file from its device format to another format."""
    if tensor not in (TensorKind.INPUT.value, TensorKind.OUTPUT.value):
        raise typer.BadParameter(f"{tensor!r}: choose input or output", param_hint="-tensor")
    dst_shape = _parse_shape(shape) if shape is not None else None
    with kept_if_written(output), _user_errors():
        from dumpcmp.proto.layouts import convert

        try:
            dst = format_by_name(target)
        except KeyError:
            raise LayoutError(f"unknown format {target!r}") from None
        with named_if_not_a_dump(input_):
            dump = read_dump(input_)
        chosen = _pick_tensor(dump, tensor, index)
        prepare_output_dir(output, "-o")
        src = chosen.device_format()
        converters = None
        if custom is not None:
            from dumpcmp.proto.custom_converters import CustomConverters

            converters = CustomConverters.load(custom)
        if dst_shape is None:
            dst_shape = default_shape(chosen.original_shape, src, dst)
        result = convert(chosen.array(), src, dst, dst_shape, sub_format=chosen.sub_format, custom=converters)
        _check_rank(dst, result.shape, f"{tensor} {index} of {input_}", shape)
        name = converted_npy_name(input_.name, tensor, index, tuple(int(d) for d in result.shape))
        if (output / name).exists():  # the same tensor in another format of the same shape
            raise OutputError(f"{output / name} already exists: give another -o, or remove it first")
        try:
            path = save_npy(output / name, result, keep_dtype=keep_dtype)
        except OSError as exc:
            _fail(f"cannot write {output / name}: {_reason(exc)}")
    _console().print(
        f"wrote {path} ({src.name} → {dst.name}, {result.dtype}, shape {list(result.shape)})", markup=False
    )


# --------------------------------------------------------------------------- CANN script spelling


class ScriptType(str, Enum):
    """``-type`` of CANN's dump conversion script: which side the input files come from."""

    CAFFE = "caffe"
    TF = "tf"
    OFFLINE = "offline"


class ScriptTarget(str, Enum):
    DUMP = "dump"
    NUMPY = "numpy"


_SCRIPT_HELP = """CANN conversion-script spelling (-type SIDE -target WHAT -i IN -o OUT):

-type offline -target numpy: NPU dump files to .npy, as dump2npy.

-type caffe|tf -target dump: golden .npy files to dump files, as npy2dump.

-type caffe|tf -target numpy: golden .pb/.quant files (legacy protobuf dumps) to golden .npy.

-type offline -target dump is refused: those files are dump files already.
"""


@app.callback(invoke_without_command=True, epilog=_SCRIPT_HELP)
def script_spelling(
    ctx: typer.Context,
    type_: Annotated[
        ScriptType | None,
        typer.Option("-type", "--type", help="CANN script spelling: where the input comes from."),
    ] = None,
    target: Annotated[
        ScriptTarget, typer.Option("-target", "--target", help="CANN script spelling: what to write.")
    ] = ScriptTarget.NUMPY,
    input_: Annotated[
        Path | None, typer.Option("-i", "--input", help="With -type: input file or directory.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="With -type: output directory.")
    ] = None,
) -> None:
    """Convert dump files to .npy, golden .npy files to dump files, or one tensor to another layout."""
    if type_ is None:
        if ctx.invoked_subcommand is None:
            _fail("choose a subcommand (dump2npy, npy2dump, format) or give -type and -target")
        if input_ is not None or output is not None:
            _fail("-i/-o before the subcommand need -type; put them after dump2npy, npy2dump or format")
        return
    if ctx.invoked_subcommand is not None:
        _fail(f"-type replaces the subcommand: drop either -type or {ctx.invoked_subcommand}")
    if input_ is None or output is None:
        _fail("-type needs -i INPUT and -o OUTPUT")
    if type_ is ScriptType.OFFLINE and target is ScriptTarget.DUMP:
        _fail("-type offline files are dump files already; -target numpy converts them to .npy")
    if type_ is ScriptType.OFFLINE:
        dump2npy(input_, output)
    elif target is ScriptTarget.DUMP:
        npy2dump(input_, output)
    else:
        _legacy_goldens_to_npy(input_, output)
    raise typer.Exit(0)


def _legacy_goldens_to_npy(source: Path, out_root: Path) -> None:
    """Caffe/TF golden ``{op}.{index}.{timestamp}.pb|.quant`` dumps → ``….npy`` of the same name."""
    console = _console()
    tally = _Tally(console)
    goldens = _golden_files(source, tally, (".pb", ".quant"))
    if not goldens and not tally.skipped_files and source.is_dir():  # said why, not "converted 0"
        holds = _what_it_holds(
            source, "they are numpy already (compare reads them as they are)", "a golden dump"
        )
        _fail(
            f"{source}: no caffe/TF golden dumps ({{op}}.{{index}}.{{timestamp}}.pb or .quant) "
            f"to convert; {holds}"
        )
    with kept_if_written(out_root):
        _output_dir(out_root, ".npy file", _is_npy)
        for path, relative, golden in goldens:
            try:
                dump = read_dump(path)
                if not dump.outputs:
                    raise DumpFormatError(path, 0, "holds no output tensor")
                name = f"{golden.op_name}.{golden.output_index}.{golden.timestamp}.npy"
                target = out_root / relative / name
                save_npy(target, dump.outputs[0].logical())
            except DumpcmpError as exc:
                tally.skip(path, _reason(exc))
                continue
            tally.written += 1
            tally.files += 1
        tally.finish(
            f"converted {counted(tally.written, 'golden file')} into {out_root}; "
            f"skipped {counted(tally.skipped_files, 'file')}"
        )
