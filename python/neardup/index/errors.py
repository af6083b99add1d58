"""Internal helpers of the index's error messages (the exceptions are in neardup.errors)."""

from __future__ import annotations

__all__ = ["PartsShareAStory", "few"]


def few(xs: list, k: int = 5) -> str:
    """The first `k` of `xs` for an error message, and how many more there are."""
    s = ", ".join(repr(x) for x in xs[:k])
    return s + (f" and {len(xs) - k} more" if len(xs) > k else "")


class PartsShareAStory(Exception):
    """Internal: an add given `parts` (``Index.add_checked``) in which two parts join one story;
    nothing was written, and the caller (the service's group commit) adds the parts one by one."""
