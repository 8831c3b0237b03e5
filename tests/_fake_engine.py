"""A pure-Python stand-in for ``squall._engine``'s registration and recording entry points.

It records every event into ``events`` as tuples, with form/site ids resolved to names so tests
read naturally: ("call", "f", (1, 2)), ("ret", "f", 3), ("unwind", "f", "ValueError"),
("suspend", "g", value), ("resume", "g", sent).
"""

from squall import _engine

# The kind codes are the engine's (exported from the core's enums), never a copy.
FORM_FUNCTION = _engine.FORM_FUNCTION
FORM_GENERATOR = _engine.FORM_GENERATOR
FORM_COROUTINE = _engine.FORM_COROUTINE
FORM_ASYNC_GENERATOR = _engine.FORM_ASYNC_GENERATOR
FORM_LAMBDA = _engine.FORM_LAMBDA
FORM_MODULE = _engine.FORM_MODULE
SITE_RETURN = _engine.SITE_RETURN
SITE_YIELD = _engine.SITE_YIELD
SITE_AWAIT = _engine.SITE_AWAIT
SITE_EXPR = _engine.SITE_EXPR
SITE_BIND = _engine.SITE_BIND


class FakeEngine:
    FORM_FUNCTION = FORM_FUNCTION
    FORM_GENERATOR = FORM_GENERATOR
    FORM_COROUTINE = FORM_COROUTINE
    FORM_ASYNC_GENERATOR = FORM_ASYNC_GENERATOR
    FORM_LAMBDA = FORM_LAMBDA
    FORM_MODULE = FORM_MODULE
    SITE_RETURN = SITE_RETURN
    SITE_YIELD = SITE_YIELD
    SITE_AWAIT = SITE_AWAIT
    SITE_EXPR = SITE_EXPR
    SITE_BIND = SITE_BIND

    def __init__(self):
        self.forms = []  # dicts: fn_ns, fn_name, file, line, params, kind
        self.sites = []  # dicts: form_id, kind, line, col, end_line, end_col
        self.events = []
        self.values = []  # full mode: ("expr", fn_name, site coord, value) / ("bind", fn_name, symbol, value)
        self.recording = True

    # registration
    def register_form(self, fn_ns, fn_name, file, line, params, kind):
        self.forms.append(dict(fn_ns=fn_ns, fn_name=fn_name, file=file, line=line, params=list(params), kind=kind))
        return len(self.forms) - 1

    def register_site(self, form_id, kind, line, col, end_line, end_col, symbol=None, reads=None):
        self.sites.append(
            dict(form_id=form_id, kind=kind, line=line, col=col, end_line=end_line, end_col=end_col, symbol=symbol)
        )
        return len(self.sites) - 1

    def _fname(self, form_id):
        return self.forms[form_id]["fn_name"]

    def _sname(self, site_id):
        return self.forms[self.sites[site_id]["form_id"]]["fn_name"]

    # recording entry points: never raise, pass values through
    def call(self, form_id, *args):
        self.events.append(("call", self._fname(form_id), args))

    def ret(self, site_id, value):
        self.events.append(("ret", self._sname(site_id), value))
        return value

    def unwind(self, form_id, exc):
        self.events.append(("unwind", self._fname(form_id), type(exc).__name__))

    def suspend(self, site_id, value):
        self.events.append(("suspend", self._sname(site_id), value))
        return value

    def resume(self, form_id, sent):
        self.events.append(("resume", self._fname(form_id), sent))
        return sent

    def expr(self, site_id, value):
        s = self.sites[site_id]
        self.values.append(("expr", self._sname(site_id), (s["line"], s["col"], s["end_line"], s["end_col"]), value))
        return value

    def bind(self, site_id, value):
        self.values.append(("bind", self._sname(site_id), self.sites[site_id]["symbol"], value))

    def form(self, name):
        for f in self.forms:
            if f["fn_name"] == name:
                return f
        raise KeyError(name)

    def kinds(self):
        return [e[0] for e in self.events]
