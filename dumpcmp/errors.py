"""The exception tree of dumpcmp.

Every package raises from here; this module imports nothing of ours::

    DumpcmpError                      a problem the user can act on (bad input, bad setup)
    ├── FormatError                   a file is not what its format says
    │   ├── DumpFormatError           a CANN dump file is corrupt or truncated (path, offset)
    │   ├── BadFileNameError          a file name does not follow the dump/npy grammar
    │   ├── UnsupportedDtypeError     a tensor's data type has no numeric decoding
    │   ├── UnreadableTensorError     one tensor of a dump file cannot be decoded (the target side)
    │   ├── LayoutError               a device layout cannot be converted to the asked one
    │   └── RuleFileError             an ATC / fusion rule json is malformed
    ├── ConverterPluginError          a user format converter (-custom DIR) is broken
    ├── ConfigError                   an acl.json (or other config) breaks a rule
    ├── AclError                      an AscendCL call returned a non-zero aclError
    ├── ModelError                    an ONNX model cannot be loaded, compiled or run
    ├── MatchError                    target and golden data cannot be paired
    ├── OutputError                   a result/output file or directory cannot be written
    ├── TransferError                 streaming dump files between agent and host failed
    ├── ClusterError                  the Dask cluster of ``--cluster`` cannot be used
    └── StoreError                    the session store cannot answer
        └── SessionNotFound

    InternalError                     a bug in dumpcmp itself; deliberately not a DumpcmpError,
                                      so that the CLI shows its traceback instead of hiding it
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class DumpcmpError(Exception):
    """Base of every error a user can act on; the message is the whole story."""


class FormatError(DumpcmpError):
    """A file does not follow the format it claims."""


class DumpFormatError(FormatError):
    """A CANN dump file is corrupt, truncated or hostile."""

    def __init__(self, path: str | Path, offset: int, reason: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.reason = reason
        super().__init__(f"{self.path}: at byte {offset}: {reason}")


class TruncatedDumpError(DumpFormatError):
    """A dump file shorter than its own header says: cut off, or still being written (more bytes
    could complete it, unlike any other DumpFormatError)."""


class BadFileNameError(FormatError):
    """A file name does not follow the dump or golden npy naming grammar."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name!r}: {reason}")


class UnsupportedDtypeError(FormatError):
    """A tensor's data type cannot be decoded to numbers."""

    def __init__(self, dtype_name: str, where: str = "") -> None:
        self.dtype_name = dtype_name
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}unsupported dtype {dtype_name}")


class UnreadableTensorError(FormatError):
    """A target tensor cannot be decoded (unknown dtype or format value, bad layout): it is counted
    with the unreadable dump files, because it may be the op that went wrong."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"unreadable tensor: {reason}")


class LayoutError(FormatError):
    """A device layout cannot be converted (unknown pair, or shapes that do not fit)."""


class RuleFileError(FormatError):
    """An ATC network-wide json / fusion rule file is malformed."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class ConverterPluginError(DumpcmpError):
    """A user-supplied format converter file is missing, broken or raised."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"format converter {self.path}: {reason}")


class ConfigError(DumpcmpError):
    """A configuration file breaks one or more rules; ``issues`` lists every one."""

    def __init__(self, message: str, issues: Sequence[object] = ()) -> None:
        self.issues = tuple(issues)
        super().__init__(message)


class AclError(DumpcmpError):
    """An AscendCL call returned a non-zero aclError."""

    def __init__(self, code: int, name: str, api: str, recent_message: str = "") -> None:
        self.code = code
        self.name = name
        self.api = api
        self.recent_message = recent_message
        detail = f": {recent_message}" if recent_message else ""
        super().__init__(f"{api} failed with {name} ({code}){detail}")


class ModelError(DumpcmpError):
    """An ONNX model cannot be loaded, compiled or executed."""


class MatchError(DumpcmpError):
    """Target and golden data cannot be paired (missing rule files, wrong arguments)."""


class ClusterError(DumpcmpError):
    """The Dask cluster asked for cannot be used (Dask missing, scheduler unreachable, no workers)."""


class OutputError(DumpcmpError):
    """An output directory or file cannot be made or written (a file in the way, read-only, full)."""


class TransferError(DumpcmpError):
    """Sending or receiving dump files failed."""


class StillStreaming(TransferError):
    """The host did not close a session: another agent still streams into it, and closes it."""


class SessionClosed(TransferError):
    """An agent found its session closed (or closing: another hand began its close) before the
    host took anything of this run: its results are final."""

    def __init__(self, session: str, address: str, *, closing: bool = False) -> None:
        self.session = session
        state = "closing" if closing else "closed"
        super().__init__(f"session {session} on host {address} is {state} and its results are final")


class StoreError(DumpcmpError):
    """The session store cannot answer."""


class SessionNotFound(StoreError):
    """No session with that id exists in the store."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"no session {session_id!r} in the store")


class InternalError(Exception):
    """A bug in dumpcmp. Not a DumpcmpError on purpose: it must never be shown as user error."""
