"""The Upload stream's data path: file checksums, and data messages without protobuf's copies.

Both ends of an upload move every byte of a dump through here, so a data message is encoded and
decoded by hand (it is one length-delimited field): the agent builds its encoding with one copy
of the chunk, the host takes the chunk as a view of the bytes gRPC received, where protobuf would
copy it into its arena and out again. Every other message goes through protobuf.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

import xxhash

from dumpcmp.proto._gen import dumpcmp_v1_pb2 as pb

__all__ = [
    "Digest", "data_message", "digest_of", "end_message", "new_digest", "read_upload_message", "stored_file",
]  # fmt: skip

_DATA_TAG = pb.UploadMessage.DATA_FIELD_NUMBER << 3 | 2  # field 2, length-delimited
_DATA_TAG_BYTE = bytes([_DATA_TAG])


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


def end_message(checksum: int, digest: bytes) -> pb.UploadMessage:
    field = "xxh3_128" if checksum == pb.XXH3_128 else "sha256"
    return pb.UploadMessage(end=pb.FileEnd(**{field: digest}))


def data_message(data: bytes | memoryview) -> bytes:
    """``UploadMessage(data=data)`` encoded: one copy of the chunk, where building the message
    and serializing it costs two (into protobuf's arena, then out of it)."""
    size = len(data)  # a byte view's length is its size
    length = bytearray()
    while size > 0x7F:
        length.append(size & 0x7F | 0x80)
        size >>= 7
    length.append(size)
    return b"".join((_DATA_TAG_BYTE, length, data))


def read_upload_message(raw: bytes) -> pb.UploadMessage | memoryview:
    """The host's decoding of one Upload message: a data message's chunk as a view of ``raw``
    (no copy), anything else (or a data message encoded some other way) parsed by protobuf."""
    if raw[:1] == _DATA_TAG_BYTE:
        size = shift = 0
        for at in range(1, min(len(raw), 11)):
            byte = raw[at]
            size |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                if at + 1 + size == len(raw):  # the field and nothing after it
                    return memoryview(raw)[at + 1 :]
                break
    return pb.UploadMessage.FromString(raw)
