"""NAME005-NAME007: the naming rules of docs/security.md's "Names are names" (more cases, through the command line,
in tests/security/test_names*.py)."""

from __future__ import annotations

from tests.helpers import hits, lab


def test_host_name_that_is_an_address():
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu01,[2130706433]"  # written out, it is refused when read
    (h,) = hits(data, "NAME005")
    assert h.path == ("node_groups", 0, "hostnames") and "'2130706433' reads as an IPv4 address" in h.message


def test_host_names_with_digits_are_quiet():
    data = lab()
    data["node_groups"][0]["hostnames"] = "n0x01,allnodes"
    assert hits(data, "NAME005") == []


def test_host_names_differing_only_in_case():
    data = lab()
    data["node_groups"][0]["hostnames"] = "gpu01,HEAD01"
    (h,) = hits(data, "NAME006")
    assert h.path == ("node_groups", 1, "hostnames")
    assert "node group head differ only in case from names of node group gpu (head01 / HEAD01)" in h.message


def test_upper_case_without_a_twin_is_quiet():
    data = lab()
    data["node_groups"][0]["hostnames"] = "GPU01,gpu02"
    assert hits(data, "NAME006") == []


def test_slurmdbd_host_with_an_underscore():
    data = lab()
    data["node_groups"][1]["hostnames"] = "head_01"
    data["slurm"]["controllers"] = "head_01"
    data["storage"][0]["export"] = "head_01:/export/home"
    (h,) = hits(data, "NAME007")
    assert h.path == ("slurm", "controllers") and "'slurm'@'head_01'" in h.message


def test_slurmdbd_host_with_a_hyphen_is_quiet():
    data = lab()
    data["node_groups"][1]["hostnames"] = "head-01"
    data["slurm"]["controllers"] = "head-01"
    data["slurm"]["accounting_host"] = "head-01"
    data["storage"][0]["export"] = "head-01:/export/home"
    assert hits(data, "NAME007") == []
