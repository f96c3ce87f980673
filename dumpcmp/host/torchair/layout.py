"""Find the GE dump, the GE graph dumps and the FX dump of a TorchAir run (formats.md §7.1, §7.2, §7.4).

A path may be the ``msprobe_ge_dump`` / ``msprobe_fx_dump`` directory, its parent, or any
directory inside it: every file is placed by the directories above it (read from the absolute
path), so the levels above the given path count as much as those below.

GE dump files (formats.md §7.1, §2.1)::

    [worldsize{W}_global_rank{R}/]{time}/{device}/{model}/{model_id}/{token}/{op_type}.{op_name}.…

With the ``worldsize`` level (torch_npu ≥ 7.1.0) the rank is R; without it the dump is one
process's and its rank is 0. The token directory is GE's token id, counted from 0. The graph
dumps ``dynamo_{original|optimized}_{graph}_rank_{r}_pid_{pid}_ts_{t}.txt`` sit in the directory
above the rank (or time) directories; their rank is the ``rank_{r}`` of the name (all of them are
rank 0's in the layout without ranks).

FX dump files (formats.md §7.2), two layouts:

* ``worldsize{W}_global_rank{R}/{model}/{token}/*.npy`` (torch_npu > 7.1.0): rank R, and the token
  directory is taken as GE's token id as it is. §7.2 lists this layout apart from the two below and
  says the ids are offset "in the old layouts" only; the rank layout writes the GE-side token id.
* ``data_dump/{n}/gm_{time}_dump/*.npy`` (torch_npu 7.1.0 under ``msprobe_fx_dump``, older ones in
  the working directory): rank 0, and ``n`` counts from 1, so GE's token id is ``n - 1``.

A side without rank levels is one process's dump. Compared with a side that has them (torch_npu
7.1.0 writes GE ``worldsize`` levels but an FX ``data_dump``), it takes that side's rank when
there is just one; against several ranks it is an error asking for one rank's directory.

Files ``dumpcmp reduce`` replaced by summaries (``dumpcmp_reduced.jsonl``) are found where they
were, and listed in ``reduced`` with their statistics; a file still on disk beside its summary is
read itself.

One path holds one dump: a second ``{time}`` directory of the same rank (a second run into the
same dump path), two dump directories, or a mix of layouts is an error naming both, as is a path
with no dump at all. Within one (rank, token) the ops of every model directory are merged; when
one op was dumped twice the larger file is kept (§7.4; FX tensors: the latest timestamp). Every
file passed over is listed in ``skipped`` with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TypeVar

from dumpcmp.errors import BadFileNameError, FormatError, MatchError
from dumpcmp.host.torchair.fx_golden import FX_SUFFIX, FxTensorKey, parse_fx_name
from dumpcmp.host.torchair.records import TorchairShardKey
from dumpcmp.host.torchair.reduced_stats import ReducedStats, damaged_stats, reduced_in
from dumpcmp.proto.names import MAPPING_FILE, read_mapping
from dumpcmp.proto.npy import SIDECAR_SUFFIX
from dumpcmp.proto.reduced import REDUCED_FILE, DamagedLine
from dumpcmp.proto.sniff import not_regular
from dumpcmp.proto.walker import DumpEntry, SkippedFile, dump_entry

__all__ = [
    "FUSED_OP_TYPE",
    "FxDump",
    "FxLayout",
    "GeDump",
    "GeLayout",
    "GraphFiles",
    "TorchairInputs",
    "graph_dumps_in",
    "holds_graph_dumps",
    "open_dump",
    "open_inputs",
]

FUSED_OP_TYPE = "AutomaticBufferFusionOp"
_RANK_DIR = re.compile(r"^worldsize([0-9]+)_global_rank([0-9]+)\Z")
_GM_DIR = re.compile(r"^gm_.+_dump\Z")
_DATA_DUMP = "data_dump"
_GRAPH_FILE = re.compile(r"^dynamo_(original|optimized)_.*\.txt\Z")
_GRAPH_RANK = re.compile(r"_rank_([0-9]+)_")


class GeLayout(str, Enum):
    RANKED = "worldsize{W}_global_rank{R}/{time}/{device}/{model}/{model_id}/{token}"
    PLAIN = "{time}/{device}/{model}/{model_id}/{token}"


class FxLayout(str, Enum):
    RANKED = "worldsize{W}_global_rank{R}/{model}/{token}"
    DATA_DUMP = "data_dump/{token+1}/gm_{time}_dump"


_Layout = TypeVar("_Layout", GeLayout, FxLayout)


@dataclass(frozen=True, slots=True)
class GraphFiles:
    """One rank's GE graph dumps: before GE's optimisations, and as executed (with fused ops)."""

    original: tuple[Path, ...] = ()
    optimized: tuple[Path, ...] = ()


@dataclass(frozen=True)
class GeDump:
    """A GE dump: its files per (rank, token) in execution order, and its graph dumps per rank."""

    root: Path  # the directory holding the rank (or time) directories: msprobe_ge_dump
    layout: GeLayout
    shards: Mapping[TorchairShardKey, tuple[DumpEntry, ...]]
    graphs: Mapping[int, GraphFiles]
    skipped: tuple[SkippedFile, ...] = ()
    reduced: Mapping[Path, ReducedStats] = field(default_factory=dict)  # files reduced to summaries
    # Damaged lines of its reduced files that name no file (also in ``skipped``): each stood for
    # a file whose tensors are in no row.
    lost: tuple[DamagedLine, ...] = ()

    kind = "GE dump"

    @property
    def ranked(self) -> bool:
        return self.layout is GeLayout.RANKED

    def as_rank(self, rank: int) -> GeDump:
        """This dump of one process without rank levels, as rank ``rank``'s."""
        shards = {TorchairShardKey(rank, key.token): v for key, v in self.shards.items()}
        graphs = {rank: self.graphs[0]} if 0 in self.graphs else {}  # one process's graphs are rank 0's
        return replace(self, shards=shards, graphs=graphs)


