"""``python -m neardup.cli``: the same as the ``neardup`` command."""

from neardup.cli.entry import main

raise SystemExit(main())
