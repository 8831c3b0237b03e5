"""Runs real libraries' test suites plainly and fully instrumented by squall; compares outcomes.

    python tests/realworld/run_suites.py [--only NAME ...] [--work /tmp/squall_realworld]
                                         [--mode full|calls] [--per-file] [--no-save]

For each library below: a venv under ``--work`` (made from this interpreter), the library and its
test dependencies installed from PyPI, the tests taken from the library's sdist, then pytest run
twice with the plugin ``squall_rw_plugin`` (this directory):

1. plainly (the plugin only writes each test's outcome);
2. with squall's import hook installed for the library's top-level package(s) before anything
   imports it, full mode, recording on for the whole session and saved to a file next to the
   outcomes (as `squall run` does; `--no-save` keeps it in memory only).

Prints, per library, how many tests ran and every test whose outcome differs, and writes
``results.json`` in the work directory. squall is the one this interpreter imports (its package
directory is linked into the library's PYTHONPATH), so run this with the checkout's venv after
``scripts/setup.sh``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# name, version, include prefixes, extra pip packages, tests dir inside the sdist (None: the
# installed package's own tests, run with --pyargs), extra pytest args
LIBRARIES = [
    ("more-itertools", "10.5.0", ["more_itertools"], [], "tests", []),
    ("toolz", "1.0.0", ["toolz", "tlz"], [], None, ["--pyargs", "toolz"]),
    ("attrs", "24.2.0", ["attr", "attrs"], ["hypothesis", "pympler", "cloudpickle"], "tests",
     ["-p", "no:mypy-plugins"]),
    ("jinja2", "3.1.4", ["jinja2"], ["trio"], "tests", []),
    ("pyparsing", "3.1.4", ["pyparsing"], ["railroad-diagrams", "jinja2"], "tests", []),
    ("sqlparse", "0.5.1", ["sqlparse"], [], "tests", []),
    # markdown's test_legacy.py calls warnings.simplefilter("error") at import: pytest's warning
    # that it cannot collect the unittest helper class `TestSuite` (it has an __init__) is then a
    # collection error, plainly too; the other tests run past it.
    ("markdown", "3.7", ["markdown"], ["pyyaml"], "tests", ["--continue-on-collection-errors"]),
]


def sh(cmd, **kw):
    kw.setdefault("check", True)
    return subprocess.run([str(c) for c in cmd], **kw)


def sdist_tests(work: Path, name: str, version: str, tests: str, venv_py: Path) -> Path:
    """The sdist's tests directory copied to work/<name>-tests (plus a root conftest.py)."""
    dl = work / "sdist"
    dl.mkdir(parents=True, exist_ok=True)
    tgz = next(dl.glob(f"{name.replace('-', '?')}-{version}.tar.gz"), None) or next(
        dl.glob(f"{name.replace('-', '_')}-{version}.tar.gz"), None)
    if tgz is None:
        sh([venv_py, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
            f"{name}=={version}", "-d", dl])
        tgz = next(p for p in dl.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(
            f"{name}-{version}".lower()))
    out = work / f"{name}-src"
    if not out.exists():
        with tarfile.open(tgz) as t:
            t.extractall(work / "extract")
        top = next(p for p in (work / "extract").iterdir()
                   if p.name.lower().replace("_", "-") == f"{name}-{version}".lower())
        shutil.rmtree(work / "extract" / top.name, ignore_errors=False) if False else None
        dest = work / f"{name}-tests-root"
        dest.mkdir(exist_ok=True)
        shutil.copytree(top / tests, dest / tests, dirs_exist_ok=True)
        if (top / "examples").is_dir():  # some suites import them (pyparsing)
            shutil.copytree(top / "examples", dest / "examples", dirs_exist_ok=True)
        if (top / "conftest.py").exists():
            shutil.copy(top / "conftest.py", dest / "conftest.py")
        out.mkdir()
    return work / f"{name}-tests-root"


