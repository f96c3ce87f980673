"""Golden sources: where the "GroundTruth" side of a comparison comes from.

* a directory of framework npy files ``{op}.{output_index}.{timestamp}.npy`` (or Caffe/TF
  ``.pb``/``.quant`` dumps in the legacy layout), keyed by sanitised op name and output index,
  the latest timestamp winning (formats.md §2.4);
* a second NPU dump tree (NPU vs NPU), keyed by the sanitised op name in the dump file names,
  the latest timestamp winning;
* a single ``.npy`` or dump file (file vs file).

Every golden tensor is read-only: npy files are memory-mapped (``dumpcmp.proto.npy``, which also
re-types bf16/fp8 bit patterns saved with a dtype sidecar), so no golden is copied into fresh
memory before the metrics read it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dumpcmp.errors import BadFileNameError, DumpcmpError, FormatError
from dumpcmp.proto.codec import TensorKind, read_dump
from dumpcmp.proto.names import (
    GOLDEN_OP_TYPE,
    MAPPING_FILE,
    GoldenName,
    parse_dump_name,
    parse_golden_name,
    sanitize_dump_name,
    sanitize_golden_name,
    well_formed_golden_name,
)
from dumpcmp.proto.npy import SIDECAR_SUFFIX, load_npy
from dumpcmp.proto.records import set_through_slots
from dumpcmp.proto.walker import DumpEntry, child_path, listed_files, mapping_of, walk_dump_tree


@set_through_slots
@dataclass(frozen=True, slots=True)
class GoldenTensor:
    """One golden tensor, loaded on demand (npy files are memory-mapped)."""

    label: str
    path: Path
    loader: Callable[[], np.ndarray] = field(repr=False, compare=False)
    key: str = ""  # the source's key of this tensor: what counts as "used" (golden-only rows)

    def load(self) -> np.ndarray:
        """The tensor, read-only (a memory map for npy files)."""
        array = self.loader()
        if array.flags.writeable:
            array = array.view()  # the loader's own array keeps its flags
            array.flags.writeable = False
        return array


def _load_dump_output(path: Path, index: int = 0) -> np.ndarray:
    """Output ``index`` of a golden dump file: a Caffe/TF one holds its tensor as output 0."""
    dump = read_dump(path)
    if index >= len(dump.outputs):
        raise FormatError(f"{path}: golden dump file holds no output {index} (it holds {len(dump.outputs)})")
    return dump.outputs[index].logical()


# The suffix of the listed names of ``convert npy2dump``'s dump files (op type ``Golden``): each
# holds every output of its op, output k as output k.
_GOLDEN_DUMP = ""


class _Keyed:
    """Lookups never change a source: rows record the key they used, and the session layer
    lists the keys nobody used at the end of a result."""

    # How the source was opened, to open it again where it is unpickled (``__reduce__``)
    _opened: tuple[Callable[[Path], GoldenSource], tuple[Path]]

    def __reduce__(self) -> tuple[Callable[[Path], GoldenSource], tuple[Path]]:
        """Pickled as where it was opened: unpickled, it lists that again. A run's index goes to
        every Dask worker, which reads the golden files there anyway; pickled from the
        coordinator's CPU it cost ~3 µs a golden file as columns of values (~6 as records), and
        the listing a worker makes again once a run is its own CPU, not the coordinator's. (The
        scheduler unpickles a task's arguments too: without the shared path it lists nothing,
        and passes on the path alone.)"""
        return self._opened

    def _keys(self) -> Iterable[str]:
        raise NotImplementedError

    def unused(self, used: Iterable[str]) -> list[str]:
        """Golden tensors that no target tensor was compared with (listed at the end of a result)."""
        seen = set(used)
        return sorted(k for k in self._keys() if k not in seen)


# A golden file as the listing found it: its parsed name, its directory and file name, whether
# the listing showed a dtype sidecar beside it (None: not listed, ``load_npy`` looks). The path is
# joined when the file is used: in the workers, not once per golden file before any compare.
_Listed = tuple[GoldenName, Path, str, bool | None]


_NPY_SIDECAR = ".npy" + SIDECAR_SUFFIX  # an npy file's dtype sidecar's name ends so


class NpyGoldenDir(_Keyed):
    """Framework golden files under a directory (any depth)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._opened = (NpyGoldenDir, (root,))
        self._by_key: dict[str, _Listed] = {}
        self.skipped: list[tuple[Path, str]] = []
        for here, files in listed_files(root):
            mapping = mapping_of(here, files)
            regular = {filename for filename, irregular in files if not irregular}
            for filename, irregular in files:
                name = mapping.get(filename, filename)
                has_sidecar = filename + SIDECAR_SUFFIX in regular  # sidecar_path's name
                # A well-formed name (nearly every golden file) is listed at once, past the calls
                # that sort out the others (~2 µs of each golden file on the coordinator)
                parsed = None if irregular else well_formed_golden_name(name)
                if parsed is not None:
                    self._list((parsed, here, filename, has_sidecar))
                else:
                    self._add(here, filename, name, irregular, has_sidecar)

    @classmethod
    def single(cls, path: Path) -> NpyGoldenDir:
        source = cls.__new__(cls)
        source.root = path.parent
        source._opened = (cls.single, (path,))
        source.skipped = []
        source._by_key = {"*": (GoldenName(path.stem, 0, 0), path.parent, path.name, None)}
        return source

    def _add(self, directory: Path, filename: str, name: str, irregular: str, has_sidecar: bool) -> None:
        if name == MAPPING_FILE or name.endswith(_NPY_SIDECAR):
            return  # a sidecar is read with its npy file
        if irregular:
            self.skipped.append((directory / filename, irregular))
            return
        try:
            parsed = parse_golden_name(name)
        except BadFileNameError as exc:
            if self._add_golden_dump(directory, filename, name):
                return
            self.skipped.append((directory / filename, exc.reason))
            return
        self._list((parsed, directory, filename, has_sidecar))

    def _add_golden_dump(self, directory: Path, filename: str, name: str) -> bool:
        """Golden npy files ``convert npy2dump`` made dump files of are golden data still, matched
        through the fusion rule as the npy files were: a fused op must not meet a bare op's golden."""
        try:
            dumped = parse_dump_name(name)
        except BadFileNameError:
            return False
        if dumped.op_type != GOLDEN_OP_TYPE:
            return False
        path = directory / filename
        try:
            dump = read_dump(path)
        except DumpcmpError as exc:
            self.skipped.append((path, f"unreadable golden dump file: {exc}"))
            return True
        # The header holds the golden name as the npy file spelt it; the file name sanitises more.
        op_name = dump.op_name or dumped.op_name
        for k in range(len(dump.outputs)):
            self._list((GoldenName(op_name, k, dumped.timestamp, _GOLDEN_DUMP), directory, filename, None))
        return True

    def _list(self, listed: _Listed) -> None:
        parsed = listed[0]
        key = parsed.key  # a property formatting it: asked once a golden file of a listing
        known = self._by_key.get(key)
        if known is None:
            self._by_key[key] = listed
            return
        # Two runs in one directory: the newest of each tensor is compared, and the other named,
        # since a tensor of the wrong run blames the wrong op.
        newer, older = (listed, known) if parsed.timestamp >= known[0].timestamp else (known, listed)
        self._by_key[key] = newer
        self.skipped.append(
            (older[1] / older[2], f"an older golden of {parsed.key} (a second run here?); {newer[2]} is used")
        )

    def output(self, op_name: str, index: int) -> GoldenTensor | None:
        """The golden tensor of ``op_name``'s output ``index`` (op_name as the framework wrote it)."""
        key = "*" if "*" in self._by_key else f"{sanitize_golden_name(op_name)}.{index}"
        found = self._by_key.get(key)
        if found is None:
            return None
        parsed, directory, filename, has_sidecar = found
        path = child_path(directory, filename)
        if parsed.suffix == _GOLDEN_DUMP:
            index = parsed.output_index
            label = f"{filename} output {index}"
            return GoldenTensor(label, path, lambda: _load_dump_output(path, index), key)
        if parsed.suffix != ".npy":
            return GoldenTensor(filename, path, lambda: _load_dump_output(path), key)
        return GoldenTensor(filename, path, lambda: load_npy(path, has_sidecar=has_sidecar), key)

    def _keys(self) -> Iterable[str]:
        return self._by_key


