"""aclError codes and their names (formats.md §4.3), and the one place a code becomes an exception.

Names are spelled as in ``acl_base.h`` / ``rt_error_codes.h`` / ``ge_error_codes.h``
(``ACL_ERROR_INVALID_PARAM``, ``ACL_ERROR_GE_LOAD_MODEL``) so a user can search the CANN
documentation for exactly what dumpcmp prints. Runtime codes (1xx/2xx/5xx ranges ending in
``7xxx``) that are not listed here still get a runtime-family name, ``ACL_ERROR_RT_<code>``.
Graph Engine codes (what aclmdlLoadFromFile/aclmdlExecute pass on from GE: 145xxx parameter,
245xxx resource, 345xxx device/data, 545xxx internal, and 148046–148053) that ge_error_codes.h
does not name are called ``GE error`` with their range, never given an invented name; every GE
code comes with advice (``advice``), which ``check`` adds to the error. Anything else is
``ACL_ERROR_UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

from dumpcmp.errors import AclError

__all__ = ["AclCode", "advice", "check", "error_name"]


class AclCode(IntEnum):
    """aclError values; ``error_name`` adds the ``ACL_`` / ``ACL_ERROR_`` prefix."""

    SUCCESS = 0
    # acl_base.h: parameter, state and file errors
    INVALID_PARAM = 100000
    UNINITIALIZE = 100001
    REPEAT_INITIALIZE = 100002
    INVALID_FILE = 100003
    WRITE_FILE = 100004
    INVALID_FILE_SIZE = 100005
    PARSE_FILE = 100006
    FILE_MISSING_ATTR = 100007
    FILE_ATTR_INVALID = 100008
    INVALID_DUMP_CONFIG = 100009
    INVALID_PROFILING_CONFIG = 100010
    INVALID_MODEL_ID = 100011
    DESERIALIZE_MODEL = 100012
    PARSE_MODEL = 100013
    READ_MODEL_FAILURE = 100014
    MODEL_SIZE_INVALID = 100015
    MODEL_MISSING_ATTR = 100016
    MODEL_INPUT_NOT_MATCH = 100017
    MODEL_OUTPUT_NOT_MATCH = 100018
    MODEL_NOT_DYNAMIC = 100019
    OP_TYPE_NOT_MATCH = 100020
    OP_INPUT_NOT_MATCH = 100021
    OP_OUTPUT_NOT_MATCH = 100022
    OP_ATTR_NOT_MATCH = 100023
    OP_NOT_FOUND = 100024
    OP_LOAD_FAILED = 100025
    UNSUPPORTED_DATA_TYPE = 100026
    FORMAT_NOT_MATCH = 100027
    BIN_SELECTOR_NOT_REGISTERED = 100028
    KERNEL_NOT_FOUND = 100029
    BIN_SELECTOR_ALREADY_REGISTERED = 100030
    KERNEL_ALREADY_REGISTERED = 100031
    INVALID_QUEUE_ID = 100032
    REPEAT_SUBSCRIBE = 100033
    STREAM_NOT_SUBSCRIBE = 100034
    THREAD_NOT_SUBSCRIBE = 100035
    WAIT_CALLBACK_TIMEOUT = 100036
    REPEAT_FINALIZE = 100037
    NOT_STATIC_AIPP = 100038
    COMPILING_STUB_MODE = 100039
    GROUP_NOT_SET = 100040
    GROUP_NOT_CREATE = 100041
    PROF_ALREADY_RUN = 100042
    PROF_NOT_RUN = 100043
    DUMP_ALREADY_RUN = 100044
    DUMP_NOT_RUN = 100045
    # acl_base.h: resources, storage, internal
    BAD_ALLOC = 200000
    API_NOT_SUPPORT = 200001
    INVALID_DEVICE = 200002
    MEMORY_ADDRESS_UNALIGNED = 200003
    RESOURCE_NOT_MATCH = 200004
    INVALID_RESOURCE_HANDLE = 200005
    FEATURE_UNSUPPORTED = 200006
    PROF_MODULES_UNSUPPORTED = 200007
    STORAGE_OVER_LIMIT = 300000
    INTERNAL_ERROR = 500000
    FAILURE = 500001
    GE_FAILURE = 500002
    RT_FAILURE = 500003
    DRV_FAILURE = 500004
    PROFILING_FAILURE = 500005
    # rt_error_codes.h: the runtime codes the agent's calls are likely to meet
    RT_PARAM_INVALID = 107000
    RT_INVALID_DEVICEID = 107001
    RT_CONTEXT_NULL = 107002
    RT_FEATURE_NOT_SUPPORT = 207000
    RT_MEMORY_ALLOCATION = 207001
    RT_MEMORY_FREE = 207002
    RT_NO_DEVICE = 207004
    RT_DEVICE_OOM = 207018
    RT_INTERNAL_ERROR = 507000
    RT_TS_ERROR = 507001
    RT_MODEL_EXECUTE = 507011
    RT_AICORE_TIMEOUT = 507014
    RT_AICORE_EXCEPTION = 507015
    RT_AICPU_TIMEOUT = 507017
    RT_AICPU_EXCEPTION = 507018
    RT_DEV_SETUP_ERROR = 507033
    RT_DEVICE_MEM_ERROR = 507053
    RT_DRV_INTERNAL_ERROR = 507899
    # ge_error_codes.h: what model load and execute pass on from the Graph Engine
    GE_PARAM_INVALID = 145000
    GE_EXEC_NOT_INIT = 145001
    GE_EXEC_MODEL_PATH_INVALID = 145002
    GE_EXEC_MODEL_ID_INVALID = 145003
    GE_EXEC_MODEL_DATA_SIZE_INVALID = 145006
    GE_EXEC_MODEL_ADDR_INVALID = 145007
    GE_EXEC_MODEL_QUEUE_ID_INVALID = 145008
    GE_EXEC_LOAD_MODEL_REPEATED = 145009
    GE_DYNAMIC_INPUT_ADDR_INVALID = 145011
    GE_DYNAMIC_INPUT_LENGTH_INVALID = 145012
    GE_DYNAMIC_BATCH_SIZE_INVALID = 145013
    GE_AIPP_BATCH_EMPTY = 145014
    GE_AIPP_NOT_EXIST = 145015
    GE_AIPP_MODE_INVALID = 145016
    GE_OP_TASK_TYPE_INVALID = 145017
    GE_OP_KERNEL_TYPE_INVALID = 145018
    GE_PLGMGR_PATH_INVALID = 145019
    GE_FORMAT_INVALID = 145020
    GE_SHAPE_INVALID = 145021
    GE_DATATYPE_INVALID = 145022
    GE_MEMORY_ALLOCATION = 245000
    GE_MEMORY_OPERATE_FAILED = 245001
    GE_DEVICE_MEMORY_OPERATE_FAILED = 245002
    GE_SUBHEALTHY = 345102
    GE_USER_RAISE_EXCEPTION = 345103
    GE_DATA_NOT_ALIGNED = 345104
    GE_INTERNAL_ERROR = 545000
    GE_LOAD_MODEL = 545001
    GE_EXEC_LOAD_MODEL_PARTITION_FAILED = 545002
    GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED = 545003
    GE_EXEC_LOAD_TASK_PARTITION_FAILED = 545004
    GE_EXEC_LOAD_KERNEL_PARTITION_FAILED = 545005
    GE_EXEC_RELEASE_MODEL_DATA = 545006
    GE_COMMAND_HANDLE = 545007
    GE_GET_TENSOR_INFO = 545008
    GE_UNLOAD_MODEL = 545009
    GE_MODEL_EXECUTE_TIMEOUT = 545601
    GE_REDEPLOYING = 545602


# Runtime error ranges (rt_error_codes.h): parameter 107xxx, resource 207xxx, internal 507xxx.
_RUNTIME_RANGES = (range(107000, 108000), range(207000, 208000), range(507000, 508000))

_PLOG = "the plog (~/ascend/log, or $ASCEND_PROCESS_LOG_PATH) has GE's own message"
_CONVERTED = "check that the .om was converted by atc for this SoC (--soc_version) and CANN version"

# GE code ranges: (range, what the range is, advice for any code in it).
_GE_RANGES: tuple[tuple[range, str, str], ...] = (
    (
        range(145000, 146000),
        "GE parameter error",
        "GE refused an argument: check the model path and id, and that each input/output buffer "
        "matches the model description (sizes, dynamic batch/shape profile); " + _PLOG,
    ),
    (
        range(148046, 148054),
        "GE error",
        "a model load/execute error reported by GE (code not named in the public headers); " + _PLOG,
    ),
    (
        range(245000, 246000),
        "GE resource error",
        "GE could not get or use memory: free device memory (other models or processes, see "
        "`npu-smi info`) or use a smaller batch; " + _PLOG,
    ),
    (
        range(345000, 346000),
        "GE error",
        "GE reported a device or data condition; " + _PLOG,
    ),
    (
        range(545000, 546000),
        "GE internal error",
        "GE failed while loading or executing the model: " + _CONVERTED + "; " + _PLOG,
    ),
)

# Codes whose cause is specific enough for advice of their own.
_GE_SPECIFIC: dict[int, str] = {
    AclCode.GE_EXEC_NOT_INIT: "call aclInit and aclrtSetDevice before loading or executing a model",
    AclCode.GE_EXEC_MODEL_PATH_INVALID: "the model path is invalid: is the .om there and readable?",
    AclCode.GE_EXEC_MODEL_ID_INVALID: "no model with this id is loaded (it was unloaded, or loading failed)",
    AclCode.GE_EXEC_MODEL_DATA_SIZE_INVALID: "the model file's data size is wrong: the .om is truncated or "
    "not an offline model; " + _CONVERTED,
    AclCode.GE_EXEC_LOAD_MODEL_REPEATED: "this model is already loaded; unload it first",
    AclCode.GE_DYNAMIC_INPUT_LENGTH_INVALID: "an input buffer's size does not fit the dynamic shape set; "
    "use a profile the model was converted with (atc --dynamic_dims/--input_shape_range)",
    AclCode.GE_DYNAMIC_BATCH_SIZE_INVALID: "the batch size is not one the model was converted with "
    "(atc --dynamic_batch_size)",
    AclCode.GE_OP_KERNEL_TYPE_INVALID: "an op kernel does not match this install: " + _CONVERTED
    + ", and that ASCEND_OPP_PATH points at the same CANN",
    AclCode.GE_PLGMGR_PATH_INVALID: "GE cannot find its plugins: source CANN's set_env.sh (ASCEND_OPP_PATH)",
    AclCode.GE_MODEL_EXECUTE_TIMEOUT: "model execution timed out: an op may hang on the device; " + _PLOG,
}  # fmt: skip


def _ge_range(code: int) -> tuple[range, str, str] | None:
    return next((entry for entry in _GE_RANGES if code in entry[0]), None)


def advice(code: int) -> str:
    """What to do about ``code``, for GE codes; ``""`` for the rest (their names say enough)."""
    family = _ge_range(code)
    if family is None:
        return ""
    return _GE_SPECIFIC.get(code, family[2])


def error_name(code: int) -> str:
    """The C name of an aclError code, e.g. ``100000 -> "ACL_ERROR_INVALID_PARAM"``."""
    if code == AclCode.SUCCESS:
        return "ACL_SUCCESS"
    try:
        return f"ACL_ERROR_{AclCode(code).name}"
    except ValueError:
        pass
    if any(code in r for r in _RUNTIME_RANGES):
        # Unlisted runtime code: the family is still worth telling (device/driver side).
        return f"ACL_ERROR_RT_{code}"
    family = _ge_range(code)
    if family is not None:
        codes, what, _ = family
        return f"{what} ({codes.start}–{codes.stop - 1})"
    return "ACL_ERROR_UNKNOWN"


def check(ret: int, api: str, recent_msg: str | Callable[[], str] = "") -> None:
    """Raise ``AclError`` if ``ret`` is not ``ACL_SUCCESS``.

    ``recent_msg`` may be a callable (usually ``backend.get_recent_err_msg``): AscendCL clears its
    recent message when it is read, so it is fetched only when there is an error to report.
    """
    if ret == AclCode.SUCCESS:
        return
    message = recent_msg() if callable(recent_msg) else recent_msg
    hint = advice(ret)
    if hint:
        message = f"{message}; {hint}" if message else hint
    raise AclError(code=ret, name=error_name(ret), api=api, recent_message=message or "")
