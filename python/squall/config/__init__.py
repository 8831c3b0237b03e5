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

The package: ``settings.py`` (names, errors), ``paths.py`` (where a module lives), ``model.py``
(``Config`` and its decision for a module), ``decisions.py`` (explanations, runtime changes),
``loading.py`` (pyproject, environment, flags); here: the current config and ``explain``.
"""

import sys
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .decisions import Explanation, _forget_decisions, decisions, remember, set_runtime_override
from .loading import find_pyproject, load
from .model import Config
from .paths import _prefix_match, classify_path
from .settings import CLI_FLAGS, ENV_VARS, MODES, SETTINGS, ConfigError

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

# Names other modules and tests reach through ``squall.config``.
_REEXPORTED = (CLI_FLAGS, ENV_VARS, SETTINGS, _forget_decisions, _prefix_match, find_pyproject, set_runtime_override)


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


def _hook_never_imported() -> bool:
    return False


# Whether the import hook is installed: replaced by ``squall._instrument.hook`` when it is
# imported (config does not import the hook, which reads the config; a hook never imported was
# never installed).
_hook_installed: Callable[[], bool] = _hook_never_imported


def get_storm_instrumentation() -> Dict[str, Any]:
    """The effective config and where each setting came from."""
    d = current().as_dict()
    try:
        d["hook_installed"] = _hook_installed()
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
                module,
                False,
                "it was imported before squall's import hook was installed, so it ran unrecorded; "
                "reload it (importlib.reload) or start the program under `squall run` to record it",
                origin,
                "pre-imported",
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
