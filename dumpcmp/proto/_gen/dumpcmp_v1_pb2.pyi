from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FileKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_KIND_UNSPECIFIED: _ClassVar[FileKind]
    DUMP: _ClassVar[FileKind]
    GOLDEN: _ClassVar[FileKind]
    FUSION_RULE: _ClassVar[FileKind]
    INPUT: _ClassVar[FileKind]
    OUTPUT: _ClassVar[FileKind]

class Checksum(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHA256: _ClassVar[Checksum]
    XXH3_128: _ClassVar[Checksum]
FILE_KIND_UNSPECIFIED: FileKind
DUMP: FileKind
GOLDEN: FileKind
FUSION_RULE: FileKind
INPUT: FileKind
OUTPUT: FileKind
SHA256: Checksum
XXH3_128: Checksum

class Uploader(_message.Message):
    __slots__ = ("host", "device", "agent_id", "version")
    HOST_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    host: str
    device: int
    agent_id: str
    version: str
    def __init__(self, host: _Optional[str] = ..., device: _Optional[int] = ..., agent_id: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class CompareSettings(_message.Message):
    __slots__ = ("metric_family", "overflow_detection", "golden_uploaded", "golden_host_path", "fusion_rule_name", "fusion_rule_host_path")
    METRIC_FAMILY_FIELD_NUMBER: _ClassVar[int]
    OVERFLOW_DETECTION_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_UPLOADED_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    FUSION_RULE_NAME_FIELD_NUMBER: _ClassVar[int]
    FUSION_RULE_HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    metric_family: str
    overflow_detection: bool
    golden_uploaded: bool
    golden_host_path: str
    fusion_rule_name: str
    fusion_rule_host_path: str
    def __init__(self, metric_family: _Optional[str] = ..., overflow_detection: _Optional[bool] = ..., golden_uploaded: _Optional[bool] = ..., golden_host_path: _Optional[str] = ..., fusion_rule_name: _Optional[str] = ..., fusion_rule_host_path: _Optional[str] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("session", "model", "settings", "uploader")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    UPLOADER_FIELD_NUMBER: _ClassVar[int]
    session: str
    model: str
    settings: CompareSettings
    uploader: Uploader
    def __init__(self, session: _Optional[str] = ..., model: _Optional[str] = ..., settings: _Optional[_Union[CompareSettings, _Mapping]] = ..., uploader: _Optional[_Union[Uploader, _Mapping]] = ...) -> None: ...

class RunMark(_message.Message):
    __slots__ = ("session", "run_id", "event", "agent_id")
    class Event(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        EVENT_UNSPECIFIED: _ClassVar[RunMark.Event]
        START: _ClassVar[RunMark.Event]
        END: _ClassVar[RunMark.Event]
    EVENT_UNSPECIFIED: RunMark.Event
    START: RunMark.Event
    END: RunMark.Event
    SESSION_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    session: str
    run_id: str
    event: RunMark.Event
    agent_id: str
    def __init__(self, session: _Optional[str] = ..., run_id: _Optional[str] = ..., event: _Optional[_Union[RunMark.Event, str]] = ..., agent_id: _Optional[str] = ...) -> None: ...

class FileStart(_message.Message):
    __slots__ = ("session", "kind", "path", "size", "run_id", "checksum")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKSUM_FIELD_NUMBER: _ClassVar[int]
    session: str
    kind: FileKind
    path: str
    size: int
    run_id: str
    checksum: Checksum
    def __init__(self, session: _Optional[str] = ..., kind: _Optional[_Union[FileKind, str]] = ..., path: _Optional[str] = ..., size: _Optional[int] = ..., run_id: _Optional[str] = ..., checksum: _Optional[_Union[Checksum, str]] = ...) -> None: ...

class FileEnd(_message.Message):
    __slots__ = ("sha256", "xxh3_128")
    SHA256_FIELD_NUMBER: _ClassVar[int]
    XXH3_128_FIELD_NUMBER: _ClassVar[int]
    sha256: bytes
    xxh3_128: bytes
    def __init__(self, sha256: _Optional[bytes] = ..., xxh3_128: _Optional[bytes] = ...) -> None: ...

class WholeFile(_message.Message):
    __slots__ = ("start", "end", "data")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    start: FileStart
    end: FileEnd
    data: bytes
    def __init__(self, start: _Optional[_Union[FileStart, _Mapping]] = ..., end: _Optional[_Union[FileEnd, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class WholeFiles(_message.Message):
    __slots__ = ("files",)
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[WholeFile]
    def __init__(self, files: _Optional[_Iterable[_Union[WholeFile, _Mapping]]] = ...) -> None: ...

class UploadMessage(_message.Message):
    __slots__ = ("start", "data", "end", "run", "whole", "wholes")
    START_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    WHOLE_FIELD_NUMBER: _ClassVar[int]
    WHOLES_FIELD_NUMBER: _ClassVar[int]
    start: FileStart
    data: bytes
    end: FileEnd
    run: RunMark
    whole: WholeFile
    wholes: WholeFiles
    def __init__(self, start: _Optional[_Union[FileStart, _Mapping]] = ..., data: _Optional[bytes] = ..., end: _Optional[_Union[FileEnd, _Mapping]] = ..., run: _Optional[_Union[RunMark, _Mapping]] = ..., whole: _Optional[_Union[WholeFile, _Mapping]] = ..., wholes: _Optional[_Union[WholeFiles, _Mapping]] = ...) -> None: ...

class UploadAck(_message.Message):
    __slots__ = ("kind", "path", "status", "message", "run_id", "more", "run_dropped")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[UploadAck.Status]
        STORED: _ClassVar[UploadAck.Status]
        DUPLICATE: _ClassVar[UploadAck.Status]
        CHECKSUM_MISMATCH: _ClassVar[UploadAck.Status]
        REFUSED: _ClassVar[UploadAck.Status]
        RUN_ACCEPTED: _ClassVar[UploadAck.Status]
    STATUS_UNSPECIFIED: UploadAck.Status
    STORED: UploadAck.Status
    DUPLICATE: UploadAck.Status
    CHECKSUM_MISMATCH: UploadAck.Status
    REFUSED: UploadAck.Status
    RUN_ACCEPTED: UploadAck.Status
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    RUN_DROPPED_FIELD_NUMBER: _ClassVar[int]
    kind: FileKind
    path: str
    status: UploadAck.Status
    message: str
    run_id: str
    more: _containers.RepeatedCompositeFieldContainer[UploadAck]
    run_dropped: bool
    def __init__(self, kind: _Optional[_Union[FileKind, str]] = ..., path: _Optional[str] = ..., status: _Optional[_Union[UploadAck.Status, str]] = ..., message: _Optional[str] = ..., run_id: _Optional[str] = ..., more: _Optional[_Iterable[_Union[UploadAck, _Mapping]]] = ..., run_dropped: _Optional[bool] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: str
    def __init__(self, session: _Optional[str] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: str
    def __init__(self, session: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StoredFile(_message.Message):
    __slots__ = ("kind", "path", "sha256", "size", "xxh3_128")
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    XXH3_128_FIELD_NUMBER: _ClassVar[int]
    kind: FileKind
    path: str
    sha256: bytes
    size: int
    xxh3_128: bytes
    def __init__(self, kind: _Optional[_Union[FileKind, str]] = ..., path: _Optional[str] = ..., sha256: _Optional[bytes] = ..., size: _Optional[int] = ..., xxh3_128: _Optional[bytes] = ...) -> None: ...

class SessionInfo(_message.Message):
    __slots__ = ("session", "model", "state", "settings", "files", "rows", "result_files", "replaced_runs", "summary", "data_dir", "uploaders", "streams", "dump_files", "compared_files", "waiting", "nothing_compared", "checksums", "whole_files", "whole_file_batches")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[SessionInfo.State]
        OPEN: _ClassVar[SessionInfo.State]
        CLOSED: _ClassVar[SessionInfo.State]
    STATE_UNSPECIFIED: SessionInfo.State
    OPEN: SessionInfo.State
    CLOSED: SessionInfo.State
    SESSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FILES_FIELD_NUMBER: _ClassVar[int]
    REPLACED_RUNS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DATA_DIR_FIELD_NUMBER: _ClassVar[int]
    UPLOADERS_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    DUMP_FILES_FIELD_NUMBER: _ClassVar[int]
    COMPARED_FILES_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    NOTHING_COMPARED_FIELD_NUMBER: _ClassVar[int]
    CHECKSUMS_FIELD_NUMBER: _ClassVar[int]
    WHOLE_FILES_FIELD_NUMBER: _ClassVar[int]
    WHOLE_FILE_BATCHES_FIELD_NUMBER: _ClassVar[int]
    session: str
    model: str
    state: SessionInfo.State
    settings: CompareSettings
    files: _containers.RepeatedCompositeFieldContainer[StoredFile]
    rows: int
    result_files: _containers.RepeatedScalarFieldContainer[str]
    replaced_runs: _containers.RepeatedScalarFieldContainer[str]
    summary: str
    data_dir: str
    uploaders: _containers.RepeatedCompositeFieldContainer[Uploader]
    streams: int
    dump_files: int
    compared_files: int
    waiting: str
    nothing_compared: str
    checksums: _containers.RepeatedScalarFieldContainer[Checksum]
    whole_files: bool
    whole_file_batches: bool
    def __init__(self, session: _Optional[str] = ..., model: _Optional[str] = ..., state: _Optional[_Union[SessionInfo.State, str]] = ..., settings: _Optional[_Union[CompareSettings, _Mapping]] = ..., files: _Optional[_Iterable[_Union[StoredFile, _Mapping]]] = ..., rows: _Optional[int] = ..., result_files: _Optional[_Iterable[str]] = ..., replaced_runs: _Optional[_Iterable[str]] = ..., summary: _Optional[str] = ..., data_dir: _Optional[str] = ..., uploaders: _Optional[_Iterable[_Union[Uploader, _Mapping]]] = ..., streams: _Optional[int] = ..., dump_files: _Optional[int] = ..., compared_files: _Optional[int] = ..., waiting: _Optional[str] = ..., nothing_compared: _Optional[str] = ..., checksums: _Optional[_Iterable[_Union[Checksum, str]]] = ..., whole_files: _Optional[bool] = ..., whole_file_batches: _Optional[bool] = ...) -> None: ...

class ListSessionsReply(_message.Message):
    __slots__ = ("sessions",)
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ...) -> None: ...

class WatchRowsRequest(_message.Message):
    __slots__ = ("session", "after_seq", "follow", "with_statistics", "after_stats_seq")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    WITH_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    AFTER_STATS_SEQ_FIELD_NUMBER: _ClassVar[int]
    session: str
    after_seq: int
    follow: bool
    with_statistics: bool
    after_stats_seq: int
    def __init__(self, session: _Optional[str] = ..., after_seq: _Optional[int] = ..., follow: _Optional[bool] = ..., with_statistics: _Optional[bool] = ..., after_stats_seq: _Optional[int] = ...) -> None: ...

class RowBatch(_message.Message):
    __slots__ = ("columns", "rows", "session_closed", "progress")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    SESSION_CLOSED_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedScalarFieldContainer[str]
    rows: _containers.RepeatedCompositeFieldContainer[Row]
    session_closed: bool
    progress: SessionInfo
    def __init__(self, columns: _Optional[_Iterable[str]] = ..., rows: _Optional[_Iterable[_Union[Row, _Mapping]]] = ..., session_closed: _Optional[bool] = ..., progress: _Optional[_Union[SessionInfo, _Mapping]] = ...) -> None: ...

class Row(_message.Message):
    __slots__ = ("seq", "dump_file", "cells", "shard", "row", "stats")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DUMP_FILE_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    ROW_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    dump_file: str
    cells: _containers.RepeatedScalarFieldContainer[str]
    shard: Shard
    row: ResultRow
    stats: StatsRow
    def __init__(self, seq: _Optional[int] = ..., dump_file: _Optional[str] = ..., cells: _Optional[_Iterable[str]] = ..., shard: _Optional[_Union[Shard, _Mapping]] = ..., row: _Optional[_Union[ResultRow, _Mapping]] = ..., stats: _Optional[_Union[StatsRow, _Mapping]] = ...) -> None: ...

class StatsRow(_message.Message):
    __slots__ = ("index", "op_type", "npu_name", "ground_truth", "tensor_index", "dump_path", "data_type", "format", "shape", "shape_known", "count", "target", "golden", "reasons", "dump_unreadable", "golden_key", "target_nan_inf", "missing_nan_inf", "counts_compared")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    NPU_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUND_TRUTH_FIELD_NUMBER: _ClassVar[int]
    TENSOR_INDEX_FIELD_NUMBER: _ClassVar[int]
    DUMP_PATH_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_KNOWN_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    DUMP_UNREADABLE_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_KEY_FIELD_NUMBER: _ClassVar[int]
    TARGET_NAN_INF_FIELD_NUMBER: _ClassVar[int]
    MISSING_NAN_INF_FIELD_NUMBER: _ClassVar[int]
    COUNTS_COMPARED_FIELD_NUMBER: _ClassVar[int]
    index: int
    op_type: str
    npu_name: str
    ground_truth: str
    tensor_index: str
    dump_path: str
    data_type: str
    format: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    shape_known: bool
    count: int
    target: Statistics
    golden: Statistics
    reasons: _containers.RepeatedScalarFieldContainer[str]
    dump_unreadable: bool
    golden_key: str
    target_nan_inf: int
    missing_nan_inf: int
    counts_compared: bool
    def __init__(self, index: _Optional[int] = ..., op_type: _Optional[str] = ..., npu_name: _Optional[str] = ..., ground_truth: _Optional[str] = ..., tensor_index: _Optional[str] = ..., dump_path: _Optional[str] = ..., data_type: _Optional[str] = ..., format: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ..., shape_known: _Optional[bool] = ..., count: _Optional[int] = ..., target: _Optional[_Union[Statistics, _Mapping]] = ..., golden: _Optional[_Union[Statistics, _Mapping]] = ..., reasons: _Optional[_Iterable[str]] = ..., dump_unreadable: _Optional[bool] = ..., golden_key: _Optional[str] = ..., target_nan_inf: _Optional[int] = ..., missing_nan_inf: _Optional[int] = ..., counts_compared: _Optional[bool] = ...) -> None: ...

class Statistics(_message.Message):
    __slots__ = ("max", "min", "mean", "l2norm")
    MAX_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    L2NORM_FIELD_NUMBER: _ClassVar[int]
    max: float
    min: float
    mean: float
    l2norm: float
    def __init__(self, max: _Optional[float] = ..., min: _Optional[float] = ..., mean: _Optional[float] = ..., l2norm: _Optional[float] = ...) -> None: ...

class ResultRow(_message.Message):
    __slots__ = ("index", "op_sequence", "op_type", "npu_name", "npu_dtype", "npu_address", "ground_truth", "golden_dtype", "golden_address", "tensor_index", "shape", "shape_known", "overflow", "metrics", "dump_unreadable", "golden_key")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OP_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    NPU_NAME_FIELD_NUMBER: _ClassVar[int]
    NPU_DTYPE_FIELD_NUMBER: _ClassVar[int]
    NPU_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    GROUND_TRUTH_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_DTYPE_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_INDEX_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_KNOWN_FIELD_NUMBER: _ClassVar[int]
    OVERFLOW_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    DUMP_UNREADABLE_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_KEY_FIELD_NUMBER: _ClassVar[int]
    index: int
    op_sequence: int
    op_type: str
    npu_name: str
    npu_dtype: str
    npu_address: int
    ground_truth: str
    golden_dtype: str
    golden_address: int
    tensor_index: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    shape_known: bool
    overflow: bool
    metrics: MetricValues
    dump_unreadable: bool
    golden_key: str
    def __init__(self, index: _Optional[int] = ..., op_sequence: _Optional[int] = ..., op_type: _Optional[str] = ..., npu_name: _Optional[str] = ..., npu_dtype: _Optional[str] = ..., npu_address: _Optional[int] = ..., ground_truth: _Optional[str] = ..., golden_dtype: _Optional[str] = ..., golden_address: _Optional[int] = ..., tensor_index: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ..., shape_known: _Optional[bool] = ..., overflow: _Optional[bool] = ..., metrics: _Optional[_Union[MetricValues, _Mapping]] = ..., dump_unreadable: _Optional[bool] = ..., golden_key: _Optional[str] = ...) -> None: ...

class MetricValues(_message.Message):
    __slots__ = ("numbers", "spread_not_computed", "reasons", "finite", "special")
    NUMBERS_FIELD_NUMBER: _ClassVar[int]
    SPREAD_NOT_COMPUTED_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    FINITE_FIELD_NUMBER: _ClassVar[int]
    SPECIAL_FIELD_NUMBER: _ClassVar[int]
    numbers: _containers.RepeatedScalarFieldContainer[float]
    spread_not_computed: bool
    reasons: _containers.RepeatedScalarFieldContainer[str]
    finite: MetricValues
    special: SpecialValues
    def __init__(self, numbers: _Optional[_Iterable[float]] = ..., spread_not_computed: _Optional[bool] = ..., reasons: _Optional[_Iterable[str]] = ..., finite: _Optional[_Union[MetricValues, _Mapping]] = ..., special: _Optional[_Union[SpecialValues, _Mapping]] = ...) -> None: ...

class SpecialValues(_message.Message):
    __slots__ = ("target_nan", "target_inf", "golden_nan", "golden_inf", "mismatched")
    TARGET_NAN_FIELD_NUMBER: _ClassVar[int]
    TARGET_INF_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_NAN_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_INF_FIELD_NUMBER: _ClassVar[int]
    MISMATCHED_FIELD_NUMBER: _ClassVar[int]
    target_nan: int
    target_inf: int
    golden_nan: int
    golden_inf: int
    mismatched: int
    def __init__(self, target_nan: _Optional[int] = ..., target_inf: _Optional[int] = ..., golden_nan: _Optional[int] = ..., golden_inf: _Optional[int] = ..., mismatched: _Optional[int] = ...) -> None: ...

class Shard(_message.Message):
    __slots__ = ("device", "model", "model_id", "step", "time")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    device: str
    model: str
    model_id: str
    step: str
    time: str
    def __init__(self, device: _Optional[str] = ..., model: _Optional[str] = ..., model_id: _Optional[str] = ..., step: _Optional[str] = ..., time: _Optional[str] = ...) -> None: ...

class FetchResultRequest(_message.Message):
    __slots__ = ("session", "name", "kind")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    session: str
    name: str
    kind: FileKind
    def __init__(self, session: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[_Union[FileKind, str]] = ...) -> None: ...

class FileChunk(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: str
    def __init__(self, session: _Optional[str] = ...) -> None: ...

class DeleteSessionReply(_message.Message):
    __slots__ = ("session", "rows", "files", "data_dir")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DATA_DIR_FIELD_NUMBER: _ClassVar[int]
    session: str
    rows: int
    files: int
    data_dir: str
    def __init__(self, session: _Optional[str] = ..., rows: _Optional[int] = ..., files: _Optional[int] = ..., data_dir: _Optional[str] = ...) -> None: ...

class NextCaptureRequest(_message.Message):
    __slots__ = ("session", "protocol", "hunt", "model", "device", "finished_run", "max_passes", "pass_bytes")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    HUNT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    FINISHED_RUN_FIELD_NUMBER: _ClassVar[int]
    MAX_PASSES_FIELD_NUMBER: _ClassVar[int]
    PASS_BYTES_FIELD_NUMBER: _ClassVar[int]
    session: str
    protocol: int
    hunt: str
    model: str
    device: int
    finished_run: str
    max_passes: int
    pass_bytes: int
    def __init__(self, session: _Optional[str] = ..., protocol: _Optional[int] = ..., hunt: _Optional[str] = ..., model: _Optional[str] = ..., device: _Optional[int] = ..., finished_run: _Optional[str] = ..., max_passes: _Optional[int] = ..., pass_bytes: _Optional[int] = ...) -> None: ...

class Capture(_message.Message):
    __slots__ = ("data", "mode", "layers", "why", "expected_bytes", "stats")
    DATA_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    data: str
    mode: str
    layers: _containers.RepeatedScalarFieldContainer[str]
    why: str
    expected_bytes: int
    stats: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, data: _Optional[str] = ..., mode: _Optional[str] = ..., layers: _Optional[_Iterable[str]] = ..., why: _Optional[str] = ..., expected_bytes: _Optional[int] = ..., stats: _Optional[_Iterable[str]] = ...) -> None: ...

class HuntVerdict(_message.Message):
    __slots__ = ("kind", "culprit", "originals", "evidence", "passes")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CULPRIT_FIELD_NUMBER: _ClassVar[int]
    ORIGINALS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    PASSES_FIELD_NUMBER: _ClassVar[int]
    kind: str
    culprit: str
    originals: _containers.RepeatedScalarFieldContainer[str]
    evidence: _containers.RepeatedScalarFieldContainer[str]
    passes: int
    def __init__(self, kind: _Optional[str] = ..., culprit: _Optional[str] = ..., originals: _Optional[_Iterable[str]] = ..., evidence: _Optional[_Iterable[str]] = ..., passes: _Optional[int] = ...) -> None: ...

class CapturePlan(_message.Message):
    __slots__ = ("protocol", "pass_index", "capture", "verdict", "full_capture_bytes")
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PASS_INDEX_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    FULL_CAPTURE_BYTES_FIELD_NUMBER: _ClassVar[int]
    protocol: int
    pass_index: int
    capture: Capture
    verdict: HuntVerdict
    full_capture_bytes: int
    def __init__(self, protocol: _Optional[int] = ..., pass_index: _Optional[int] = ..., capture: _Optional[_Union[Capture, _Mapping]] = ..., verdict: _Optional[_Union[HuntVerdict, _Mapping]] = ..., full_capture_bytes: _Optional[int] = ...) -> None: ...
