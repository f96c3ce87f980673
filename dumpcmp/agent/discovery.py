"""Finding and loading ``libascendcl.so`` (formats.md §4.1).

Order: the explicit ``--acl-lib`` path; then ``$ASCEND_TOOLKIT_HOME`` and ``$ASCEND_HOME_PATH``
(``lib64/`` and ``runtime/lib64/``); then the default install roots; last, the bare soname through
the dynamic loader (``LD_LIBRARY_PATH``, ldconfig cache). The first library that loads wins.

An explicit path is never "helped" by falling back to the search: if the user named a library and
it does not load, loading some other CANN install would compare against the wrong runtime.

When nothing loads, ``AclError(code=-1, name="LIBRARY_NOT_FOUND", api="dlopen")`` lists every
path tried with its reason (missing file, or the loader's message such as a missing dependency),
so the fix is visible in the error itself.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dumpcmp.errors import AclError

__all__ = [
    "DEFAULT_LIB_DIRS",
    "DEFAULT_ROOTS",
    "ENV_ROOTS",
    "LIBRARY_NAME",
    "LoadedLibrary",
    "candidate_paths",
    "load_libascendcl",
]

LIBRARY_NAME = "libascendcl.so"
ENV_ROOTS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
DEFAULT_ROOTS = ("/usr/local/Ascend/ascend-toolkit/latest",)
# Inference-only installs (nnrt) ship the library without the toolkit tree around it.
DEFAULT_LIB_DIRS = ("/usr/local/Ascend/nnrt/latest/lib64",)
# Where the library sits under a toolkit root; older layouts only have the second.
_ROOT_SUBDIRS = ("lib64", "runtime/lib64")

LIBRARY_NOT_FOUND = "LIBRARY_NOT_FOUND"


@dataclass(frozen=True, slots=True)
class LoadedLibrary:
    """The loaded library and the path (or soname) it came from."""

    path: str
    handle: ctypes.CDLL


def _under_root(root: str) -> list[str]:
    return [os.path.join(root, sub, LIBRARY_NAME) for sub in _ROOT_SUBDIRS]


def _explicit_candidates(explicit: str, is_dir: Callable[[str], bool]) -> list[str]:
    # A directory is accepted as a toolkit root or a lib dir, so `--acl-lib $ASCEND_TOOLKIT_HOME`
    # works as well as the full file path.
    if is_dir(explicit):
        return [os.path.join(explicit, LIBRARY_NAME), *_under_root(explicit)]
    return [explicit]


def candidate_paths(
    explicit: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    is_dir: Callable[[str], bool] = os.path.isdir,
) -> list[str]:
    """Every file path to try, in order, without duplicates (the bare soname is not included)."""
    if explicit is not None:
        return _explicit_candidates(os.fspath(explicit), is_dir)
    env = os.environ if environ is None else environ
    paths: list[str] = []
    for var in ENV_ROOTS:
        root = env.get(var, "")
        if root:
            paths.extend(_under_root(root))
    for root in DEFAULT_ROOTS:
        paths.extend(_under_root(root))
    paths.extend(os.path.join(d, LIBRARY_NAME) for d in DEFAULT_LIB_DIRS)
    # ASCEND_HOME_PATH usually equals ASCEND_TOOLKIT_HOME; try each path once.
    return list(dict.fromkeys(os.path.normpath(p) for p in paths))


def load_libascendcl(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    is_file: Callable[[str], bool] = os.path.isfile,
    is_dir: Callable[[str], bool] = os.path.isdir,
    dlopen: Callable[[str], ctypes.CDLL] = ctypes.CDLL,
) -> LoadedLibrary:
    """Load the first ``libascendcl.so`` that loads; raise ``AclError`` naming every attempt.

    ``environ``, ``is_file``, ``is_dir`` and ``dlopen`` are injectable so the search order can
    be tested without a CANN install.
    """
    tried: list[str] = []
    for path in candidate_paths(explicit, environ, is_dir=is_dir):
        if not is_file(path):
            tried.append(f"{path}: no such file")
            continue
        try:
            return LoadedLibrary(path, dlopen(path))
        except OSError as exc:  # wrong architecture, missing dependency (libascend_hal.so) …
            tried.append(f"{path}: {exc}")
    if explicit is None:
        try:
            return LoadedLibrary(LIBRARY_NAME, dlopen(LIBRARY_NAME))
        except OSError as exc:
            tried.append(f"{LIBRARY_NAME} via the dynamic loader (LD_LIBRARY_PATH): {exc}")
    raise AclError(
        code=-1,
        name=LIBRARY_NOT_FOUND,
        api="dlopen",
        recent_message=_not_found_message(tried, explicit is not None),
    )


def _not_found_message(tried: list[str], explicit: bool) -> str:
    lines = [f"cannot load {LIBRARY_NAME}; tried:", *(f"  {t}" for t in tried)]
    if explicit:
        lines.append("--acl-lib must name libascendcl.so or a directory holding lib64/libascendcl.so")
    else:
        lines.append(
            "point --acl-lib at libascendcl.so (or the toolkit directory), or run "
            "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` first"
        )
    return "\n".join(lines)
