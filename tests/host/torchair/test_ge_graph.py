"""GE graph dumps (dynamo_*.txt): ops, their _fx_tensor_name outputs, unknown fields, bad text."""

from __future__ import annotations

from pathlib import Path

import pytest

from dumpcmp.errors import FormatError
from dumpcmp.host.torchair.ge_graph import GeOp, fx_op_key, parse_ge_graph
from tests.host.torchair.tatree import Op, graph_text


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "dynamo_original_graph_1_rank_0_pid_1_ts_2.txt"
    path.write_text(text)
    return path


def test_ops_and_their_fx_tensor_names_are_read_past_fields_dumpcmp_does_not_model(tmp_path: Path) -> None:
    ops = [
        Op("add_1", "Add", ("add_1-aten.add.Tensor.OUTPUT.0",)),
        Op(
            "split/part",
            "SplitV",
            ("split-aten.split.Tensor.OUTPUT.0", "", "split-aten.split.Tensor.OUTPUT.2"),
        ),
        Op("trans_Cast_3", "Cast", ("",)),
    ]
    parsed = parse_ge_graph(_write(tmp_path, graph_text(ops)))
    assert parsed == (
        GeOp("add_1", "Add", ("add_1-aten.add.Tensor.OUTPUT.0",), ("x:0",)),
        GeOp(
            "split/part",
            "SplitV",
            ("split-aten.split.Tensor.OUTPUT.0", "", "split-aten.split.Tensor.OUTPUT.2"),
            ("x:0",),
        ),
        GeOp("trans_Cast_3", "Cast", ("",), ("x:0",)),
    )
    assert [op.fx_key for op in parsed] == ["add_1-aten.add.Tensor", "split-aten.split.Tensor", ""]
    assert parsed[1].dump_name == "split_part"  # as dump file names spell it


def test_nested_unknown_messages_subgraphs_and_escapes(tmp_path: Path) -> None:
    text = """
name: "m"
graph {
  name: "root"
  op {
    name: "mm"
    type: "MatMulV2"
    attr { key: "body" value { g { name: "inner" op { name: "not_an_op_of_root" type: "X" } } } }
    attr_groups { other_group_def { attr { key: "a" value { s: "\\345\\212\\240" } } } }
    output_desc {
      attr { key: "_fx_tensor_name" value { s: "mm-aten.mm.default.OUTPUT.0" } }
      attr { key: "list" value { list { i: 1 i: -2 f: 1.5e-3 val_type: VT_LIST_INT } } }
      attr_groups { attr_group_def { tensor_attr_group { origin_symbol_shape: "s0" } } }
    }
  }
}
graph {
  name: "sub_graph_0"
  op { name: "relu" type: "Relu"
       output_desc { attr { key: "_fx_tensor_name" value { s: "relu-aten.relu.default.OUTPUT.0" } } } }
}
"""
    parsed = parse_ge_graph(_write(tmp_path, text))
    assert [(op.name, op.fx_key) for op in parsed] == [
        ("mm", "mm-aten.mm.default"),
        ("relu", "relu-aten.relu.default"),
    ]


def test_a_bare_graphdef_is_one_graph(tmp_path: Path) -> None:
    parsed = parse_ge_graph(
        _write(tmp_path, graph_text([Op("mul", "Mul", ("mul-aten.mul.Tensor.OUTPUT.0",))], model=False))
    )
    assert parsed == (GeOp("mul", "Mul", ("mul-aten.mul.Tensor.OUTPUT.0",), ("x:0",)),)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('graph {\n  op {\n    name: "x"\n    type: \n  }\n}\n', ":5:3:"),  # a value is missing
        ('graph {\n  op { name: "x" }\n', ":2:"),  # cut off: where the text ends
        ('graph { op { name: "unterminated } }\n', ":1:"),
    ],
)
def test_malformed_text_is_one_line_naming_file_and_line(tmp_path: Path, text: str, where: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(FormatError) as caught:
        parse_ge_graph(path)
    message = str(caught.value)
    assert message.startswith(f"{path}{where}")
    assert "malformed GE graph dump" in message
    assert "\n" not in message


def test_an_unreadable_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read the GE graph dump"):
        parse_ge_graph(tmp_path / "missing.txt")


def test_fx_op_key_strips_only_the_trailing_output_index() -> None:
    assert fx_op_key("add_1-aten.add.Tensor.OUTPUT.0") == "add_1-aten.add.Tensor"
    assert (
        fx_op_key("getitem_3-<built-in function getitem>.OUTPUT.12")
        == "getitem_3-<built-in function getitem>"
    )
    assert fx_op_key("odd.OUTPUT.name") == "odd.OUTPUT.name"
