"""Who may call each route of the daemon's API: one table (:data:`ACCESS`) that the route
guards enforce (:meth:`Access.refusal`), the OpenAPI document states (each operation's
``x-roles``) and the README repeats (:func:`markdown_table`; a test compares them).

Four callers, one column each:

* ``anonymous`` — no token (or one that is unknown, expired or revoked);
* ``agent`` — an agent token, reading or acting on its own agent's things;
* ``other_agent`` — an agent token naming another agent's things: another agent's run or
  prediction by id, another agent's name (``/calls?agent=B``, ``POST /runs {"agent": "B"}``,
  ``POST /predictions {"predictor": "B"}``), another agent's prediction in the proxy's
  ``X-Mindledger-Prediction`` header;
* ``operator`` — an operator token: reads everything (a held-out run's seeds and items only
  when it asks, ``?reveal_held_out=true``), acts as no agent.

**The rule for refusals.** 401 without a valid token. 404 where answering otherwise would
confirm that an id exists: another agent's run, profile or prediction is answered exactly as
an unknown id (same status, same message), and so is another agent's prediction named to the
proxy. 403 where what is asked is public knowledge, so refusing it confirms nothing: a route
for the other scope (an agent token on an operator's route, an operator token on a route that
acts as an agent), and another agent's *name* (agent names are the daemon's configuration: the
OpenAPI document lists them). A refusal's body names nothing of the other agent's but what the
caller sent.

**Public by design.** ``/health``, ``/openapi.json`` and the witness's routes need no token
(a head's own signature authenticates it); ``/health`` tells anyone whether the daemon is ok
and an operator token also what each check found. The transparency log's routes answer any token
alike: heads, entry hashes and audit paths are meant to be published, and no route serves an
entry's body (its query, answer or scores). A hash does not let a reader test a guess of a
body either: every entry about a prediction names the prediction's id (80 bits of its salted
commitment) and every call or refusal a random request id, so neither can be enumerated.

**Not on the API at all**: listing or making tokens, schedules and the ledger's entries
(``mindledger serve token --list``, the settings file's ``[schedule]``, ``mindledger ledger
show`` at the machine: whoever holds the data directory holds all of them anyway).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.daemon.tokens import Principal

__all__ = ["ACCESS", "ROLES", "Access", "Cell", "Role", "access_of", "markdown_table"]

Role = Literal["anonymous", "agent", "other_agent", "operator"]
ROLES: tuple[Role, ...] = ("anonymous", "agent", "other_agent", "operator")
"""The columns of the table, in order."""
ROLE_TITLES: Mapping[Role, str] = {
    "anonymous": "no token",
    "agent": "agent token, its own",
    "other_agent": "agent token, another agent's",
    "operator": "operator token",
}


@dataclass(frozen=True)
class Cell:
    """What one kind of caller gets from one operation: the status of its answer (success, or
    the refusal) and, in a few words, what it reads or may do."""

    status: int
    gets: str

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "gets": self.gets}


@dataclass(frozen=True)
class Access:
    """Who may call one operation (``method`` ``path``), a :class:`Cell` per :data:`ROLES`.

    The guard derives from the cells: a route whose ``anonymous`` cell is not 401 needs no
    token; one whose ``agent`` cell is 403 refuses agent tokens, and one whose ``operator`` cell
    is 403 refuses operator tokens, before reading anything (``refused`` is the message). The
    ``other_agent`` cell is enforced where the handler finds whose thing was named; None where
    the operation names nothing of another agent's."""

    method: str
    path: str
    anonymous: Cell
    agent: Cell
    other_agent: Cell | None
    operator: Cell
    refused: str = ""
    """Why a token of the refused scope gets 403 (said to it)."""

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.path

    @property
    def needs_token(self) -> bool:
        return self.anonymous.status == 401

    def cell(self, role: Role) -> Cell | None:
        return {
            "anonymous": self.anonymous,
            "agent": self.agent,
            "other_agent": self.other_agent,
            "operator": self.operator,
        }[role]

    def refusal(self, principal: Principal) -> str | None:
        """Why this route refuses ``principal``'s scope (403), or None when it may call it."""
        role: Role = "operator" if principal.is_operator else "agent"
        cell = self.cell(role)
        assert cell is not None
        return self.refused if cell.status == 403 else None

    def x_roles(self) -> dict[str, Any]:
        """The operation's ``x-roles`` in the OpenAPI document."""
        out: dict[str, Any] = {}
        for role in ROLES:
            cell = self.cell(role)
            out[role] = None if cell is None else cell.to_dict()
        return out

    def statuses(self) -> set[int]:
        """Every status the table gives a caller of this operation."""
        return {c.status for c in (self.cell(r) for r in ROLES) if c is not None}


