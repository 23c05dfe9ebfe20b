"""``ovos-a2a`` with the bridge's task store failing to initialize (inside the server's start-up),
for test/cli/test_serve_command.py: ``python -m support.failing_store serve ...``, forked from the
fork server (support/preloaded.py), which has this package imported (it runs ``support.preloaded``).
"""
import sys

from ovos_a2a_solver.bridge.storage import database


async def refuse(self):
    raise RuntimeError("the task store cannot start (test)")


if __name__ == "__main__":
    database.SqliteTaskStore.initialize = refuse
    from ovos_a2a_solver.cli import main

    sys.exit(main(sys.argv[1:]))
