"""A tool shared by every agent of a fleet (loopact node FILE --transport mqtt --shared)."""

import os
from pathlib import Path

from loopact import tool


@tool(reentrant=True)
def charger_status(robot: str) -> str:
    """Say whether the fleet's charging dock is free for `robot`."""
    with Path(os.environ["FLEET_TOOL_LOG"]).open("a") as f:
        f.write(f"{robot}\n")
    return f"the dock is free for {robot}"
