"""Host lists: exact strings both ways, as Slurm writes them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterctl import hostlist


@pytest.mark.parametrize("expr,names", [
    ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]),
    ("head[01-02],login01", ["head01", "head02", "login01"]),
    ("r[1-2,7]", ["r1", "r2", "r7"]),
    ("a[1-2]b[0-1]", ["a1b0", "a1b1", "a2b0", "a2b1"]),
    ("solo", ["solo"]),
])
def test_expand(expr, names):
    assert hostlist.expand(expr) == names
    assert hostlist.count(expr) == len(names)


@pytest.mark.parametrize("names,expr", [
    ([f"gpu{i:04d}" for i in range(1, 1201)], "gpu[0001-1200]"),
    (["a1", "a2", "a3", "a5", "b"], "a[1-3,5],b"),
    (["gpu0999", "gpu1000"], "gpu[0999-1000]"),
    (["n9", "n10"], "n[9-10]"),
    (["x01", "y01", "x02"], "x01,y01,x02"),
])
def test_compress(names, expr):
    assert hostlist.compress(names) == expr


@pytest.mark.parametrize("bad", ["", "a[1-", "a]", "a[3-1]", "a b", "a[x]", "a,,b"])
def test_bad_expressions_raise_hostlist_error(bad):
    with pytest.raises(hostlist.HostlistError):
        hostlist.expand(bad)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=60, unique=True), st.sampled_from([0, 3, 5]))
def test_compress_then_expand_round_trips(nums, width):
    names = [f"gpu{str(n).zfill(width)}" for n in sorted(nums)]
    assert hostlist.expand(hostlist.compress(names)) == names
