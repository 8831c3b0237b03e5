"""Outputs (issue 13): what a program writes to stdout and stderr is captured into the recording
(python/squall/outputs.py, crates/squall_python/src/recorder/outputs.rs) without changing it: each
program of tests/output_programs/ writes byte for byte what plain python writes, and the
recording holds each chunk with the thread and the entry that wrote it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import squall

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "output_programs"
SQUALL = Path(sys.executable).parent / "squall"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQUALL_") and k not in ("PYTHONPATH",)}
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTHONIOENCODING", None)
    env.pop("PYTHONUNBUFFERED", None)
    return env


def _run(cmd, merged: bool, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=str(PROGRAMS),
        env={**_env(), **(env or {})},
        timeout=120,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
    )


def _both(program: str, tmp_path: Path, *args: str, merged: bool = False, env: dict | None = None):
    """Runs `program` plainly and under `squall run` (`env`: added to the environment)."""
    out = tmp_path / (program + ".sqrec")
    plain = _run([sys.executable, PROGRAMS / program, *args], merged, env)
    rec = _run([SQUALL, "run", "-q", "-o", out, PROGRAMS / program, *args], merged, env)
    return plain, rec, out


PROGRAM_NAMES = [
    "writes.py",
    "threads_out.py",
    "replaces_stdout.py",
    "subprocess_out.py",
    "write_fails.py",
    "recursion_print.py",
    "binary_writes.py",
]


@pytest.mark.parametrize("merged", [False, True], ids=["separate", "merged"])
@pytest.mark.parametrize("program", PROGRAM_NAMES)
def test_the_program_writes_what_plain_python_writes(program, merged, tmp_path):
    plain, rec, _ = _both(program, tmp_path, merged=merged)
    assert rec.returncode == plain.returncode, rec.stderr
    assert rec.stdout == plain.stdout
    if not merged:
        assert rec.stderr == plain.stderr


def _chunks(path: Path, **filters) -> list:
    return squall.load(path).outputs(**filters)


def _fn_at(rec, c) -> str:
    """The function whose frame holds the entry a chunk is linked to."""
    e = rec.timeline_entry(c["flow_id"], c["thread_id"], c["idx"])
    call = e if e["type"] == "fn-call" else rec.timeline_entry(c["flow_id"], c["thread_id"], e["fn_call_idx"])
    return call["fn_name"]


def test_each_chunk_is_linked_to_the_last_entry_of_the_thread_that_wrote_it(tmp_path):
    plain, _, out = _both("writes.py", tmp_path)
    rec = squall.load(out)
    chunks = rec.outputs()
    stdout = "".join(c["text"] for c in chunks if c["stream"] == "stdout")
    # Everything written through sys.stdout, uncut but for the big write's 64 KiB.
    big = next(c for c in chunks if c["chars"] == 100_000)
    assert big["cut"] and len(big["text"]) == 64 * 1024 and big["text"] == "x" * (64 * 1024)
    assert stdout.replace(big["text"], "x" * 99_999 + "\n") == plain.stdout.decode()
    assert [c["text"] for c in chunks if c["stream"] == "stderr"] == ["warning 3\n", "to stderr via print 3\n"]
    first = chunks[0]
    assert first["text"] == "hello, ada!\n", "print's four writes are one chunk"
    assert (first["stream"], first["thread_name"], first["flow_id"]) == ("stdout", "MainThread", 0)
    assert _fn_at(rec, first) == "greet"
    by_text = {c["text"]: c for c in chunks}
    assert _fn_at(rec, by_text["report 3\n"]) == "report"
    assert _fn_at(rec, by_text["through __stdout__\n"]) == "report"
    assert by_text["line a\nline b\n"]["stream"] == "stdout", "writelines goes through write"
    # Module-level code is not recorded here: its writes share report's last entry (its return).
    module_level = by_text["from textwrap\nhéllo wörld ✓ 😀\nsize unchanged by printing: True\n"]
    assert rec.timeline_entry(0, module_level["thread_id"], module_level["idx"])["type"] == "fn-return"
    assert _fn_at(rec, module_level) == "report"
    # Entries only increase along one thread.
    idxs = [c["idx"] for c in chunks]
    assert idxs == sorted(idxs)
    assert [c["n"] for c in chunks] == list(range(len(chunks)))
    assert [c["text"] for c in rec.outputs(stream="stderr")] == ["warning 3\n", "to stderr via print 3\n"]
    assert [c["text"] for c in rec.outputs(contains="line b")] == ["line a\nline b\n"]


def test_threads_output_is_attributed_to_each_thread(tmp_path):
    _, _, out = _both("threads_out.py", tmp_path)
    rec = squall.load(out)
    chunks = rec.outputs()
    assert [(c["thread_name"], c["text"]) for c in chunks] == [
        ("w0", "worker 0 total 0\n"),
        ("w1", "worker 1 total 10\n"),
        ("w2", "worker 2 total 20\n"),
    ] + [(None, "main done\n")]
    last = chunks[-1]
    assert last["idx"] is None and last["flow_id"] is None, "the main thread recorded nothing: no entry to link"
    for c in chunks[:3]:
        assert _fn_at(rec, c) == "work"
        tid = c["thread_id"]
        assert [x["text"] for x in rec.outputs(thread_id=tid)] == [c["text"]]


def test_a_stream_the_program_puts_in_place_of_stdout_is_not_captured(tmp_path):
    _, _, out = _both("replaces_stdout.py", tmp_path)
    texts = [c["text"] for c in _chunks(out)]
    assert texts == ["real stdout while redirected\n", "buffer held 'into the buffer\\n'\nback TextIOWrapper True\n"]


def test_child_processes_and_fd_writes_are_not_captured(tmp_path):
    plain, rec, out = _both("subprocess_out.py", tmp_path, merged=True)
    assert b"from the child" in rec.stdout and b"raw fd write" in rec.stdout and b"binary buffer write" in rec.stdout
    # the module-level binary write and print share the last entry: one chunk
    assert [c["text"] for c in _chunks(out)] == ["before child\n", "after child\n", "binary buffer write\nend\n"]


BINARY_STDOUT = (
    "text 1\nbinary 1\ntext 2\nbinary 2 \\xff\\xfe bad\ntext 3\nbinary 3 h\u00e9llo\n"
    + "y" * 20_000
    + "\nafter big\nend\n"
)


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_binary_writes_are_captured_once_in_call_order(unbuffered, tmp_path):
    # Unbuffered (-u), sys.stdout.buffer is the raw file: the text layer writes into it at
    # once; buffered, print's text waits in the text layer while binary writes go ahead.
    plain, rec, out = _both("binary_writes.py", tmp_path, env={"PYTHONUNBUFFERED": "1"} if unbuffered else None)
    assert rec.returncode == plain.returncode == 0, rec.stderr
    assert (rec.stdout, rec.stderr) == (plain.stdout, plain.stderr)
    chunks = _chunks(out)
    stdout = "".join(c["text"] for c in chunks if c["stream"] == "stdout")
    # Each write once (print's flush=True, flush() and the big write's own flush into the buffer
    # add nothing), binary writes decoded as UTF-8, invalid bytes as \xNN.
    assert stdout == BINARY_STDOUT
    assert "".join(c["text"] for c in chunks if c["stream"] == "stderr") == "binary err\ntext err\n"
    rec_ = squall.load(out)
    by_text = {c["text"]: c for c in chunks}
    assert _fn_at(rec_, by_text["binary 1\n"]) == "mixed"
    assert _fn_at(rec_, by_text["after big\n"]) == "big_text"


def test_binary_writes_decode_with_the_streams_encoding(tmp_path):
    plain, rec, out = _both("binary_writes.py", tmp_path, env={"PYTHONIOENCODING": "latin-1"})
    assert (rec.stdout, rec.stderr) == (plain.stdout, plain.stderr)
    stdout = "".join(c["text"] for c in _chunks(out) if c["stream"] == "stdout")
    # latin-1 decodes every byte: \xff\xfe are characters, and é's two UTF-8 bytes two of them
    assert "binary 2 \u00ff\u00fe bad\n" in stdout and "binary 3 h\u00c3\u00a9llo\n" in stdout


def test_a_failing_write_raises_as_without_squall_and_is_not_captured(tmp_path):
    plain, rec, out = _both("write_fails.py", tmp_path)
    assert rec.returncode == plain.returncode == 1
    assert b"TypeError" in rec.stderr and rec.stderr == plain.stderr
    assert "squall" not in rec.stderr.decode(), "no frame of squall's in the traceback"
    chunks = _chunks(out)
    # The TypeError's message is captured (stdout), and so is the uncaught one's traceback (stderr).
    assert "".join(c["text"] for c in chunks if c["stream"] == "stdout") == plain.stdout.decode()
    assert "".join(c["text"] for c in chunks if c["stream"] == "stderr") == plain.stderr.decode()
    assert [c["stream"] for c in chunks] == ["stdout", "stderr"]


def test_the_live_recording_answers_outputs(tmp_path):
    answer = tmp_path / "live.json"
    r = _run([SQUALL, "run", "-q", "--no-save", PROGRAMS / "live_outputs.py", answer], merged=False)
    assert r.returncode == 0, r.stderr
    live = json.loads(answer.read_text())
    assert [(c["stream"], c["text"]) for c in live] == [
        ("stdout", "speaking 1\n"),
        ("stderr", "err line\n"),
        ("stdout", "speaking 2\n"),
        ("stderr", "err line\n"),
    ]
    assert all(c["thread_name"] == "MainThread" and c["idx"] is not None for c in live)


def test_query_outputs_cli(tmp_path):
    _, _, out = _both("threads_out.py", tmp_path)
    r = subprocess.run([str(SQUALL), "query", str(out), "outputs", "--thread", "w1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "1 output chunk(s); showing 1"
    assert lines[1].startswith("#1 stdout idx ") and "w1(" in lines[1] and "'worker 1 total 10\\n'" in lines[1]
    r = subprocess.run(
        [str(SQUALL), "query", str(out), "outputs", "--json", "--limit", "2"], capture_output=True, text=True
    )
    d = json.loads(r.stdout)
    assert (d["total"], d["shown"]) == (4, 2)
    r = subprocess.run(
        [str(SQUALL), "query", str(out), "outputs", "--thread", "nobody"], capture_output=True, text=True
    )
    assert r.returncode == 1 and "'nobody'" in r.stderr


def test_a_bad_stream_is_refused_with_what_to_pass(tmp_path):
    _, _, out = _both("threads_out.py", tmp_path)
    with pytest.raises(ValueError, match="unknown stream 'stdin': use 'stdout' or 'stderr'"):
        squall.load(out).outputs(stream="stdin")


def test_capture_keeps_the_streams_objects_and_types():
    code = (
        "import sys, io\n"
        "o, e, to, te = sys.stdout, sys.stderr, type(sys.stdout), type(sys.stderr)\n"
        "from squall import outputs\n"
        "assert sorted(outputs.capture()) == ['stderr', 'stdout']\n"
        "assert outputs.capture() == [], 'teed once'\n"
        "assert sys.stdout is o and type(sys.stdout) is to and sys.stderr is e and type(sys.stderr) is te\n"
        "n = sys.stdout.write('abc\\n')\n"
        "assert n == 4, n\n"
        "assert sys.stdout.flush.__name__ == 'flush' and sys.stdout.buffer.write.__name__ == 'write'\n"
        "assert sys.stdout.buffer.write(b'de\\n') == 3\n"
        "outputs.release()\n"
        "assert 'write' not in vars(sys.stdout) and 'flush' not in vars(sys.stdout)\n"
        "assert 'write' not in vars(sys.stdout.buffer)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "abc\nde\n"


def test_release_after_the_program_detached_stdout():
    # A detached TextIOWrapper has no buffer any more (None); the detached one keeps its tee
    # until release() takes it off, and writes what it is given either way.
    code = (
        "import sys\n"
        "from squall import outputs\n"
        "outputs.capture()\n"
        "raw = sys.stdout.detach()\n"
        "outputs.release()\n"
        "raw.write(b'released\\n')\n"
        "raw.flush()\n"
        "sys.stdout = sys.stderr\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"released\n"


def test_the_live_ui_serves_outputs_linked_to_their_timeline(tmp_path):
    import textwrap
    import urllib.request

    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        import squall
        from squall import outputs
        squall.api.start_recording(install_hook=False)
        outputs.capture()
        from squall._instrument import rewrite
        ns = {"__name__": "app"}
        src = "def handle(n):\\n    print('handled', n)\\n    return n * 2\\n"
        exec(rewrite.compile_instrumented(src, "app.py", "app"), ns)
        ns["handle"](1)
        print(squall.api.local_connect(), flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            ns["handle"](int(line))
            sys.stdout.flush()
    """)
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline() == "handled 1\n"
        url = proc.stdout.readline().strip()
        base, token = url.split("?token=")
        with urllib.request.urlopen(f"{base.rstrip('/')}/api/outputs?token={token}", timeout=30) as r:
            got = json.loads(r.read())
        first = got["items"][0]
        assert (first["text"], first["stream"], first["tl"], first["thread_name"]) == (
            "handled 1\n",
            "stdout",
            0,
            "MainThread",
        )
        with urllib.request.urlopen(f"{base.rstrip('/')}/api/entry?token={token}&tl=0&idx={first['idx']}") as r:
            entry = json.loads(r.read())
        assert "handle" in json.dumps(entry), entry
        # After a clear, the outputs go too, and a new timeline is at position 0 again.
        req = urllib.request.Request(f"{base.rstrip('/')}/api/control/clear?token={token}", data=b"", method="POST")
        urllib.request.urlopen(req, timeout=30).read()
        proc.stdin.write("2\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "handled 2\n"
        # The tee notes a write after it returned: unbuffered (PYTHONUNBUFFERED), the line can
        # reach this process while the program's thread is still in the write's syscall; and
        # `print` writes the text and its "\n" in two writes, so the first may be noted alone.
        deadline = time.monotonic() + 30
        while True:
            with urllib.request.urlopen(f"{base.rstrip('/')}/api/outputs?token={token}", timeout=30) as r:
                got = json.loads(r.read())
            if (got["items"] and got["items"][-1]["text"].endswith("\n")) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert [(c["text"], c["tl"], c["idx"]) for c in got["items"]] == [("handled 2\n", 0, 0)]
    finally:
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=30)
