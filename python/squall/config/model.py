"""The config: the settings' values with where each came from, and the decision for a module."""

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .decisions import Explanation, _runtime_decision
from .paths import _prefix_match, classify_path
from .settings import MODES, SETTINGS, ConfigError


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
            return Explanation(
                name, False, "it is %s; only Python source can be instrumented" % what, origin, "no-source"
            )
        runtime = _runtime_decision(name)
        if runtime is not None:
            prefix, on = runtime
            return Explanation(
                name,
                on,
                "squall.api.%sinstrument(%r) was called while the program ran" % ("" if on else "un", prefix),
                origin,
                "runtime",
            )
        pre = _prefix_match(name, self.skip)
        if pre is not None:
            return Explanation(
                name,
                False,
                "it is under the skip prefix `%s` (from %s)" % (pre, self.sources["skip"]),
                origin,
                "skip",
            )
        if self._regex is not None and self._regex.search(name):
            return Explanation(
                name,
                False,
                "it matches skip_regex `%s` (from %s)" % (self.skip_regex, self.sources["skip_regex"]),
                origin,
                "skip_regex",
            )
        if self.include:
            pre = _prefix_match(name, self.include)
            if pre is not None:
                return Explanation(
                    name,
                    True,
                    "it is under the include prefix `%s` (from %s)" % (pre, self.sources["include"]),
                    origin,
                    "include",
                )
            if name == "__main__":
                return Explanation(name, True, "it is the script being run (%s)" % origin, origin, "main")
            return Explanation(
                name,
                False,
                "it is not under the include prefixes %s (from %s); add it to include to record it"
                % (", ".join("`%s`" % p for p in self.include), self.sources["include"]),
                origin,
                "include",
            )
        if name == "__main__":
            return Explanation(name, True, "it is the script being run (%s)" % origin, origin, "main")
        if kind == "site-packages":
            return Explanation(
                name,
                False,
                "its file %s is in site-packages; %s" % (origin, self._hint(name)),
                origin,
                "site-packages",
            )
        if kind == "stdlib":
            return Explanation(
                name,
                False,
                "its file %s is in the standard library; %s" % (origin, self._hint(name)),
                origin,
                "stdlib",
            )
        return Explanation(
            name,
            True,
            "its file %s is your code (outside the standard library and site-packages)" % origin,
            origin,
            "user",
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
