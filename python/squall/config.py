"""Instrumentation scope: which modules squall rewrites (FlowStorm's "storm prefixes").

Settings
    ``include``     instrument-only prefixes (empty: the default scope, i.e. your own code)
    ``skip``        prefixes never instrumented
    ``skip_regex``  a regular expression; modules whose dotted name it matches (``re.search``)
                    are not instrumented
    ``mode``        ``"full"`` (calls, returns, exceptions, every sub-expression's value and
                    every local binding) or ``"calls"`` (calls, returns, exceptions only)
    ``mode_overrides``  per-prefix modes, e.g. ``{"heavy.pkg": "calls"}``: the longest matching
                    prefix decides a module's mode, else ``mode`` does. Environment
                    ``SQUALL_MODE_OVERRIDES="heavy.pkg=calls,app.hot=calls"``, pyproject
                    ``mode_overrides = {"heavy.pkg" = "calls"}``.

Prefixes match on dotted-name boundaries: ``app`` matches ``app`` and ``app.x``, not ``apple``.

Sources, lowest to highest precedence (a higher source replaces a setting, it does not merge):
defaults < ``[tool.squall]`` in the nearest ``pyproject.toml`` above the script (or the cwd)
< environment ``SQUALL_INCLUDE`` / ``SQUALL_SKIP`` (comma-separated) / ``SQUALL_SKIP_REGEX`` /
``SQUALL_MODE`` < command-line flags.

Decision order for a module: ``squall`` itself is never instrumented; modules without a ``.py``
source (builtin, frozen, extension) cannot be; then ``skip``, then ``skip_regex``; then, when
``include`` is set, only modules under it (and the ``__main__`` script) are in; otherwise the
default scope: the standard library and site-packages are out, everything else is in.
"""

import os
import re
import site
import sys
import sysconfig
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = [
    "Config",
    "ConfigError",
    "Explanation",
    "load",
    "current",
    "configure",
    "get_storm_instrumentation",
    "explain",
    "skipped_user_modules",
    "remember",
    "decisions",
    "MODES",
]

MODES = ("full", "calls")
SETTINGS = ("include", "skip", "skip_regex", "mode", "mode_overrides")
ENV_VARS = {
    "include": "SQUALL_INCLUDE",
    "skip": "SQUALL_SKIP",
    "skip_regex": "SQUALL_SKIP_REGEX",
    "mode": "SQUALL_MODE",
    "mode_overrides": "SQUALL_MODE_OVERRIDES",
}
CLI_FLAGS = {
    "include": "--include",
    "skip": "--skip",
    "skip_regex": "--skip-regex",
    "mode": "--mode",
    "mode_overrides": "--mode-overrides",
}


class ConfigError(ValueError):
    """A bad setting; the message quotes the value and where it came from."""


# --- where things live -------------------------------------------------------------------------


def _norm(p: str) -> str:
    return os.path.normcase(os.path.realpath(p))


def _under(path: str, roots: Iterable[str]) -> Optional[str]:
    for r in roots:
        if path == r or path.startswith(r.rstrip(os.sep) + os.sep):
            return r
    return None


def _sysconfig_paths() -> Dict[str, str]:
    """``sysconfig.get_paths()``; on 3.13.0 it can raise AttributeError('abi_thread') when the
    config vars were not computed yet, so those are passed explicitly then."""
    try:
        return sysconfig.get_paths()
    except Exception:  # noqa: BLE001
        try:
            return sysconfig.get_paths(vars=dict(sysconfig.get_config_vars()))
        except Exception:  # noqa: BLE001
            return {}


