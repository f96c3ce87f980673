"""dumpcmp: find the operator where an Ascend NPU run stops agreeing with its golden run."""

__version__ = "0.1.0"