@dataclass(frozen=True)
class FxDump:
    """An FX dump: per (rank, token), each FX tensor's npy file (the latest timestamp's)."""

    root: Path  # the directory holding the rank directories, or the one holding data_dump
    layout: FxLayout
    shards: Mapping[TorchairShardKey, Mapping[FxTensorKey, Path]]
    skipped: tuple[SkippedFile, ...] = ()
    reduced: Mapping[Path, ReducedStats] = field(default_factory=dict)  # files reduced to summaries
    # Damaged lines of its reduced files that name no file (also in ``skipped``): each stood for
    # a file whose tensors are in no row.
    lost: tuple[DamagedLine, ...] = ()

    kind = "FX dump"

    @property
    def ranked(self) -> bool:
        return self.layout is FxLayout.RANKED

    def as_rank(self, rank: int) -> FxDump:
        """This dump of one process without rank levels, as rank ``rank``'s."""
        return replace(self, shards={TorchairShardKey(rank, key.token): v for key, v in self.shards.items()})


@dataclass(frozen=True)
class TorchairInputs:
    """The two sides of a TorchAir comparison, checked to share at least one (rank, token)."""

    target: GeDump
    bench: FxDump | GeDump

    @property
    def shards(self) -> tuple[TorchairShardKey, ...]:
        """Every shard of the target side (a shard the bench lacks still gets its rows)."""
        return tuple(sorted(self.target.shards))

    @property
    def bench_only(self) -> tuple[TorchairShardKey, ...]:
        """Shards of the bench side with no GE dump: nothing of them is compared."""
        return tuple(sorted(set(self.bench.shards) - set(self.target.shards)))

    @property
    def skipped(self) -> tuple[SkippedFile, ...]:
        return self.target.skipped + self.bench.skipped

    @property
    def fused_bench_ops(self) -> tuple[str, ...]:
        """Fused ops of a GE bench: it was dumped with fusion on, where fusion off is expected."""
        if not isinstance(self.bench, GeDump):
            return ()
        entries = (e for es in self.bench.shards.values() for e in es)
        return tuple(sorted({e.name.op_name for e in entries if e.name.op_type == FUSED_OP_TYPE}))


