"""``SimulatedAcl``: the simulated NPU behind the same raw AscendCL calls as the ctypes binding.

Every call returns an aclError code the way pyACL does (``(value, ret)`` when it produces a
value) and follows AscendCL's state rules (formats.md §4.2): aclmdlSetDump before
aclmdlInitDump is ``ACL_ERROR_DUMP_NOT_RUN``; a ``dump`` section in the aclInit config makes
the model-dump calls ``ACL_ERROR_DUMP_ALREADY_RUN``; an invalid dump config is
``ACL_ERROR_INVALID_DUMP_CONFIG`` with ``get_recent_err_msg`` naming the broken rule (from
aclInit too: older ACL only logged that case, but a dump that silently never happens is the
worse simulation); only models loaded after aclmdlSetDump are dumped; aclmdlFinalizeDump stops
dumping. Files are written while the model executes, in execution order, by the runtime's dump
thread (``dump_thread``); aclrtSynchronizeDevice, aclmdlFinalizeDump and aclFinalize wait for
what it has pending (a write that failed is their ``ACL_ERROR_WRITE_FILE``).
``dump_op_switch`` governs single-operator execution, which the simulator does not offer: a
loaded model is dumped through ``dump_list``.

A second aclInit counts a reference and answers ``ACL_ERROR_REPEAT_INITIALIZE``;
aclFinalizeReference gives one back (AscendCL is released at zero), aclFinalize releases it
whatever the count.

``load_from_file`` takes an ``.onnx`` file (compiled on load, as ATC would have) or ``zoo:NAME``;
an offline ``.om`` cannot be simulated and is refused with ``ACL_ERROR_DESERIALIZE_MODEL``.
``execute`` takes numpy arrays; ``execute_datasets`` takes datasets over simulated device memory
(``data_plane``), as a pyACL script builds them. ``loaded`` keeps a record of every model loaded,
for the files a simulation writes after the run (ATC json, fault placement).
This module does not import ``dumpcmp.agent``: it fits ``AclBackend`` structurally.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from dumpcmp.acl_config import AclConfig, is_remote_path, validate
from dumpcmp.errors import ConfigError, DumpcmpError, ModelError

from .clock import MicroClock
from .compiled import CompiledModel
from .compiler import CompileOptions, compile_model
from .data_plane import ModelIO, SimulatedDataPlane
from .dump_settings import DumpSettings, ModelDump
from .dump_thread import DumpJob, DumpThread
from .dump_writer import DumpWriter, Progress
from .executor import Executor, OpRun
from .faults import FaultPlan
from .ret import Ret
from .zoo import build as build_zoo
from .zoo import is_zoo_name

__all__ = ["LoadedModel", "Ret", "SimulatedAcl"]


@dataclass
class _Model:
    id: int
    compiled: CompiledModel
    executor: Executor
    dump: ModelDump | None
    device: int
    steps_run: int = 0
    dumping: bool = True  # False once aclmdlFinalizeDump has run


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A model as it was loaded; kept after aclmdlUnload."""

    id: int
    compiled: CompiledModel
    fault_ops: dict[str, str]  # original (ONNX) op name -> the NPU op a fault there lands in
    dump_dir: Path | None  # {dump_path}/{time}/{device}/{model}/{model_id}; None when not dumped


@dataclass
class _State:
    initialized: bool = False
    references: int = 0  # aclInit calls not yet given back
    init_dump: DumpSettings | None = None  # a dump section given to aclInit
    dump_inited: bool = False
    settings: DumpSettings | None = None  # from the last aclmdlSetDump
    devices: list[int] = field(default_factory=list)
    models: dict[int, _Model] = field(default_factory=dict)


