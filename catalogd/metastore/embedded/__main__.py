"""Entry point of ``python -m catalogd.metastore.embedded`` (see :mod:`.cli`)."""

from catalogd.metastore.embedded.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