class NpuDumpGolden(_Keyed):
    """A second NPU dump tree used as the golden side."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._opened = (NpuDumpGolden, (root,))
        tree = walk_dump_tree(root)
        self.skipped = [(s.path, s.reason) for s in tree.skipped]
        self._by_op: dict[str, DumpEntry] = {}
        for entry in tree.entries:
            if entry.is_stats:
                continue
            known = self._by_op.get(entry.name.op_name)
            if known is None or entry.name.timestamp >= known.name.timestamp:
                self._by_op[entry.name.op_name] = entry

    @classmethod
    def single(cls, path: Path) -> NpuDumpGolden:
        """One dump file (file vs file): every lookup gets its tensors, whatever the op name."""
        source = cls(path)
        source._opened = (cls.single, (path,))
        # walking one file finds at most that file
        source._by_op = {"*": entry} if (entry := next(iter(source._by_op.values()), None)) else {}
        return source

    def tensor(self, op_name: str, kind: TensorKind, index: int) -> GoldenTensor | None:
        """Tensor ``kind:index`` of the op whose (raw or sanitised) name is ``op_name``."""
        key = "*" if "*" in self._by_op else sanitize_dump_name(op_name)
        entry = self._by_op.get(key)
        if entry is None:
            return None
        return GoldenTensor(entry.path.name, entry.path, lambda: _dump_tensor(entry.path, kind, index), key)

    def _keys(self) -> Iterable[str]:
        return self._by_op


def _dump_tensor(path: Path, kind: TensorKind, index: int) -> np.ndarray:
    tensors = read_dump(path).tensors(kind)
    if index >= len(tensors):
        raise FormatError(f"{path}: has no {kind.value} {index} (it holds {len(tensors)})")
    return tensors[index].logical()


GoldenSource = NpyGoldenDir | NpuDumpGolden


def golden_skipped(golden: GoldenSource, shared: Mapping[str, str]) -> tuple[tuple[Path, str], ...]:
    """What ``golden`` passed over, with a file stem several ops write (``shared``: stem -> why,
    from the rule file) said once as that: none of its files is used, and "an older golden (a
    second run here?)" would send the user looking for a run that never happened."""
    if not shared or not isinstance(golden, NpyGoldenDir):
        return tuple(golden.skipped)
    kept = [(path, why) for path, why in golden.skipped if _stem(path.name) not in shared]
    return (*kept, *((golden.root / f"{stem}.*.npy", why) for stem, why in shared.items()))


