"""Finding and loading ``libascendcl.so`` (formats.md §4.1).

Order: an explicit path (``load_libascendcl``'s argument); then ``$ASCEND_TOOLKIT_HOME`` and
``$ASCEND_HOME_PATH``; then the default installs, first under ``/usr/local/Ascend`` (root
installs), then under ``$HOME/Ascend`` (non-root installs): ``cann`` (CANN 8.5 and later),
``ascend-toolkit/latest``, and the inference-only ``nnrt/latest/lib64``; last, the bare soname
through the dynamic loader (``LD_LIBRARY_PATH``, ldconfig cache). Under a toolkit root the library
is looked for in ``lib64/``, ``runtime/lib64/`` and ``acllib/lib64/`` (older toolkits). The first
that loads wins.

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
    "ENV_ROOTS",
    "INSTALL_LIB_DIRS",
    "INSTALL_ROOTS",
    "LIBRARY_NAME",
    "SYSTEM_INSTALL_DIR",
    "LoadedLibrary",
    "candidate_paths",
    "load_libascendcl",
]

LIBRARY_NAME = "libascendcl.so"
ENV_ROOTS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
# Where CANN installs as root; a non-root install goes to $HOME/Ascend with the same layout.
SYSTEM_INSTALL_DIR = "/usr/local/Ascend"
# Toolkit roots inside an install directory: CANN 8.5 and later, then the earlier layout.
INSTALL_ROOTS = ("cann", "ascend-toolkit/latest")
# Inference-only installs (nnrt) ship the library without the toolkit tree around it.
INSTALL_LIB_DIRS = ("nnrt/latest/lib64",)
# Where the library sits under a toolkit root; older toolkits have only runtime/ or acllib/.
_ROOT_SUBDIRS = ("lib64", "runtime/lib64", "acllib/lib64")

LIBRARY_NOT_FOUND = "LIBRARY_NOT_FOUND"


@dataclass(frozen=True, slots=True)
class LoadedLibrary:
    """The loaded library and the path (or soname) it came from."""

    path: str
    handle: ctypes.CDLL


def _under_root(root: str) -> list[str]:
    return [os.path.join(root, sub, LIBRARY_NAME) for sub in _ROOT_SUBDIRS]


def _explicit_candidates(explicit: str, is_dir: Callable[[str], bool]) -> list[str]:
    # A directory is accepted as a toolkit root or a lib dir, so `$ASCEND_TOOLKIT_HOME`
    # works as well as the full file path.
    if is_dir(explicit):
        return [os.path.join(explicit, LIBRARY_NAME), *_under_root(explicit)]
    return [explicit]


def candidate_paths(
    explicit: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    is_dir: Callable[[str], bool] = os.path.isdir,
    system_dir: str = SYSTEM_INSTALL_DIR,
) -> list[str]:
    """Every file path to try, in order, without duplicates (the bare soname is not included).

    ``environ`` defaults to the process environment (``$HOME`` names the non-root install).
    """
    if explicit is not None:
        return _explicit_candidates(os.fspath(explicit), is_dir)
    env = os.environ if environ is None else environ
    paths: list[str] = []
    for var in ENV_ROOTS:
        root = env.get(var, "")
        if root:
            paths.extend(_under_root(root))
    home = env.get("HOME", "")
    for install in (system_dir, *([os.path.join(home, "Ascend")] if home else [])):
        for root in INSTALL_ROOTS:
            paths.extend(_under_root(os.path.join(install, root)))
        paths.extend(os.path.join(install, d, LIBRARY_NAME) for d in INSTALL_LIB_DIRS)
    # ASCEND_HOME_PATH usually equals ASCEND_TOOLKIT_HOME; try each path once.
    return list(dict.fromkeys(os.path.normpath(p) for p in paths))


def load_libascendcl(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    is_file: Callable[[str], bool] = os.path.isfile,
    is_dir: Callable[[str], bool] = os.path.isdir,
    dlopen: Callable[[str], ctypes.CDLL] = ctypes.CDLL,
    system_dir: str = SYSTEM_INSTALL_DIR,
) -> LoadedLibrary:
    """Load the first ``libascendcl.so`` that loads; raise ``AclError`` naming every attempt.

    ``environ``, ``is_file``, ``is_dir``, ``dlopen`` and ``system_dir`` are injectable so the
    search order can be tested without a CANN install.
    """
    tried: list[str] = []
    for path in candidate_paths(explicit, environ, is_dir=is_dir, system_dir=system_dir):
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
    if explicit:
        hint = "the path given must name libascendcl.so or a directory holding lib64/libascendcl.so"
    else:
        # No command takes the library's path: the environment is what the user can set.
        hint = (
            "run CANN's set_env.sh first (`source /usr/local/Ascend/cann/set_env.sh`; before CANN 8.5 "
            "`/usr/local/Ascend/ascend-toolkit/set_env.sh`), or set ASCEND_TOOLKIT_HOME to the toolkit "
            "directory (the one holding lib64/libascendcl.so)"
        )
    return f"cannot load {LIBRARY_NAME} (tried {'; '.join(tried)}); {hint}"
