"""return inside try/finally where the finally's return wins (also over an exception)."""


def which():
    try:
        return "try"
    finally:
        return "finally"  # noqa: B012


def swallow():
    try:
        raise ValueError("lost")
    finally:
        return "swallowed"  # noqa: B012


print(which(), swallow())
