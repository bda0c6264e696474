"""The optional extraction judge: its prompt, schema, and the quote-grounding
check — pure functions; the harness makes the model call.

The judge sees the rules of the game and the raw chain of thought, nothing else (not the
opponent description, level, target, history, tool calls or submitted action), and copies
values out of the text, each with a verbatim quote. :func:`read_extraction` checks every quote
for exact substring membership in the chain of thought after whitespace normalisation and turns
the extraction into the ``stated_belief`` and ``chain`` arguments of
:func:`games._scoring.score_reply` (or, with :meth:`JudgeReading.answer`, into one answer
mapping that the family's scorer reads whole). :func:`parse_judge_reply` reads the judge's
reply text into the extraction.

The paper releases its full schemas only with its code; :data:`EXTRACTION_SCHEMAS` is built
from the fields it lists and its worked example.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mindledger.errors import InputError
from mindledger.items import Item

__all__ = [
    "EXTRACTION_SCHEMAS",
    "JUDGE_SYSTEM_PROMPT",
    "MENTALIZING_FIELDS",
    "JudgeReading",
    "judge_messages",
    "normalise_whitespace",
    "parse_judge_reply",
    "quote_grounded",
    "read_extraction",
]

MENTALIZING_FIELDS: tuple[str, ...] = ("opponent_models_me", "spurious_recursion")
"""The explicit-strategic-mentalizing flag, as each condition's schema names it (recursive,
inductive): the one annotation the judge decides rather than copies (Appendix D)."""

JUDGE_SYSTEM_PROMPT = (
    "You are an annotation judge. You are given the rules of a strategic game and a "
    "Chain-of-Thought (CoT) transcript produced by a language model playing that game. Your "
    "task is EXTRACTION ONLY.\n"
    "Rules:\n"
    "- Extract only what is explicitly stated in the CoT text. Do not infer, guess, fill gaps, "
    "verify correctness, or assign Level-K labels.\n"
    "- Every extracted value MUST include a verbatim \u2018quote\u2019 copied from the CoT.\n"
    "- If information is absent, use null (and empty lists for list fields).\n"
    "- Report numbers exactly as stated; preserve order of appearance.\n"
    "- Output ONLY a single valid JSON object matching the requested schema. No markdown "
    "fences, no commentary."
)

_NUM = {"type": ["number", "null"]}
_STR = {"type": ["string", "null"]}
_BOOL = {"type": "boolean"}


def _quoted(props: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, schema in props.items():
        out[name] = schema
        out[name + "_quote"] = _STR
    return out


_BELIEF = {
    **_quoted({"final_belief_point": _NUM}),
    "final_belief_ambiguous": _BOOL,
    "final_belief_candidates": {"type": "array", "items": {"type": "number"}},
    "belief_is_distribution": _BOOL,
    "belief_support": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "likelihood_phrase": _STR,
                "p": _NUM,
                "quote": {"type": "string"},
            },
            "required": ["value", "quote"],
        },
    },
}
_DECISION = {
    **_quoted({"claimed_br": _NUM}),
    "payoff_computations": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"action": {"type": "number"}, "payoff": _NUM,
                           "quote": {"type": "string"}},
            "required": ["action", "quote"],
        },
    },
}

EXTRACTION_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "recursive": {
        "type": "object",
        "properties": {
            "anchor_present": _BOOL,
            **_quoted({"anchor_value": _NUM}),
            "anchor_concept": {
                "type": ["string", "null"],
                "enum": ["base_payoff_maximizer", "maximin", "other", None],
            },
            "chain": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "number"},
                        "attributed_to": {
                            "enum": ["opponent", "opponent_model_of_self", "generic_player",
                                     "unclear"]
                        },
                        "quote": {"type": "string"},
                    },
                    "required": ["value", "attributed_to", "quote"],
                },
            },
            "iteration_verbalized": {"enum": ["YES", "NO", "STOP_RULE_STATED"]},
            **_BELIEF,
            **_DECISION,
            **_quoted({"opponent_models_me": _BOOL}),
        },
        "required": ["chain", "final_belief_point", "belief_is_distribution"],
    },
    "inductive": {
        "type": "object",
        "properties": {
            **_quoted({"history_referenced": _BOOL}),
            "cited_statistics": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"statistic": {"type": "string"}, "value": _NUM,
                                   "quote": {"type": "string"}},
                    "required": ["statistic", "quote"],
                },
            },
            **_quoted({"noise_acknowledged": _BOOL}),
            **_quoted({"claimed_n": _NUM}),
            **_BELIEF,
            **_DECISION,
            **_quoted({"spurious_recursion": _BOOL}),
        },
        "required": ["final_belief_point", "belief_is_distribution"],
    },
}
"""Extraction schemas per condition (the Table 8 fields; ``*_quote`` carries each quote)."""


def judge_messages(item: Item, cot: str) -> list[dict[str, str]]:
    """The judge's chat messages for one trial: its system prompt, then the rules of the game,
    the chain of thought and the schema. Nothing else from the trial is shown."""
    condition = str(item.meta.get("condition", "recursive"))
    rules = item.prompt.split("\n\n", 1)[0]
    schema = json.dumps(EXTRACTION_SCHEMAS[condition], ensure_ascii=False)
    user = (
        f"Rules of the game:\n{rules}\n\n"
        f"Chain-of-Thought transcript:\n{cot}\n\n"
        f"Return one JSON object matching this schema:\n{schema}"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": user}]


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_judge_reply(text: str) -> dict[str, Any]:
    """The extraction in a judge's reply: one JSON object. A Markdown fence around it, or text
    before the first ``{`` and after the last ``}``, is tolerated (the prompt forbids both);
    anything else raises :class:`~mindledger.errors.InputError`."""
    body = _FENCE.sub("", text.strip())
    candidates = [body]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise InputError("the judge's reply holds no JSON object", where="judge")


_WS = re.compile(r"\s+")


def normalise_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def quote_grounded(quote: Any, cot: str) -> bool:
    """Whether ``quote`` is a non-empty substring of ``cot`` after whitespace normalisation."""
    if not isinstance(quote, str):
        return False
    q = normalise_whitespace(quote)
    return bool(q) and q in normalise_whitespace(cot)


@dataclass(frozen=True)
class JudgeReading:
    """What the scorer takes from a judge's extraction.

    Fields:
        stated_belief: the ``stated_belief`` argument of ``score_reply`` (None when absent).
        chain: the chain values in order (the ``chain`` argument).
        grounding: ``{field: grounded?}`` for every extracted value that carries a quote
            (chain entries as ``chain[i]``, support entries as ``belief_support[i]``).
        dropped: fields left out because their quote was not grounded (only with
            ``require_grounding``).
        mentalizing: the explicit-strategic-mentalizing flag (:data:`MENTALIZING_FIELDS`),
            None when the extraction has none.
    """

    stated_belief: dict[str, Any] | None
    chain: list[Any]
    grounding: dict[str, bool] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    mentalizing: bool | None = None

    @property
    def ungrounded(self) -> int:
        """How many quoted values had a quote not found in the chain of thought."""
        return sum(1 for ok in self.grounding.values() if not ok)

    def answer(self, action: Any) -> dict[str, Any]:
        """The submitted ``action`` with this reading's belief, chain and mentalizing flag, as
        one answer mapping for :func:`games._scoring.score` (fields absent when unknown)."""
        if isinstance(action, Mapping):
            action = action.get("action", action.get("answer"))
        out: dict[str, Any] = {"action": action, **(self.stated_belief or {})}
        if self.chain:
            out["chain"] = list(self.chain)
        if self.mentalizing is not None:
            out["mentalizing"] = self.mentalizing
        return out

    @property
    def grounded_fraction(self) -> float | None:
        """Share of quoted values whose quote was found in the chain of thought."""
        if not self.grounding:
            return None
        return sum(self.grounding.values()) / len(self.grounding)


def read_extraction(
    extraction: Mapping[str, Any], cot: str, *, require_grounding: bool = False
) -> JudgeReading:
    """Check the quotes of an extraction and return the belief and chain for scoring.

    By default (as in the paper) the grounding outcome is recorded and every value is used;
    with ``require_grounding`` values whose quote is not in the transcript are dropped (and
    listed in ``dropped``; :attr:`JudgeReading.ungrounded` counts them either way). A stated
    point belief without any quote counts as ungrounded, since the schema requires one.
    """
    grounding: dict[str, bool] = {}
    dropped: list[str] = []
    for key, value in extraction.items():
        if key.endswith("_quote"):
            base = key[: -len("_quote")]
            if extraction.get(base) is not None:
                grounding[base] = quote_grounded(value, cot)
    if extraction.get("final_belief_point") is not None:
        grounding.setdefault("final_belief_point", False)

    def keep(name: str) -> bool:
        ok = grounding.get(name, True)
        if require_grounding and not ok:
            dropped.append(name)
            return False
        return True

    chain: list[Any] = []
    raw_chain = extraction.get("chain") or []
    if isinstance(raw_chain, Sequence) and not isinstance(raw_chain, str):
        for i, entry in enumerate(raw_chain):
            if not isinstance(entry, Mapping):
                continue
            name = f"chain[{i}]"
            grounding[name] = quote_grounded(entry.get("quote"), cot)
            if keep(name):
                chain.append(entry.get("value"))

    belief: dict[str, Any] = {}
    if extraction.get("final_belief_point") is not None and keep("final_belief_point"):
        belief["final_belief_point"] = extraction["final_belief_point"]
    if extraction.get("final_belief_ambiguous"):
        belief["final_belief_ambiguous"] = True
    support = extraction.get("belief_support") or []
    kept_support: list[Any] = []
    if isinstance(support, Sequence) and not isinstance(support, str):
        for i, entry in enumerate(support):
            if not isinstance(entry, Mapping):
                continue
            name = f"belief_support[{i}]"
            grounding[name] = quote_grounded(entry.get("quote"), cot)
            if keep(name):
                kept_support.append(entry)
    if kept_support:
        belief["belief_support"] = kept_support
    mentalizing: bool | None = None
    for name in MENTALIZING_FIELDS:
        flag = extraction.get(name)
        if isinstance(flag, bool):
            # a "yes" needs its quote; a "no" has nothing to quote
            mentalizing = flag if not flag or keep(name) else None
            break
    return JudgeReading(
        stated_belief=belief or None,
        chain=chain,
        grounding=grounding,
        dropped=tuple(dropped),
        mentalizing=mentalizing,
    )
