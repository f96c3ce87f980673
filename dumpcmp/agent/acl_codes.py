"""aclError codes and their names (formats.md §4.3), and the one place a code becomes an exception.

Names are spelled as in ``acl_base.h`` / ``rt_error_codes.h`` (``ACL_ERROR_INVALID_PARAM``) so a
user can search the CANN documentation for exactly what dumpcmp prints. Runtime codes
(1xx/2xx/5xx ranges ending in ``7xxx``) that are not listed here still get a runtime-family name,
``ACL_ERROR_RT_<code>``; anything else is ``ACL_ERROR_UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

from dumpcmp.errors import AclError

__all__ = ["AclCode", "check", "error_name"]


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


# Runtime error ranges (rt_error_codes.h): parameter 107xxx, resource 207xxx, internal 507xxx.
_RUNTIME_RANGES = (range(107000, 108000), range(207000, 208000), range(507000, 508000))


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
    return "ACL_ERROR_UNKNOWN"


def check(ret: int, api: str, recent_msg: str | Callable[[], str] = "") -> None:
    """Raise ``AclError`` if ``ret`` is not ``ACL_SUCCESS``.

    ``recent_msg`` may be a callable (usually ``backend.get_recent_err_msg``): AscendCL clears its
    recent message when it is read, so it is fetched only when there is an error to report.
    """
    if ret == AclCode.SUCCESS:
        return
    message = recent_msg() if callable(recent_msg) else recent_msg
    raise AclError(code=ret, name=error_name(ret), api=api, recent_message=message or "")
