"""The command's settings flags are neardup.settings.Settings' fields: one flag per field, with
the field's default, help and choices (neardup.cli.settings_args), so a default is written once."""

import argparse
import dataclasses

import pytest

from neardup.cli.parser import build_parser
from neardup.cli.settings_args import flag, settings_from_args
from neardup.settings import Settings


def _subparser(ap: argparse.ArgumentParser, *path: str) -> argparse.ArgumentParser:
    for name in path:
        action = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
        ap = action.choices[name]
    return ap


def _options(p: argparse.ArgumentParser) -> dict[str, list[argparse.Action]]:
    by_flag: dict[str, list[argparse.Action]] = {}
    for action in p._actions:
        for s in action.option_strings:
            by_flag.setdefault(s, []).append(action)
    return by_flag


def _check(p: argparse.ArgumentParser, names) -> None:
    by_flag = _options(p)
    for f in dataclasses.fields(Settings):
        if f.name not in names:
            assert flag(f.name) not in by_flag, f.name
            continue
        actions = by_flag.get(flag(f.name), [])
        assert len(actions) == 1, (f.name, actions)
        a = actions[0]
        assert a.dest == f.name
        assert a.default == f.default, (f.name, a.default, f.default)
        assert a.help and a.help.strip(), f.name
        assert a.help.replace("%%", "%") == f.metadata["help"], f.name
        assert list(a.choices or []) == list(f.metadata.get("choices", [])), f.name
    # and no other flag sets a setting under another name
    for name in names:
        assert [a for a in p._actions if a.dest == name] == by_flag[flag(name)], name


@pytest.mark.parametrize("command", ["dedup", "demo"])
def test_every_setting_is_one_flag_of_dedup_and_demo_with_its_default_and_help(command):
    _check(_subparser(build_parser(), command), set(Settings.names()))


def test_index_init_has_every_setting_but_max_chars():
    _check(_subparser(build_parser(), "index", "init"), set(Settings.names()) - {"max_chars"})


@pytest.mark.parametrize("action", ["add", "query"])
def test_index_add_and_query_take_max_chars_from_the_settings(action):
    p = _subparser(build_parser(), "index", action)
    (a,) = _options(p)["--max-chars"]
    assert a.default == Settings().max_chars and a.help == Settings.help("max_chars")["help"]


def test_index_add_checks_its_settings_without_defaults():
    p = _subparser(build_parser(), "index", "add")
    by_flag = _options(p)
    for name in ("k", "num_perm", "scheme", "seed", "threshold"):
        (a,) = by_flag[flag(name)]
        assert a.default is None and a.help
    assert build_parser().parse_args(["index", "add", "D", "f", "--num-perm", "64"]).num_perm == 64


def test_parsed_dedup_arguments_are_the_settings():
    ap = build_parser()
    assert settings_from_args(ap.parse_args(["dedup", "x"])) == Settings()
    a = ap.parse_args(
        [
            "dedup",
            "x",
            "--k",
            "3",
            "--threshold",
            "0.7",
            "--bands",
            "8",
            "--rows",
            "4",
            "--prefer-source",
            " agency, site-a,,",
            "--method",
            "minhash",
            "--max-chars",
            "99",
        ]
    )
    assert settings_from_args(a) == Settings(
        k=3, threshold=0.7, bands=8, rows=4, prefer_source=("agency", "site-a"), max_chars=99
    )
    with pytest.raises(SystemExit):
        ap.parse_args(["dedup", "x", "--method", "lsh"])  # (choices from the field's metadata)
