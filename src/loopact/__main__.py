"""``python -m loopact`` is the ``loopact`` command."""

from loopact.cli import main

main()
