"""The Upload stream's data path: file checksums, and file data without protobuf's copies.

Both ends of an upload move every byte of a dump through here, so the messages holding file data
(a data chunk; a WholeFile, whose data field comes last) are encoded and decoded by hand, around
protobuf's encoding of their small parts: the agent reads a file straight into the message it
sends (``FilledMessage``), the host takes the data as a view of the bytes gRPC received, where
protobuf would copy it into its arena and out again. Every other message goes through
protobuf, as does anything the hand decoding does not expect (it is then valid protobuf, or
refused as protobuf refuses it).
"""

from __future__ import annotations

import ctypes
import hashlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import xxhash

from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

__all__ = [
    "ACKS_METADATA", "BATCHED", "Digest", "FilledMessage", "Whole", "data_head", "data_message",
    "digest_of", "file_end", "keep_freed_memory", "new_digest", "read_upload_message", "stored_file",
    "whole_head", "whole_head_size", "whole_message", "wholes_head", "wholes_head_size", "wholes_message",
]  # fmt: skip

# Upload call metadata of an agent that reads UploadAck.more (answers several files a message).
ACKS_METADATA = "dumpcmp-acks"
BATCHED = "batched"


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# A message of file data (up to MAX_MESSAGE) and gRPC's buffers for it come from malloc's heap,
# below this size, not from a fresh mapping each
_MMAP_ABOVE = 16 * 1024 * 1024
# and this much free memory at the top of a heap stays there for the next messages.
_KEEP_FREE = 32 * 1024 * 1024