def _open(method: str, path: str, status: int, gets: str) -> Access:
    """An operation that answers every caller alike, with or without a token."""
    same = Cell(status, gets)
    return Access(method, path, same, same, Cell(status, "the same"), same)


def _any_token(method: str, path: str, gets: str) -> Access:
    """An operation that answers every valid token alike and names nothing of an agent's."""
    return Access(method, path, NO_TOKEN, Cell(200, gets), Cell(200, "the same"), Cell(200, gets))


NO_TOKEN = Cell(401, "no valid bearer token")
AGENTS_ONLY = "an operator token acts as no agent: use the agent's own token"
LOG = "hashes only: never an entry's body"

ACCESS: tuple[Access, ...] = (
    Access(
        "GET",
        "/health",
        Cell(200, "whether the daemon is ok (503 when not) and the scheduler's state"),
        Cell(200, "the same"),
        Cell(200, "the same"),
        Cell(200, "the same, each check's findings and how the last nightly job ended"),
    ),
    _open("GET", "/openapi.json", 200, "this document (it names the declared agents)"),
    Access(
        "GET",
        "/metrics",
        NO_TOKEN,
        Cell(403, "the counts span every agent's runs and predictions"),
        Cell(403, "as for its own"),
        Cell(200, "Prometheus metrics of every agent's runs, trials, calls and requests; "
             "the ledger, the scheduler (?format=json: the counts and the ledger head)"),
        refused="/metrics counts every agent's runs, trials and predictions: operator tokens only",
    ),
    Access(
        "GET",
        "/whoami",
        NO_TOKEN,
        Cell(200, "its own token's id, scope and agent"),
        None,
        Cell(200, "its own token's id, scope and label"),
    ),
    Access(
        "GET",
        "/runs",
        NO_TOKEN,
        Cell(200, "its own runs"),
        Cell(200, "another agent's runs, and runs shared with one, are not listed"),
        Cell(200, "every run"),
    ),
    Access(
        "POST",
        "/runs",
        NO_TOKEN,
        Cell(202, "runs of itself, or of references alone"),
        Cell(403, "a run of another agent (names are public)"),
        Cell(202, "runs of any agent"),
    ),
    Access(
        "GET",
        "/runs/{id}",
        NO_TOKEN,
        Cell(200, "its own run's summary and trial counts"),
        Cell(404, "answered as an unknown run (and a run shared with another agent)"),
        Cell(200, "any run"),
    ),
    Access(
        "GET",
        "/runs/{id}/profile",
        NO_TOKEN,
        Cell(200, "its own run's profile"),
        Cell(404, "answered as an unknown run (and a run shared with another agent)"),
        Cell(200, "any run's profile"),
    ),
    Access(
        "POST",
        "/predictions",
        NO_TOKEN,
        Cell(201, "commits as itself"),
        Cell(403, "committing as another predictor"),
        Cell(403, "an operator acts as no agent"),
        refused=AGENTS_ONLY,
    ),
    Access(
        "GET",
        "/predictions/{id}",
        NO_TOKEN,
        Cell(200, "its own prediction, the target's observed answers and their provenance"),
        Cell(404, "answered as an unknown prediction"),
        Cell(200, "any prediction"),
    ),
    Access(
        "POST",
        "/predictions/{id}/observe",
        NO_TOKEN,
        Cell(403, "before the id is read: an agent never records answers"),
        Cell(403, "as for its own"),
        Cell(201, "records an answer with its provenance"),
        refused="only whoever asked the target records its answers (the proxy, the matrix, the "
        "runner) or an operator: an agent's token may not. Send the query through "
        "/proxy/<target>/v1/chat/completions with the prediction's id instead.",
    ),
    Access(
        "POST",
        "/predictions/{id}/reveal",
        NO_TOKEN,
        Cell(200, "reveals its own prediction and gets its scores (409: no match)"),
        Cell(404, "answered as an unknown prediction"),
        Cell(403, "only the predictor reveals"),
        refused=AGENTS_ONLY,
    ),
    Access(
        "POST",
        "/forecasts",
        NO_TOKEN,
        Cell(201, "forecasts its own figure for a run (or an announced run) it is under test in"),
        Cell(404, "another agent's run is answered as an unknown run (naming another "
             "predictor: 403)"),
        Cell(201, "forecasts on an agent's behalf (names the predictor)"),
    ),
    Access(
        "GET",
        "/forecasts",
        NO_TOKEN,
        Cell(200, "its own forecasts"),
        Cell(403, "`?agent=` another agent (names are public)"),
        Cell(200, "every agent's, or ?agent=NAME's"),
    ),
    Access(
        "GET",
        "/forecasts/{id}",
        NO_TOKEN,
        Cell(200, "its own forecast and, once revealed, its scores"),
        Cell(404, "answered as an unknown forecast"),
        Cell(200, "any forecast"),
    ),
    Access(
        "POST",
        "/forecasts/{id}/reveal",
        NO_TOKEN,
        Cell(200, "reveals its own forecast once the run has ended (409 before) and gets its "
             "scores"),
        Cell(404, "answered as an unknown forecast"),
        Cell(403, "only the predictor reveals (the service reveals those it holds)"),
        refused=AGENTS_ONLY,
    ),
    Access(
        "GET",
        "/schedule/next",
        NO_TOKEN,
        Cell(200, "its own next scheduled runs: run id, suite, deadline, figures (never their "
             "seeds or items)"),
        Cell(403, "`?agent=` another agent (names are public)"),
        Cell(200, "every nightly job's next run, or ?agent=NAME's"),
    ),
    Access(
        "GET",
        "/calls",
        NO_TOKEN,
        Cell(200, "its own calls, refusals and obligations"),
        Cell(403, "`?agent=` another agent (names are public)"),
        Cell(200, "every caller's, or ?agent=NAME's"),
    ),
    _any_token("GET", "/ledger/head", "the latest signed tree head"),
    _any_token("GET", "/ledger/proof", f"an entry's hash and audit path; {LOG}"),
    _any_token("GET", "/ledger/consistency", f"a consistency proof; {LOG}"),
    Access(
        "POST",
        "/proxy/{target}/v1/chat/completions",
        NO_TOKEN,
        Cell(200, "calls a target as itself (its own prediction unlocks a call)"),
        Cell(404, "another agent's prediction is answered as an unknown one"),
        Cell(403, "an operator acts as no agent"),
        refused=AGENTS_ONLY,
    ),
    _open("POST", "/witness/cosign", 200, "open: the head's own signature authenticates it"),
    _open("GET", "/witness/heads", 200, "open: a head cosigned for a registered log"),
)
"""Every operation of the API, and who may call it."""

_BY_KEY = {a.key: a for a in ACCESS}


def access_of(method: str, path: str) -> Access:
    """The row of ``method`` ``path`` (KeyError for an operation the table lacks: every route
    must have one)."""
    return _BY_KEY[(method, path)]


def _rows() -> Iterator[str]:
    yield "| operation | " + " | ".join(ROLE_TITLES[r] for r in ROLES) + " |"
    yield "| --- |" + " --- |" * len(ROLES)
    for a in ACCESS:
        cells = []
        for role in ROLES:
            cell = a.cell(role)
            cells.append("—" if cell is None else f"{cell.status}: {cell.gets}")
        yield f"| `{a.method} {a.path}` | " + " | ".join(cells) + " |"


def markdown_table() -> str:
    """The table as Markdown (the README's copy; a test keeps them equal)."""
    return "\n".join(_rows()) + "\n"
