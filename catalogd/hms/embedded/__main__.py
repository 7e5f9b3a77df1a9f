"""Entry point of ``python -m catalogd.hms.embedded`` (see :mod:`.cli`)."""

from catalogd.hms.embedded.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