def squall_path(work: Path) -> Path:
    """A directory holding only `squall`: the package this interpreter imports (installed with
    its engine, e.g. by scripts/setup.sh), linked, so that the library's venv gets squall and
    nothing else of this one."""
    import squall

    d = work / "squall-path"
    d.mkdir(parents=True, exist_ok=True)
    link = d / "squall"
    target = Path(squall.__file__).resolve().parent
    if link.is_symlink() and link.resolve() != target:
        link.unlink()
    if not link.exists():
        link.symlink_to(target, target_is_directory=True)
    return d


def run_pytest(venv_py: Path, cwd: Path, args, include, out_json: Path, mode: str,
               save: bool = True) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(squall_path(out_json.parent))])
    env["SQUALL_RW_OUT"] = str(out_json)
    env["PYTHONHASHSEED"] = "0"
    env.pop("SQUALL_RW_INCLUDE", None)
    if include:
        env["SQUALL_RW_INCLUDE"] = ",".join(include)
        env["SQUALL_RW_MODE"] = mode
        if save:
            env["SQUALL_RW_SAVE"] = str(out_json.with_suffix(".sqrec"))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([str(venv_py), "-m", "pytest", "-q", "-p", "squall_rw_plugin", "-p",
                              "no:cacheprovider", "-rN", *args],
                             cwd=str(cwd), env=env, stdout=out, stderr=err, text=True)
        # wait4 gives this child's own peak RSS (getrusage's covers every child so far).
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        r = subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read())
    dt = time.perf_counter() - t0
    if not out_json.exists():
        raise SystemExit(f"pytest wrote no outcomes (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    data = json.loads(out_json.read_text())
    data["seconds"] = round(dt, 1)
    data["peak_rss_mb"] = round(usage.ru_maxrss / 1024)
    data["stderr_tail"] = r.stderr[-2000:]
    data["stdout_tail"] = r.stdout[-2000:]
    return data


def run_per_file(venv_py: Path, cwd: Path, tests: str, pyargs, include, out_dir: Path,
                 mode: str, save: bool = True) -> dict:
    """The squall run split into one pytest process per test file; outcomes merged, engine
    stats summed (entries, kept_bytes, ...), limits and recorded tests collected per file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    merged = {"outcomes": {}, "engine_stats": {}, "limits_hit": [], "instrumented": set(),
              "failed_to_instrument": set(), "recorded_tests": 0, "recording_stopped_in": [],
              "seconds": 0.0, "stdout_tail": "", "stderr_tail": ""}
    for f in sorted((cwd / tests).rglob("test_*.py")):
        rel = f.relative_to(cwd)
        d = run_pytest(venv_py, cwd, [str(rel), *pyargs], include,
                       out_dir / (str(rel).replace(os.sep, "_") + ".json"), mode, save)
        merged["outcomes"].update(d["outcomes"])
        for k, v in (d.get("engine_stats") or {}).items():
            merged["engine_stats"][k] = merged["engine_stats"].get(k, 0) + v
        merged["limits_hit"] += [dict(h, file=str(rel)) for h in d.get("limits_hit") or []]
        merged["instrumented"].update(d.get("instrumented") or [])
        merged["failed_to_instrument"].update(d.get("failed_to_instrument") or [])
        merged["recorded_tests"] += d.get("recorded_tests") or 0
        if d.get("recording_stopped_in"):
            merged["recording_stopped_in"].append(d["recording_stopped_in"])
        merged["seconds"] += d["seconds"]
        merged["peak_rss_mb"] = max(merged.get("peak_rss_mb", 0), d["peak_rss_mb"])
        merged["stdout_tail"] += d["stdout_tail"][-300:]
        merged["stderr_tail"] += d["stderr_tail"][-300:]
    merged["seconds"] = round(merged["seconds"], 1)
    merged["instrumented"] = sorted(merged["instrumented"])
    merged["failed_to_instrument"] = sorted(merged["failed_to_instrument"])
    return merged


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--work", default="/tmp/squall_realworld")
    ap.add_argument("--mode", default="full", choices=["full", "calls"])
    ap.add_argument("--per-file", action="store_true",
                    help="squall run: one pytest process (and recording) per test file, so that a "
                         "memory limit reached in one file does not leave the rest unrecorded")
    ap.add_argument("--no-save", action="store_true",
                    help="keep the recording in memory only (the memory limit then stops recording "
                         "instead of saved entries leaving memory)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, version, include, extra, tests, pyargs in LIBRARIES:
        if args.only and name not in args.only:
            continue
        venv = work / f"venv-{name}"
        py = venv / "bin" / "python"
        if not py.exists():
            sh([sys.executable, "-m", "venv", venv])
            sh([py, "-m", "pip", "install", "-q", "pytest", f"{name}=={version}", *extra])
        if tests is not None:
            cwd = sdist_tests(work, name, version, tests, py)
            targs = [tests, *pyargs]
        else:
            cwd = work / f"{name}-run"
            cwd.mkdir(exist_ok=True)
            targs = list(pyargs)
        plain = run_pytest(py, cwd, targs, None, work / f"{name}-plain.json", args.mode)
        if args.per_file and tests is not None:
            inst = run_per_file(py, cwd, tests, pyargs, include, work / f"{name}-squall", args.mode,
                                not args.no_save)
        else:
            inst = run_pytest(py, cwd, targs, include, work / f"{name}-squall.json", args.mode,
                              not args.no_save)
        po, io = plain["outcomes"], inst["outcomes"]
        diffs = {k: (po.get(k), io.get(k)) for k in sorted(set(po) | set(io)) if po.get(k) != io.get(k)}
        counts = {}
        for v in po.values():
            counts[v] = counts.get(v, 0) + 1
        results[name] = {
            "version": version,
            "tests": len(po),
            "plain_counts": counts,
            "same": sum(1 for k in po if io.get(k) == po[k]),
            "differences": diffs,
            "plain_seconds": plain["seconds"],
            "squall_seconds": inst["seconds"],
            "plain_peak_rss_mb": plain["peak_rss_mb"],
            "squall_peak_rss_mb": inst["peak_rss_mb"],
            "engine_stats": inst.get("engine_stats"),
            "limits_hit": inst.get("limits_hit"),
            "recorded_tests": inst.get("recorded_tests"),
            "recording_stopped_in": inst.get("recording_stopped_in"),
            "instrumented_modules": len(inst.get("instrumented", [])),
            "failed_to_instrument": inst.get("failed_to_instrument"),
            "saved_to": inst.get("saved_to"),
            "saved_bytes": os.path.getsize(inst["saved_to"]) if inst.get("saved_to") else None,
        }
        r = results[name]
        print(f"{name} {version}: {r['tests']} tests {counts}, same outcome {r['same']}, "
              f"differences {len(diffs)}; plain {r['plain_seconds']}s {r['plain_peak_rss_mb']} MB, squall "
              f"{r['squall_seconds']}s {r['squall_peak_rss_mb']} MB (peak RSS); "
              f"{r['instrumented_modules']} modules instrumented; entries "
              f"{(r['engine_stats'] or {}).get('entries')}; limits hit {r['limits_hit']}; tests fully "
              f"recorded {r['recorded_tests']} (stopped in {r['recording_stopped_in']})", flush=True)
        for k, (a, b) in list(diffs.items())[:40]:
            print(f"    {k}: plain {a}, squall {b}")
        if diffs or r["failed_to_instrument"]:
            print("    failed to instrument:", r["failed_to_instrument"])
            print("    --- squall run stdout tail ---\n" + inst["stdout_tail"])
            print("    --- squall run stderr tail ---\n" + inst["stderr_tail"])
    (work / "results.json").write_text(json.dumps(results, indent=1, default=repr))
    return 0 if all(not r["differences"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
