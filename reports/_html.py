"""A profile as one self-contained HTML file (:func:`render_html`, re-exported by
:mod:`reports.render`)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from mindledger.words import counted
from reports._report_parts import (
    _TAG_RE,
    CONTRASTS_HEAD,
    PROXY_HEAD,
    TAG_TITLES,
    _agent_order,
    _agent_section,
    _contrast_blocks,
    _contrast_row,
    _ContrastBlock,
    _contrasts_family,
    _forest_svg,
    _headline_head,
    _headline_rows,
    _legend,
    _proxy_rows,
    _seed_sentence,
    _top_notices,
)
from reports.model import RunProfile
from reports.present import (
    small_n_said_once,
)
from reports.trials import AgentExamples, TrialView, value_text
from reports.verdicts import REFERENCES_HEADING, Verdict, verdict

# -- HTML ------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1180px;color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.86rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.notice{background:#fdecea;border-left:5px solid #d1495b;
padding:.6rem 1rem;margin:.6rem 0;font-weight:600}.info{background:#eef5fb;
border-left:5px solid #00798c;padding:.6rem 1rem;margin:.6rem 0}
.legend{color:#555;font-size:.85rem}figure{margin:1rem 0}figure>svg{max-width:100%;
height:auto;border:1px solid #eee;background:#fff}figcaption{color:#555;font-size:.85rem}
details>summary{cursor:pointer;color:#333}
.verdict{background:#fafafa;border:1px solid #ddd;padding:.2rem 1rem .4rem;margin:.6rem 0}
.verdict h2{margin-top:.4rem}.verdict .agent{border-left:5px solid #888;padding-left:.6rem;
font-size:1.02rem}.verdict .invalid{border-left-color:#d1495b}.verdict .valid{
border-left-color:#2e8b57}.verdict ul{margin:.2rem 0}.verdict li.problem{color:#b00020;
font-weight:600}.verdict .note{color:#555;font-size:.9rem}
"""


def _h(s: Any) -> str:
    return html.escape(str(s))


def _abbr(escaped: str) -> str:
    """Escaped text with each interval tag that follows a figure (``… n=420 W``, ``…] CB``)
    wrapped in ``<abbr title=…>``: the method's name on hover."""
    return _TAG_RE.sub(
        lambda m: f"<abbr title='{_h(TAG_TITLES[m.group(1)])}'>{m.group(1)}</abbr>", escaped)


def _html_table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return _abbr(_h(v).replace("**", ""))

    h = "".join(f"<th>{_h(x)}</th>" for x in head)
    b = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def render_html(
    profile: RunProfile,
    *,
    figures: Sequence[tuple[str, str, str]] | None = None,
    reveal_held_out: bool = False,
    examples: Sequence[AgentExamples] = (),
) -> str:
    """The profile as ONE self-contained HTML file: tables plus every figure as inline SVG
    (no external resources); each agent's contrasts as forest plots, their tables collapsed
    under them. ``figures`` reuses figures already drawn (:func:`reports._plots.figures`). A
    held-out run's seed is printed only with ``reveal_held_out`` (operators). ``examples``
    (:func:`reports.trials.wrong_examples`) adds, per agent, a few wrong and failed trials per
    cause, collapsed; never of a held-out run without ``reveal_held_out``."""
    if figures is None:
        from reports._plots import figures as draw

        figures = draw(profile)

    run = profile.run
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>mindledger profile — {_h(run.id)}</title><style>{_CSS}</style></head><body>",
        f"<h1>mindledger profile — run <code>{_h(run.id)}</code></h1>",
    ]
    parts.append(_verdict_html(verdict(profile)))
    for n in _top_notices(profile):
        cls = "notice" if n.startswith("UNCHECKED") else "info"
        parts.append(f"<div class='{cls}'>{_h(n)}</div>")
    parts.append(
        f"<p>Suite <code>{_h(run.suite)}</code>, "
        f"{_h(_seed_sentence(profile, reveal_held_out))}, status {_h(run.status)}; "
        f"{_h(run.n_items)} items, {_h(run.n_trials)} trials.</p>"
    )
    with small_n_said_once() as tally:
        parts += ["<h2>Headline</h2>",
                  _html_table(_headline_head(profile), _headline_rows(profile))]
    if tally:
        parts.append(f"<p class='legend'>{_h(tally.note())}</p>")
    for key, caption, svg in figures:
        parts.append(f"<figure id='fig-{key}'>{svg}<figcaption>{_h(caption)}</figcaption>"
                     "</figure>")
    md_agent = {name: _agent_section(name, a, contrasts=False)
                for name, a in profile.agents.items()}
    for name in _agent_order(profile):
        a = profile.agents[name]
        parts.append(f"<h2>{_h(name)} ({_h(a.role)})</h2>")
        for n in a.notices:
            parts.append(f"<div class='notice'>{_h(n)}</div>")
        parts.append(_md_to_html(md_agent[name][2:]))
        parts += [_contrast_html(block) for block in _contrast_blocks(name, a)]
    proxy = profile.proxy
    if proxy.agents:
        parts += ["<h2>Query proxy</h2>", f"<p class='legend'>{_h(proxy.scope)}.</p>",
                  _html_table(PROXY_HEAD, _proxy_rows(proxy))]
    if profile.contrasts:
        parts.append("<h2>All contrasts (Holm-adjusted)</h2>")
        parts.append("<p class='legend'>" + _h(_contrasts_family(profile)) + "</p>")
        rows = [_contrast_row(c) for c in profile.contrasts]
        parts.append(_html_table(CONTRASTS_HEAD, rows))
    if examples and (reveal_held_out or not (profile.held_out or profile.run.held_out)):
        parts.append(_examples_html(examples))
    parts += ["<h2 id='glossary'>How to read the figures</h2>",
              f"<p class='legend'>{_h(_legend(profile))}</p>", "</body></html>"]
    return "\n".join(parts)