class SimulatedAcl(SimulatedDataPlane):
    """A simulated Ascend device running ONNX models in fp16; see the module docstring."""

    def __init__(
        self,
        *,
        device_count: int = 1,
        fusion: bool = True,
        quantize: Sequence[str] = (),
        faults: FaultPlan | Sequence[str] = (),
        seed: int = 0,
        atomic_writes: bool = False,
        clock: Callable[[], int] | None = None,
        now: Callable[[], datetime] | None = None,
        progress: Progress | None = None,
        chunk_size: int = 64 * 1024,
        on_op: Callable[[OpRun], None] | None = None,
    ) -> None:
        self.device_count = device_count
        self.options = CompileOptions(fusion=fusion, quantize=tuple(quantize))
        self.faults = faults if isinstance(faults, FaultPlan) else FaultPlan.parse(faults, seed)
        self.seed = seed
        self.clock = MicroClock(clock)
        self.now = now or (lambda: datetime.fromtimestamp(self.clock.peek() / 1e6))
        self.writer = DumpWriter(atomic=atomic_writes, progress=progress, chunk_size=chunk_size)
        self._dumps = DumpThread(self.writer)
        self.on_op = on_op
        super().__init__()
        self._state = _State()
        self._loaded: list[LoadedModel] = []
        self._next_model_id = 1
        self._recent = ""

    # ------------------------------------------------------------------ what tests and simulate() read

    @property
    def written(self) -> tuple[Path, ...]:
        """Every dump file written so far, in write order."""
        return tuple(self.writer.written)

    @property
    def loaded(self) -> tuple[LoadedModel, ...]:
        """Every model loaded so far, in load order, unloaded ones included."""
        return tuple(self._loaded)

    def compiled(self, model_id: int) -> CompiledModel:
        return self._state.models[model_id].compiled

    def dump_dir(self, model_id: int) -> Path | None:
        """``{dump_path}/{time}/{device}/{model}/{model_id}`` of a dumped model."""
        dump = self._state.models[model_id].dump
        return dump.directory if dump is not None else None

    # ------------------------------------------------------------------ helpers

    def _fail(self, code: Ret, message: str) -> int:
        self._recent = message
        return int(code)

    def _not_ready(self, api: str) -> int:
        if self._state.initialized:
            return int(Ret.SUCCESS)
        return self._fail(Ret.UNINITIALIZE, f"{api}: aclInit has not been called")

    def _model_io(self, model_id: int) -> ModelIO | None:
        model = self._state.models.get(model_id)
        return None if model is None else ModelIO(model.compiled.inputs, model.compiled.outputs)

    def get_recent_err_msg(self) -> str:
        """The message of the last failed call, then cleared (as aclGetRecentErrMsg does)."""
        message, self._recent = self._recent, ""
        return message

    # ------------------------------------------------------------------ lifecycle

    def init(self, config_path: str | None = None) -> int:
        state = self._state
        if state.initialized:
            state.references += 1
            return self._fail(Ret.REPEAT_INITIALIZE, "aclInit: already initialised")
        if config_path:
            raw, code, message = _read_json(config_path)
            if raw is None:
                return self._fail(code, f"aclInit: {message}")
            if isinstance(raw, dict) and "dump" in raw:
                settings, code, message = self._settings(raw, config_path)
                if code != Ret.SUCCESS:
                    return self._fail(code, f"aclInit: {message}")
                state.init_dump = settings
        state.initialized = True
        state.references = 1
        return int(Ret.SUCCESS)

    def finalize(self) -> int:
        if not self._state.initialized:
            return self._fail(Ret.REPEAT_FINALIZE, "aclFinalize: not initialised")
        failure = self._dumps.drain()
        self._state = _State()
        return (
            self._fail(Ret.WRITE_FILE, f"aclFinalize: dump not written: {failure}")
            if failure
            else int(Ret.SUCCESS)
        )

    def finalize_reference(self) -> tuple[int, int]:
        state = self._state
        if not state.initialized:
            return 0, self._fail(Ret.REPEAT_FINALIZE, "aclFinalizeReference: not initialised")
        state.references -= 1
        if state.references == 0:
            self._state = _State()
        return state.references, int(Ret.SUCCESS)

    def set_device(self, device_id: int) -> int:
        if not self._state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclrtSetDevice: aclInit has not been called")
        if not 0 <= device_id < self.device_count:
            return self._fail(
                Ret.RT_INVALID_DEVICEID,
                f"aclrtSetDevice: device {device_id} does not exist ({self.device_count} simulated)",
            )
        self._state.devices.append(device_id)
        return int(Ret.SUCCESS)

    def reset_device(self, device_id: int) -> int:
        if not self._state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclrtResetDevice: aclInit has not been called")
        if device_id not in self._state.devices:
            return self._fail(Ret.RT_INVALID_DEVICEID, f"aclrtResetDevice: device {device_id} was not set")
        self._state.devices.remove(device_id)
        return int(Ret.SUCCESS)

    def synchronize_device(self) -> int:
        if not self._state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclrtSynchronizeDevice: aclInit has not been called")
        if not self._state.devices:
            return self._fail(Ret.RT_CONTEXT_NULL, "aclrtSynchronizeDevice: no device is set")
        if failure := self._dumps.drain():  # execution is synchronous: only the dump can be pending
            return self._fail(Ret.WRITE_FILE, f"aclrtSynchronizeDevice: dump not written: {failure}")
        return int(Ret.SUCCESS)

    # ------------------------------------------------------------------ dump configuration

    def init_dump(self) -> int:
        state = self._state
        if not state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclmdlInitDump: aclInit has not been called")
        if state.init_dump is not None:
            return self._fail(Ret.DUMP_ALREADY_RUN, "aclmdlInitDump: dump was configured by aclInit")
        if state.dump_inited:
            return self._fail(Ret.REPEAT_INITIALIZE, "aclmdlInitDump: already called")
        state.dump_inited = True
        return int(Ret.SUCCESS)

    def set_dump(self, dump_cfg_path: str) -> int:
        state = self._state
        if not state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclmdlSetDump: aclInit has not been called")
        if state.init_dump is not None:
            return self._fail(Ret.DUMP_ALREADY_RUN, "aclmdlSetDump: dump was configured by aclInit")
        if not state.dump_inited:
            return self._fail(Ret.DUMP_NOT_RUN, "aclmdlSetDump: aclmdlInitDump has not been called")
        if not dump_cfg_path:
            return self._fail(Ret.INVALID_PARAM, "aclmdlSetDump: the config path is empty")
        raw, code, message = _read_json(dump_cfg_path)
        if raw is None:
            return self._fail(code, f"aclmdlSetDump: {message}")
        settings, code, message = self._settings(raw, dump_cfg_path)
        if code != Ret.SUCCESS:
            return self._fail(code, f"aclmdlSetDump: {message}")
        state.settings = settings  # later models only: loaded models keep what they had
        return int(Ret.SUCCESS)

    def finalize_dump(self) -> int:
        state = self._state
        if not state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclmdlFinalizeDump: aclInit has not been called")
        if state.init_dump is not None:
            return self._fail(Ret.DUMP_ALREADY_RUN, "aclmdlFinalizeDump: dump was configured by aclInit")
        if not state.dump_inited:
            return self._fail(Ret.DUMP_NOT_RUN, "aclmdlFinalizeDump: aclmdlInitDump has not been called")
        # Stop dumping from here on, once every pending dump is written.
        failure = self._dumps.drain()
        state.dump_inited = False
        state.settings = None
        for model in state.models.values():
            model.dumping = False
        if failure:
            return self._fail(Ret.WRITE_FILE, f"aclmdlFinalizeDump: dump not written: {failure}")
        return int(Ret.SUCCESS)

    def _settings(self, raw: object, source: str) -> tuple[DumpSettings | None, Ret, str]:
        issues = validate(raw)
        if issues:
            return None, Ret.INVALID_DUMP_CONFIG, f"{source}: " + "; ".join(str(i) for i in issues)
        try:
            config = AclConfig.from_json(raw if isinstance(raw, dict) else {}, source=source)
            dump = config.dump
            if dump is not None and dump.dump_path is not None and is_remote_path(dump.dump_path):
                return (
                    None,
                    Ret.FEATURE_UNSUPPORTED,
                    f"{source}: the simulated NPU writes local dump paths only",
                )
            return DumpSettings.from_config(config, self.now()), Ret.SUCCESS, ""
        except ConfigError as exc:
            return None, Ret.INVALID_DUMP_CONFIG, str(exc)

    # ------------------------------------------------------------------ models

    def load_from_file(self, model_path: str) -> tuple[int, int]:
        state = self._state
        if not state.initialized:
            return 0, self._fail(Ret.UNINITIALIZE, "aclmdlLoadFromFile: aclInit has not been called")
        if not state.devices:
            return 0, self._fail(Ret.RT_CONTEXT_NULL, "aclmdlLoadFromFile: no device is set")
        path = str(model_path)
        try:
            if is_zoo_name(path):
                compiled = compile_model(
                    build_zoo(path, self.seed), name=path.split(":", 1)[1], options=self.options
                )
            elif path.lower().endswith(".om"):
                return 0, self._fail(
                    Ret.DESERIALIZE_MODEL,
                    f"aclmdlLoadFromFile: {path}: the simulated NPU cannot run an offline model (.om); "
                    "load the .onnx it was converted from",
                )
            elif not Path(path).is_file():
                return 0, self._fail(Ret.READ_MODEL_FAILURE, f"aclmdlLoadFromFile: {path}: no such file")
            else:
                compiled = compile_model(path, options=self.options)
            executor = Executor(compiled, self.faults)
        except DumpcmpError as exc:
            return 0, self._fail(Ret.PARSE_MODEL, f"aclmdlLoadFromFile: {path}: {exc}")
        model_id = self._next_model_id
        self._next_model_id += 1
        device = state.devices[-1]
        settings = state.init_dump or state.settings
        dump = settings.for_model(compiled.name, model_id, device) if settings is not None else None
        state.models[model_id] = _Model(model_id, compiled, executor, dump, device)
        directory = dump.directory if dump is not None else None
        self._loaded.append(LoadedModel(model_id, compiled, executor.fault_ops(), directory))
        return model_id, int(Ret.SUCCESS)

    def unload(self, model_id: int) -> int:
        if not self._state.initialized:
            return self._fail(Ret.UNINITIALIZE, "aclmdlUnload: aclInit has not been called")
        if self._state.models.pop(model_id, None) is None:
            return self._fail(Ret.INVALID_MODEL_ID, f"aclmdlUnload: model {model_id} is not loaded")
        return int(Ret.SUCCESS)

    def execute(self, model_id: int, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
        model, code = self._executable(model_id, "aclmdlExecute")
        if model is None:
            return [], code
        problem = _input_problem(model.compiled, inputs)
        if problem:
            return [], self._fail(Ret.MODEL_INPUT_NOT_MATCH, f"aclmdlExecute: {problem}")
        return self._run(model, inputs)

    def execute_datasets(self, model_id: int, input_dataset: int, output_dataset: int) -> int:
        """aclmdlExecute on datasets of device memory; see ``data_plane`` for NULL outputs."""
        model, code = self._executable(model_id, "aclmdlExecute")
        if model is None:
            return code
        arrays, problem = self.read_inputs(input_dataset, model.compiled.inputs)
        if problem:
            return self._fail(Ret.MODEL_INPUT_NOT_MATCH, f"aclmdlExecute: {problem}")
        outputs, code = self._run(model, arrays)
        if code != Ret.SUCCESS:
            return code
        typed = [np.asarray(o, dtype=s.dtype) for o, s in zip(outputs, model.compiled.outputs, strict=True)]
        problem = self.write_outputs(output_dataset, typed)
        if problem:
            return self._fail(Ret.MODEL_OUTPUT_NOT_MATCH, f"aclmdlExecute: {problem}")
        return int(Ret.SUCCESS)

    def _executable(self, model_id: int, api: str) -> tuple[_Model | None, int]:
        if code := self._not_ready(api):
            return None, code
        model = self._state.models.get(model_id)
        if model is None:
            return None, self._fail(Ret.INVALID_MODEL_ID, f"{api}: model {model_id} is not loaded")
        return model, int(Ret.SUCCESS)

    def _run(self, model: _Model, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
        step = model.steps_run
        model.steps_run += 1
        on_op = self._dumper(model, step)
        try:
            run = model.executor.run(list(inputs), step=step, on_op=on_op, keep=False)
        except ModelError as exc:
            return [], self._fail(Ret.INTERNAL_ERROR, f"aclmdlExecute: {exc}")
        return [np.array(o) for o in run.outputs], int(Ret.SUCCESS)

    def _dumper(self, model: _Model, step: int) -> Callable[[OpRun], None] | None:
        dump = model.dump
        directory = dump.step_dir(step) if dump is not None and model.dumping else None
        user = self.on_op
        if dump is None or directory is None:
            return user
        tasks = {op.name: index for index, op in enumerate(model.compiled.tasks, start=1)}
        stats = dump.settings.stats if dump.settings.data == "stats" else None
        dumps = self._dumps

        def on_op(run: OpRun) -> None:
            if user is not None:
                user(run)
            selection = dump.selection(run.op, model.compiled)
            if selection is not None:  # stamped now, when the op ran; written by the dump thread
                dumps.submit(
                    DumpJob(run, selection, directory, tasks[run.op.name], model.id, self.clock(), stats)
                )

        return on_op


def _read_json(path: str) -> tuple[object | None, Ret, str]:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        return None, Ret.INVALID_FILE, f"{path}: cannot read ({exc})"
    try:
        return json.loads(text), Ret.SUCCESS, ""
    except json.JSONDecodeError as exc:
        return None, Ret.PARSE_FILE, f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, rule 1)"


def _input_problem(compiled: CompiledModel, inputs: Sequence[np.ndarray]) -> str:
    if len(inputs) != len(compiled.inputs):
        return f"the model takes {len(compiled.inputs)} input(s), {len(inputs)} given"
    for spec, array in zip(compiled.inputs, inputs, strict=True):
        data = np.asarray(array)
        if tuple(data.shape) != spec.shape or data.dtype.itemsize != spec.dtype.itemsize:
            return (
                f"input {spec.name!r} is {data.dtype} {list(data.shape)}; the model takes "
                f"{spec.dtype} {list(spec.shape)}"
            )
    return ""
