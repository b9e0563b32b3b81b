"""`python -m harness`: the command-line interface."""

from harness.cli import main

raise SystemExit(main())
