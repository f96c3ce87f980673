"""The rule files of a run, read into matchers; light to import (no numpy)."""

from __future__ import annotations

from dataclasses import dataclass

from dumpcmp.errors import DumpcmpError, MatchError
from dumpcmp.host.fusion_rules import FusionRules, load_rules
from dumpcmp.host.matcher import Matcher, shared_golden_name_reason
from dumpcmp.host.request import CompareRequest
from dumpcmp.proto.names import sanitize_dump_name
from dumpcmp.proto.walker import GroupKey


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rule file(s) of a run: one, or a directory of them picked per model name."""

    matchers: dict[str, Matcher]
    default: Matcher | None

    @property
    def present(self) -> bool:
        return self.default is not None or bool(self.matchers)

    @classmethod
    def load(cls, request: CompareRequest) -> RuleSet:
        if request.fusion_rule is None:
            return cls({}, None)
        close = load_rules(request.close_fusion_rule) if request.close_fusion_rule else None
        quant = load_rules(request.quant_fusion_rule) if request.quant_fusion_rule else None
        if request.fusion_rule.is_dir():
            files = sorted(request.fusion_rule.glob("*.json"))
            if not files:
                raise DumpcmpError(f"fusion rule directory {request.fusion_rule} holds no .json files")
            matchers: dict[str, Matcher] = {}
            for path in files:
                rules = load_rules(path)
                matcher = _matcher(rules, close, quant)
                for name in {rules.name, path.stem, *rules.graph_names}:
                    if name:
                        matchers[sanitize_dump_name(name)] = matcher
            return cls(matchers, None)
        return cls({}, _matcher(load_rules(request.fusion_rule), close, quant))

    def shared_golden_names(self) -> dict[str, str]:
        """Golden file stems that several ops of the rule files write, with why their tensors
        are not compared (see ``Matcher.refs_for``)."""
        found: dict[str, str] = {}
        for matcher in (self.default, *self.matchers.values()):
            if matcher is not None:
                found.update(
                    (stem, shared_golden_name_reason(stem, names))
                    for stem, names in matcher.shared_golden_names.items()
                )
        return found

    def matcher_for(self, key: GroupKey) -> Matcher | None:
        if self.default is not None or not self.matchers:
            return self.default
        found = self.matchers.get(key.model)
        if found is None:
            raise MatchError(
                f"no rule file in the -fr directory matches model {key.model!r} "
                f"(known: {', '.join(sorted(self.matchers))})"
            )
        return found


def _matcher(rules: FusionRules, close: FusionRules | None, quant: FusionRules | None) -> Matcher:
    if close is not None:
        return Matcher.with_close_rules(rules, close)
    if quant is not None:
        return Matcher.with_quant_rules(rules, quant)
    return Matcher(rules)
