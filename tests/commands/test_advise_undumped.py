"""The advisor where the faulty op's output is not in the dump: the fusion rule names the op that
makes the differing input, so the network's inputs are not blamed, and a first divergence whose
earlier ops have no dump says so."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dumpcmp.cli import app

runner = CliRunner()
FAULT = "/block2/Add=bias:0.5"


def invoke(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def simulated(tmp: Path, *acl: str) -> tuple[Path, Path]:
    """The sim's dump directory (``acl``: ``config acl`` options, dumping into a directory of its
    own) and its output directory."""
    out = tmp / "sim"
    if not acl:
        invoke("sim", "run", "zoo:small_cnn", "-o", out, "--inject", FAULT)
        return out / "npu", out
    dump = tmp / "dump"
    dump.mkdir()
    invoke("config", "acl", "-o", tmp / "acl.json", "--dump-path", dump, *acl)
    invoke("sim", "run", "zoo:small_cnn", "-o", out, "--acl-config", tmp / "acl.json", "--inject", FAULT)
    return dump, out


def advisor_lines(dump: Path, sim: Path, out: Path) -> list[str]:
    output = invoke(
        "compare", "-tp", dump, "-gp", sim / "golden", "-fr", sim / "fusion_rule.json", "-o", out, "--advisor"
    )
    lines = output.splitlines()
    return lines[lines.index("advisor findings:") + 1 :]


def test_a_deleted_dump_file_of_the_faulty_op_is_named_not_the_network_inputs(tmp_path: Path) -> None:
    dump, sim = simulated(tmp_path)
    (deleted,) = dump.rglob("Add._block2_Add.*")
    deleted.unlink()
    first = advisor_lines(dump, sim, tmp_path / "out")[0]
    assert "input inconsistency" not in first
    assert first.startswith("first divergence: /block2/Add produces op #")
    assert "/block2/Add was not dumped: the error starts at or before it" in first
    # ``advise`` of the result file reads the rule from --graph, and finds the same.
    (result,) = (tmp_path / "out").glob("result_*.csv")
    again = invoke("advise", result, "--graph", sim / "fusion_rule.json", "-o", tmp_path / "again")
    assert again.splitlines()[0] == first
    assert invoke("advise", result, "-o", tmp_path / "alone").startswith("input inconsistency:")  # no rule


def test_an_input_only_dump_places_the_fault_at_the_op_that_makes_the_input(tmp_path: Path) -> None:
    dump, sim = simulated(tmp_path, "--model", "small_cnn", "--mode", "input")
    first = advisor_lines(dump, sim, tmp_path / "out")[0]
    assert "input inconsistency" not in first
    assert first.startswith("first divergence: op #8 /block2/Add - produces op #9 /block2/act/Relu input 0")
    assert "its inputs agree: the error starts at it" in first


def test_a_layer_dump_says_the_ops_before_the_first_divergence_were_not_dumped(tmp_path: Path) -> None:
    dump, sim = simulated(tmp_path, "--layer", "/head/Softmax", "--layer", "/block3/pool/AveragePool")
    first = advisor_lines(dump, sim, tmp_path / "out")[0]
    assert first.startswith("first divergence: op #0 /block3/pool/AveragePool - output 0 differs")
    assert "earlier ops were not dumped (the nearest: /block2/act/Relu): the error may start there" in first


def test_a_run_of_several_steps_names_the_op_without_a_dump_in_its_shard_line(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    invoke("sim", "run", "zoo:small_cnn", "-o", out, "--steps", "2", "--inject", FAULT)
    for deleted in (out / "npu").rglob("Add._block2_Add.*"):
        deleted.unlink()
    lines = advisor_lines(out / "npu", out, tmp_path / "out")
    assert lines[0].endswith("the first: step 0, first divergence at /block2/Add")
