"""SVG written as text: small pure functions that each return one element, every text and
attribute escaped, so that a figure is a string built from its numbers (no plotting library,
nothing imported but the standard library).

The output is well-formed XML (it parses with :mod:`xml.etree.ElementTree`) and valid inline in
HTML. Colours come from the Okabe–Ito palette, which stays distinguishable to readers with the
common colour-vision deficiencies; a series is also told apart by its marker and dash, never by
colour alone. Hover text is an SVG ``<title>`` child: a browser shows it as a tooltip.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "BLACK",
    "BLUE",
    "FONT",
    "GREEN",
    "GREY",
    "ORANGE",
    "PURPLE",
    "SKY",
    "VERMILLION",
    "YELLOW",
    "Scale",
    "circle",
    "document",
    "element",
    "group",
    "line",
    "nice_ticks",
    "polygon",
    "polyline",
    "rect",
    "text",
    "text_width",
    "tooltip",
    "x_axis",
    "y_axis",
]

# Okabe & Ito (2008), "Color Universal Design"
BLACK = "#000000"
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
GREY = "#888888"
INK = "#222222"
MUTED = "#555555"
GRID = "#e4e4e4"
FONT = "system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"


def _num(v: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros (``12``, ``3.5``, ``-0.25``)."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _attrs(attrs: dict[str, object]) -> str:
    """``key="value"`` pairs; ``stroke_width`` is written ``stroke-width``, a trailing
    underscore is dropped (``class_``), None and False are left out, True is the bare name's
    value ``"true"``; floats are coordinates."""
    out = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        if value is True:
            value = "true"
        shown = _num(value) if isinstance(value, float) else str(value)
        out.append(f' {name}="{escape(shown, quote=True)}"')
    return "".join(out)


def element(tag: str, body: str = "", /, **attrs: object) -> str:
    """``<tag attrs>body</tag>`` (``<tag attrs/>`` without a body). ``body`` is SVG already
    built (escape text with :func:`text`)."""
    if body:
        return f"<{tag}{_attrs(attrs)}>{body}</{tag}>"
    return f"<{tag}{_attrs(attrs)}/>"


def tooltip(s: object) -> str:
    """A ``<title>`` child: the hover text of the element that holds it."""
    return f"<title>{escape(str(s), quote=False)}</title>"


def group(body: str, *, title: object = None, **attrs: object) -> str:
    """``<g>`` around ``body``, with hover text when ``title`` is given."""
    return element("g", (tooltip(title) if title is not None else "") + body, **attrs)


def text(
    x: float,
    y: float,
    s: object,
    *,
    size: float = 11,
    anchor: str = "start",
    fill: str = INK,
    weight: str | None = None,
    **attrs: object,
) -> str:
    """Text whose baseline starts (or ends, or is centred, by ``anchor``) at ``(x, y)``."""
    return element(
        "text",
        escape(str(s), quote=False),
        x=float(x),
        y=float(y),
        font_size=float(size),
        text_anchor=None if anchor == "start" else anchor,
        fill=fill,
        font_weight=weight,
        **attrs,
    )


def line(
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    *,
    stroke: str = INK,
    width: float = 1.0,
    dash: str | None = None,
    **attrs: object,
) -> str:
    return element(
        "line",
        x1=float(x1),
        y1=float(y1),
        x2=float(x2),
        y2=float(y2),
        stroke=stroke,
        stroke_width=float(width),
        stroke_dasharray=dash,
        **attrs,
    )


def polyline(
    points: Sequence[tuple[float, float]],
    *,
    stroke: str = INK,
    width: float = 1.0,
    dash: str | None = None,
    **attrs: object,
) -> str:
    pts = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
    return element(
        "polyline",
        points=pts,
        fill="none",
        stroke=stroke,
        stroke_width=float(width),
        stroke_dasharray=dash,
        stroke_linejoin="round",
        **attrs,
    )


def polygon(points: Sequence[tuple[float, float]], *, fill: str = INK, **attrs: object) -> str:
    pts = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
    return element("polygon", points=pts, fill=fill, **attrs)


def circle(
    x: float,
    y: float,
    r: float,
    *,
    fill: str = INK,
    stroke: str | None = None,
    width: float | None = None,
    **attrs: object,
) -> str:
    return element(
        "circle",
        cx=float(x),
        cy=float(y),
        r=float(r),
        fill=fill,
        stroke=stroke,
        stroke_width=None if width is None else float(width),
        **attrs,
    )


def rect(x: float, y: float, w: float, h: float, *, fill: str = INK, **attrs: object) -> str:
    return element(
        "rect",
        x=float(x),
        y=float(y),
        width=float(max(w, 0.0)),
        height=float(max(h, 0.0)),
        fill=fill,
        **attrs,
    )


def document(width: float, height: float, body: str, *, label: str, **attrs: object) -> str:
    """The root ``<svg>``: its own coordinate system (``viewBox``), the natural size in CSS
    pixels, an accessible name (``<title>``, ``aria-label``) and the font."""
    return element(
        "svg",
        tooltip(label) + body,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {_num(width)} {_num(height)}",
        width=float(width),
        height=float(height),
        role="img",
        aria_label=label,
        font_family=FONT,
        **attrs,
    )


def text_width(s: str, size: float = 11) -> float:
    """A generous estimate of the rendered width of ``s`` in a sans-serif font (for layout:
    the SVG never measures text)."""
    return 0.6 * size * len(s)


@dataclass(frozen=True)
class Scale:
    """A linear map from data ``[lo, hi]`` to pixels ``[start, end]`` (``end < start`` for a
    y axis, which grows upwards)."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, v: float) -> float:
        span = self.hi - self.lo
        if span == 0:
            return (self.start + self.end) / 2
        return self.start + (v - self.lo) / span * (self.end - self.start)

    def clamped(self, v: float) -> float:
        """:meth:`__call__` of ``v`` held inside the scale's range."""
        return self(min(max(v, self.lo), self.hi))


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values (steps of 1, 2, 2.5 or 5 × 10^k) covering ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"ticks need finite ends, got [{lo}, {hi}]")
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10) + 0.0)
        t += step
    return ticks


