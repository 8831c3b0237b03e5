"""Loading the config: defaults < ``[tool.squall]`` in pyproject.toml < environment < command line."""

import os
import sys
from typing import Any, Dict, List, Mapping, Optional

from .model import Config
from .settings import CLI_FLAGS, ENV_VARS, SETTINGS, ConfigError


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
        'squall: bad %s %r in %s; expected a list of module prefixes like ["app", "lib.x"]' % (key, value, where)
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
        'squall: bad %s %r in %s; expected a table of prefix = mode like {"heavy.pkg" = "calls"}' % (key, value, where)
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
            raise ConfigError("squall: unknown setting %r in %s; known: %s" % (key, where, ", ".join(SETTINGS)))
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
        "include": [],
        "skip": [],
        "skip_regex": None,
        "mode": "full",
        "mode_overrides": {},
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