def open_inputs(target: Path, bench: Path) -> TorchairInputs:
    """``-tp`` (a GE dump) and ``-gp`` (an FX dump, or the GE dump of a fusion-off run)."""
    if target.resolve() == bench.resolve():
        raise MatchError(f"-tp and -gp are the same directory ({target}): a dump compared with itself")
    ge = open_dump(target)
    if not isinstance(ge, GeDump):
        raise MatchError(f"{target} holds an FX dump ({ge.root}); the target side (-tp) is the GE dump")
    other = open_dump(bench)
    if isinstance(other, GeDump) and other.root.resolve() == ge.root.resolve():
        raise MatchError(
            f"-gp {bench} is the very GE dump of -tp ({ge.root}): the bench is a GE dump of a "
            "fusion-off run, or an FX dump"
        )
    ge, other = _same_ranks(ge, other)
    if not set(ge.shards) & set(other.shards):
        raise MatchError(
            f"the GE dump {ge.root} and the {other.kind} {other.root} share no (rank, token): "
            f"the GE dump has {describe_shards(ge.shards)}, "
            f"the {other.kind} has {describe_shards(other.shards)}"
        )
    return TorchairInputs(ge, other)


def _same_ranks(ge: GeDump, other: GeDump | FxDump) -> tuple[GeDump, GeDump | FxDump]:
    """A side without rank levels (one process's dump, e.g. torch_npu 7.1.0's FX ``data_dump``
    beside a GE dump with ``worldsize`` levels) is the rank of the other side, if it has one rank."""
    if ge.ranked == other.ranked:
        return ge, other
    ranked, plain = (ge, other) if ge.ranked else (other, ge)
    ranks = sorted({key.rank for key in ranked.shards})
    if len(ranks) > 1:
        raise MatchError(
            f"the {plain.kind} {plain.root} is one process's (no worldsize{{W}}_global_rank{{R}} "
            f"directories) but the {ranked.kind} {ranked.root} holds ranks {', '.join(map(str, ranks))}: "
            "give the directory of the one rank meant (worldsize{W}_global_rank{R})"
        )
    if ge.ranked:
        return ge, other.as_rank(ranks[0])
    return ge.as_rank(ranks[0]), other


def open_dump(path: Path) -> GeDump | FxDump:
    """The one GE or FX dump found at ``path`` (see module doc); MatchError names what is wrong."""
    if not path.exists():
        raise MatchError(f"{path} does not exist")
    if not path.is_dir():
        raise MatchError(f"{path} is a file; give the directory of a GE or FX dump")
    found = _Walk(path)
    if found.ge_files and found.fx_files:
        raise MatchError(
            f"{path} holds both a GE dump ({found.ge_files[0][0].path.parent}) and an FX dump "
            f"({found.fx_files[0][0].parent}); give the one directory meant"
        )
    if found.ge_files:
        return _ge_dump(path, found)
    if found.fx_files:
        return _fx_dump(path, found)
    why = ""
    if found.skipped:
        first = found.skipped[0]
        why = f" ({len(found.skipped)} files passed over, e.g. {first.path.name}: {first.reason})"
    raise MatchError(f"{path} holds no GE dump files and no FX npy files{why}")


def holds_graph_dumps(path: Path) -> bool:
    """Whether ``path`` or a directory right below it holds GE graph dumps: a TorchAir GE dump.
    Two levels only: cheap on a large tree, and where ``msprobe_ge_dump`` puts them."""
    levels = [path, *(p for p in _entries(path) if p.is_dir() and not p.is_symlink())]
    return any(graph_dumps_in(level) for level in levels)


