"""The hunt's planner driven over the simulated NPU: each capture it plans is carried out by a
``sim run`` with that capture's acl.json, and its files fed back to ``next_step``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dumpcmp.host.hunt import Capture, HuntLimits, full_capture_bytes, next_step
from dumpcmp.host.hunt.records import ISOLATED, NO_DIVERGENCE, UNDECIDED
from tests.e2e.agent_host_kit import dumpcmp
from tests.host.hunt.simhunt import SimHunt, advisor_culprit, captured_bytes

MakeHunt = Callable[..., SimHunt]

CNN = "zoo:small_cnn"
BLOCK = "zoo:transformer_block"
# The fused conv+bn+relu op the simulated compiler makes of block1.pw's three ONNX ops.
PW = "/block1.pw/conv/Conv/block1.pw/act/Relu"


def test_pass_one_is_statistics_of_every_op(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(CNN)
    first = hunt.first_capture()
    assert (first.index, first.data, first.mode, first.layers) == (1, "stats", "output", ())
    assert "L2norm" in first.stats
    assert hunt.rules is not None and hunt.golden is not None
    again = next_step(hunt.rules, hunt.golden, [], HuntLimits())
    assert again == first  # deterministic in its inputs


def test_full_capture_estimate_is_close_to_the_real_dump(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(CNN)
    hunt.first_capture()
    assert hunt.rules is not None and hunt.full is not None
    real = captured_bytes([hunt.full])
    assert 0.9 * real <= full_capture_bytes(hunt.rules) <= 1.1 * real


def test_fault_free_run_stops_after_pass_one(sim_hunt: MakeHunt) -> None:
    verdict = sim_hunt(CNN).hunt()
    assert (verdict.kind, verdict.culprit, verdict.passes) == (NO_DIVERGENCE, "", 1)
    assert any("stay within the run's noise" in line for line in verdict.evidence)
    assert any("model output 0" in line and "agrees" in line for line in verdict.evidence)


def test_bias_found_in_two_passes_with_its_numbers(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(CNN, "/block1.pw/conv/Conv=bias:0.5")
    verdict = hunt.hunt()
    assert (verdict.kind, verdict.culprit, verdict.passes) == (ISOLATED, PW, 2)
    assert verdict.originals == (
        "/block1.pw/conv/Conv",
        "/block1.pw/bn/BatchNormalization",
        "/block1.pw/act/Relu",
    )
    second = hunt.passes[1].capture
    assert (second.data, second.mode) == ("tensor", "all") and PW in second.layers
    text = "\n".join(verdict.evidence)
    assert "the run's noise before it" in text  # pass 1: the jump against the noise
    assert "inputs agree (input 0 CosineSimilarity" in text and "outputs do not (output 0" in text


def test_error_seen_downstream_is_followed_upstream(sim_hunt: MakeHunt) -> None:
    """A layout fault leaves every statistic of its op as it was: pass 1 sees it only where it
    has mixed into later ops, whose window shows a differing input; the hunt walks upstream."""
    hunt = sim_hunt(CNN, "/block1.pw/conv/Conv=layout")
    verdict = hunt.hunt()
    assert (verdict.kind, verdict.culprit) == (ISOLATED, PW)
    assert verdict.passes >= 3
    assert PW not in hunt.passes[1].capture.layers  # the first window was downstream of it


def test_nan_is_found_where_it_appears(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(CNN, "/block2/Add=nan:0.01")
    verdict = hunt.hunt()
    assert verdict.kind == ISOLATED and verdict.culprit == "/block2/Add"
    assert verdict.passes == 2
    assert "NaN/inf on the target side only" in verdict.evidence[0]


def test_fault_statistics_cannot_see_is_bisected_from_the_outputs(sim_hunt: MakeHunt) -> None:
    """Logits permuted: the classifier's statistics (and the softmax's after it) are those of the
    golden, but the model's output disagrees. Probes (outputs only) bisect the ops from the
    output upstream, a window ends it."""
    hunt = sim_hunt(CNN, "/head/fc/Gemm=layout")
    full = hunt.full_capture()
    verdict = hunt.hunt()
    assert "stay within the run's noise" in verdict.evidence[0]
    assert "model output 0 (trans_Cast_5) disagrees: CosineSimilarity" in verdict.evidence[1]
    modes = [p.capture.mode for p in hunt.passes]
    assert modes[0] == "output" and modes[1] == "output" and modes[-1] == "all"  # probes, then a window
    assert all(p.capture.data == "tensor" for p in hunt.passes[1:])
    assert hunt.rules is not None and hunt.golden is not None
    assert (verdict.kind, verdict.culprit) == (ISOLATED, advisor_culprit(hunt.rules, hunt.golden, full))
    assert verdict.culprit == "/head/fc/Gemm"


def test_error_within_thresholds_at_its_op_is_followed_to_where_it_crosses_them(sim_hunt: MakeHunt) -> None:
    """A 0.1 bias after the stem's pooling moves its statistics, but its own output stays within
    the thresholds; the depthwise conv after it crosses them, and the full capture's advisor
    names that op: the hunt probes the ops after the suspect in order and names it too."""
    hunt = sim_hunt(CNN, "/stem/pool/MaxPool=bias:0.1")
    full = hunt.full_capture()
    assert hunt.rules is not None and hunt.golden is not None
    expected = advisor_culprit(hunt.rules, hunt.golden, full)
    assert expected == "/block1.dw/conv/Conv/block1.dw/act/Relu"
    verdict = hunt.hunt()
    assert (verdict.kind, verdict.culprit) == (ISOLATED, expected)
    assert "/stem/pool/MaxPool" in hunt.passes[1].capture.layers  # the suspect's window first
    assert "agrees in full tensors" in "\n".join(verdict.evidence)
    assert hunt.passes[2].capture.mode == "output" and expected in hunt.passes[2].capture.layers


def test_max_passes_gives_undecided_with_what_is_known(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(CNN, "/block1.pw/conv/Conv=layout")
    verdict = hunt.hunt(HuntLimits(max_passes=2))
    assert verdict.kind == UNDECIDED and verdict.passes == 2 and len(hunt.passes) == 2
    assert verdict.culprit  # the earliest op known to disagree
    assert "starts there or upstream of it (no pass left after 2)" in verdict.evidence[-1]


def test_one_pass_names_the_suspect_of_the_statistics_not_the_output_it_reaches(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(CNN, "/block2/Add=bias:0.5")
    verdict = hunt.hunt(HuntLimits(max_passes=1))
    assert verdict.kind == UNDECIDED and verdict.culprit == "/block2/Add", verdict
    assert "statistics leave the golden at /block2/Add, not captured in full" in verdict.evidence[-1]


def test_each_pass_stays_within_the_byte_bound(sim_hunt: MakeHunt) -> None:
    hunt = sim_hunt(BLOCK, "/mlp.fc2/MatMul=bias:0.3")
    limits = HuntLimits(pass_bytes=12_000)
    verdict = hunt.hunt(limits)
    assert verdict.kind == ISOLATED
    for done in hunt.passes[1:]:
        assert done.capture.expected_bytes <= limits.pass_bytes
        assert captured_bytes([done]) <= limits.pass_bytes


@pytest.mark.parametrize(
    ("model", "fault"),
    [
        (CNN, "/stem/conv/Conv=bias:0.3"),
        (CNN, "/block2.gconv/conv/Conv=overflow"),
        (CNN, "/block3/conv/Conv=noise:0.2"),
        (BLOCK, "/attn.k_proj/MatMul=bias:0.5"),
        (BLOCK, "/attn/Softmax=nan:0.05"),
        (BLOCK, "/mlp.fc1/MatMul=overflow"),
    ],
)
def test_culprit_is_the_full_capture_advisors(sim_hunt: MakeHunt, model: str, fault: str) -> None:
    """What bench/hunt_planner.py measures: the hunt names the op the advisor names as the first
    divergence of a full capture (dump_mode all, every op) of the same run."""
    hunt = sim_hunt(model, fault)
    full = hunt.full_capture()
    assert hunt.rules is not None and hunt.golden is not None
    expected = advisor_culprit(hunt.rules, hunt.golden, full)
    assert expected
    verdict = hunt.hunt()
    assert (verdict.kind, verdict.culprit) == (ISOLATED, expected)
    assert captured_bytes(hunt.passes) < captured_bytes([full])


def test_capture_is_frozen_and_carries_the_interface_fields() -> None:
    capture = Capture(2, "tensor", "all", ("a",), "why", 10)
    assert capture.stats == ()
    with pytest.raises(AttributeError):
        capture.index = 3  # type: ignore[misc]


def test_pass_one_suspect_is_where_a_compare_of_its_dump_says_statistics_move_away(
    sim_hunt: MakeHunt, tmp_path: Path
) -> None:
    """One statistics detector (``verdict.statistics_drifts``) for the hunt's pass 1, the compare
    summary and the advisor: they name the same op of the same statistics dump."""
    hunt = sim_hunt(CNN, "/block2/Add=bias:0.5")
    verdict = hunt.hunt(HuntLimits(max_passes=1))
    assert verdict.culprit == "/block2/Add"
    full = hunt.work / "full"
    done = dumpcmp("compare", "-tp", hunt.work / "pass1" / "npu", "-gp", full / "golden",
                   "-fr", full / "fusion_rule.json", "-o", tmp_path / "out", "--advisor")  # fmt: skip
    assert done.code == 0, done.output
    (moved,) = (line for line in done.output.splitlines() if line.startswith("statistics move away"))
    assert " Add /block2/Add (/block2/Add:output:0): " in moved
    (first,) = (line for line in done.output.splitlines() if line.startswith("first divergence:"))
    assert " /block2/Add " in first and "its statistics move away from the golden's here" in first
