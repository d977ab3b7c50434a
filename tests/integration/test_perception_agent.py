"""Perception tools through the agent and the scripted model server, on the real simulator
(issue 15 acceptance 1): a stop during follow_line or track halts the base before the next model
request; visual_positioning's box is graded against the ground truth even when the vision model
answers badly."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.integration.test_robot_agent import robot, robot_agent

from loopact.robot.session import RobotSession
from loopact.sim.describe import describe_world
from loopact.sim.groundtruth import iou, object_bbox
from loopact.vision.model import VisionModel

pytestmark = pytest.mark.sim
__all__ = ["robot"]  # the fixture


async def _preempt_while_moving(
    server: Any, session: RobotSession, tmp_path: Path, first_text: str
) -> tuple[list[float], Any, str]:
    agent, rec = robot_agent(server, session, tmp_path)
    twist_at_request: list[float] = []
    second_id: list[str | None] = [None]

    def on_event(e: Any) -> None:
        if e.type == "model_request" and e.task_id == second_id[0]:
            twist_at_request.append(session.governor.last_twist.linear_mps)
            twist_at_request.append(session.governor.last_twist.angular_radps)

    agent.bus.subscribe(on_event)
    runner = asyncio.ensure_future(agent.run())
    first = agent.submit(first_text)
    await rec.wait_for(lambda e: e.type == "tool_call")
    for _ in range(3000):  # bounded (60 s) wait until the governor commands motion
        if not session.governor.last_twist.is_zero:
            break
        await asyncio.sleep(0.02)
    assert not session.governor.last_twist.is_zero  # it is moving
    second_id[0] = agent.submit("say hello")
    await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == second_id[0], 120)
    await agent.close()
    runner.cancel()
    return twist_at_request, rec, first


async def test_new_command_stops_follow_line_before_the_next_request(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -1.1, 0.0)  # type: ignore[attr-defined]
    server = scripted_server(
        [
            {"tool_calls": [call("follow_line", {"color": "purple", "duration_s": 60})]},
            {"text": "Hello."},
        ]
    )
    twists, rec, first = await _preempt_while_moving(server, robot, tmp_path, "follow the line")
    assert twists == [0.0, 0.0]
    ends = {e.task_id: e.data["status"] for e in rec.of("task_end")}
    assert ends[first] == "preempted"


async def test_visual_positioning_red_box_with_a_vision_model_that_answers_prose(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    server = scripted_server(
        [
            {"tool_calls": [call("visual_positioning", {"target": "red box"}, "vp1")]},
            {"text": "The red box is on the right side of the image."},  # box request 1
            {
                "text": '{"found": true, "target": "red box", "bbox": [0, 0, 9999, 10], '
                '"confidence": 0.9, "reason": "it is there"}'
            },  # box request 2: outside the frame
            {"text": "Found it."},
        ]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    from loopact.llm.openai_chat import OpenAIChatModel

    robot.perception.vision = VisionModel(OpenAIChatModel("vlm", server.base_url, "k"))
    try:
        outcome = await asyncio.wait_for(agent.run_task("where is the red box?"), 120)
    finally:
        robot.perception.vision = None
        await agent.close()
    assert outcome.status == "completed"
    result = next(e.data for e in rec.of("tool_result") if e.data["id"] == "vp1")
    meta = result["metadata"]
    assert meta["source"] == "detector" and len(meta["model_refused"]) == 2
    assert "not JSON" in meta["model_refused"][0] and "outside" in meta["model_refused"][1]
    box = result["data"]["bbox"]
    pose = await robot.robot.get_pose()
    head = await robot.robot.get_head()
    cube = next(o for o in describe_world()["objects"] if o["name"] == "red_cube")
    gt = object_bbox(
        cube, (pose.x_m, pose.y_m, pose.yaw_rad), (head.pan_rad, head.tilt_rad), 640, 480
    )
    assert gt is not None and iou(gt, box) >= 0.5
    shown = [e for e in rec.of("tool_image") if e.data["id"] == "vp1"]
    assert len(shown) == 1 and shown[0].data["width_px"] == 640  # the overlay, for people


async def test_low_confidence_is_told_to_the_model_which_carries_on_with_text(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    robot.perception.min_confidence = 0.95  # the detector's 0.9 for "red box" is then low
    server = scripted_server(
        [
            {"tool_calls": [call("visual_positioning", {"target": "red box"}, "vp1")]},
            {"text": "I think the red box is ahead on the right, but I am not sure."},
        ]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    try:
        outcome = await asyncio.wait_for(agent.run_task("where is the red box?"), 120)
    finally:
        await agent.close()
    assert outcome.status == "completed"
    result = next(e.data for e in rec.of("tool_result") if e.data["id"] == "vp1")
    assert result["metadata"]["low_confidence"] is True
    assert result["data"]["found"] is True and len(result["data"]["bbox"]) == 4  # still an answer
    # the model is told, in the tool result it reads, to say that it is unsure (G2)
    told = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(told) == 1 and "low confidence (0.90)" in str(told[0]["content"])
    assert "tell the user you are not sure" in str(told[0]["content"])


async def test_new_command_stops_track_before_the_next_request(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    from loopact.robot.positioning import locate

    found = await locate(_env(robot), robot.perception, "red box")
    x1, y1, x2, y2 = found.data["bbox"]
    server = scripted_server(
        [
            {"tool_calls": [call("track", {"x1": x1, "y1": y1, "x2": x2, "y2": y2})]},
            {"text": "Hello."},
        ]
    )
    await robot.robot.teleport(1.0, -0.5, -0.45)  # type: ignore[attr-defined]  # so it turns
    twists, rec, first = await _preempt_while_moving(server, robot, tmp_path, "track the box")
    assert twists == [0.0, 0.0]
    ends = {e.task_id: e.data["status"] for e in rec.of("task_end")}
    assert ends[first] == "preempted"


def _env(session: RobotSession) -> Any:
    from loopact.robot.motion import RobotEnv
    from loopact.vision.gate import ImageGate

    return RobotEnv(session.robot, session.governor, session.profile, session.site, ImageGate())
