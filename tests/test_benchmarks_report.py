"""BENCHMARKS.md is a report a reader can check: a claims table first, each claim on a records
folder with a manifest; README's headline figures are claims of that table, linked by stable
anchors; benchmarks/results holds records, not scripts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "BENCHMARKS.md"
README = REPO / "README.md"
RESULTS = REPO / "benchmarks" / "results"
MANIFEST_KEYS = {"command", "commit", "date", "machine", "seeds"}
POLICY_FILES = {"policy.json", "policy.npz"}
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?[×M%k]?")
LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")


def section(text: str, heading: str) -> list[str]:
    """The lines under `heading` up to the next heading of its level or above."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    level = heading.split()[0]
    end = next((i for i in range(start, len(lines))
                if lines[i].startswith("#") and lines[i].split()[0] <= level), len(lines))  # fmt: skip
    return lines[start:end]


def table_rows(lines: list[str]) -> list[list[str]]:
    """The first markdown table's body rows, as cells."""
    rows = []
    for line in lines:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    assert len(rows) > 2, "a table with a header"
    assert set(rows[1][0]) <= set("-: "), "a header's rule"
    return rows[2:]


def claims() -> list[list[str]]:
    return table_rows(section(BENCHMARKS.read_text(), "## Claims"))


def headline() -> list[list[str]]:
    return table_rows(section(README.read_text(), "## Headline figures"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lstrip("#").strip().lower())
    return text.replace(" ", "-")


def anchors() -> set[str]:
    text = BENCHMARKS.read_text()
    ids = set(re.findall(r'<a id="([^"]+)"></a>', text))
    return ids | {slug(line) for line in text.splitlines() if line.startswith("#")}


def records_folders() -> list[Path]:
    """Every folder under benchmarks/results that holds records itself; a bare policy a run
    kept (policy.json, policy.npz) and an object store's tree belong to the folder above."""
    folders = []
    for folder in sorted(p for p in RESULTS.rglob("*") if p.is_dir()):
        if "store" in folder.relative_to(RESULTS).parts:
            continue
        files = {p.name for p in folder.iterdir() if p.is_file()} - {"manifest.json"}
        if files and not files <= POLICY_FILES:
            folders.append(folder)
    return folders


def test_benchmarks_is_a_report_with_the_claims_table_first() -> None:
    lines = BENCHMARKS.read_text().splitlines()
    assert len(lines) <= 400, f"BENCHMARKS.md has {len(lines)} lines: a report, not a diary"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## Claims"
    rows = claims()
    assert rows, "claims"
    assert all(len(row) == 6 for row in rows), "claim, figure, seeds, command, commit, records"
    ids = [re.search(r'<a id="(claim-[a-z0-9-]+)"></a>', row[0]) for row in rows]
    assert all(ids), "every claim has a stable anchor"
    assert len({match.group(1) for match in ids if match}) == len(rows), "anchors are unique"
    for area in ("Env", "Trainer", "Loop", "Explore", "Win", "Fleet", "Console", "Evaluator"):
        assert f"## {area}" in headings, f"a section for {area}"


@pytest.mark.parametrize("row", claims(), ids=lambda row: row[0][:40])
def test_every_claim_names_records_with_a_manifest(row: list[str]) -> None:
    folders = re.findall(r"`(benchmarks/results/[^`]+)`", row[5])
    assert folders, f"no records folder in {row[5]!r}"
    for name in folders:
        folder = REPO / name
        assert folder.is_dir(), f"{name} does not exist"
        manifest = json.loads((folder / "manifest.json").read_text())
        lacking = MANIFEST_KEYS - manifest.keys()
        assert not lacking, f"{name}/manifest.json lacks {lacking}"
        assert {"cores", "cpu_model"} <= manifest["machine"].keys()
    assert row[3], "a command"
    assert row[4], "a commit"


def test_every_records_folder_has_a_manifest() -> None:
    missing = []
    for folder in records_folders():
        path = folder / "manifest.json"
        if not path.is_file() or MANIFEST_KEYS - json.loads(path.read_text()).keys():
            missing.append(str(folder.relative_to(REPO)))
    assert not missing, f"records folders without a complete manifest.json: {missing}"


def test_no_script_under_benchmarks_results() -> None:
    scripts = [p for p in RESULTS.rglob("*") if p.suffix in (".py", ".sh")]
    assert not scripts, f"scripts belong in benchmarks/tools: {scripts}"


def test_readme_headline_figures_are_claims_linked_by_stable_anchors() -> None:
    rows = headline()
    assert 0 < len(rows) <= 8
    table = "\n".join(" | ".join(row) for row in claims())
    known = anchors()
    for what, figure in rows:
        visible = LINK.sub(lambda m: m.group(1), f"{what} {figure}")
        assert len(visible.split()) <= 40, f"{what!r}: {len(visible.split())} words"
        links = [target for _, target in LINK.findall(figure)]
        claim_links = [t for t in links if t.startswith("BENCHMARKS.md#claim-")]
        assert claim_links, f"{what!r} points at no claims row"
        for target in claim_links:
            assert target.split("#", 1)[1] in known, f"{target} is no anchor of BENCHMARKS.md"
        for number in NUMBER.findall(LINK.sub(lambda m: m.group(1), figure)):
            assert number in table, f"{what!r}: {number} is not in the claims table"


def test_readme_links_into_benchmarks_resolve() -> None:
    known = anchors()
    targets = re.findall(r"\(BENCHMARKS\.md#([^)]+)\)", README.read_text())
    assert targets
    assert [t for t in targets if t not in known] == []
