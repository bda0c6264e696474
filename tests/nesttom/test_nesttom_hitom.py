"""Importing Hi-ToM: its labels kept, its stories parsed, disagreements counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mindledger.errors import InputError
from nesttom import answer_chain, import_hitom, parse_hitom_question, parse_hitom_story, score

DATA = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "hi-tom" / "Hi-ToM_data.json"
)

# Hi-ToM's sample 342 (story shortened to its events): Hannah moved the eggplant to the
# blue_cupboard while Noah watched; the released label is the container before her move.
STORY_342 = """Read the following story and answer the multiple-choice question. Please provide answer without explanations.
1 Liam, Jack, Hannah, Owen and Noah entered the pantry.
2 The eggplant is in the green_envelope.
3 Liam made no movements and stayed in the pantry for 1 minute.
4 Liam exited the pantry.
5 Noah lost his gloves.
6 Jack moved the eggplant to the green_bathtub.
7 Jack exited the pantry.
8 Hannah moved the eggplant to the blue_cupboard.
9 Hannah exited the pantry.
10 Owen moved the eggplant to the green_basket.
11 Owen exited the pantry.
12 Noah moved the eggplant to the green_envelope.
13 Noah exited the pantry.
14 Liam, Jack, Hannah, Owen and Noah entered the waiting_room.
"""

# Two chapters in the same room: in Hi-ToM, agents who come back see where the corn is.
STORY_REVISIT = """1 Hannah, William and Avery entered the basement.
2 The corn is in the red_basket.
3 Hannah moved the corn to the green_bathtub.
4 Hannah exited the basement.
5 Avery moved the corn to the red_basket.
6 Avery exited the basement.
7 William exited the basement.
8 Hannah, William and Avery entered the waiting_room.
9 Hannah and William entered the basement.
10 The corn is in the red_basket.
11 Hannah exited the basement.
12 William exited the basement.
13 Hannah and William entered the waiting_room.
"""

CHOICES = "A. green_envelope, B. green_bathtub, C. blue_cupboard, D. green_basket, E. red_basket"


def record(
    story: str, question: str, answer: str, order: int, sid: int, **extra: Any
) -> dict[str, Any]:
    return {
        "prompting_type": "VP",
        "deception": False,
        "story_length": 1,
        "question_order": order,
        "sample_id": sid,
        "story": story,
        "question": question,
        "choices": CHOICES,
        "answer": answer,
        **extra,
    }


def test_parse_questions() -> None:
    assert parse_hitom_question("Where is the lettuce really?") == ([], "lettuce")
    assert parse_hitom_question("Where does Avery really think the lettuce is?") == (
        ["Avery"],
        "lettuce",
    )
    assert parse_hitom_question("Where does A think B thinks C thinks the sweet_potato is?") == (
        ["A", "B", "C"],
        "sweet_potato",
    )
    with pytest.raises(InputError):
        parse_hitom_question("Who moved it?")


def test_parse_story_into_events() -> None:
    story, communication, unknown = parse_hitom_story(STORY_342)
    assert not communication and unknown == []
    assert story.agents == ("Liam", "Jack", "Hannah", "Owen", "Noah")
    assert story.initial == {"eggplant": "green_envelope"}
    # Noah was present for every move, Hannah left after her own move to the blue_cupboard:
    # the moves both saw are Jack's (green_bathtub) and Hannah's (blue_cupboard)
    assert answer_chain(story, ["Hannah", "Noah"], "eggplant") == "blue_cupboard"
    assert answer_chain(story, [], "eggplant") == "green_envelope"
    # Liam left before any move
    assert answer_chain(story, ["Liam"], "eggplant") == "green_envelope"


def test_entry_rule_is_emulated_only_on_request() -> None:
    plain, _, _ = parse_hitom_story(STORY_REVISIT)
    ruled, _, _ = parse_hitom_story(STORY_REVISIT, entry_rule=True)
    # NestToM: Hannah left after moving the corn to the bathtub; coming back shows nothing
    assert answer_chain(plain, ["Hannah"], "corn") == "green_bathtub"
    # Hi-ToM's rule: back in the basement she sees the corn in the red_basket
    assert answer_chain(ruled, ["Hannah"], "corn") == "red_basket"


def test_import_keeps_labels_and_counts_disagreements() -> None:
    data = {
        "data": [
            record(
                STORY_342,
                "Where does Hannah think Noah thinks the eggplant is?",
                "green_bathtub",
                2,
                342,
            ),
            record(STORY_342, "Where is the eggplant really?", "green_envelope", 0, 300),
            record(
                STORY_REVISIT, "Where does Hannah really think the corn is?", "red_basket", 1, 7
            ),
            record(
                STORY_342 + "15 Owen privately told Noah that the eggplant is in the red_basket.\n",
                "Where does Noah really think the eggplant is?",
                "red_basket",
                1,
                9,
            ),
        ]
    }
    items, report = import_hitom(data)
    assert [i.truth["answer"] for i in items] == [
        "green_bathtub",
        "green_envelope",
        "red_basket",
        "red_basket",
    ]
    assert {i.family for i in items} == {"hitom"}
    assert [i.meta["depth"] for i in items] == ["R2", "R0", "R1", "R1"]
    assert items[0].answer == {
        "kind": "choice",
        "choices": [
            "blue_cupboard",
            "green_basket",
            "green_bathtub",
            "green_envelope",
            "red_basket",
        ],
    }
    assert items[0].truth["nesttom_answer"] == "blue_cupboard" and items[0].truth["agrees"] is False
    assert items[3].truth["communication"] is True and items[3].truth["agrees"] is None
    # the three stories without communication are checked; two labels disagree, one of them
    # (the revisit) because of the entry rule
    assert report["checked_records"] == 3
    assert report["disagreements"] == 2
    assert report["explained_by_entry_rule"] == 1
    assert report["disagreeing_sample_ids"] == [7, 342]
    # scoring uses Hi-ToM's label
    assert score(items[0], "green_bathtub").correct and not score(items[0], "blue_cupboard").correct
    assert items[0].prompt.endswith(
        "Answer with the name of one container: " + ", ".join(items[0].answer["choices"]) + "."
    )


def test_bad_data() -> None:
    with pytest.raises(InputError, match="'data' list"):
        import_hitom({"records": []})
    with pytest.raises(InputError, match=r"data\[0\]"):
        import_hitom({"data": [{"story": "x"}]})


@pytest.mark.skipif(not DATA.exists(), reason="the shared Hi-ToM data is not here")
def test_public_release_matches_notes() -> None:
    items, report = import_hitom(json.loads(DATA.read_text(encoding="utf-8")))
    assert report["records"] == len(items) == 1200
    assert report["checked_records"] == 600 and report["unrecognised_lines"] == 0
    # NOTES.md: against Hi-ToM's current generator, 17, 24 and 31 of the 60 VP items at orders
    # 2, 3 and 4 differ. NestToM semantics plus the emulated entry rule reproduce the current
    # generator, so the disagreements the rule does not explain are exactly those.
    unexplained: dict[int, int] = {}
    for item in items:
        t = item.truth
        rule_explains = t["entry_rule_answer"] == t["answer"]
        if item.meta["prompting_type"] == "VP" and t["agrees"] is False and not rule_explains:
            unexplained[item.meta["depth_n"]] = unexplained.get(item.meta["depth_n"], 0) + 1
    assert unexplained == {2: 17, 3: 24, 4: 31}
