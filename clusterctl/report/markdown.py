"""Text into ``report.md``: every string the report did not write itself is escaped here, once.

A blueprint's ``catalog:`` sets descriptions, vendors and ``sources`` lines (free text), and validation
messages quote them; in a Markdown viewer such text could open an HTML tag, show an image that calls a
remote server, or become a link (``[click](javascript:...)``, a bare ``https://`` or ``www.`` address). So:

* :func:`text` turns any string into Markdown that renders as exactly that string, with no tag, entity,
  link, image, autolink, emphasis, code span or table cell break of its own. It is for inline positions
  (a table cell, words within a sentence); the report never starts a line with such text, so block syntax
  (``#``, ``>``, ``-`` at the start of a line) cannot arise.
* :class:`Markup` marks the few strings the report builds as Markdown on purpose (``**bold**``, the
  ``[1]`` source references); :func:`clusterctl.report.section.md_table` escapes every other cell with
  :func:`text`, so a value reaches a table escaped unless code says otherwise.

Prose sentences pass their free text (catalog sources, model sources, messages) through :func:`text`.
"""

from __future__ import annotations

_BACKSLASHED = frozenset("\\`*[]|~$")
"""escaped wherever they are: backslash, code span, emphasis, link/image brackets, table cell, strikethrough,
math (GitHub renders ``$...$``). With ``[`` and ``]`` escaped no link, image or reference definition can
form, so ``(``, ``)`` and ``!`` stay as they are."""
_ENTITIES = {"&": "&amp;", "<": "&lt;"}
"""``<`` opens HTML and ``<https://...>`` autolinks; ``&`` starts an entity"""


class Markup(str):
    """A string that already is Markdown, written by the report's own code (never blueprint text)."""

    __slots__ = ()


def text(value: object) -> str:
    """``value`` as Markdown that shows exactly ``str(value)`` and nothing else."""
    s = str(value)
    out: list[str] = []
    for i, c in enumerate(s):
        if c in _ENTITIES:
            out.append(_ENTITIES[c])
        elif c in _BACKSLASHED:
            out.append("\\" + c)
        elif c == "_" and not (0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()):
            out.append("\\_")  # inside a word ``_`` is never emphasis (CommonMark), so a_b stays a_b
        elif c == ":" and s.startswith("//", i + 1):
            out.append("\\:")  # https://host: not an autolink (GitHub links bare http://, https://, ftp://)
        elif c == "." and s[max(0, i - 3):i].lower() == "www" and (i < 4 or not s[i - 4].isalnum()):
            out.append("\\.")  # www.host: not an autolink
        elif c == "@":
            out.append("\\@")  # name@host: not a mail autolink
        else:
            out.append(c)
    return "".join(out)
