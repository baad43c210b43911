"""The command line as users run it: exit codes, located messages, machine formats."""

from __future__ import annotations

import json
import re

from clusterctl.location import Position

from tests.helpers import REPO, cli, plan_of, shipped, to_yaml

LAB = "blueprints/lab-2node.yaml"


def test_validate_shipped_lab_exits_0():
    r = cli("validate", LAB)
    assert r.returncode == 0, r.stderr
    # the whole summary line, so "invalid" or "FAILED" cannot pass for "valid"
    assert re.fullmatch(rf"{re.escape(LAB)}: valid: 0 error\(s\), 0 warning\(s\), 0 info from \d+ rules; "
                        r"3 nodes, 16 GPUs, 2 switches, 1 racks\n", r.stderr), r.stderr
    assert r.stdout == ""


def test_version():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("clusterctl ")


def write(tmp_path, text: str, name: str = "bp.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_unknown_key_is_located_with_did_you_mean(tmp_path):
    text = to_yaml(shipped("lab-2node")).replace("node_groups:", "node_grups:", 1)
    path = write(tmp_path, text)
    r = cli("validate", path)
    assert r.returncode == 2
    line = text.splitlines().index("node_grups:") + 1
    assert f"{path}:{line}:1" in r.stderr
    assert "did you mean 'node_groups'" in r.stderr
    assert "Traceback" not in r.stderr


def test_broken_yaml_is_located(tmp_path):
    path = write(tmp_path, "name: x\nnode_types: {a: [\n  b: c\n")
    r = cli("validate", path)
    assert r.returncode == 2
    assert "not valid YAML" in r.stderr and f"{path}:" in r.stderr
    assert "Traceback" not in r.stderr


def test_wrong_type_says_what_was_expected(tmp_path):
    data = shipped("lab-2node")
    data["node_groups"][0]["count"] = "two"
    r = cli("validate", write(tmp_path, to_yaml(data)))
    assert r.returncode == 2
    assert "node_groups[0].count must be a whole number, got 'two' (text)" in r.stderr


def test_unknown_catalog_name_is_located(tmp_path):
    data = shipped("lab-2node")
    data["node_types"]["hgx"]["server"] = "hgx-h100-8gpus"
    r = cli("validate", write(tmp_path, to_yaml(data)))
    assert r.returncode == 2
    assert "unknown server model 'hgx-h100-8gpus'" in r.stderr and "did you mean 'hgx-h100-8gpu'" in r.stderr


def test_missing_file_exits_2(tmp_path):
    r = cli("validate", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "cannot read blueprint" in r.stderr


def test_json_and_sarif_outputs(tmp_path):
    data = shipped("lab-2node")
    data["rack_profiles"]["lab"]["power_kw"] = 5
    path = write(tmp_path, to_yaml(data))
    r = cli("validate", path, "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["status"] == "failed"
    hit = [f for f in doc["findings"] if f["code"] == "POWER001"][0]
    assert hit["location"]["file"] == path and hit["location"]["line"] > 1
    r = cli("validate", path, "--format", "sarif")
    sarif = json.loads(r.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    res = [x for x in run["results"] if x["ruleId"] == "POWER001"][0]
    assert res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == hit["location"]["line"]
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "POWER001"


def test_suppress_on_cli_and_in_blueprint(tmp_path):
    data = shipped("lab-2node")
    data["rack_profiles"]["lab"]["power_kw"] = 5
    path = write(tmp_path, to_yaml(data))
    assert cli("validate", path).returncode == 1
    assert cli("validate", path, "--suppress", "POWER001,POWER002").returncode == 0
    # a blueprint suppresses warnings and infos only: its entries leave these errors active (and say so)
    data.setdefault("validation", {})["suppress"] = [{"rule": "POWER001", "reason": "temporary feed"},
                                                     {"rule": "POWER002", "reason": "temporary feed"}]
    r = cli("validate", write(tmp_path, to_yaml(data), "b.yaml"), "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert not any(f.get("suppressed") for f in doc["findings"])
    assert [f["path"] for f in doc["findings"] if f["code"] == "META002"] == ["validation.suppress[0].rule"]
    bad = cli("validate", path, "--suppress", "POWER01")
    assert bad.returncode == 2 and "did you mean 'POWER001'" in bad.stderr


def test_fail_on_warning(tmp_path):
    data = shipped("lab-2node")
    data["site"]["it_power_kw"] = round(plan_of(data).it_power_kw / 0.95, 1)  # 95 % used: a warning only
    path = write(tmp_path, to_yaml(data))
    r = cli("validate", path, "--format", "json")
    doc = json.loads(r.stdout)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "warning"] == ["POWER004"]
    assert r.returncode == 0
    assert cli("validate", path, "--fail-on", "warning").returncode == 1
    assert cli("validate", path, "--fail-on", "never").returncode == 0


def test_bad_option_is_misuse():
    r = cli("validate", LAB, "--format", "xml")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_rules_list_and_explain():
    r = cli("rules", "list")
    assert r.returncode == 0 and "POWER001" in r.stdout
    r = cli("rules", "explain", "power001")
    assert r.returncode == 0 and "continuous" not in r.stdout.split("\n")[0]
    assert "POWER001" in r.stdout and "suppress" in r.stdout
    r = cli("rules", "explain", "POWER999")
    assert r.returncode == 2


def test_schema_and_catalog_commands():
    r = cli("schema")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "clusterctl blueprint"
    r = cli("catalog", "switches")
    assert r.returncode == 0 and "qm9700" in r.stdout
    r = cli("catalog", "switchs")
    assert r.returncode == 2 and "did you mean 'switches'" in r.stderr
    r = cli("catalog", "--format", "json")
    assert "h100-sxm" in json.loads(r.stdout)["accelerators"]


def test_init_from_preset(tmp_path):
    out = tmp_path / "mine.yaml"
    r = cli("init", "lab-2node", "-o", str(out))
    assert r.returncode == 0 and out.read_text() == (REPO / LAB).read_text()
    assert cli("init", "lab-2node", "-o", str(out)).returncode == 2


# --- bounded input: every bad input of issue 9 ends in exit 2 at FILE:LINE, never a hang or exit 3 ------------

LAB_TEXT = (REPO / LAB).read_text()


def alias_bomb() -> str:
    """The 400-byte "billion laughs": nine levels of nine aliases, 9**9 strings once expanded."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def refused(r, location: str, code: str) -> None:
    """Exit 2, the problem at ``location`` (FILE:LINE:COL), its code, and no traceback."""
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert f"--> {location}" in r.stderr and f"error[{code}]" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_alias_bomb_is_refused_at_the_alias_before_expansion(tmp_path):
    text = alias_bomb()
    assert len(text) < 420
    path = write(tmp_path, text)
    r = cli("validate", path)
    # a5 would be 9**5 + ... values: the first alias that takes the document past the value limit
    refused(r, f"{path}:6:10", "BP007")
    assert "more than 104,857 YAML values (aliases expanded)" in r.stderr


def test_merge_key_bomb_is_refused(tmp_path):
    lines = ["m0: &m0 {k: 1}"] + [f"m{i}: &m{i} {{<<: [" + ",".join([f"*m{i - 1}"] * 9) + "]}" for i in range(1, 12)]
    path = write(tmp_path, "\n".join(lines) + "\n")
    r = cli("validate", path)
    assert r.returncode == 2 and f"{path}:6:" in r.stderr and "error[BP007]" in r.stderr, r.stderr[-1500:]


def test_cyclic_alias_is_refused(tmp_path):
    path = write(tmp_path, "name: x\nloop: &a [1, *a]\n")
    r = cli("validate", path)
    refused(r, f"{path}:2:14", "BP001")
    assert "alias *a refers to the list or mapping that contains it" in r.stderr


def test_deep_nesting_is_refused_without_crashing_the_parser(tmp_path):
    # 100,000 levels crash PyYAML's recursive composers (libyaml's with SIGSEGV); the limit is 64
    path = write(tmp_path, "name: x\nn: " + "[" * 100_000 + "]" * 100_000 + "\n")
    r = cli("validate", path)
    refused(r, f"{path}:2:67", "BP007")  # "n: " then the 65th "["
    assert "nests deeper than 64 levels" in r.stderr
    assert len(r.stderr) < 5_000  # the 200,000-character line is shown as an excerpt around the caret


def test_deep_alias_nesting_is_refused(tmp_path):
    deep = "[" * 40 + "]" * 40
    path = write(tmp_path, f"name: x\na: &a {deep}\nb: [[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n")
    r = cli("validate", path)
    refused(r, f"{path}:3:32", "BP007")
    assert "alias *a nests deeper than 64 levels" in r.stderr


def test_50_mb_of_unknown_keys_is_refused_by_the_size_limit(tmp_path):
    path = tmp_path / "big.yaml"
    line = "".join(f"unknown_key_{i:07d}: 1\n" for i in range(1000))
    with path.open("w") as f:
        f.write("name: big\n")
        while f.tell() < 50 * 1024 * 1024:
            f.write(line)
    r = cli("validate", str(path))
    refused(r, f"{path}:1:1", "BP006")
    assert "larger than the input limit of 4,194,304 bytes" in r.stderr and "--max-input-size" in r.stderr
    assert len(r.stderr) < 2_000


def test_4_mb_of_unknown_keys_is_refused_with_bounded_output(tmp_path):
    path = tmp_path / "unknown.yaml"
    with path.open("w") as f:
        f.write(LAB_TEXT)
        i = 0
        while f.tell() < 4_000_000:
            f.write(f"k{i}: 1\n")
            i += 1
    r = cli("validate", str(path))
    # "k: 1" is two values: the value limit (size limit / 40) stops the parse long before the end of the file
    first = LAB_TEXT.count("\n")
    assert r.returncode == 2 and "error[BP007]" in r.stderr and f"{path}:" in r.stderr
    line = int(r.stderr.split(f"{path}:")[1].split(":")[0])
    assert first < line < first + 104_857 // 2
    assert len(r.stderr) < 2_000


def test_unknown_keys_under_the_value_limit_print_at_most_20_of_a_kind(tmp_path):
    extra = "".join(f"k{i}: 1\n" for i in range(3000))
    path = write(tmp_path, LAB_TEXT + extra)
    r = cli("validate", path)
    assert r.returncode == 2
    assert r.stderr.count("error[BP003]") == 21, r.stderr[-3000:]
    assert "... and 2,980 more problems of this kind (unknown key), the first here" in r.stderr
    assert len(r.stderr) < 30_000
    first = LAB_TEXT.count("\n") + 1
    assert f"{path}:{first}:1" in r.stderr  # the first unknown key, located


def test_text_output_shows_at_most_25_findings_of_one_rule(tmp_path):
    from clusterctl.output.diagnostics import from_findings, to_text
    from clusterctl.rules.base import Finding, Severity
    from clusterctl.location import SourceMap

    smap = SourceMap("bp.yaml", [f"line {i}" for i in range(1, 101)])
    smap.values.update({("x", i): Position(i + 1, 1) for i in range(100)})
    findings = [Finding("NET001", Severity.ERROR, ("x", i), f"m{i}", title="t") for i in range(100)]
    text = to_text(from_findings(findings, smap), "summary")
    assert text.count("error[NET001]") == 25
    assert "... and 75 more NET001 diagnostic(s) of this kind not shown (use --format json for all)" in text


def test_unknown_keys_in_json_are_summarised_past_the_cap(tmp_path):
    extra = "".join(f"k{i}: 1\n" for i in range(3000))
    r = cli("validate", "--format", "json", write(tmp_path, LAB_TEXT + extra))
    assert r.returncode == 2
    findings = json.loads(r.stdout)["findings"]
    assert len(findings) == 21
    assert findings[-1]["message"].startswith("... and 2,980 more problems of this kind")


def test_dev_zero_is_refused_without_reading_it():
    r = cli("validate", "/dev/zero")
    refused(r, "/dev/zero:1:1", "BP006")
    assert "is a character device, not a regular file" in r.stderr


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    import os

    fifo = tmp_path / "bp.yaml"
    os.mkfifo(fifo)
    r = cli("validate", str(fifo))  # would block in open() forever without O_NONBLOCK
    refused(r, f"{fifo}:1:1", "BP006")
    assert "is a pipe (FIFO), not a regular file" in r.stderr


def test_a_directory_is_refused(tmp_path):
    r = cli("validate", str(tmp_path))
    refused(r, f"{tmp_path}:1:1", "BP006")
    assert "is a directory, not a regular file" in r.stderr


def test_max_input_size_option_and_env_var_raise_the_limit(tmp_path):
    path = write(tmp_path, LAB_TEXT + "# padding\n" * 1000)  # ~11 KB
    small = cli("--max-input-size", "5KB", "validate", path)
    refused(small, f"{path}:1:1", "BP006")
    assert "larger than the input limit of 5,000 bytes" in small.stderr
    assert cli("--max-input-size", "16MiB", "validate", path).returncode == 0
    env = subprocess_env(CLUSTERCTL_MAX_INPUT_SIZE="5KB")
    assert cli_env(env, "validate", path).returncode == 2
    bad = cli("--max-input-size", "lots", "validate", path)
    assert bad.returncode == 2 and "--max-input-size: 'lots' is not a size" in bad.stderr


def subprocess_env(**extra: str) -> dict:
    import os

    return dict(os.environ, **extra)


def cli_env(env: dict, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "clusterctl", *args], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=120)


def test_json_never_contains_infinity_or_nan():
    from clusterctl.output import finite_json
    from clusterctl.output.diagnostics import to_json

    inf, nan = float("inf"), float("nan")
    text = finite_json.dumps({"a": inf, "b": [nan, 1.5, -inf], "c": {"d": (inf, 2)}, "e": "inf"})
    assert json.loads(text) == {"a": None, "b": [None, 1.5, None], "c": {"d": [None, 2]}, "e": "inf"}
    assert "Infinity" not in text and "NaN" not in text
    doc = to_json([], "bp.yaml", "valid", {"cluster": {"pue": nan, "power_kw": inf}})
    assert json.loads(doc)["cluster"] == {"pue": None, "power_kw": None}
    json.loads(doc, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))  # strict JSON


def test_text_output_is_bounded_in_all():
    """200 rules firing, and 5,000 locations with 5 repeats each: at most 100 blocks and a few counting lines."""
    from clusterctl.output.diagnostics import from_findings, to_text
    from clusterctl.rules.base import Finding, Severity
    from clusterctl.location import SourceMap

    smap = SourceMap("bp.yaml", ["x" * 10_000] * 5000)
    smap.values.update({("x", i): Position(i + 1, 5000) for i in range(5000)})
    many_rules = [Finding(f"R{i:03d}", Severity.ERROR, ("x", i), "m" * 5000, title="t") for i in range(200)]
    text = to_text(from_findings(many_rules, smap), "summary")
    assert text.count("error[R") == 100 and "... and 100 more diagnostic(s) not shown" in text
    assert len(text) < 100 * 1_200  # messages cut at 400 characters, source lines at 120 around the caret
    assert "m" * 400 + "... (4,600 more characters)" in text
    repeats = [Finding("NET001", Severity.ERROR, ("x", i), "m", title="t") for i in range(5000) for _ in range(5)]
    text = to_text(from_findings(repeats, smap), "summary")
    assert text.count("error[NET001]") == 25 and len(text.splitlines()) < 25 * 8 + 30
    # 8 locations shown 3 times and a 9th once; the rest is counted, once per shown location and once in all
    counted = [int(n.replace(",", "")) for n in re.findall(r"^\.\.\. and ([\d,]+) more", text, re.MULTILINE)]
    assert sum(counted) == 25_000 - 25 and len(counted) == 10
    assert "... and 24,957 more NET001 diagnostic(s) of this kind not shown" in text


def test_catalog_json_writes_a_non_finite_number_as_null(tmp_path):
    # the model's finite-number check is the real guard; the JSON writer must not emit Infinity either way
    data = shipped("lab-2node")
    data["catalog"] = {"servers": {"box": dict(plan_of(shipped("lab-2node")).catalog.servers["cpu-1u"]
                                               .model_dump(mode="json"), power_kw=float("inf"))}}
    r = cli("catalog", "servers", "--format", "json", "--blueprint", write(tmp_path, to_yaml(data)))
    if r.returncode == 0:  # .inf accepted by the model: it must come out as null
        doc = json.loads(r.stdout, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))
        assert doc["servers"]["box"]["power_kw"] is None
    else:  # refused by the model: a located exit 2
        assert r.returncode == 2 and "power_kw" in r.stderr and "Traceback" not in r.stderr
