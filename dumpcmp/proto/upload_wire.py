"""The Upload stream's data path: file checksums, and file data without protobuf's copies.

Both ends of an upload move every byte of a dump through here, so the messages holding file data
(a data chunk; a WholeFile, whose data field comes last) are encoded and decoded by hand, around
protobuf's encoding of their small parts: the agent builds one with one copy of the data, the
host takes the data as a view of the bytes gRPC received, where protobuf would copy it into its
arena and out again. Every other message goes through protobuf, as does anything the hand
decoding does not expect (it is then valid protobuf, or refused as protobuf refuses it).
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass
from typing import Protocol

import xxhash

from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

__all__ = [
    "ACKS_METADATA", "BATCHED", "Digest", "Whole", "data_message", "digest_of", "file_end",
    "keep_freed_memory", "new_digest", "read_upload_message", "stored_file", "whole_message",
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
_WHOLE_DATA_TAG = _tag(pb.WholeFile.DATA_FIELD_NUMBER)


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


def data_message(data: bytes | memoryview) -> bytes:
    """``UploadMessage(data=data)`` encoded: one copy of the chunk, where building the message
    and serializing it costs two (into protobuf's arena, then out of it)."""
    return b"".join((_DATA_TAG, _varint(len(data)), data))  # a byte view's length is its size


def whole_message(start: pb.FileStart, end: pb.FileEnd, data: bytes | memoryview) -> bytes:
    """``UploadMessage(whole=WholeFile(start=start, end=end, data=data))`` encoded, data last."""
    head = pb.WholeFile(start=start, end=end).SerializeToString()
    tail = _WHOLE_DATA_TAG + _varint(len(data))
    inner = len(head) + len(tail) + len(data)
    return b"".join((_WHOLE_TAG, _varint(inner), head, tail, data))


def read_upload_message(raw: bytes) -> pb.UploadMessage | memoryview | Whole:
    """The host's decoding of one Upload message: a data message's chunk as a view of ``raw``, a
    WholeFile as a Whole whose data is one; anything else parsed by protobuf."""
    tag = raw[:1]
    if tag == _DATA_TAG:
        field = _field(raw, 1)
        if field is not None and field[1] == len(raw):  # the field and nothing after it
            return memoryview(raw)[field[0] :]
    elif tag == _WHOLE_TAG:
        whole = _whole(raw)
        if whole is not None:
            return whole
    return pb.UploadMessage.FromString(raw)


def _field(raw: bytes, at: int) -> tuple[int, int] | None:
    """Where the length-delimited field whose length starts at ``at`` has its value: (start, end);
    None when its length is not a whole varint or runs past ``raw``."""
    size = shift = 0
    for here in range(at, min(len(raw), at + 10)):
        byte = raw[here]
        size |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (here + 1, here + 1 + size) if here + 1 + size <= len(raw) else None
    return None


def _whole(raw: bytes) -> Whole | None:
    """A WholeFile message of exactly its fields 1, 2 and 3, each once; None for anything else."""
    outer = _field(raw, 1)
    if outer is None or outer[1] != len(raw):
        return None
    view = memoryview(raw)
    parts: dict[int, memoryview] = {}
    at = outer[0]
    while at < len(raw):
        number = raw[at] >> 3
        inner = _field(raw, at + 1)
        if raw[at] & 7 != 2 or number not in (1, 2, 3) or number in parts or inner is None:
            return None
        parts[number] = view[inner[0] : inner[1]]
        at = inner[1]
    start = pb.FileStart.FromString(bytes(parts.get(1, b"")))  # a few dozen bytes each
    end = pb.FileEnd.FromString(bytes(parts.get(2, b"")))
    return Whole(start, end, parts.get(3, view[:0]))
