"""The aclError table and ``check``."""

from __future__ import annotations

import pytest

from dumpcmp.agent.acl_codes import AclCode, advice, check, error_name
from dumpcmp.errors import AclError, DumpcmpError

# Every row of formats.md §4.3, written out again so that a typo in the enum shows up here.
SPEC_TABLE = {
    0: "ACL_SUCCESS",
    100000: "ACL_ERROR_INVALID_PARAM",
    100001: "ACL_ERROR_UNINITIALIZE",
    100002: "ACL_ERROR_REPEAT_INITIALIZE",
    100003: "ACL_ERROR_INVALID_FILE",
    100004: "ACL_ERROR_WRITE_FILE",
    100005: "ACL_ERROR_INVALID_FILE_SIZE",
    100006: "ACL_ERROR_PARSE_FILE",
    100007: "ACL_ERROR_FILE_MISSING_ATTR",
    100008: "ACL_ERROR_FILE_ATTR_INVALID",
    100009: "ACL_ERROR_INVALID_DUMP_CONFIG",
    100010: "ACL_ERROR_INVALID_PROFILING_CONFIG",
    100011: "ACL_ERROR_INVALID_MODEL_ID",
    100012: "ACL_ERROR_DESERIALIZE_MODEL",
    100013: "ACL_ERROR_PARSE_MODEL",
    100014: "ACL_ERROR_READ_MODEL_FAILURE",
    100015: "ACL_ERROR_MODEL_SIZE_INVALID",
    100016: "ACL_ERROR_MODEL_MISSING_ATTR",
    100017: "ACL_ERROR_MODEL_INPUT_NOT_MATCH",
    100018: "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH",
    100019: "ACL_ERROR_MODEL_NOT_DYNAMIC",
    100020: "ACL_ERROR_OP_TYPE_NOT_MATCH",
    100021: "ACL_ERROR_OP_INPUT_NOT_MATCH",
    100022: "ACL_ERROR_OP_OUTPUT_NOT_MATCH",
    100023: "ACL_ERROR_OP_ATTR_NOT_MATCH",
    100024: "ACL_ERROR_OP_NOT_FOUND",
    100025: "ACL_ERROR_OP_LOAD_FAILED",
    100026: "ACL_ERROR_UNSUPPORTED_DATA_TYPE",
    100027: "ACL_ERROR_FORMAT_NOT_MATCH",
    100037: "ACL_ERROR_REPEAT_FINALIZE",
    100044: "ACL_ERROR_DUMP_ALREADY_RUN",
    100045: "ACL_ERROR_DUMP_NOT_RUN",
    200000: "ACL_ERROR_BAD_ALLOC",
    200001: "ACL_ERROR_API_NOT_SUPPORT",
    200002: "ACL_ERROR_INVALID_DEVICE",
    200006: "ACL_ERROR_FEATURE_UNSUPPORTED",
    300000: "ACL_ERROR_STORAGE_OVER_LIMIT",
    500000: "ACL_ERROR_INTERNAL_ERROR",
    500001: "ACL_ERROR_FAILURE",
    500002: "ACL_ERROR_GE_FAILURE",
    500003: "ACL_ERROR_RT_FAILURE",
    500004: "ACL_ERROR_DRV_FAILURE",
    507053: "ACL_ERROR_RT_DEVICE_MEM_ERROR",
}


@pytest.mark.parametrize(("code", "name"), sorted(SPEC_TABLE.items()))
def test_spec_table_names(code: int, name: str) -> None:
    assert error_name(code) == name


@pytest.mark.parametrize("code", [507999, 507123, 107999, 207500])
def test_unlisted_runtime_codes_keep_the_runtime_family(code: int) -> None:
    assert error_name(code) == f"ACL_ERROR_RT_{code}"


@pytest.mark.parametrize("code", [-1, 1, 99999, 100999, 400000, 600000, 508000])
def test_unknown_codes(code: int) -> None:
    assert error_name(code) == "ACL_ERROR_UNKNOWN"


def test_enum_values_are_unique() -> None:
    # An IntEnum silently turns a duplicated value into an alias; the table must not have any.
    assert len({m.value for m in AclCode}) == len(AclCode.__members__)


def test_check_passes_success_without_reading_the_message() -> None:
    def must_not_be_called() -> str:
        raise AssertionError("the recent message is consumed on read; only fetch it on failure")

    check(0, "aclInit", must_not_be_called)


@pytest.mark.parametrize("recent", ["EE1001: bad path", lambda: "EE1001: bad path"])
def test_check_raises_acl_error_with_context(recent: object) -> None:
    with pytest.raises(AclError) as info:
        check(100003, "aclmdlSetDump", recent)  # type: ignore[arg-type]
    err = info.value
    assert isinstance(err, DumpcmpError)
    assert (err.code, err.name, err.api, err.recent_message) == (
        100003,
        "ACL_ERROR_INVALID_FILE",
        "aclmdlSetDump",
        "EE1001: bad path",
    )
    assert str(err) == "aclmdlSetDump failed with ACL_ERROR_INVALID_FILE (100003): EE1001: bad path"


