"""pytest plugin used by run_suites.py: records every test's outcome into $SQUALL_RW_OUT (JSON),
and, when $SQUALL_RW_INCLUDE is set, installs squall's import hook for those prefixes (full mode
unless $SQUALL_RW_MODE says otherwise) and starts recording *before* the library is imported; with $SQUALL_RW_SAVE, saves the recording
there while it runs (as ``squall run`` does).

Loaded with ``-p squall_rw_plugin`` (this directory on PYTHONPATH)."""

import json
import os

_INCLUDE = [p for p in os.environ.get("SQUALL_RW_INCLUDE", "").split(",") if p]
_OUT = os.environ.get("SQUALL_RW_OUT")

if _INCLUDE:
    import squall
    from squall import config
    from squall._instrument import hook

    cfg = config.load(cli={"include": _INCLUDE, "mode": os.environ.get("SQUALL_RW_MODE", "full")},
                      env={})
    config.set_current(cfg)
    hook.install(cfg)
    limit = int(os.environ.get("SQUALL_RW_MEMORY_LIMIT", str(2 << 30)))
    trace = os.environ.get("SQUALL_RW_TRACE_LIMIT")
    squall.api.set_limits(memory_limit=limit, thread_trace_limit=int(trace) if trace else None)
    squall.api.start_recording(install_hook=False)
    if os.environ.get("SQUALL_RW_SAVE"):
        # As `squall run` does by default: saved entries leave memory past half the limit, so
        # the limit does not stop recording.
        squall.api.save_to(os.environ["SQUALL_RW_SAVE"], program="pytest")

_outcomes = {}
_recorded = []  # nodeids of the tests that ran while recording was on (before a limit stopped it)
_stopped_at = None  # the test during which a limit stopped recording


def pytest_runtest_logreport(report):
    prev = _outcomes.get(report.nodeid)
    if hasattr(report, "wasxfail"):
        out = "xfailed" if report.skipped else "xpassed"
    else:
        out = report.outcome
    if report.when == "call" or prev is None or (out == "failed" and prev != "failed") or (
        out == "skipped" and prev == "passed" and report.when == "setup"
    ):
        if not (prev == "failed" and report.when == "teardown"):
            _outcomes[report.nodeid] = out
    if report.when == "teardown" and report.outcome == "failed":
        _outcomes[report.nodeid] = "failed"
    global _stopped_at
    if _INCLUDE and report.when == "teardown" and _stopped_at is None:
        from squall import _engine

        if _engine.limits_hit():
            _stopped_at = report.nodeid
        else:
            _recorded.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if not _OUT:
        return
    data = {"outcomes": _outcomes}
    if _INCLUDE:
        import squall
        from squall import _engine, config

        squall.api.stop_recording()
        if os.environ.get("SQUALL_RW_SAVE"):
            data["saved_to"] = squall.api.finish_saving(exit_code=int(exitstatus))
        data["engine_stats"] = dict(_engine.engine_stats())
        data["limits_hit"] = [dict(h) for h in _engine.limits_hit()]
        data["recorded_tests"] = len(_recorded)
        data["recording_stopped_in"] = _stopped_at
        data["instrumented"] = sorted(m for m, e in config.decisions().items() if e.instrumented)
        data["failed_to_instrument"] = sorted(
            m for m, e in config.decisions().items() if e.category == "failed"
        )
    with open(_OUT, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=repr)
