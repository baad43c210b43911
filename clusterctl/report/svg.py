"""SVG drawing primitives for the report's pictures: a flat element list, fixed number formatting, text
metrics, axis rounding and series markers. No figure knows its own bytes: every one is built from these, so
the output is byte-for-byte deterministic (fixed float formatting, no ids, no timestamps).
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

SVG_NS = "http://www.w3.org/2000/svg"


def num(x: float) -> str:
    """A coordinate as written in the SVG: one decimal, always."""
    return f"{x:.1f}"


def attr(v: object) -> str:
    """``v`` escaped for a double-quoted attribute value."""
    return escape(str(v), {'"': "&quot;"})


class Svg:
    """A flat list of SVG elements; ``render`` wraps them in the document."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def el(self, tag: str, text: str | None = None, **attrs: object) -> None:
        a = "".join(f' {k.rstrip("_").replace("_", "-")}="{attr(v)}"' for k, v in attrs.items() if v is not None)
        self.parts.append(f"<{tag}{a}/>" if text is None else f"<{tag}{a}>{escape(text)}</{tag}>")

    def rect(self, x: float, y: float, w: float, h: float, **attrs: object) -> None:
        self.el("rect", x=num(x), y=num(y), width=num(w), height=num(h), **attrs)

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: object) -> None:
        self.el("line", x1=num(x1), y1=num(y1), x2=num(x2), y2=num(y2), **attrs)

    def text(self, x: float, y: float, s: str, size: float = 11, anchor: str = "start", **attrs: object) -> None:
        self.el("text", s, x=num(x), y=num(y), font_size=num(size),
                text_anchor=None if anchor == "start" else anchor, **attrs)

    def marker(self, shape: str, x: float, y: float, color: str, cls: str) -> None:
        """A data-point marker centred on (x, y): circle, square, triangle, diamond or cross."""
        r = 3.0
        if shape == "circle":
            self.el("circle", cx=num(x), cy=num(y), r="2.5", fill=color, class_=cls, data_shape=shape)
        elif shape == "square":
            self.rect(x - r, y - r, 2 * r, 2 * r, fill="none", stroke=color, stroke_width="1.2", class_=cls,
                      data_shape=shape)
        else:
            pts = {"triangle": ((0, -r - 0.5), (r + 0.5, r), (-r - 0.5, r)),
                   "diamond": ((0, -r - 0.5), (r + 0.5, 0), (0, r + 0.5), (-r - 0.5, 0)),
                   "cross": ((-r, -r), (r, r), (0, 0), (r, -r), (-r, r), (0, 0))}[shape]
            self.el("polygon" if shape != "cross" else "polyline", fill="none", stroke=color, stroke_width="1.2",
                    class_=cls, data_shape=shape, points=" ".join(f"{num(x + dx)},{num(y + dy)}" for dx, dy in pts))

    def render(self, width: float, height: float, title: str) -> str:
        w, h = math.ceil(width), math.ceil(height)
        head = (f'<svg xmlns="{SVG_NS}" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
                f'font-family="sans-serif">\n<title>{escape(title)}</title>\n'
                f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>\n')
        return head + "\n".join(self.parts) + "\n</svg>\n"


def fits(s: str, width: float, size: float) -> bool:
    """Whether ``s`` at font ``size`` fits in ``width`` (sans-serif, ~0.6 em a character, 2 px margins)."""
    return len(s) * size * 0.6 <= width - 4


def nice(v: float) -> float:
    """The smallest 1/1.2/1.5/2/2.5/3/4/5/6/8 x 10^k at or above ``v`` (an axis top whose fifths are round:
    a 504 GB/s peak gets a 600 axis, not 1,000 with half the chart empty)."""
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v - 1e-12:
            return m * e
    return 10 * e