def _stdlib_roots() -> List[str]:
    roots = set()
    for key in ("stdlib", "platstdlib"):
        p = _sysconfig_paths().get(key)
        if p:
            roots.add(_norm(p))
    for base in {sys.base_prefix, sys.base_exec_prefix}:
        v = dict(sysconfig.get_config_vars())  # 3.13 needs e.g. abi_thread in the vars
        v.update(installed_base=base, base=base)
        v.setdefault("abi_thread", "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
        try:
            p = sysconfig.get_path("stdlib", vars=v)
        except Exception:  # noqa: BLE001 - an odd sysconfig: the roots above still hold
            p = None
        if p:
            roots.add(_norm(p))
    return sorted(roots, key=len, reverse=True)


def _site_roots() -> List[str]:
    roots = set()
    try:
        roots.update(site.getsitepackages())
    except Exception:  # some embedded/virtualenv site modules lack it
        pass
    try:
        roots.add(site.getusersitepackages())
    except Exception:
        pass
    for key in ("purelib", "platlib"):
        p = _sysconfig_paths().get(key)
        if p:
            roots.add(p)
    return sorted({_norm(r) for r in roots if r}, key=len, reverse=True)


def _squall_root() -> str:
    return _norm(os.path.dirname(os.path.abspath(__file__)))


def classify_path(origin: Optional[str]) -> Tuple[str, Optional[str]]:
    """("site-packages" | "stdlib" | "squall" | "user", root) for a module's file."""
    if not origin:
        return "user", None
    p = _norm(origin)
    r = _under(p, [_squall_root()])
    if r:
        return "squall", r
    r = _under(p, _site_roots())
    if r:
        return "site-packages", r
    parts = p.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return "site-packages", None
    r = _under(p, _stdlib_roots())
    if r:
        return "stdlib", r
    return "user", None


def _prefix_match(name: str, prefixes: Iterable[str]) -> Optional[str]:
    for pre in prefixes:
        pre = pre.strip().rstrip(".")
        if pre and (name == pre or name.startswith(pre + ".")):
            return pre
    return None


# --- explanations ------------------------------------------------------------------------------


@dataclass
class Explanation:
    """Why a module is (or is not) instrumented."""

    module: str
    instrumented: bool
    reason: str
    origin: Optional[str] = None
    # "squall" | "no-source" | "skip" | "skip_regex" | "include" | "stdlib" | "site-packages"
    # | "user" | "main" | "pre-imported" | "failed" | "not-found"
    category: str = ""
    imported: bool = False  # decided by the hook at import time (vs. predicted)

    def __str__(self) -> str:
        verb = "is instrumented" if self.instrumented else "is not instrumented"
        if not self.imported and self.category not in ("pre-imported", "failed", "not-found"):
            verb = "would be instrumented" if self.instrumented else "would not be instrumented"
        return "`%s` %s: %s" % (self.module, verb, self.reason)


_decisions: Dict[str, Explanation] = {}
_decisions_lock = threading.Lock()


def remember(expl: Explanation) -> Explanation:
    """Records a decision taken at import time (called by the import hook)."""
    expl.imported = True
    with _decisions_lock:
        _decisions[expl.module] = expl
    return expl


def decisions() -> Dict[str, Explanation]:
    with _decisions_lock:
        return dict(_decisions)


def _forget_decisions() -> None:  # tests
    with _decisions_lock:
        _decisions.clear()


# --- runtime changes (squall.api.instrument / uninstrument) ----------------------------------

_runtime: Dict[str, bool] = {}


def set_runtime_override(prefix: str, instrumented: bool) -> None:
    """Modules under ``prefix`` are (or are not) instrumented, whatever the settings say: made
    by ``squall.api.instrument`` / ``uninstrument`` while the program runs."""
    with _decisions_lock:
        _runtime[prefix] = instrumented


def _runtime_decision(name: str) -> Optional[Tuple[str, bool]]:
    with _decisions_lock:
        pre = _prefix_match(name, sorted(_runtime, key=len, reverse=True))
        return None if pre is None else (pre, _runtime[pre])


# --- the config --------------------------------------------------------------------------------


@dataclass
class Config:
    include: List[str] = field(default_factory=list)
    skip: List[str] = field(default_factory=list)
    skip_regex: Optional[str] = None
    mode: str = "full"
    mode_overrides: Dict[str, str] = field(default_factory=dict)
    sources: Dict[str, str] = field(default_factory=lambda: {k: "default" for k in SETTINGS})
    pyproject: Optional[str] = None
    script_path: Optional[str] = None
    _regex: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._regex = _compile_regex(self.skip_regex, self.sources.get("skip_regex", "default"))
        if self.mode not in MODES:
            raise ConfigError(
                "squall: bad mode %r from %s; expected one of %s"
                % (self.mode, self.sources.get("mode", "default"), ", ".join(MODES))
            )
        for pre, m in self.mode_overrides.items():
            if m not in MODES:
                raise ConfigError(
                    "squall: bad mode %r for prefix %r in mode_overrides from %s; expected one of %s"
                    % (m, pre, self.sources.get("mode_overrides", "default"), ", ".join(MODES))
                )

    def mode_for(self, module_name: str) -> str:
        """The instrumentation mode of ``module_name``: the longest prefix in
        ``mode_overrides`` matching it on dotted-name boundaries, else ``mode``."""
        best = None
        for pre in self.mode_overrides:
            p = pre.strip().rstrip(".")
            if p and (module_name == p or module_name.startswith(p + ".")):
                if best is None or len(p) > len(best.strip().rstrip(".")):
                    best = pre
        return self.mode if best is None else self.mode_overrides[best]

    def _hint(self, name: str) -> str:
        top = name.split(".")[0]
        return "add `--include %s` or `SQUALL_INCLUDE=%s` to record it" % (top, top)

    def decide(self, module_name: str, origin: Optional[str]) -> Explanation:
        """Whether ``module_name`` (whose source file is ``origin``) gets instrumented."""
        name = module_name
        if name == "squall" or name.startswith("squall."):
            return Explanation(name, False, "squall never instruments itself", origin, "squall")
        kind, root = classify_path(origin)
        if kind == "squall" and name != "__main__":
            return Explanation(name, False, "its file %s is part of squall" % origin, origin, "squall")
        if not origin or not str(origin).endswith(".py"):
            what = "a builtin or frozen module" if not origin else "not a .py source (%s)" % origin
            return Explanation(name, False, "it is %s; only Python source can be instrumented" % what,
                               origin, "no-source")
        runtime = _runtime_decision(name)
        if runtime is not None:
            prefix, on = runtime
            return Explanation(
                name, on,
                "squall.api.%sinstrument(%r) was called while the program ran"
                % ("" if on else "un", prefix),
                origin, "runtime",
            )
        pre = _prefix_match(name, self.skip)
        if pre is not None:
            return Explanation(
                name, False,
                "it is under the skip prefix `%s` (from %s)" % (pre, self.sources["skip"]),
                origin, "skip",
            )
        if self._regex is not None and self._regex.search(name):
            return Explanation(
                name, False,
                "it matches skip_regex `%s` (from %s)" % (self.skip_regex, self.sources["skip_regex"]),
                origin, "skip_regex",
            )
        if self.include:
            pre = _prefix_match(name, self.include)
            if pre is not None:
                return Explanation(
                    name, True,
                    "it is under the include prefix `%s` (from %s)" % (pre, self.sources["include"]),
                    origin, "include",
                )
            if name == "__main__":
                return Explanation(name, True, "it is the script being run (%s)" % origin, origin, "main")
            return Explanation(
                name, False,
                "it is not under the include prefixes %s (from %s); add it to include to record it"
                % (", ".join("`%s`" % p for p in self.include), self.sources["include"]),
                origin, "include",
            )
        if name == "__main__":
            return Explanation(name, True, "it is the script being run (%s)" % origin, origin, "main")
        if kind == "site-packages":
            return Explanation(
                name, False,
                "its file %s is in site-packages; %s" % (origin, self._hint(name)),
                origin, "site-packages",
            )
        if kind == "stdlib":
            return Explanation(
                name, False,
                "its file %s is in the standard library; %s" % (origin, self._hint(name)),
                origin, "stdlib",
            )
        return Explanation(
            name, True,
            "its file %s is your code (outside the standard library and site-packages)" % origin,
            origin, "user",
        )

    def should_instrument(self, module_name: str, origin: Optional[str]) -> bool:
        return self.decide(module_name, origin).instrumented

    def as_dict(self) -> Dict[str, Any]:
        return {
            "include": list(self.include),
            "skip": list(self.skip),
            "skip_regex": self.skip_regex,
            "mode": self.mode,
            "mode_overrides": dict(self.mode_overrides),
            "sources": dict(self.sources),
            "pyproject": self.pyproject,
        }


def _compile_regex(rx: Optional[str], source: str):
    if rx is None or rx == "":
        return None
    try:
        return re.compile(rx)
    except re.error as e:
        raise ConfigError("squall: bad skip_regex %r from %s: %s" % (rx, source, e)) from None


# --- loading -----------------------------------------------------------------------------------


def find_pyproject(start: Optional[str] = None) -> Optional[str]:
    d = os.path.abspath(start or os.getcwd())
    if os.path.isfile(d):
        d = os.path.dirname(d)
    while True:
        p = os.path.join(d, "pyproject.toml")
        if os.path.isfile(p):
            return p
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _toml_load(path: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - depends on the interpreter
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("squall: %s is not valid TOML: %s" % (path, e)) from None


def _as_list(value: Any, where: str, key: str) -> List[str]:
    if isinstance(value, str):
        return [s.strip() for s in value.split(",") if s.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ConfigError(
        "squall: bad %s %r in %s; expected a list of module prefixes like [\"app\", \"lib.x\"]"
        % (key, value, where)
    )


def _as_overrides(value: Any, where: str, key: str) -> Dict[str, str]:
    """``{"a.b": "calls"}`` or ``"a.b=calls,c=full"``."""
    if isinstance(value, str):
        out: Dict[str, str] = {}
        for item in value.split(","):
            if not item.strip():
                continue
            pre, sep, m = item.partition("=")
            if not sep or not pre.strip():
                raise ConfigError(
                    "squall: bad %s item %r in %s; expected prefix=mode like heavy.pkg=calls"
                    % (key, item.strip(), where)
                )
            out[pre.strip()] = m.strip()
        return out
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return {k.strip(): v.strip() for k, v in value.items()}
    raise ConfigError(
        "squall: bad %s %r in %s; expected a table of prefix = mode like {\"heavy.pkg\" = \"calls\"}"
        % (key, value, where)
    )


def _read_pyproject(path: str) -> Dict[str, Any]:
    data = _toml_load(path)
    table = data.get("tool", {}).get("squall", {})
    where = "[tool.squall] in %s" % path
    if not isinstance(table, dict):
        raise ConfigError("squall: %s must be a table, got %r" % (where, table))
    out: Dict[str, Any] = {}
    for key, value in table.items():
        k = key.replace("-", "_")
        if k in ("include", "skip"):
            out[k] = _as_list(value, where, key)
        elif k in ("skip_regex", "mode"):
            if not isinstance(value, str):
                raise ConfigError("squall: bad %s %r in %s; expected a string" % (key, value, where))
            out[k] = value
        elif k == "mode_overrides":
            out[k] = _as_overrides(value, where, key)
        else:
            raise ConfigError(
                "squall: unknown setting %r in %s; known: %s" % (key, where, ", ".join(SETTINGS))
            )
    return out


def load(
    script_path: Optional[str] = None,
    cli: Optional[Mapping[str, Any]] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
) -> Config:
    """Builds the effective config from defaults, pyproject, env and CLI flags."""
    env = os.environ if env is None else env
    values: Dict[str, Any] = {
        "include": [], "skip": [], "skip_regex": None, "mode": "full", "mode_overrides": {},
    }
    sources = {k: "default" for k in SETTINGS}

    start = os.path.dirname(os.path.abspath(script_path)) if script_path else (cwd or os.getcwd())
    pyproject = find_pyproject(start)
    if pyproject:
        for k, v in _read_pyproject(pyproject).items():
            values[k] = v
            sources[k] = "pyproject (%s)" % pyproject

    for k, var in ENV_VARS.items():
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        if k in ("include", "skip"):
            values[k] = _as_list(raw, "environment %s" % var, var)
        elif k == "mode_overrides":
            values[k] = _as_overrides(raw, "environment %s" % var, var)
        else:
            values[k] = raw
        sources[k] = "environment %s" % var

    for k, v in (cli or {}).items():
        if k not in SETTINGS:
            raise ConfigError("squall: unknown setting %r; known: %s" % (k, ", ".join(SETTINGS)))
        if v is None:
            continue
        if k in ("include", "skip"):
            values[k] = _as_list(v, "command line %s" % CLI_FLAGS[k], k)
        elif k == "mode_overrides":
            values[k] = _as_overrides(v, "command line %s" % CLI_FLAGS[k], k)
        else:
            values[k] = v
        sources[k] = "command line %s" % CLI_FLAGS[k]

    return Config(
        include=values["include"],
        skip=values["skip"],
        skip_regex=values["skip_regex"],
        mode=values["mode"],
        mode_overrides=values["mode_overrides"],
        sources=sources,
        pyproject=pyproject,
        script_path=os.path.abspath(script_path) if script_path else None,
    )


_current: Optional[Config] = None
_current_lock = threading.Lock()


_loading = threading.local()


def current() -> Config:
    """The config in effect (loaded from the environment and cwd on first use)."""
    global _current
    cfg = _current
    if cfg is not None:
        return cfg
    # Loading imports (a TOML reader, sysconfig): those imports pass through the import hook,
    # which asks for the config again. Answer that re-entrant call with the defaults instead of
    # waiting on ourselves.
    if getattr(_loading, "active", False):
        return Config()
    _loading.active = True
    try:
        loaded = load()
    finally:
        _loading.active = False
    with _current_lock:
        if _current is None:
            _current = loaded
        return _current


def configure(
    *,
    script_path: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    **overrides: Any,
) -> Config:
    """Reloads the config with ``overrides`` as command-line-level settings; returns it."""
    global _current
    cfg = load(script_path=script_path, cli=overrides, env=env, cwd=cwd)
    with _current_lock:
        _current = cfg
    return cfg


def set_current(cfg: Config) -> None:
    global _current
    with _current_lock:
        _current = cfg


def get_storm_instrumentation() -> Dict[str, Any]:
    """The effective config and where each setting came from."""
    d = current().as_dict()
    try:
        from squall._instrument import hook

        d["hook_installed"] = hook.is_installed()
    except Exception:  # pragma: no cover
        d["hook_installed"] = False
    d["instrumented_modules"] = sorted(m for m, e in decisions().items() if e.instrumented)
    return d


# --- explain -----------------------------------------------------------------------------------


def _find_origin(name: str) -> Tuple[bool, Optional[str]]:
    """(found, origin) for a module, without importing it (nor its parents)."""
    import importlib.machinery as m

    if name in sys.builtin_module_names:
        return True, None
    try:
        if m.FrozenImporter.find_spec(name) is not None:
            return True, None
    except Exception:
        pass
    parts = name.split(".")
    path = None
    spec = None
    for i in range(len(parts)):
        sub = ".".join(parts[: i + 1])
        mod = sys.modules.get(sub)
        if mod is not None and getattr(mod, "__spec__", None) is not None:
            spec = mod.__spec__
        else:
            try:
                spec = m.PathFinder.find_spec(sub, path)
            except Exception:
                spec = None
        if spec is None:
            return False, None
        path = spec.submodule_search_locations
        if i < len(parts) - 1 and path is None:
            return False, None
    return True, (spec.origin if spec is not None and spec.has_location else None)


def explain(module: str, cfg: Optional[Config] = None) -> Explanation:
    """One sentence (``str(result)``) saying whether ``module`` is instrumented and why."""
    cfg = cfg or current()
    d = decisions().get(module)
    if d is not None:
        return d
    mod = sys.modules.get(module)
    if mod is not None:
        origin = getattr(mod, "__file__", None)
        would = cfg.decide(module, origin)
        if would.instrumented and module != "__main__":
            return Explanation(
                module, False,
                "it was imported before squall's import hook was installed, so it ran unrecorded; "
                "reload it (importlib.reload) or start the program under `squall run` to record it",
                origin, "pre-imported",
            )
        would.imported = True
        return would
    found, origin = _find_origin(module)
    if not found:
        return Explanation(module, False, "no module of that name can be found", None, "not-found")
    return cfg.decide(module, origin)


def skipped_user_modules() -> List[Explanation]:
    """Modules imported under the hook that look like your code but were skipped by
    skip / skip_regex / include, with the reason."""
    out = []
    for _name, e in sorted(decisions().items()):
        if e.instrumented or e.category not in ("skip", "skip_regex", "include"):
            continue
        if classify_path(e.origin)[0] == "user":
            out.append(e)
    return out
