"""Every file path the README, the docs and the code's comments name exists in the repository
(a path is read from the repository root, from the naming file's directory, or, in a crate,
from the crate's directory). docs/status.md is a log of past states and is not checked."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A path with at least one directory and a file extension, or a markdown link target.
PATH = re.compile(
    r"(?<![\w/.$~-])((?:\.{1,2}/)?(?:[\w.-]+/)+[\w.-]+\.(?:md|py|rs|toml|sh|txt|json|js|html|css|sqrec))"
    r"(?![\w/])"
)
LINK = re.compile(r"\]\(([^)#\s:]+)")

# Named on purpose though not in the repository, each with why.
NOT_IN_REPO = {
    "seed/000_1c24e5d7e9b922a3.txt": "the FlowStorm text the project started from, kept outside the repository",
    "benchmarks/bm_NAME.py": "a pattern (bench/pyperf/benchmarks/bm_*.py)",
    ".squall/tests/examples_invoices_test_invoices.py__test_tax_for_japan.sqrec": "made by the command before it",
    "bench/gc_pause.py": "history: removed in 7655f57, as the section says",
    "crates/squall_python/src/collect.rs": "history: removed by the value redesign (8c90155), as the text says",
    "tests/test_gc_faithful.py": "history: removed by the value redesign (8c90155), as the text says",
    "tests/test_make.py": "attrs' own test file (docs/realworld.md runs attrs' suite)",
}
OTHER_PROJECTS = ("pyperformance/",)


def _files():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    docs = [f for f in tracked if f.endswith(".md") and f != "docs/status.md" and not f.startswith("tests/")]
    code = [
        f
        for f in tracked
        if f.endswith((".rs", ".py", ".toml", ".sh"))
        and (
            f.startswith(("python/", "scripts/", "bench/", "Cargo.toml", "pyproject.toml"))
            or re.match(r"crates/[^/]+/(src/|Cargo.toml|fuzz/)", f)
        )
    ]
    return docs + code


def _resolves(ref: str, named_in: str) -> bool:
    bases = [ROOT, (ROOT / named_in).parent]
    parts = Path(named_in).parts
    if parts[0] == "crates" and len(parts) > 2:
        bases.append(ROOT / "crates" / parts[1])
    return any((b / ref).exists() for b in bases)


def test_every_named_path_exists():
    missing = []
    for f in _files():
        text = (ROOT / f).read_text(encoding="utf-8", errors="replace")
        for ref in set(PATH.findall(text)) | {m for m in LINK.findall(text) if "/" in m or "." in m}:
            if ref.startswith(("http", "www.") + OTHER_PROJECTS) or ref in NOT_IN_REPO or _resolves(ref, f):
                continue
            missing.append(f"{f}: {ref}")
    assert not missing, "paths that name no file:\n" + "\n".join(sorted(missing))


def test_the_format_spec_is_where_the_readme_says():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "crates/squall_store/docs/format.md" in readme
    assert (ROOT / "crates/squall_store/docs/format.md").is_file()
