"""The NestToM-P generator: random stories, adversarially selected chains.

One story per item cell ``(depth, belief type, mechanism, length, agents)``:

1. A story of exactly ``length`` events is drawn for the mechanism: agents leave and enter,
   the target object is moved, distractor objects are moved, and, by mechanism, absent agents
   secretly watch moves (``secret-observation``), private messages carry lies (``lie``), arrive
   garbled (``garble``), or are later corrected by a second message to the same recipient
   (``stale-then-corrected``). An ``absence`` story has no secret watchers and no messages.
   Where the target goes, and what a lie or a garbled message says, is a container it has never
   been in nor been said to be in while there is one, else one of the two used longest ago where
   nobody believes it is now: so beliefs frozen at different points of the story name different
   containers. Stories asked at depth 2 and beyond (both belief types alike, so that the story's
   shape does not give the belief type away) are "staircases": leaves are likelier, wait for
   the target to move since the last one, and people seldom come back — nested absences, which
   is what keeps deep prefixes apart.
2. The belief of every chain is tabulated in one pass (a chain's belief depends only on its first
   agent and the set of the others), and a chain of the requested depth is drawn uniformly among
   those that qualify:

   - **false belief**: the answer differs from reality and from the answer of every shallower
     prefix chain (the adversarial filter); for R2-self also from "your" own belief;
   - **true belief** (control): the answer equals reality.

   Among qualifying chains, and over further stories (``PREFER_DRAWS``), the generator prefers,
   in this order: (a) **identifiable lures** — the wrong answers the error coder
   (:mod:`nesttom._scoring`) names differ: reality (``reality_leak``), the projection (the
   outermost agent's own belief, the length-1 prefix: ``projection``) and the truncations (the
   prefixes of length 2 … n−1: ``truncation:k``) are pairwise distinct, and (false belief) none
   is the answer; truncations of different depths may coincide (the type is still known). For a
   true-belief control, whose answer *is* reality, a wrong truncation answer must not also be
   the projection's. ``lures="require"`` (what the baseline blocks use) takes no chain without
   them; ``"prefer"`` (the default) falls back when ``PREFER_DRAWS`` more stories find none;
   (b) a **decisive** mechanism (false belief, where :func:`decisive_feasible`): neutralising it
   changes the answer (secret watchers not watching, or watching openly; messages truthful;
   delivery ungarbled; no corrections); (c) for R2-self, "your" own belief apart from reality
   and the projection, so that an own-belief leak is not also a reality leak or a projection.
   ``truth["decisive"]`` records (b); ``meta["causes"]`` lists every mechanism whose
   neutralisation changes the answer (``absence`` included: absent agents seeing every move).

   R0 asks for reality: its "false" cell is a story in which some agent's own belief differs
   from reality, its "true" cell one in which every agent's own belief is right.
   If no chain qualifies, a new story is drawn (from the same seeded stream).
3. The ground truth of the chosen question is recomputed by the reference semantics
   (:func:`nesttom._semantics.chain_answers`) from the finished :class:`~nesttom._model.Story`.

What stays ambiguous, and is listed in ``meta["ambiguous"]``
(:func:`nesttom._scoring.ambiguities`): truncation to depth 0 *is* reality and to depth 1 *is*
the projection, so a reasoner capped at depth 0 or 1 is coded ``reality_leak`` or
``projection`` by definition; on a yes/no judgment a lure matches whichever answer judging by it
gives, so a "yes" judgment answered "no" matches every lure at once (two answers for three
lures); under ``"prefer"``, items where no identifiable chain was found; on R2-self items, your
own belief when it is reality or the projection (rare under ``"require"``) or, on true-belief
controls, the answer itself; companion questions inherit their main question's lures, so an R0
or R1 companion of an R2-self story may list ``reality_leak=own_belief``. When lures must be
identifiable, a message seldom decides an R3-loop answer or a corrected R2-self one (a message
sets ``[a]``, ``[a, b]`` and ``[a, b, a]`` alike, and three later staircase steps must pull them
apart), so in those cells ``truth["decisive"]`` is often False.

R3-loop chains ``[a, b, a]`` differ from their prefix ``[a, b]`` only through a move that ``a``
watched in secret while ``b`` was present (the two chains see the same messages and otherwise the
same moves), so R3-loop stories always allow secret watchers, and the R3-loop × absence cell is
infeasible (it would be the secret-observation cell). ``meta["features"]`` lists every mechanism
present in a story.

Item metadata: ``block`` (the suite block, or None), ``role`` (``main``, ``prefix:k``,
``behaviour``, ``judgment``), ``depth``, ``depth_n``, ``reality_check`` (R0), ``r2_self``,
``belief``, ``mechanism`` (the cell's), ``features``, ``causes``, ``length`` (events),
``agents``, ``form`` (surface form), ``question``, ``selection`` (``adversarial``, ``control``,
``companion``), ``story_id``, ``own_belief`` (R2-self: your own belief, the own-belief-leak
answer; else None), ``ambiguous``, and for companions ``companion_of`` (the main item's id).

Where each step lives: the design space and its cells in :mod:`nesttom._design`, drawing a
story (step 1) in :mod:`nesttom._drafts`, choosing its chain (step 2) in
:mod:`nesttom._selection` over the belief tables of :mod:`nesttom._tables`; this module draws
stories until one qualifies and makes the items.

Randomness: one ``numpy.random.Generator`` per item, seeded with
``(seed, stream, index, cell)``; the surface form is not in the seed, so the same index in another
form tells the same story. Same seed and parameters, byte-identical items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindledger.canonical import canonical_json, content_hash
from mindledger.items import Item
from nesttom._design import (
    APPLIED_DEPTHS,
    BELIEF_TYPES,
    DEPTH_N,
    DEPTHS,
    MECHANISMS,
    Cell,
    Design,
    cell_of,
    check_cell,
    decisive_feasible,
    depth_label,
    feasible,
)
from nesttom._drafts import Draft, draw_draft, name_draft
from nesttom._model import Story
from nesttom._render import (
    FORMS,
    YOU,
    behaviour_question,
    belief_question,
    judgment_question,
    render_prompt,
)
from nesttom._scoring import ambiguities
from nesttom._selection import Rank, causes_of, choose_chain
from nesttom._semantics import chain_answers

__all__ = [
    "APPLIED_DEPTHS",
    "BELIEF_TYPES",
    "DEPTHS",
    "DEPTH_N",
    "FORMS",
    "GENERATOR",
    "LURES",
    "MECHANISMS",
    "VERSION",
    "Design",
    "Drawn",
    "cell_of",
    "decisive_feasible",
    "depth_label",
    "feasible",
    "generate_items",
    "generate_story",
    "regenerate",
]

GENERATOR = "nesttom"
VERSION = "1.1.0"

MAX_ATTEMPTS = 20000  # stories drawn per item before giving up (a bug: every cell is feasible)
# stories drawn, once one qualifies, looking for one that meets every preference (by lures mode)
PREFER_DRAWS = {"prefer": 4, "require": 160}
LURES = ("prefer", "require")
REQUIRE_MIN_LENGTH = 6  # events a story needs for identifiable lures at depth 2 and beyond


@dataclass(frozen=True)
class Drawn:
    """A generated story with its chosen question (before rendering).

    Fields: the story, the chain and target object, the cell, the mechanism's decisiveness for
    the chain (None for absence and R0), the features present, ``alt``: a uniform float used
    to pick the container looked in by a "no" judgment question of a true-belief story, and
    ``causes``: for each prefix of the chain (element k: its first k agents), the mechanisms
    whose neutralisation changes that prefix's answer (see :func:`generate_story`).
    """

    story: Story
    chain: tuple[str, ...]
    object: str
    depth: str
    belief: str
    mechanism: str
    decisive: bool | None
    features: tuple[str, ...]
    alt: float
    causes: tuple[tuple[str, ...], ...] = ()


def generate_story(
    rng: np.random.Generator,
    *,
    depth: str,
    belief: str,
    mechanism: str,
    length: int = 12,
    agents: int = 4,
    lures: str = "prefer",
) -> Drawn:
    """Draw one story of ``length`` events with ``agents`` agents and a chain of ``depth``
    whose belief is ``belief`` ("false": adversarially filtered; "true": equals reality).

    ``lures`` says what to do about chains whose wrong answers the error coder could not tell
    apart (see the module docstring): ``"prefer"`` avoids them when it can, ``"require"``
    never takes one (and at depth 2 and beyond needs ``REQUIRE_MIN_LENGTH`` events or more: a
    ValueError otherwise). Once a story qualifies, up to ``PREFER_DRAWS[lures]`` more are drawn
    looking for one that meets every preference (identifiable lures, a decisive mechanism, and
    under ``"require"`` your own belief apart from the lures), and the best found is kept.

    ``Drawn.causes`` lists, for each prefix of the chosen chain, the mechanisms whose
    neutralisation changes its answer: ``absence`` (absent agents see every move; secret
    watchers stay secret), ``secret-observation`` (the watchers do not watch, or watch openly)
    and the story's message mechanism (truthful, ungarbled, uncorrected messages).
    """
    check_cell(depth, belief, mechanism, length, agents)
    if lures not in LURES:
        raise ValueError(f"unknown lures {lures!r}; expected one of {', '.join(LURES)}")
    if lures == "require" and DEPTH_N[depth] >= 2 and length < REQUIRE_MIN_LENGTH:
        raise ValueError(
            f"identifiable lures at {depth} need stories of at least {REQUIRE_MIN_LENGTH} "
            f"events (three places and the moves between the departures), got {length}"
        )
    hidden_ok = mechanism == "secret-observation" or depth == "R3-loop"
    stairs = DEPTH_N[depth] >= 2
    require = lures == "require"
    budget = PREFER_DRAWS[lures]
    best: tuple[Draft, tuple[int, ...]] | None = None
    best_rank: Rank | None = None
    extra = 0
    for _ in range(MAX_ATTEMPTS):
        draft = draw_draft(rng, agents, length, mechanism, hidden_ok, depth == "R2-self", stairs)
        if best is not None:
            extra += 1
        if draft is not None:
            chosen = choose_chain(
                float(rng.random()), draft, agents, depth, belief, mechanism, require
            )
            if chosen is not None:
                idx, rank = chosen
                if best_rank is None or rank > best_rank:
                    best, best_rank = (draft, idx), rank
                    if all(rank) or (rank[0] and rank[1] and not require):
                        break  # (drawing on for your own belief only when lures are required)
        if best is not None and extra >= budget:
            break
    if best is None:
        raise RuntimeError(
            f"no {belief}-belief {depth} story found for {mechanism}, {length} events, "
            f"{agents} agents"
        )
    draft, idx = best
    causes = causes_of(draft, agents, mechanism, idx)
    decisive = None if mechanism == "absence" or not idx else mechanism in causes[len(idx)]
    story = name_draft(draft, rng, agents)
    return Drawn(
        story=story,
        chain=tuple(story.agents[i] for i in idx),
        object=story.objects[0][0],
        depth=depth,
        belief=belief,
        mechanism=mechanism,
        decisive=decisive,
        features=draft.features,
        alt=float(rng.random()),
        causes=causes,
    )


# ---------------------------------------------------------------------------------------------
# items


@dataclass(frozen=True)
class _KeptStory:
    """What every item of one kept story shares: the drawn story, its JSON form
    (``truth["story"]``) and content hash (``meta["story_id"]``), the seed and surface form."""

    drawn: Drawn
    seed: int
    form: str
    story_dict: dict[str, Any]
    story_id: str


def _item(
    kept: _KeptStory,
    *,
    params: dict[str, Any],
    chain: tuple[str, ...],
    question: str,
    selection: str,
    looked: str | None = None,
    main_id: str | None = None,
) -> Item:
    """One item on a kept story: the ``question`` (belief, behaviour or judgment, the last
    about the container ``looked`` in) about ``chain``, its truth re-derived from the story."""
    drawn = kept.drawn
    story = drawn.story
    answers = chain_answers(story, chain, drawn.object)
    n = len(chain)
    belief_answer = answers[n]
    reality = answers[0]
    depth = depth_label(chain)
    choices = story.containers()
    truth: dict[str, Any] = {
        "answer": belief_answer,
        "reality": reality,
        "chain": list(chain),
        "object": drawn.object,
        "prefix_answers": answers[1:n],
        "projection": answers[1] if n else None,
        "initial": story.initial[drawn.object],
        "decisive": drawn.decisive if chain == drawn.chain else None,
        "story": kept.story_dict,
    }
    if YOU in story.agents:
        truth["self_belief"] = chain_answers(story, (YOU,), drawn.object)[1]
    if question == "belief":
        text = belief_question(chain, drawn.object)
        answer_spec: dict[str, Any] = {"kind": "choice", "choices": choices}
        prompt_choices: list[str] | None = choices
    elif question == "behaviour":
        text = behaviour_question(chain, drawn.object)
        answer_spec = {"kind": "choice", "choices": choices}
        prompt_choices = choices
    else:
        assert looked is not None
        text = judgment_question(chain, drawn.object, looked)
        truth["belief"] = belief_answer
        truth["looked"] = looked
        truth["answer"] = "yes" if looked == belief_answer else "no"
        answer_spec = {"kind": "yesno"}
        prompt_choices = None
    false_belief = belief_answer != reality
    causes = list(drawn.causes[n]) if false_belief and n < len(drawn.causes) else []
    if depth == "R0" and chain == drawn.chain:
        false_belief = drawn.belief == "false"
    meta: dict[str, Any] = {
        "block": params.get("block"),
        "role": params.get("role", "main"),
        "depth": depth,
        "depth_n": n,
        "reality_check": n == 0,
        "r2_self": depth == "R2-self",
        "belief": "false" if false_belief else "true",
        "mechanism": drawn.mechanism,
        "features": list(drawn.features),
        "causes": causes,
        "length": len(story.events),
        "agents": len(story.agents),
        "form": kept.form,
        "question": question,
        "selection": selection,
        "story_id": kept.story_id,
        "own_belief": truth["self_belief"] if depth == "R2-self" else None,
        "ambiguous": ambiguities(truth, answer_spec),
    }
    if main_id is not None:
        meta["companion_of"] = main_id
    return Item(
        family="nesttom",
        generator=GENERATOR,
        version=VERSION,
        seed=kept.seed,
        params=params,
        prompt=render_prompt(story, kept.form, text, prompt_choices),
        answer=answer_spec,
        truth=truth,
        meta=meta,
    )


def _cell_rng(seed: int, stream: int, index: int, cell: Cell) -> np.random.Generator:
    """The generator of one story: seeded with a 64-bit digest of ``(seed, stream, index,
    depth, belief, mechanism, length, agents)`` (one 64-bit integer seeds fastest)."""
    material = canonical_json([seed, stream, index, *cell])
    return np.random.default_rng(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


def _story_items(
    seed: int,
    stream: int,
    index: int,
    cell: Cell,
    form: str,
    judgment_yes: bool,
    *,
    applied: bool,
    companions: bool,
    block: str | None = None,
    lures: str = "prefer",
) -> list[Item]:
    """The items of one story: the main belief item, then (optionally) the prefix companions and
    the applied questions. Every item's params name its role, so each can be regenerated."""
    depth, belief, mechanism, length, agents = cell
    drawn = generate_story(
        _cell_rng(seed, stream, index, cell),
        depth=depth,
        belief=belief,
        mechanism=mechanism,
        length=length,
        agents=agents,
        lures=lures,
    )
    story_dict = drawn.story.to_dict(questions=False)
    story_id = content_hash(story_dict)
    base = {
        "stream": stream,
        "index": index,
        "depth": depth,
        "belief": belief,
        "mechanism": mechanism,
        "length": length,
        "agents": agents,
        "form": form,
        "lures": lures,
        "block": block,
    }
    kept = _KeptStory(drawn, seed, form, story_dict, story_id)
    selection = "adversarial" if belief == "false" else "control"
    out = [
        _item(
            kept,
            params={**base, "role": "main"},
            chain=drawn.chain,
            question="belief",
            selection=selection,
        )
    ]
    if companions:
        for k in range(len(drawn.chain)):
            out.append(
                _item(
                    kept,
                    params={**base, "role": f"prefix:{k}"},
                    chain=drawn.chain[:k],
                    question="belief",
                    selection="companion",
                    main_id=out[0].id,
                )
            )
    if applied and depth in APPLIED_DEPTHS:
        out.append(
            _item(
                kept,
                params={**base, "role": "behaviour"},
                chain=drawn.chain,
                question="behaviour",
                selection=selection,
            )
        )
        answer = out[0].truth["answer"]
        if judgment_yes:
            looked = answer
        elif belief == "false":
            looked = out[0].truth["reality"]  # the reality-leak lure
        else:
            others = [c for c in drawn.story.containers() if c != answer]
            looked = others[min(int(drawn.alt * len(others)), len(others) - 1)]
        out.append(
            _item(
                kept,
                params={**base, "role": "judgment", "judgment": "yes" if judgment_yes else "no"},
                chain=drawn.chain,
                question="judgment",
                selection=selection,
                looked=looked,
            )
        )
    return out


