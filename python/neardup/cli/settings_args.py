"""Command-line flags derived from :class:`neardup.settings.Settings`, and back.

Every field of ``Settings`` is one flag: ``num_perm`` is ``--num-perm``; its type is the
field's (an ``int | None`` field takes an int), its default the field's, its help and choices
the field's metadata. ``prefer_source`` takes one comma-separated string (names stripped,
empty ones dropped). A default, a help text or a set of choices is therefore written once, in
``Settings``; tests/cli/test_settings_flags.py holds the commands to it.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from neardup.settings import Settings

if TYPE_CHECKING:
    from neardup.stages.options import DedupOptions

__all__ = ["add_expected", "add_settings", "flag", "settings_from_args", "source_list", "values_from_args"]

_TYPES = {"int": int, "float": float, "str": str}
#: What a setting is, from its help: the text before its first ":" or "(" ("MinHash scheme: oph
#: (default: ...), ..." -> "MinHash scheme").
_WHAT = re.compile(r"^[^:(]*")


def flag(name: str) -> str:
    """The flag of setting `name`: ``--num-perm`` for ``num_perm``."""
    return "--" + name.replace("_", "-")


def source_list(text: str) -> tuple[str, ...]:
    """argparse type of ``--prefer-source``: comma-separated names, stripped, empty ones dropped."""
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _type(f: dataclasses.Field) -> Any:
    """The argparse type of field `f`, from its annotation (``int | None`` -> int)."""
    if f.name == "prefer_source":
        return source_list
    annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    parts = [p.strip() for p in annotation.split("|") if p.strip() != "None"]
    if len(parts) != 1 or parts[0] not in _TYPES:
        raise TypeError(f"setting {f.name!r}: no command-line type for {annotation!r}")
    return _TYPES[parts[0]]


def _escape(text: str) -> str:
    return text.replace("%", "%%")  # (argparse formats help with %)


def add_settings(p: Any, names: Iterable[str] | None = None) -> None:
    """Add the flags of the settings `names` (default: all, in the fields' order) to the parser
    or argument group `p`: the field's type, default, help and choices."""
    for name in Settings.names() if names is None else names:
        f = Settings.field_of(name)
        meta = f.metadata
        if f.default is dataclasses.MISSING:  # (a default_factory's value would be made here, once)
            raise TypeError(f"setting {name!r}: a command-line flag needs a plain default")
        kwargs: dict[str, Any] = {"type": _type(f), "default": f.default, "help": _escape(meta["help"])}
        if "choices" in meta:
            kwargs["choices"] = list(meta["choices"])
        if "metavar" in meta:
            kwargs["metavar"] = meta["metavar"]
        p.add_argument(flag(name), **kwargs)


def add_expected(p: Any, names: Iterable[str]) -> None:
    """Add flags for settings that are checked, not set (``index add``): no default (None: not
    checked); the field's type, help and choices."""
    for name in names:
        f = Settings.field_of(name)
        meta = f.metadata
        what = _WHAT.match(meta["help"]).group(0).strip()  # type: ignore[union-attr]
        kwargs: dict[str, Any] = {
            "type": _type(f),
            "default": None,
            "help": _escape(f"the {what} expected (default: not checked)"),
        }
        if "choices" in meta:
            kwargs["choices"] = list(meta["choices"])
        p.add_argument(flag(name), **kwargs)


def values_from_args(a: argparse.Namespace, names: Iterable[str] | None = None) -> dict[str, Any]:
    """The parsed values of the settings `names` (default: all), by setting name."""
    return {name: getattr(a, name) for name in (Settings.names() if names is None else names)}


def settings_from_args(a: argparse.Namespace, **changes: Any) -> Settings:
    """The :class:`Settings` of parsed arguments made with :func:`add_settings` (all fields),
    with `changes` (validated: :class:`~neardup.errors.InvalidParameterError`)."""
    return Settings(**{**values_from_args(a), **changes})


def options(
    a: argparse.Namespace,
    *,
    demo: bool = False,
    progress: bool = False,
    threads: int | None = None,
    collect: bool = True,
) -> DedupOptions:
    """The batch run's options from dedup's parsed arguments: its Settings (the demo prefers the
    source "agency" unless told otherwise), its fields and its run options."""
    from neardup.io.records import Fields
    from neardup.stages.options import DedupOptions

    settings = settings_from_args(a)
    if demo and not settings.prefer_source:
        settings = settings.replace(prefer_source=("agency",))
    fields = Fields(
        id=a.id_field, text=a.text_field, title=a.title_field, time=a.time_field or None, source=a.source_field or None
    )
    return DedupOptions(
        settings=settings,
        fields=fields,
        on_error=a.on_error,
        output_format=a.output_format,
        batch_size=a.batch_size,
        threads=threads,
        progress=progress,
        memory_limit=a.memory_limit,
        tmp_dir=a.tmp_dir,
        large_bucket=a.large_bucket or None,
        collect=collect,
    )