def graph_dumps_in(directory: Path) -> bool:
    """Whether ``directory`` itself (not below it) holds GE graph dumps. An empty file of that
    name is not one: ``reduce`` deletes what it reduces on this evidence, and a stray ``touch``
    must not make an offline dump tree look like a TorchAir run's."""
    return any(_GRAPH_FILE.match(p.name) and _holds_bytes(p) for p in _entries(directory))


def _holds_bytes(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _entries(path: Path) -> list[Path]:
    try:
        return list(path.iterdir()) if path.is_dir() else []
    except OSError:
        return []


def describe_shards(shards: Iterable[TorchairShardKey]) -> str:
    """``rank 0 tokens 0-3, 5; rank 1 token 2``: which (rank, token) a side has."""
    tokens: dict[int, list[int]] = {}
    for key in sorted(shards):
        tokens.setdefault(key.rank, []).append(key.token)
    parts = []
    for rank, ids in tokens.items():
        word = "token" if len(ids) == 1 else "tokens"
        parts.append(f"rank {rank} {word} {_ranges(ids)}")
    return "; ".join(parts) or "nothing"


def _ranges(ids: list[int]) -> str:
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# --------------------------------------------------------------------------- the walk


@dataclass(frozen=True, slots=True)
class _GePlace:
    """Where a GE dump file sits: its shard and the dump (root, session) it belongs to."""

    layout: GeLayout
    root: Path
    session: Path  # the {time} directory: one per rank and dump, with one device
    device: str
    shard: TorchairShardKey


@dataclass(frozen=True, slots=True)
class _FxPlace:
    layout: FxLayout
    root: Path
    shard: TorchairShardKey


@dataclass
class _Walk:
    """Every file under a path, sorted into GE dump files, FX npy files, graph dumps and the rest."""

    path: Path
    ge_files: list[tuple[DumpEntry, _GePlace]] = field(default_factory=list)
    fx_files: list[tuple[Path, _FxPlace]] = field(default_factory=list)
    graph_files: list[Path] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    reduced: dict[Path, ReducedStats] = field(default_factory=dict)
    lost: list[DamagedLine] = field(default_factory=list)  # damaged reduced lines that name no file

    def __post_init__(self) -> None:
        for directory, dirnames, filenames in os.walk(self.path):
            dirnames.sort()
            here = Path(directory)
            mapping = read_mapping(here) if MAPPING_FILE in filenames else {}
            for filename in sorted(filenames):
                if filename not in (MAPPING_FILE, REDUCED_FILE):
                    self._add(here / filename, mapping.get(filename, filename))
            if REDUCED_FILE in filenames:
                self._add_reduced(here, set(filenames))

    def _add_reduced(self, directory: Path, present: set[str]) -> None:
        """Files ``dumpcmp reduce`` replaced by summaries stand where they were; an original still
        on disk (deleted after its summary was written, or not yet) is read itself."""
        try:
            summaries, damaged = reduced_in(directory)
        except FormatError as exc:
            self.skipped.append(SkippedFile(directory / REDUCED_FILE, str(exc)))
            return
        for line in damaged:
            if line.name is None:  # listed, and counted apart: it stands for a file, not compared
                self.skipped.append(SkippedFile(line.path, f"{line}; the other lines are read"))
                self.lost.append(line)
            elif line.name not in present:  # its tensors are counted unreadable where they pair
                summaries[line.name] = damaged_stats(line, line.name)
        for name, summary in sorted(summaries.items()):
            if name not in present:
                self.reduced[directory / name] = summary
                self._add(directory / name, name)

    def _add(self, path: Path, name: str) -> None:
        """``name``: the file's name, or the long name a mapping.csv gives a numeric one."""
        irregular = not_regular(path)
        if irregular:
            self.skipped.append(SkippedFile(path, irregular))
        elif _GRAPH_FILE.match(name):
            self.graph_files.append(path)
        elif name.endswith(FX_SUFFIX):
            self._add_fx(path)
        elif not name.endswith(FX_SUFFIX + SIDECAR_SUFFIX):  # a sidecar is read with its npy file
            self._add_ge(path, name)

    def size(self, path: Path) -> int:
        """A file's byte size (what it had, for one reduced to a summary)."""
        summary = self.reduced.get(path)
        return summary.size if summary is not None else path.stat().st_size

    def _add_fx(self, path: Path) -> None:
        try:
            parse_fx_name(path.name)
        except BadFileNameError as exc:
            self.skipped.append(SkippedFile(path, f"not an FX dump file name: {exc.reason}"))
            return
        place = _fx_place(path)
        if isinstance(place, str):
            self.skipped.append(SkippedFile(path, place))
        else:
            self.fx_files.append((path, place))

    def _add_ge(self, path: Path, name: str) -> None:
        found = dump_entry(path, self.path, name)
        if isinstance(found, SkippedFile):
            self.skipped.append(found)
        elif found is not None:
            place = _ge_place(path)
            if isinstance(place, str):
                self.skipped.append(SkippedFile(path, place))
            else:
                self.ge_files.append((found, place))


def _ge_place(path: Path) -> _GePlace | str:
    """The place of a GE dump file, or why it is in none."""
    parts = path.parent.absolute().parts
    if len(parts) < 6 or not (parts[-1].isdigit() and parts[-2].isdigit() and parts[-4].isdigit()):
        return "dump file outside a {time}/{device}/{model}/{model_id}/{token} directory"
    session = Path(*parts[:-4])
    ranked = _RANK_DIR.match(parts[-6])
    if ranked:
        rank, layout, root = int(ranked[2]), GeLayout.RANKED, Path(*parts[:-6])
    else:
        rank, layout, root = 0, GeLayout.PLAIN, Path(*parts[:-5])
    return _GePlace(layout, root, session, parts[-4], TorchairShardKey(rank, int(parts[-1])))


def _fx_place(path: Path) -> _FxPlace | str:
    parts = path.parent.absolute().parts
    if len(parts) >= 4 and parts[-1].isdigit() and (ranked := _RANK_DIR.match(parts[-3])):
        return _FxPlace(FxLayout.RANKED, Path(*parts[:-3]), TorchairShardKey(int(ranked[2]), int(parts[-1])))
    if len(parts) >= 4 and _GM_DIR.match(parts[-1]) and parts[-2].isdigit() and parts[-3] == _DATA_DUMP:
        if int(parts[-2]) == 0:
            return "FX token directory 0 under data_dump: these count from 1"
        return _FxPlace(FxLayout.DATA_DUMP, Path(*parts[:-3]), TorchairShardKey(0, int(parts[-2]) - 1))
    return f"npy file outside an FX dump directory ({FxLayout.RANKED.value} or {FxLayout.DATA_DUMP.value})"


# --------------------------------------------------------------------------- GE


def _ge_dump(path: Path, found: _Walk) -> GeDump:
    places = [place for _, place in found.ge_files]
    layout = _one_layout(path, "GE", [(p.layout, p.session) for p in places])
    root = _one_root(path, "GE", [p.root for p in places])
    sessions: dict[int, set[tuple[Path, str]]] = {}
    for place in places:
        sessions.setdefault(place.shard.rank, set()).add((place.session, place.device))
    for rank, seen in sorted(sessions.items()):
        if len(seen) > 1:
            (a, da), (b, db), *_ = sorted(seen)
            raise MatchError(
                f"two GE dumps in {path} for rank {rank}: {a / da} and {b / db}; give the directory of one"
            )
    skipped = list(found.skipped)
    shards: dict[TorchairShardKey, dict[str, DumpEntry]] = {}
    for entry, place in found.ge_files:
        ops = shards.setdefault(place.shard, {})
        key = entry.name.op_name + (".stats" if entry.is_stats else "")
        kept = ops.get(key)
        if kept is None:
            ops[key] = entry
            continue
        larger, smaller = sorted((kept, entry), key=lambda e: (found.size(e.path), str(e.path)), reverse=True)
        ops[key] = larger
        skipped.append(
            SkippedFile(smaller.path, f"op dumped twice in this token; the larger {larger.path} is kept")
        )
    ordered = {
        key: tuple(sorted(ops.values(), key=lambda e: (e.name.timestamp, e.name.task_id, str(e.path))))
        for key, ops in sorted(shards.items())
    }
    graphs = _graphs(root, layout, found.graph_files, skipped)
    reduced = {
        e.path: found.reduced[e.path] for es in ordered.values() for e in es if e.path in found.reduced
    }
    return GeDump(root, layout, ordered, graphs, tuple(skipped), reduced, tuple(found.lost))


def _graphs(
    root: Path, layout: GeLayout, walked: list[Path], skipped: list[SkippedFile]
) -> dict[int, GraphFiles]:
    """Graph dumps per rank: those under the path, and those beside the rank directories when
    the path given lies deeper than that."""
    candidates = set(walked)
    if root.is_dir():
        candidates.update(p for p in root.iterdir() if _GRAPH_FILE.match(p.name) and not not_regular(p))
    per_rank: dict[int, tuple[list[Path], list[Path]]] = {}
    for path in sorted(candidates):
        rank = _graph_rank(path, layout)
        if rank is None:
            skipped.append(SkippedFile(path, "GE graph dump name without _rank_{r}_: its rank is unknown"))
            continue
        original, optimized = per_rank.setdefault(rank, ([], []))
        (original if path.name.startswith("dynamo_original_") else optimized).append(path)
    return {rank: GraphFiles(tuple(o), tuple(p)) for rank, (o, p) in sorted(per_rank.items())}


def _graph_rank(path: Path, layout: GeLayout) -> int | None:
    if layout is GeLayout.PLAIN:
        return 0
    named = _GRAPH_RANK.search(path.name)
    if named:
        return int(named[1])
    ranked = _RANK_DIR.match(path.parent.name)
    return int(ranked[2]) if ranked else None


# --------------------------------------------------------------------------- FX


def _fx_dump(path: Path, found: _Walk) -> FxDump:
    places = [place for _, place in found.fx_files]
    layout = _one_layout(path, "FX", [(place.layout, file.parent) for file, place in found.fx_files])
    root = _one_root(path, "FX", [p.root for p in places])
    skipped = list(found.skipped)
    chosen: dict[TorchairShardKey, dict[FxTensorKey, tuple[int, Path]]] = {}
    for file, place in found.fx_files:
        name = parse_fx_name(file.name)
        tensors = chosen.setdefault(place.shard, {})
        kept = tensors.get(name.key)
        if kept is None:
            tensors[name.key] = (name.timestamp, file)
            continue
        newer, older = sorted((kept, (name.timestamp, file)), reverse=True)
        tensors[name.key] = newer
        skipped.append(
            SkippedFile(older[1], f"FX tensor dumped twice in this token; the later {newer[1].name} is used")
        )
    shards = {
        key: {tensor: file for tensor, (_, file) in sorted(tensors.items())}
        for key, tensors in sorted(chosen.items())
    }
    reduced = {p: found.reduced[p] for ts in shards.values() for p in ts.values() if p in found.reduced}
    return FxDump(root, layout, shards, tuple(skipped), reduced, tuple(found.lost))


# --------------------------------------------------------------------------- checks


def _one_layout(path: Path, side: str, seen: list[tuple[_Layout, Path]]) -> _Layout:
    examples: dict[_Layout, Path] = {}
    for layout, where in seen:
        examples.setdefault(layout, where)
    if len(examples) > 1:
        (a, pa), (b, pb), *_ = examples.items()
        raise MatchError(f"{path} mixes {side} dump layouts: {a.value} ({pa}) and {b.value} ({pb})")
    return next(iter(examples))


def _one_root(path: Path, side: str, roots: list[Path]) -> Path:
    distinct = sorted(set(roots))
    if len(distinct) > 1:
        raise MatchError(
            f"two {side} dumps in {path}: {distinct[0]} and {distinct[1]}; give the directory of one"
        )
    return distinct[0]
