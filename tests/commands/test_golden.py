"""``dumpcmp golden``: golden npy files for a user's ONNX model, inputs from files or random."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import typer
from onnx import TensorProto, helper, numpy_helper
from typer.testing import CliRunner

from dumpcmp.commands import golden
from dumpcmp.proto.names import parse_golden_name


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def _cli() -> typer.Typer:
    app = typer.Typer()
    golden.register(app)

    @app.command("other")  # a second command keeps "golden" a subcommand, as in dumpcmp
    def other() -> None:
        pass

    return app


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    weight = numpy_helper.from_array(np.eye(4, dtype=np.float32) * 2, "w")
    nodes = [
        helper.make_node("MatMul", ["a", "w"], ["m"], name="fc/MatMul"),
        helper.make_node("Add", ["m", "b"], ["y"], name="add.out"),
    ]
    graph = helper.make_graph(
        nodes,
        "net",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        initializer=[weight],
    )
    path = tmp_path / "net.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _keys(directory: Path) -> dict[str, np.ndarray]:
    return {parse_golden_name(p.name).key: np.load(p) for p in directory.iterdir()}


def test_npy_and_bin_inputs(tmp_path: Path, model_path: Path) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "a.npy", a)
    np.full((1, 4), 0.5, np.float32).tofile(tmp_path / "b.bin")
    result = CliRunner().invoke(
        _cli(),
        ["golden", str(model_path), "--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "b.bin"),
         "--input-shape", "b:1,4", "--input-dtype", "b:float32", "--out", str(tmp_path / "g")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "wrote 4 golden files" in result.output and "input a: float32 [3, 4]" in result.output
    keys = _keys(tmp_path / "g")
    assert set(keys) == {"a.0", "b.0", "fc_MatMul.0", "add_out.0"}
    np.testing.assert_array_equal(keys["add_out.0"], a * 2 + 0.5)


def test_random_inputs_with_a_shape_for_symbolic_dims(tmp_path: Path, model_path: Path) -> None:
    args = ["golden", str(model_path), "--input-shape", "a:5,4", "--seed", "3", "--out", str(tmp_path / "g")]
    assert CliRunner().invoke(_cli(), args).exit_code == 0
    first = _keys(tmp_path / "g")
    assert first["a.0"].shape == (5, 4)
    args[-1] = str(tmp_path / "g2")
    assert CliRunner().invoke(_cli(), args).exit_code == 0
    np.testing.assert_array_equal(_keys(tmp_path / "g2")["add_out.0"], first["add_out.0"])  # same seed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--input", "nope.npy"], "Error: the model has 2 input(s)"),
        (["--input-shape", "zz:1"], "Error: --input-shape for 'zz'"),
        (["--input-shape", "a:x"], "Error: input shape 'a:x'"),
    ],
)
def test_user_errors(tmp_path: Path, model_path: Path, extra: list[str], message: str) -> None:
    result = CliRunner().invoke(_cli(), ["golden", str(model_path), "--out", str(tmp_path / "g"), *extra])
    assert result.exit_code == 1
    assert message in result.output


def test_wrongly_shaped_input_is_one_line(tmp_path: Path, model_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.ones((3, 5), np.float32))
    np.save(tmp_path / "b.npy", np.ones((1, 4), np.float32))
    result = CliRunner().invoke(
        _cli(),
        ["golden", str(model_path), "-i", str(tmp_path / "a.npy"), "-i", str(tmp_path / "b.npy"),
         "--out", str(tmp_path / "g")],
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.output == "Error: input 'a': the model expects shape [N, 4], given [3, 5]\n"
    assert not (tmp_path / "g").exists() or list((tmp_path / "g").iterdir()) == []


def test_second_run_into_one_out_is_refused(tmp_path: Path, model_path: Path) -> None:
    args = ["golden", str(model_path), "--input-shape", "a:2,4", "--out", str(tmp_path / "g")]
    assert CliRunner().invoke(_cli(), args).exit_code == 0
    before = sorted((tmp_path / "g").iterdir())
    result = CliRunner().invoke(_cli(), [*args, "--seed", "1"])
    assert result.exit_code == 1
    assert result.output == f"Error: {tmp_path / 'g'} already holds 4 npy file(s) of an earlier run; " \
        "give a new or empty directory, or remove them first\n"  # fmt: skip
    assert sorted((tmp_path / "g").iterdir()) == before


def test_out_that_is_a_file_is_one_line(tmp_path: Path, model_path: Path) -> None:
    blocker = tmp_path / "g"
    blocker.write_text("mine")
    result = CliRunner().invoke(_cli(), ["golden", str(model_path), "--out", str(blocker)])
    assert result.exit_code == 1
    assert result.output == f"Error: --out {blocker}: is a file, not a directory\n"


def _run_with(tmp_path: Path, model_path: Path, a: np.ndarray) -> tuple[int, str]:
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.full((1, 4), 0.5, np.float32))
    result = CliRunner().invoke(
        _cli(),
        ["golden", str(model_path), "-i", str(tmp_path / "a.npy"), "-i", str(tmp_path / "b.npy"),
         "--out", str(tmp_path / "g")],
    )  # fmt: skip
    return result.exit_code, result.output


def test_a_float64_input_is_cast_with_a_warning(tmp_path: Path, model_path: Path) -> None:
    # It was cast to the model's float32 without a word, and "input a: float64" was printed.
    a = np.array([[0.1, 1.0, 2.0, 3.0]] * 3)
    code, output = _run_with(tmp_path, model_path, a)
    assert code == 0, output
    assert output.splitlines()[0] == (
        "warning: input 'a': float64 given, the model takes float32: cast, 3 of 12 values rounded"
    )
    assert "input a: float32 [3, 4]" in output
    kept = _keys(tmp_path / "g")["a.0"]
    assert kept.dtype == np.float32 and np.array_equal(kept, a.astype(np.float32))


def test_a_cast_that_would_change_values_is_refused(tmp_path: Path, model_path: Path) -> None:
    code, output = _run_with(tmp_path, model_path, np.full((3, 4), 1e300))
    assert code == 1
    assert output == (
        "Error: input 'a': float64 given, the model takes float32, and casting would change values "
        "(numbers beyond float32's range would become inf); convert the file yourself\n"
    )
    assert not (tmp_path / "g").exists()


def test_ops_the_simulator_lacks_run_on_onnxruntime(tmp_path: Path) -> None:
    """The golden run is onnxruntime's: Einsum and Hardmax (not simulated) still get golden files."""
    nodes = [
        helper.make_node("Einsum", ["x", "x"], ["e"], equation="ij,kj->ik", name="gram"),
        helper.make_node("Hardmax", ["e"], ["y"], name="pick"),
    ]
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
    )
    path = tmp_path / "einsum.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    result = CliRunner().invoke(_cli(), ["golden", str(path), "--input", str(tmp_path / "x.npy"), "--out",
                                         str(tmp_path / "g")])  # fmt: skip
    assert result.exit_code == 0, result.output
    found = _keys(tmp_path / "g")
    np.testing.assert_allclose(found["gram.0"], x @ x.T)
    assert found["pick.0"].tolist() == [[0.0, 1.0], [0.0, 1.0]]
