"""clusterctl.hidden_chars.shown: the one way a message quotes an untrusted value (blueprint text, a stack
output, a name a target refuses): one line, quoted, escaped, cut with its length said."""

from __future__ import annotations

import pytest

from clusterctl.hidden_chars import shown


@pytest.mark.parametrize("value,expected", [
    ("10.0.0.1", "'10.0.0.1'"),
    ("gpu 01", "'gpu 01'"),
    ("a\nb", "'a\\nb'"),
    ("a\tb\rc", "'a\\tb\\rc'"),
    ("\x1b[2J", "'\\x1b[2J'"),
    ("x\u202ey", "'x\\u202ey'"),             # bidi control: would reorder the message
    ("x\u200by", "'x\\u200by'"),             # zero-width space: invisible
    ("x\u2028y", "'x\\u2028y'"),             # line separator: a line end to YAML 1.1
    ("x\U000e0041y", "'x\\U000e0041y'"),     # tag character
    ("x\u00a0y", "'x\\xa0y'"),               # no-break space: looks like a space
    ("it's", "'it\\'s'"),
    ("C:\\temp", "'C:\\\\temp'"),
    ("h\u00e9te", "'h\u00e9te'"),            # printable non-ASCII stays as it is
])
def test_text_is_quoted_and_every_character_a_reader_cannot_see_is_an_escape(value, expected):
    assert shown(value) == expected


def test_long_text_is_cut_and_its_length_said():
    assert shown("x" * 500) == "'" + "x" * 60 + "...' (500 characters)"
    assert shown("x" * 50_000_000, what="text") == "'" + "x" * 60 + "...' (50,000,000 characters of text)"
    assert shown("abcdef", 3) == "'abc...' (6 characters)"
    assert shown("\n" * 100, 2) == "'\\n\\n...' (100 characters)"


def test_the_kind_of_value_follows_it():
    assert shown("4", what="text") == "'4' (text)"


@pytest.mark.parametrize("value,expected", [
    (None, "null"),
    (["1"], '["1"]'),
    ({"private_ip": "a\nb\u202e"}, '{"private_ip": "a\\nb\\u202e"}'),
    (42, "42"),
    ({1, 2}, "{1, 2}"),                      # not JSON: ascii()
])
def test_other_values_are_json_in_printable_ascii(value, expected):
    assert shown(value) == expected