def generate_items(
    seed: int,
    n: int,
    design: Design = Design(),
    *,
    applied: bool = False,
    companions: bool | Collection[str] = False,
    stream: int = 0,
    lures: str = "prefer",
    block: str | None = None,
) -> list[Item]:
    """Generate ``n`` stories' items, deterministically from ``seed``.

    Each story gives one belief item (``meta["question"] == "belief"``) in the cell
    :meth:`Design.cell` assigns to its index (the ``design``'s factors fully crossed, as
    :func:`cell_of` says; infeasible depth × mechanism cells are skipped). ``applied`` adds, for
    R1–R3 stories, a behaviour item and a judgment item on the same story and chain (yes and no
    alternate); ``companions`` (True, or the belief types whose stories get them) adds the belief
    items of every proper prefix of the chain (R0 included) on the same story, for joint
    accuracy. ``stream`` separates independent suites drawn from one seed. ``lures`` is
    :func:`generate_story`'s; ``block`` names the suite block in ``meta["block"]``. Both are
    kept in ``params``, so that :func:`regenerate` gives the same item.
    """
    _check_seed(seed)
    if n < 0:
        raise ValueError("n must be non-negative")
    if lures not in LURES:
        raise ValueError(f"unknown lures {lures!r}; expected one of {', '.join(LURES)}")
    out: list[Item] = []
    for i in range(n):
        cell, form, yes = design.cell(i)
        with_companions = companions is True or (
            not isinstance(companions, bool) and cell[1] in companions
        )
        out.extend(
            _story_items(
                seed,
                stream,
                i,
                cell,
                form,
                yes,
                applied=applied,
                companions=with_companions,
                block=block,
                lures=lures,
            )
        )
    return out


def _check_seed(seed: int) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def regenerate(item: Item) -> Item:
    """Regenerate ``item`` from its generator, version, seed and params; raises ValueError when
    the item is not a NestToM item of this version or its content differs."""
    if item.family != "nesttom" or item.generator != GENERATOR:
        raise ValueError(f"{item.id}: not a NestToM item")
    if item.version != VERSION:
        raise ValueError(f"{item.id}: generated by version {item.version}, this is {VERSION}")
    p = item.params
    role = p["role"]
    cell = (p["depth"], p["belief"], p["mechanism"], int(p["length"]), int(p["agents"]))
    items = _story_items(
        item.seed,
        int(p["stream"]),
        int(p["index"]),
        cell,
        p["form"],
        p.get("judgment", "yes") == "yes",
        applied=role in ("behaviour", "judgment"),
        companions=str(role).startswith("prefix:"),
        block=p.get("block"),
        lures=p.get("lures", "prefer"),
    )
    for candidate in items:
        if candidate.params == p:
            if candidate.id != item.id:
                raise ValueError(f"{item.id}: regenerates as {candidate.id}")
            return candidate
    raise ValueError(f"{item.id}: no item with role {role!r} in its story")
