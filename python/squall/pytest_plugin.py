"""``pytest --squall``: record each test, keep the recordings of the failing ones.

Registered as a pytest plugin (entry point ``pytest11: squall``); inactive without ``--squall``.

- ``--squall``: squall's import hook is installed when pytest starts, so the code under test
  (modules in squall's instrumentation scope, see ``squall.config``) is recorded; test modules
  and conftests stay with pytest's assertion rewriting and are not recorded themselves.
- Each test (setup, call and teardown) is recorded as its own flow (flow N for the N-th test
  run, counting from 0) into its own file, ``<squall-dir>/<test id>.sqrec``.
- ``--squall-keep=failed`` (default) keeps the files of failing tests, ``all`` every file,
  ``none`` none.
- ``--squall-dir`` (default ``.squall/tests``) is where they go.

A failing test's report gets a ``squall recording`` section: the file's path and where it went
wrong, the chain of recorded calls the exception unwound, innermost first, each with its
arguments (``pkg.mod.fn(a=1, b=0) raised ZeroDivisionError: division by zero``), up to the test.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any, List, Optional

import pytest

KEEP_CHOICES = ("failed", "all", "none")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("squall", "squall: record tests with the omniscient debugger")
    group.addoption(
        "--squall",
        action="store_true",
        default=False,
        help="record each test with squall; keep the recordings of failing tests",
    )
    group.addoption(
        "--squall-keep",
        choices=KEEP_CHOICES,
        default="failed",
        help="which recordings to keep: failed (default), all, none",
    )
    group.addoption(
        "--squall-object-depth",
        type=int,
        default=None,
        metavar="N",
        help="levels of objects read afresh at every record of an argument, return or binding (default 1; "
        "an expression's value one level less); 0: an object already "
        "recorded is its earlier state with the writes since, marked (earlier): faster (as `squall run --object-depth`)",
    )
    group.addoption(
        "--squall-dir",
        default=os.path.join(".squall", "tests"),
        metavar="DIR",
        help="where recordings are written (default .squall/tests)",
    )


def _install_hook() -> None:
    from squall._instrument import hook

    if not hook.is_installed():
        hook.install()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    # As early as possible, so modules the conftests import are instrumented too.
    ns = getattr(early_config, "known_args_namespace", None)
    if ns is not None and getattr(ns, "squall", False):
        _install_hook()


def pytest_configure(config: Any) -> None:
    if not config.getoption("squall"):
        return
    depth = config.getoption("squall_object_depth")
    if depth is not None:
        if depth < 0:
            raise pytest.UsageError(f"--squall-object-depth: expected an integer 0 or more, got `{depth}`")
        from squall import values

        values.set_snapshot_budget(**{**values.get_snapshot_budget(), "object_depth": depth})
    _install_hook()
    config.pluginmanager.register(_Recorder(config), "squall-recorder")


class _TestState:
    def __init__(self, path: str, flow_id: int) -> None:
        self.path = path
        self.flow_id = flow_id
        self.failed = False


_STATE = pytest.StashKey[_TestState]() if hasattr(pytest, "StashKey") else None


class _Recorder:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.keep = config.getoption("squall_keep")
        base = config.getoption("squall_dir")
        self.dir = base if os.path.isabs(base) else os.path.join(str(config.invocation_params.dir), base)
        self.count = 0
        self.kept: List[tuple] = []
        self.states: dict = {}

    # -- per test --

    def _path_for(self, nodeid: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.\-]+", "_", nodeid.replace("::", "__")).strip("_") or "test"
        if len(name) > 120:
            name = name[:100] + "-" + hashlib.sha1(nodeid.encode()).hexdigest()[:10]
        return os.path.join(self.dir, name + ".sqrec")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        from squall import api

        state = _TestState(self._path_for(item.nodeid), self.count)
        self.count += 1
        self.states[item.nodeid] = state
        api.stop_recording()
        api.clear_recordings()
        api.set_flow(state.flow_id)
        try:
            api.save_to(state.path, program=f"pytest {item.nodeid}", argv=[item.nodeid])
        except OSError as e:
            item.warn(pytest.PytestWarning(f"squall: cannot write {state.path}: {e}"))
            state.path = ""
        api.start_recording(install_hook=False)
        try:
            yield
        finally:
            api.stop_recording()
            if state.path:
                api.finish_saving(exit_code=1 if state.failed else 0)
                if self.keep == "all" or (self.keep == "failed" and state.failed):
                    self.kept.append((item.nodeid, state.path, state.failed))
                else:
                    try:
                        os.remove(state.path)
                    except OSError:
                        pass
            self.states.pop(item.nodeid, None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        outcome = yield
        rep = outcome.get_result()
        state = self.states.get(item.nodeid)
        if state is None or not rep.failed:
            return
        first = not state.failed
        state.failed = True
        if not first:
            return
        from squall import api

        was_on = api.is_recording()
        api.stop_recording()
        try:
            text = account(
                state,
                call.excinfo.value if call.excinfo is not None else None,
                self.keep,
                item.name,
                self.config.invocation_params.dir,
            )
        except Exception as e:  # noqa: BLE001 - never break the test run over a report
            text = f"(squall could not describe the recording: {type(e).__name__}: {e})"
        finally:
            if was_on:
                api.start_recording(install_hook=False)
        longrepr = rep.longrepr
        if hasattr(longrepr, "addsection"):
            longrepr.addsection("squall recording", text)
        else:
            rep.sections.append(("squall recording", text))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        failed = [(n, p) for n, p, f in self.kept if f]
        if not self.kept:
            return
        tr = terminalreporter
        tr.section("squall")
        tr.write_line(
            f"{len(self.kept)} recording(s) kept in {_short(self.dir, self.config.invocation_params.dir)}"
            f" ({len(failed)} of failing tests)"
        )
        for nodeid, path in failed:
            tr.write_line(f"  {nodeid}: {_short(path, self.config.invocation_params.dir)}")
        if failed:
            tr.write_line(
                f"  explore: squall query {_short(failed[0][1], self.config.invocation_params.dir)} exceptions"
            )

    def pytest_unconfigure(self, config: Any) -> None:
        from squall import api

        api.stop_recording()


def _short(path: str, cwd: Any) -> str:
    try:
        rel = os.path.relpath(path, str(cwd))
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _traceback_name(tp: type) -> str:
    """A type's name as Python's traceback prints it (and the core's ``exception_text``)."""
    module = getattr(tp, "__module__", None)
    return tp.__qualname__ if module in ("__main__", "builtins") else f"{module}.{tp.__qualname__}"


def account(state: _TestState, exc: Optional[BaseException], keep: str, test_name: str, cwd: Any) -> str:
    """The ``squall recording`` section of a failing test's report."""
    from squall import _engine, agent, recording

    q = recording.live()
    c = agent._Ctx(q)
    lines = []
    if state.path:
        where = _short(state.path, cwd)
        kept = "" if keep in ("failed", "all") else "  (not kept: --squall-keep=none)"
        lines.append(f"recording: {where} (flow {state.flow_id}){kept}")
    flows = c.flows()
    if state.flow_id not in flows:
        lines.append("nothing was recorded: no instrumented code ran (see squall.config.explain(module))")
        return "\n".join(lines)
    found = None
    excs = q.exceptions(state.flow_id) if exc is not None else []
    obj_id = _engine.object_id(exc) if exc is not None else None
    for x in excs:
        if obj_id and x.get("obj_id") == obj_id:
            found = x
            break
    else:  # its identity was not recorded: the same type and message, uncaught
        for x in reversed(excs):
            if not x["caught"] and x["exc_type"] == _traceback_name(type(exc)) and x["message"] == str(exc):
                found = x
                break
    if found is not None:
        chain = agent.unwind_chain(q, found["flow_id"], found["thread_id"], found["idx"], _ctx=c)
        raised = agent._exc_text(c.b, found["throwable_ref"])
        lines.append(
            f"where it went wrong (innermost first, thread {c.thread_name(found['flow_id'], found['thread_id'])}):"
        )
        for fr in chain:
            args = ", ".join(f"{k}={v}" for k, v in fr["args"].items())
            at = (
                f"{os.path.basename(fr['file'] or '?')}:{fr['line']}"
                if fr["line"] is not None
                else os.path.basename(fr["file"] or "?")
            )
            lines.append(f"  {fr['fn']}({args}) raised {raised}   [{at}, idx {fr['idx']}]")
        lines.append(f"  in {test_name}")
        if state.path:
            lines.append(
                f"explore: squall query {_short(state.path, cwd)} call {chain[-1]['idx']}"
                + (
                    f" --thread {found['thread_id']}"
                    if c.thread_name(state.flow_id, found["thread_id"]) != "MainThread"
                    else ""
                )
            )
        return "\n".join(lines)
    # The test itself failed (an assert on a result): show what the code under test returned.
    lines.append(f"no recorded call raised the failure: {test_name} itself failed on what these calls returned:")
    shown = 0
    for tid in flows[state.flow_id]:
        tops = q.callstack_node_childs(q.callstack_root_node(state.flow_id, tid))
        for e in tops[-8:]:
            brief = c.call_brief(state.flow_id, tid, e, print_level=2, print_length=5)
            outcome = next(
                (f"-> {brief[k]}" for k in ("returned", "yielded", "awaited") if k in brief),
                f"raised {brief['raised']}" if "raised" in brief else "-> <no exit>",
            )
            args = ", ".join(f"{k}={v}" for k, v in brief["args"].items())
            lines.append(f"  {brief['fn']}({args}) {outcome}   [idx {brief['idx']}]")
            shown += 1
    if not shown:
        lines.append("  (no recorded calls)")
    return "\n".join(lines)
