"""The command's start-up: ``import neardup`` is light, and a Ctrl-C while the heavy modules
load is the command's (exit 130, one line) rather than a traceback out of an import."""

import subprocess
import sys
import textwrap


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_importing_the_package_and_the_command_loads_neither_numpy_nor_the_core():
    r = _python("""
        import sys
        import neardup, neardup.cli
        heavy = sorted(m for m in ("numpy", "pyarrow", "neardup._core", "neardup.engines.local",
                                   "neardup.index") if m in sys.modules)
        print(",".join(heavy) or "none")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "none"


def test_the_lazy_names_are_the_modules_own():
    r = _python("""
        import neardup
        from neardup.index import Index
        from neardup.minhash import MinHash
        from neardup.engines.local import dedup
        assert neardup.Index is Index and neardup.MinHash is MinHash and neardup.dedup is dedup
        assert neardup.lsh.__name__ == "neardup.lsh"
        assert set(neardup.__all__) <= set(dir(neardup))
        try:
            neardup.no_such_name
        except AttributeError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "module 'neardup' has no attribute 'no_such_name'"


def test_ctrl_c_while_the_pipeline_imports_is_exit_130_without_a_traceback():
    # a finder that interrupts the import of the pipeline, as a Ctrl-C at that moment would
    r = _python("""
        import sys
        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == "neardup.engines.local":
                    raise KeyboardInterrupt
        sys.meta_path.insert(0, Interrupt())
        from neardup.cli import main
        sys.exit(main(["demo", "-o", "unused-out"]))
    """)
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip() == "neardup: interrupted"


def test_index_commands_cut_by_their_reader_exit_141_quietly(tmp_path):
    """`neardup index query ... | head -1` said "[Errno 32] Broken pipe" and exited 4 (export 5;
    `add --verdicts -` exited 4 although its add was committed)."""
    import json
    import os

    recs = tmp_path / "day.jsonl"
    recs.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"d{i}",
                    "text": f"story {i % 1500} about the harbour bridge and "
                    f"the tides {i % 1500 * 7} on monday" + (" again" if i >= 1500 else ""),
                }
            )
            + "\n"
            for i in range(3000)
        )
    )  # (stories of two: export has clusters to write)
    ix = tmp_path / "ix"
    assert (
        subprocess.run([sys.executable, "-m", "neardup.cli", "index", "init", str(ix)], capture_output=True).returncode
        == 0
    )
    for args in (
        ["index", "add", str(ix), str(recs), "--verdicts", "-"],
        ["index", "query", str(ix), str(recs)],
        ["index", "export", str(ix), "-o", "-"],
    ):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the command writes
        p = subprocess.run(
            [sys.executable, "-m", "neardup.cli", *args], stdout=w, stderr=subprocess.PIPE, text=True, timeout=300
        )
        os.close(w)
        assert p.returncode == 141 and p.stderr == "", (args, p.returncode, p.stderr)
    p = subprocess.run([sys.executable, "-m", "neardup.cli", "index", "stats", str(ix)], capture_output=True, text=True)
    assert json.loads(p.stdout)["documents"] == 3000  # the add was committed before its verdicts were cut
