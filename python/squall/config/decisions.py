"""Why each module was (not) instrumented (``Explanation``), the decisions made so far, and the
runtime changes ``squall.api.instrument`` / ``uninstrument`` made."""

import threading
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .paths import _prefix_match


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
