"""What the console's routes share (SPEC F2): the agent, the robot, the hub, the settings, the
uploads (:class:`ConsoleState`)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict
from typing import Any

from loopact._compat import wait_within
from loopact.channels.agent_port import AgentPort
from loopact.channels.web.camera import CameraFeed
from loopact.channels.web.hub import EventHub, ShownImages
from loopact.channels.web.settings import GateLike, SettingsStore, WebSettings
from loopact.errors import RobotError
from loopact.llm.messages import Image

log = logging.getLogger(__name__)

_MAX_PENDING_UPLOADS = 20
_POSE_TIMEOUT_S = 2.0


def _default_gate() -> GateLike | None:
    try:
        from loopact.vision.gate import ImageGate
    except ImportError:
        log.warning("image uploads disabled: loopact.vision.gate is not available")
        return None
    gate: GateLike = ImageGate()
    return gate


class ConsoleState:
    """What the routes share: the agent, the robot, the hub, the settings and uploads.

    Args:
        agent: The running agent (see :func:`create_app`).
        robot_session: The robot session or None.
        settings: The console options.
    """

    def __init__(self, agent: AgentPort, robot_session: Any, settings: WebSettings) -> None:
        self.agent = agent
        self.robot_session = robot_session
        self.settings = settings
        self.store = SettingsStore(settings)
        self.hub = EventHub(agent.bus, settings.queue_size)
        robot = getattr(robot_session, "robot", None)
        self.camera = (
            CameraFeed(robot, settings.camera_fps, settings.jpeg_quality) if robot else None
        )
        self.gate: GateLike | None = settings.gate
        self.gate_loaded = settings.gate is not None
        self.uploads: OrderedDict[str, Image] = OrderedDict()
        self.shown = ShownImages(agent.bus)
        self._upload_ids = itertools.count(1)
        self.shutdown = asyncio.Event()

    def get_gate(self) -> GateLike | None:
        """The image gate, built on first use."""
        if not self.gate_loaded:
            self.gate = _default_gate()
            self.gate_loaded = True
        return self.gate

    def add_upload(self, image: Image) -> str:
        """Keep an accepted upload until a message takes it; returns its id."""
        upload_id = f"img{next(self._upload_ids)}"
        self.uploads[upload_id] = image
        while len(self.uploads) > _MAX_PENDING_UPLOADS:
            self.uploads.popitem(last=False)
        return upload_id

    async def pose(self) -> dict[str, Any] | None:
        """The robot pose from ``robot_session.state()``, or None without a robot/pose."""
        if self.robot_session is None:
            return None
        try:
            state = await wait_within(self.robot_session.state(), _POSE_TIMEOUT_S)
        except (RobotError, asyncio.TimeoutError) as exc:
            log.debug("no pose for the console: %s", exc)
            return None
        return dict(state) if state is not None else None

    def scrub(self, text: str, *extra: str | None) -> str:
        """Remove secrets (the API keys, current and ``extra``) from a text for a response."""
        for secret in [*self.store.secrets(), *(e for e in extra if e)]:
            text = text.replace(secret, "***")
        return text
