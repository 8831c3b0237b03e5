"""The settings, their names in the environment and on the command line, and the error a bad one
gives."""

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