def _stem(filename: str) -> str | None:
    try:
        return parse_golden_name(filename).op_name
    except BadFileNameError:
        return None


def open_golden(path: Path) -> GoldenSource:
    """Pick the golden source for ``path``: npy file, npy directory, or NPU dump tree."""
    if not path.exists():
        raise DumpcmpError(f"golden path {path} does not exist")
    if path.is_file():
        if path.suffix == ".npy":
            return NpyGoldenDir.single(path)
        dump = NpuDumpGolden.single(path)
        if not dump._by_op:
            why = f" ({dump.skipped[0][1]})" if dump.skipped else ""
            raise DumpcmpError(f"golden file {path} is neither an .npy file nor a dump file{why}")
        return dump
    npy = NpyGoldenDir(path)
    if npy._by_key:
        return npy
    dumps = NpuDumpGolden(path)
    if dumps._by_op:
        return dumps
    misnamed = [(p, why) for p, why in npy.skipped if p.suffix == ".npy"]
    if misnamed:
        first, why = misnamed[0]
        raise DumpcmpError(
            f"golden path {path} holds {len(misnamed)} .npy files, none named as golden data "
            f"(e.g. {first.name}: {why})"
        )
    raise DumpcmpError(f"golden path {path} holds neither golden npy files nor NPU dump files")
