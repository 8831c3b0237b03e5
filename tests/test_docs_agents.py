"""docs/agents.md: every command in it runs, against recordings of examples/invoices and of the
planted-bug corpus (tests/agent_programs).

Fenced blocks, in order: ```sh lines are run (``squall``, ``pytest``, ``python``; a trailing
``# exit N`` gives the expected exit status, else 0); a ```text block right after one lists lines
its output must contain (thread ids in parentheses are normalised); ```python blocks run as
scripts; ```json blocks are MCP configs whose server must answer ``initialize``."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "agents.md"
SQUALL = str(Path(sys.executable).parent / "squall")

NO_MCP = "the MCP SDK is not installed (the mcp extra needs Python 3.10+)"


def blocks(text):
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S)]


def tid_free(text):
    return re.sub(r"\((\d+)\)", "(TID)", text)


def command(line):
    m = re.search(r"\s+#\s*exit (\d+)\s*$", line)
    expected = int(m.group(1)) if m else 0
    argv = shlex.split(line[: m.start()] if m else line)
    if argv[0] == "squall":
        argv[0] = SQUALL
    elif argv[0] == "pytest":
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"] + argv[1:]
    elif argv[0] == "python":
        argv[0] = sys.executable
    else:
        pytest.fail(f"docs/agents.md runs an unknown command: {line}")
    return argv, expected


def test_every_command_in_docs_agents_md(tmp_path):
    os.symlink(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "tests").mkdir()
    os.symlink(ROOT / "tests" / "agent_programs", tmp_path / "tests" / "agent_programs")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "examples" / "invoices"))
    found = {"sh": 0, "text": 0, "python": 0, "json": 0}
    last_output = None
    for lang, body in blocks(DOC.read_text()):
        assert lang in found, f"a ```{lang} block in docs/agents.md: the test does not know how to check it"
        found[lang] += 1
        if lang == "sh":
            last_output = ""
            for line in body.splitlines():
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                argv, expected = command(line)
                r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
                assert r.returncode == expected, f"{line}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
                last_output += r.stdout
        elif lang == "text":
            assert last_output is not None, "a ```text block must follow the ```sh block whose output it shows"
            out = tid_free(last_output)
            for want in body.splitlines():
                if want.strip():
                    assert tid_free(want.strip()) in out, f"{want!r} is not in the output:\n{last_output}"
            last_output = None
        elif lang == "python":
            r = subprocess.run(
                [sys.executable, "-c", body], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
            )
            assert r.returncode == 0, r.stderr
        elif lang == "json":
            pytest.importorskip("mcp", reason=NO_MCP)
            config = json.loads(body)
            for _name, server in config["mcpServers"].items():
                assert server["command"] == "squall" and server["args"][0] == "mcp"
                init = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "docs", "version": "0"},
                    },
                }
                r = subprocess.run(
                    [SQUALL, *server["args"]],
                    cwd=tmp_path,
                    input=json.dumps(init) + "\n",
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                reply = json.loads(r.stdout.splitlines()[0])
                assert reply["id"] == 1 and "result" in reply, r.stdout + r.stderr
    assert found["sh"] >= 8 and found["text"] >= 4 and found["python"] == 1 and found["json"] == 1
