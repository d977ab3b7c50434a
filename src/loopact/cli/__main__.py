"""``python -m loopact.cli``: the same as the ``loopact`` command."""

from loopact.cli import main

main()