def test_check_without_message() -> None:
    with pytest.raises(AclError, match=r"^aclFinalize failed with ACL_ERROR_UNKNOWN \(42\)$"):
        check(42, "aclFinalize")


# ge_error_codes.h (CANN's graph engine), written out again for the same reason as SPEC_TABLE.
GE_TABLE = {
    145000: "ACL_ERROR_GE_PARAM_INVALID",
    145001: "ACL_ERROR_GE_EXEC_NOT_INIT",
    145002: "ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID",
    145003: "ACL_ERROR_GE_EXEC_MODEL_ID_INVALID",
    145006: "ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID",
    145007: "ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID",
    145008: "ACL_ERROR_GE_EXEC_MODEL_QUEUE_ID_INVALID",
    145009: "ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED",
    145011: "ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID",
    145012: "ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID",
    145013: "ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID",
    145014: "ACL_ERROR_GE_AIPP_BATCH_EMPTY",
    145015: "ACL_ERROR_GE_AIPP_NOT_EXIST",
    145016: "ACL_ERROR_GE_AIPP_MODE_INVALID",
    145017: "ACL_ERROR_GE_OP_TASK_TYPE_INVALID",
    145018: "ACL_ERROR_GE_OP_KERNEL_TYPE_INVALID",
    145019: "ACL_ERROR_GE_PLGMGR_PATH_INVALID",
    145020: "ACL_ERROR_GE_FORMAT_INVALID",
    145021: "ACL_ERROR_GE_SHAPE_INVALID",
    145022: "ACL_ERROR_GE_DATATYPE_INVALID",
    245000: "ACL_ERROR_GE_MEMORY_ALLOCATION",
    245001: "ACL_ERROR_GE_MEMORY_OPERATE_FAILED",
    245002: "ACL_ERROR_GE_DEVICE_MEMORY_OPERATE_FAILED",
    345102: "ACL_ERROR_GE_SUBHEALTHY",
    345103: "ACL_ERROR_GE_USER_RAISE_EXCEPTION",
    345104: "ACL_ERROR_GE_DATA_NOT_ALIGNED",
    545000: "ACL_ERROR_GE_INTERNAL_ERROR",
    545001: "ACL_ERROR_GE_LOAD_MODEL",
    545002: "ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED",
    545003: "ACL_ERROR_GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED",
    545004: "ACL_ERROR_GE_EXEC_LOAD_TASK_PARTITION_FAILED",
    545005: "ACL_ERROR_GE_EXEC_LOAD_KERNEL_PARTITION_FAILED",
    545006: "ACL_ERROR_GE_EXEC_RELEASE_MODEL_DATA",
    545007: "ACL_ERROR_GE_COMMAND_HANDLE",
    545008: "ACL_ERROR_GE_GET_TENSOR_INFO",
    545009: "ACL_ERROR_GE_UNLOAD_MODEL",
    545601: "ACL_ERROR_GE_MODEL_EXECUTE_TIMEOUT",
    545602: "ACL_ERROR_GE_REDEPLOYING",
}


@pytest.mark.parametrize(("code", "name"), sorted(GE_TABLE.items()))
def test_ge_names_and_advice(code: int, name: str) -> None:
    assert error_name(code) == name
    assert advice(code)


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (145005, "GE parameter error (145000–145999)"),
        (148046, "GE error (148046–148053)"),
        (148053, "GE error (148046–148053)"),
        (245999, "GE resource error (245000–245999)"),
        (345000, "GE error (345000–345999)"),
        (545500, "GE internal error (545000–545999)"),
    ],
)
def test_unnamed_ge_codes_say_ge_error_and_their_range(code: int, name: str) -> None:
    assert error_name(code) == name
    assert "plog" in advice(code)


@pytest.mark.parametrize("code", [148045, 148054, 146000, 100000, 507011])
def test_no_advice_outside_ge(code: int) -> None:
    assert advice(code) == ""


def test_check_adds_ge_advice_to_the_message() -> None:
    with pytest.raises(AclError) as info:
        check(145013, "aclmdlExecute", "E19999: batch 3 is not a profile")
    assert info.value.name == "ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID"
    assert info.value.recent_message.startswith("E19999: batch 3 is not a profile; the batch size is not one")
    assert "\n" not in str(info.value)
    with pytest.raises(AclError) as info:
        check(545001, "aclmdlLoadFromFile")
    assert info.value.recent_message.startswith("GE failed while loading or executing the model: check that")