def keep_freed_memory() -> None:
    """Make this process's malloc keep the memory of freed messages for the next ones.

    Either end of an upload allocates and frees a message of several MiB for every chunk. With
    glibc's default (adaptive) thresholds the memory of many of them goes back to the kernel
    when freed (munmap, or madvise trimming a thread's heap) and the next message faults in
    and zeroes fresh pages: on loopback that cost 0.5-0.8 CPU-s per GB on each side, a quarter
    of all the agent's CPU (bench/stream.py). Fixed thresholds keep the pages, for up to
    ``_KEEP_FREE`` bytes more resident memory per malloc arena. A process-wide setting, made by
    the processes that stream; a C library without mallopt (not glibc) is left as it is.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, _MMAP_ABOVE)
    mallopt(_M_TRIM_THRESHOLD, _KEEP_FREE)


def _tag(field: int) -> bytes:
    return bytes([field << 3 | 2])  # length-delimited


_DATA_TAG = _tag(pb.UploadMessage.DATA_FIELD_NUMBER)
_WHOLE_TAG = _tag(pb.UploadMessage.WHOLE_FIELD_NUMBER)
_WHOLES_TAG = _tag(pb.UploadMessage.WHOLES_FIELD_NUMBER)
_ENTRY_TAG = _tag(pb.WholeFiles.FILES_FIELD_NUMBER)  # a WholeFile in a WholeFiles: one byte too
_WHOLE_DATA_TAG = _tag(pb.WholeFile.DATA_FIELD_NUMBER)
_START_TAG = _tag(pb.WholeFile.START_FIELD_NUMBER)
_END_TAG = _tag(pb.WholeFile.END_FIELD_NUMBER)
_DIGEST_SIZES: dict[int, int] = {pb.SHA256: hashlib.sha256().digest_size, pb.XXH3_128: 16}


@dataclass(frozen=True, slots=True)
class Whole:
    """A WholeFile as the host decodes it: its data a view of the received message."""

    start: pb.FileStart
    end: pb.FileEnd
    data: memoryview


class Digest(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...

    def digest(self) -> bytes: ...


def new_digest(checksum: int) -> Digest:
    """An empty digest of the kind ``checksum`` (a ``pb.Checksum``) names."""
    if checksum == pb.XXH3_128:
        return xxhash.xxh3_128()
    return hashlib.sha256()


def digest_of(end: pb.FileEnd | pb.StoredFile, checksum: int) -> bytes:
    """The checksum of kind ``checksum`` a FileEnd or StoredFile carries."""
    return bytes(end.xxh3_128 if checksum == pb.XXH3_128 else end.sha256)


def stored_file(kind: int, path: str, size: int, digest: bytes) -> pb.StoredFile:
    """A file the host holds, its checksum in the field of its kind (the digest's length tells)."""
    field = "sha256" if len(digest) == hashlib.sha256().digest_size else "xxh3_128"
    return pb.StoredFile(kind=kind, path=path, size=size, **{field: digest})  # type: ignore[arg-type]


def file_end(checksum: int, digest: bytes) -> pb.FileEnd:
    return pb.FileEnd(**{"xxh3_128" if checksum == pb.XXH3_128 else "sha256": digest})


def _varint(size: int) -> bytes:
    length = bytearray()
    while size > 0x7F:
        length.append(size & 0x7F | 0x80)
        size >>= 7
    length.append(size)
    return bytes(length)


def data_head(size: int) -> bytes:
    """What comes before a data message's ``size`` bytes of data."""
    return _DATA_TAG + _varint(size)


def data_message(data: bytes | memoryview) -> bytes:
    """``UploadMessage(data=data)`` encoded: one copy of the chunk, where building the message
    and serializing it costs two (into protobuf's arena, then out of it)."""
    return b"".join((data_head(len(data)), data))  # a byte view's length is its size


def whole_head(encoded_start: bytes, end: pb.FileEnd, size: int, *, in_wholes: bool = False) -> bytes:
    """What comes before a WholeFile message's ``size`` bytes of data (its last field), its
    FileStart given encoded: the fields of ``WholeFile(start, end)`` as protobuf encodes them;
    ``in_wholes``: as one file of a WholeFiles message (after ``wholes_head``), not a message."""
    encoded_end = end.SerializeToString()
    head = b"".join(
        (
            _START_TAG,
            _varint(len(encoded_start)),
            encoded_start,
            _END_TAG,
            _varint(len(encoded_end)),
            encoded_end,
        )
    )
    tail = _WHOLE_DATA_TAG + _varint(size)
    inner = len(head) + len(tail) + size
    return b"".join((_ENTRY_TAG if in_wholes else _WHOLE_TAG, _varint(inner), head, tail))


def whole_head_size(encoded_start: bytes, checksum: int, size: int) -> int:
    """The length of ``whole_head`` (either way: its tags are one byte each) once the file's
    checksum of kind ``checksum`` is known, counted rather than encoded (a few microseconds a
    file): a FileEnd is its one digest field, whose length is its kind's."""
    end = 2 + _DIGEST_SIZES[checksum]  # a one-byte tag and a one-byte length: digests are short
    head = 1 + _varint_size(len(encoded_start)) + len(encoded_start) + 1 + _varint_size(end) + end
    tail = 1 + _varint_size(size)
    return 1 + _varint_size(head + tail + size) + head + tail


def _varint_size(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def whole_message(start: pb.FileStart, end: pb.FileEnd, data: bytes | memoryview) -> bytes:
    """``UploadMessage(whole=WholeFile(start=start, end=end, data=data))`` encoded, data last."""
    return b"".join((whole_head(start.SerializeToString(), end, len(data)), data))


def wholes_head(files_size: int) -> bytes:
    """What comes before the files of a WholeFiles message, ``files_size`` bytes of them (each
    file ``whole_head(..., in_wholes=True)`` and its data)."""
    return _WHOLES_TAG + _varint(files_size)


def wholes_head_size(files_size: int) -> int:
    return 1 + _varint_size(files_size)


def wholes_message(files: Sequence[tuple[pb.FileStart, pb.FileEnd, bytes | memoryview]]) -> bytes:
    """``UploadMessage(wholes=WholeFiles(files=[WholeFile(start, end, data), ...]))`` encoded."""
    parts = [
        part
        for start, end, data in files
        for part in (whole_head(start.SerializeToString(), end, len(data), in_wholes=True), data)
    ]
    return b"".join((wholes_head(sum(len(part) for part in parts)), *parts))


def _bytes_to_fill() -> Callable[[int], tuple[bytes, memoryview]] | None:
    """CPython's way to a new bytes object of a size, its bytes not yet set, and a writable view
    of them, as a C extension fills one (PyBytes_FromStringAndSize with no source); None where
    it is not there or not as expected (another Python): messages are then copied once more."""
    if sys.implementation.name != "cpython":
        return None
    try:
        new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
    except AttributeError:
        return None
    new_bytes.argtypes = (ctypes.c_char_p, ctypes.c_ssize_t)
    new_bytes.restype = ctypes.py_object
    memory_view = ctypes.pythonapi.PyMemoryView_FromMemory
    memory_view.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
    memory_view.restype = ctypes.py_object
    offset = bytes.__basicsize__ - 1  # ob_sval, the last member: its one byte is the NUL at the end
    writable = 0x200  # PyBUF_WRITE

    def fresh(size: int) -> tuple[bytes, memoryview]:
        made: bytes = new_bytes(None, size)
        return made, memory_view(id(made) + offset, size, writable)

    # Where a bytes object's bytes are, checked by reading them (writing there, if it were wrong,
    # would corrupt memory).
    probe = b"dumpcmp-probe-16"
    return fresh if ctypes.string_at(id(probe) + offset, len(probe)) == probe else None


_FRESH_BYTES = _bytes_to_fill()


class FilledMessage:
    """An encoded Upload message holding file data, that data read straight into it (``data``),
    its head written last (``done``). Reading into a buffer and then encoding the message around
    it copies every byte once more: the agent's CPU per GB 1.19 -> 1.07 s without that copy
    (bench/stream.py's large files into a verifying host, medians of 5 interleaved runs on a
    loaded 2-core VM).

    The message is a bytes object written in place before anything else sees it: ``data`` and
    every view taken of it must not be used after ``done``.
    """

    def __init__(self, head_size: int, size: int) -> None:
        self._head_size = head_size
        if _FRESH_BYTES is not None and head_size + size > 1:  # not CPython's shared b"" or b"x"
            self._message, self._view = _FRESH_BYTES(head_size + size)
            self._fresh = True
        else:
            self._view = memoryview(bytearray(head_size + size))
            self._fresh = False
        self.data = self._view[head_size:]

    def done(self, head: bytes) -> bytes:
        """The message, ``head`` (as long as announced) before its data."""
        if len(head) != self._head_size:
            raise ValueError(f"a head of {len(head)} bytes where {self._head_size} were set aside")
        self._view[: self._head_size] = head
        self.data.release()
        if self._fresh:
            self._view.release()
            return self._message
        message = self._view.tobytes()
        self._view.release()
        return message


def read_upload_message(raw: bytes) -> pb.UploadMessage | memoryview | Whole | tuple[Whole, ...]:
    """The host's decoding of one Upload message: a data message's chunk as a view of ``raw``, a
    WholeFile as a Whole whose data is one, a WholeFiles as a tuple of them; anything else parsed
    by protobuf."""
    tag = raw[:1]
    outer = _field(raw, 1, len(raw))
    if outer is None or outer[1] != len(raw):  # not one field and nothing after it
        return pb.UploadMessage.FromString(raw)
    if tag == _DATA_TAG:
        return memoryview(raw)[outer[0] :]
    view = memoryview(raw)
    if tag == _WHOLE_TAG:
        whole = _whole(raw, view, *outer)
        if whole is not None:
            return whole
    elif tag == _WHOLES_TAG:
        wholes = _wholes(raw, view, *outer)
        if wholes is not None:
            return wholes
    return pb.UploadMessage.FromString(raw)


def _field(raw: bytes, at: int, limit: int) -> tuple[int, int] | None:
    """Where the length-delimited field whose length starts at ``at`` has its value: (start, end);
    None when its length is not a whole varint or runs past ``limit``."""
    size = shift = 0
    for here in range(at, min(limit, at + 10)):
        byte = raw[here]
        size |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (here + 1, here + 1 + size) if here + 1 + size <= limit else None
    return None


def _wholes(raw: bytes, view: memoryview, at: int, limit: int) -> tuple[Whole, ...] | None:
    """The WholeFiles between ``at`` and ``limit``: only field 1, each a WholeFile as ``_whole``
    takes it; None for anything else."""
    found: list[Whole] = []
    while at < limit:
        inner = _field(raw, at + 1, limit) if raw[at : at + 1] == _ENTRY_TAG else None
        if inner is None:
            return None
        whole = _whole(raw, view, *inner)
        if whole is None:
            return None
        found.append(whole)
        at = inner[1]
    return tuple(found)


def _whole(raw: bytes, view: memoryview, at: int, limit: int) -> Whole | None:
    """The WholeFile between ``at`` and ``limit``: exactly its fields 1, 2 and 3, each once;
    None for anything else."""
    parts: dict[int, memoryview] = {}
    while at < limit:
        number = raw[at] >> 3
        inner = _field(raw, at + 1, limit)
        if raw[at] & 7 != 2 or number not in (1, 2, 3) or number in parts or inner is None:
            return None
        parts[number] = view[inner[0] : inner[1]]
        at = inner[1]
    start = pb.FileStart.FromString(bytes(parts.get(1, b"")))  # a few dozen bytes each
    end = pb.FileEnd.FromString(bytes(parts.get(2, b"")))
    return Whole(start, end, parts.get(3, view[:0]))
