"""Entry point of the ``filekiln`` command and of the frozen app."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["_child"]:  # a conversion child process (localapi/core/jobs/runner.py starts it)
        from localapi.core.jobs.priority import lower_priority

        lower_priority()  # before the engines' imports: a warm child's start never slows the service's
        from localapi.core.jobs.child import main as child_main

        return child_main()
    from filekiln.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    import multiprocessing

    multiprocessing.freeze_support()  # a frozen app's multiprocessing children must not reach the CLI parser
    sys.exit(main())