def _code(escaped: str) -> str:
    """Escaped text with its `backquoted` names as ``<code>``."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def _verdict_html(v: Verdict) -> str:
    """The verdict, first on the page: each agent under test (INVALID in red, valid in
    green), the other agents, the references, the notes."""
    out = ["<section id='verdict' class='verdict'><h2>Verdict</h2>"]
    if v.unfinished:
        out.append(f"<p class='unfinished'><strong>{_code(_h(v.unfinished))}</strong></p>")
    for a in v.agents:
        cls = {True: "valid", False: "invalid", None: "unchecked"}[a.valid]
        out.append(f"<p class='agent {cls}' data-agent='{_h(a.agent)}'>"
                   + _code(" ".join(_h(s) for s in a.sentences())) + "</p>")
    out += [f"<p class='other'>{_code(_h(o))}</p>" for o in v.others]
    if v.references:
        items = "".join(
            f"<li class='{'ok' if r.as_expected else 'problem' if r.as_expected is False else ''}'>"
            f"{_h(r.text)}</li>" for r in v.references)
        out.append(f"<p class='references'>{_h(REFERENCES_HEADING)}</p>"
                   f"<ul class='references'>{items}</ul>")
    out += [f"<p class='note'>{_code(_h(n))}</p>" for n in v.notes]
    out.append("</section>")
    return "".join(out)


def _contrast_html(block: _ContrastBlock) -> str:
    """A contrast block in HTML: its heading and notes (a quoted note as a box), its forest
    plot in place of the long table, and the table itself collapsed under the plot."""
    out = [f"<div class='info'>{_h(line[2:])}</div>" if line.startswith("> ")
           else _md_to_html([line]) for line in block.lead if line.strip()]
    svg = _forest_svg(block)
    if svg is not None:
        out.append(f"<figure class='forest'>{svg}<figcaption>Each difference with its 95% "
                   "interval (each metric's own method, named in the table); the vertical "
                   "line marks no difference. Hover a row for its exact figure."
                   "</figcaption></figure>")
    if block.rows:
        out.append(f"<details><summary>{_h(block.title)}: the table ({len(block.rows)} rows)"
                   f"</summary>{_html_table(block.head, block.rows)}</details>")
    return "\n".join(out)


def _examples_html(examples: Sequence[AgentExamples]) -> str:
    """Per agent, a collapsed section with a few of its wrong and failed trials per cause:
    the question as the item put it, the reply and the answer read from it beside the expected
    one (every text escaped)."""
    pre = "<pre style='white-space:pre-wrap;margin:0;max-height:18rem;overflow:auto'>"
    parts = ["<h2 id='examples'>Examples of wrong and failed answers</h2>"]
    for agent in examples:
        total = sum(c.count for c in agent.causes)
        parts.append(
            f"<details class='examples'><summary><b>{_h(agent.agent)}</b>: {total} wrong or "
            f"failed {'trial' if total == 1 else 'trials'}, {counted(len(agent.causes), 'cause')}: "
            + ", ".join(f"{_h(c.cause)} ({c.count})" for c in agent.causes)
            + "</summary>"
        )
        for cause in agent.causes:
            shown = len(cause.trials)
            parts.append(f"<h3>{_h(cause.cause)} — {counted(cause.count, 'trial')} ({_h(cause.outcome)})"
                         + (f", {shown} shown" if shown < cause.count else "") + "</h3>")
            parts += [_example_html(t, pre) for t in cause.trials]
        parts.append("</details>")
    return "\n".join(parts)


def _example_html(t: TrialView, pre: str) -> str:
    def value(v: Any) -> str:
        return _h(value_text(v))

    where = " ".join(p for p in (t.family, t.label) if p)
    detail = f"<p>{_h(t.detail)}</p>" if t.detail else ""
    return (
        f"<p>item <code>{_h(t.item_id)}</code> · {_h(where)}</p>{detail}"
        f"<table><tr><th>question</th><td colspan='2'>{pre}{value(t.prompt)}</pre></td></tr>"
        f"<tr><th></th><th>{_h(t.agent)}</th><th>expected</th></tr>"
        f"<tr><th>reply</th><td>{pre}{value(t.raw_text)}</pre></td><td></td></tr>"
        f"<tr><th>answer</th><td>{value(t.answer)}</td><td>{value(t.expected)}</td></tr></table>"
    )


def _md_to_html(lines: Sequence[str]) -> str:
    """The small subset of Markdown the agent sections use: headings, tables, lists, quotes.
    An entry may hold several lines (a whole table): they are split first."""
    lines = [ln for part in lines for ln in part.split("\n")]
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("### "):
            out.append(f"<h3>{_h(line[4:])}</h3>")
        elif line.startswith("> "):
            pass  # notices are rendered as boxes by the caller
        elif line.startswith("| "):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            head = [c.strip() for c in block[0].strip("|").split(" | ")]
            rows = [[c.strip().replace("\\|", "|") for c in r.strip().strip("|").split(" | ")]
                    for r in block[2:]]
            out.append(_html_table(head, rows))
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_abbr(_h(lines[i][2:]))}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_abbr(_h(line))}</p>")
        i += 1
    return "\n".join(out)