def x_axis(
    scale: Scale,
    y: float,
    ticks: Sequence[float],
    fmt: Callable[[float], str],
    *,
    grid_to: float | None = None,
    label: str | None = None,
    size: float = 10,
) -> str:
    """A horizontal axis at ``y``: the line, a tick and its label per value, an optional
    vertical grid line per tick up to ``grid_to`` and the axis label under the ticks."""
    parts = []
    for t in ticks:
        x = scale(t)
        if grid_to is not None:
            parts.append(line(x, grid_to, x, y, stroke=GRID))
        parts.append(line(x, y, x, y + 4, stroke=MUTED))
        parts.append(text(x, y + 6 + size, fmt(t), size=size, anchor="middle", fill=MUTED))
    parts.append(line(scale.start, y, scale.end, y, stroke=MUTED))
    if label:
        parts.append(
            text(
                (scale.start + scale.end) / 2,
                y + 2 * size + 12,
                label,
                size=size,
                anchor="middle",
                fill=MUTED,
            )
        )
    return group("".join(parts), class_="axis")


def y_axis(
    scale: Scale,
    x: float,
    ticks: Sequence[float],
    fmt: Callable[[float], str],
    *,
    grid_to: float | None = None,
    label: str | None = None,
    size: float = 10,
) -> str:
    """A vertical axis at ``x``: the line, a tick and its label per value, an optional
    horizontal grid line per tick across to ``grid_to`` and the axis label, turned upright."""
    parts = []
    for t in ticks:
        y = scale(t)
        if grid_to is not None:
            parts.append(line(x, y, grid_to, y, stroke=GRID))
        parts.append(line(x - 4, y, x, y, stroke=MUTED))
        parts.append(text(x - 6, y + size / 3, fmt(t), size=size, anchor="end", fill=MUTED))
    parts.append(line(x, scale.start, x, scale.end, stroke=MUTED))
    if label:
        cy = (scale.start + scale.end) / 2
        lx = x - 14 - max(text_width(fmt(t), size) for t in ticks) if ticks else x - 24
        parts.append(
            text(
                lx,
                cy,
                label,
                size=size,
                anchor="middle",
                fill=MUTED,
                transform=f"rotate(-90 {_num(lx)} {_num(cy)})",
            )
        )
    return group("".join(parts), class_="axis")
