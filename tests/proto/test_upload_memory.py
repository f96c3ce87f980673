"""keep_freed_memory: a streaming process's next message reuses the pages of the last ones."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]

# As either end of an upload does: a few messages of a chunk each alive at once, then freed.
_PROGRAM = textwrap.dedent(
    """
    import resource, sys
    from dumpcmp.proto.channel import MAX_MESSAGE
    from dumpcmp.proto.upload_wire import keep_freed_memory

    if sys.argv[1] == "keep":
        keep_freed_memory()

    def messages():
        held = [b"x" * MAX_MESSAGE for _ in range(4)]
        del held

    messages()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        messages()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def _page_faults(mode: str) -> int:
    command = [sys.executable, "-c", _PROGRAM, mode]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=_ROOT, timeout=60)
    return int(done.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_freed_messages_memory_is_reused() -> None:
    # 10 rounds of 4 messages of 4 MiB: ~40,000 pages faulted in afresh without the setting.
    assert _page_faults("default") > 10_000  # what the setting is for: still the allocator's default
    assert _page_faults("keep") < 1_000
