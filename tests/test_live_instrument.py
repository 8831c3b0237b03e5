"""Instrumenting and uninstrumenting loaded code while the program runs: no reload where Python
allows it (code swapped in place), exactly what to reload where it does not. Each case runs in a
fresh interpreter with its own modules."""

import subprocess
import sys
import textwrap

MOD = """
import functools

COUNT = 0

def plain(x):
    return x + 1

def other(x):
    return x * 2

class Shape:
    def __init__(self, n):
        self.n = n

    def area(self):
        return self.n * self.n

    @staticmethod
    def unit():
        return 1

    @classmethod
    def make(cls, n):
        return cls(n)

    @property
    def double(self):
        return self.n * 2

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*a):
        return fn(*a)
    return wrapper

@logged
def decorated(x):
    return -x

def make_adder(k):
    def add(x):
        return x + k
    return add

early_adder = make_adder(10)            # reachable from the module: swapped
_registry = {"early": make_adder(20)}   # held in a dict: cannot be found, must be re-created
"""

PRELUDE = """
import sys, threading
sys.path.insert(0, sys.argv[1])
import squall
from squall import api, indexes

def called():
    flows = indexes.all_flows()
    if not flows:
        return []
    tl = indexes.get_referenced_maps_timeline(0, threading.get_native_id())
    return [e["fn_name"] for e in tl if e["type"] == "fn-call"]
"""


def run(tmp_path, body):
    (tmp_path / "shapes.py").write_text(MOD)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def fa():\n    return 'a'\n")
    (tmp_path / "pkg" / "b.py").write_text("def fb():\n    return 'b'\n")
    script = tmp_path / "case.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    p = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_a_module_imported_before_recording_is_instrumented_without_reload(tmp_path):
    out = run(
        tmp_path,
        """
        import shapes
        api.start_recording()
        shapes.plain(1)
        assert called() == [], called()          # imported before: not instrumented yet
        print(squall.config.explain("shapes"))
        report = api.instrument("shapes")
        assert shapes.plain(1) == 2 and shapes.Shape.make(3).area() == 9
        assert shapes.Shape.unit() == 1 and shapes.Shape(4).double == 8 and shapes.decorated(5) == -5
        assert called() == ["plain", "Shape.make", "Shape.__init__", "Shape.area", "Shape.unit",
                            "Shape.__init__", "Shape.double", "logged.<locals>.wrapper", "decorated"], called()
        print(report)
        print(squall.config.explain("shapes"))
    """,
    )
    assert "imported before squall's import hook was installed" in out
    assert "swapped: " in out and "shapes.Shape.area" in out and "shapes.decorated" in out
    assert "shapes: its module-level code already ran and is not recorded; `importlib.reload(shapes)`" in out
    assert "`shapes` is instrumented: its code was instrumented while the program ran" in out


def test_one_function_only(tmp_path):
    run(
        tmp_path,
        """
        import shapes
        api.start_recording()
        report = api.instrument("shapes.plain")
        assert report.swapped == ["shapes.plain"], report
        shapes.plain(1); shapes.other(1)
        assert called() == ["plain"], called()
        api.instrument(shapes.other)
        shapes.other(2)
        assert called() == ["plain", "other"], called()
    """,
    )


def test_closures_made_before_the_swap_are_named_for_re_creation(tmp_path):
    out = run(
        tmp_path,
        """
        import shapes
        api.start_recording()
        report = api.instrument("shapes.make_adder")
        print(report)
        shapes._registry["early"](1)             # made before, out of reach: old code
        shapes.early_adder(1)                    # made before, in the module: swapped
        fresh = shapes.make_adder(5)             # made after: instrumented
        fresh(1)
        assert called() == ["make_adder.<locals>.add", "make_adder", "make_adder.<locals>.add"], called()
    """,
    )
    assert "shapes.make_adder.<locals>.add: 1 closure(s) made before the swap keep their old code" in out


def test_uninstrument_stops_recording(tmp_path):
    run(
        tmp_path,
        """
        api.start_recording()
        import shapes                            # instrumented by the import hook
        at_import = called()                     # the module-level code's calls
        assert at_import == ["logged", "make_adder", "make_adder"], at_import
        shapes.plain(1)
        report = api.uninstrument("shapes")
        assert "shapes.plain" in report.swapped, report
        shapes.plain(2); shapes.Shape(2).area()
        assert called()[len(at_import):] == ["plain"], called()
        api.instrument("shapes")
        shapes.plain(3)
        assert called()[len(at_import):] == ["plain", "plain"], called()
    """,
    )


def test_a_prefix_covers_loaded_and_later_imports(tmp_path):
    run(
        tmp_path,
        """
        import pkg.a
        squall.config.configure(skip=["pkg"])    # out of scope at first
        api.start_recording()
        api.instrument("pkg")
        import pkg.b                             # imported later: the hook follows the change
        pkg.a.fa(); pkg.b.fb()
        assert called() == ["fa", "fb"], called()
        assert squall.config.explain("pkg.b").instrumented
    """,
    )


def test_a_source_changed_since_import_is_named_for_reload(tmp_path):
    out = run(
        tmp_path,
        """
        import shapes, pathlib
        path = pathlib.Path(shapes.__file__)
        path.write_text("\\n\\n" + path.read_text())   # every def moved down two lines
        report = api.instrument("shapes.plain")
        print(report)
        assert report.swapped == []
    """,
    )
    assert "shapes.plain: its source at" in out and "changed since it was loaded; `importlib.reload(shapes)`" in out


def test_bad_targets_say_what_is_wrong(tmp_path):
    run(
        tmp_path,
        """
        import shapes
        for bad, msg in [("no_such_thing", "nothing named `no_such_thing` is loaded"),
                         ("shapes.nope", "`shapes` has no function `nope`"),
                         ("json", "json")]:
            try:
                api.instrument(bad)
            except (ValueError, TypeError) as e:
                assert msg in str(e), (bad, str(e))
            else:
                assert bad == "json", bad
    """,
    )
