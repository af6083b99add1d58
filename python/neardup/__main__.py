"""``python -m neardup``: the same as the ``neardup`` command."""

from neardup.cli import main

raise SystemExit(main())
