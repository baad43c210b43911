"""A blueprint value that would reach a Kubernetes name or label badly is refused through the real command line,
located, and nothing is written: at load where the blueprint field itself is Kubernetes' (namespace, queue: exit 2),
by rule K8S002 where a planned name is (a host name in upper case: exit 1, validate and render alike), and by the
kubernetes target itself when that error is suppressed (exit 2, "cannot render")."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import REPO, cli

GB200 = "blueprints/gb200-nvl72-8rack.yaml"


def variant(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """The shipped GB200 blueprint with one text replaced, written to ``tmp_path``, and the line it is on."""
    source = (REPO / GB200).read_text()
    assert source.count(old) == 1
    path = tmp_path / "bp.yaml"
    path.write_text(source.replace(old, new))
    return path, next(n for n, line in enumerate(path.read_text().splitlines(), 1) if new in line)


def test_upper_case_namespace_is_refused_at_load(tmp_path):
    bp, line = variant(tmp_path, "  namespace: training", "  namespace: Training")
    out = tmp_path / "out"
    for args in (("validate", str(bp)), ("render", str(bp), "-o", str(out), "--target", "kubernetes")):
        r = cli(*args)
        assert r.returncode == 2, r.stderr
        assert f"bp.yaml:{line}:14" in r.stderr and "kubernetes.namespace is 'Training' (text): a DNS label may not " \
                                                     "contain 'T'" in r.stderr
    assert not out.exists()


def test_upper_case_host_names_are_reported_and_refused(tmp_path):
    bp, line = variant(tmp_path, 'hostnames: "gb[001-144]"', 'hostnames: "GB[001-144]"')
    out = tmp_path / "out"
    message = "host GB001 (a Node's name): 'GB001' cannot be a Kubernetes object name: a Kubernetes object name " \
              "may not contain 'G'"
    r = cli("validate", str(bp))
    assert r.returncode == 1 and "error[K8S002]" in r.stdout + r.stderr
    assert f"bp.yaml:{line}:54" in r.stdout + r.stderr and message + " (and 143 more)" in r.stdout + r.stderr
    r = cli("render", str(bp), "-o", str(out), "--target", "kubernetes")
    assert r.returncode == 1 and "not rendered" in r.stderr and "K8S002" in r.stderr
    assert not out.exists()
    r = cli("render", str(bp), "-o", str(out), "--target", "kubernetes", "--suppress", "K8S002")
    assert r.returncode == 2
    assert f"error: {bp}:{line}:54: cannot render: kubernetes target: {message}\n" in r.stderr
    assert not out.exists()
