"""Sequencing instructions run one clause at a time (issue 13, SPEC A1, A3).

The splitter is tested on sentences that are not in bench/local_brain.py; the runner with the
real provider against the scripted model server and, where the robot moves, the real MuJoCo
simulator graded by its ground-truth pose.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, call

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.agent.steps import (
    LOOK_EN,
    LOOK_ZH,
    ClauseResult,
    Ran,
    compose_reply,
    is_speech,
    split_clauses,
    with_seen,
)
from loopact.app.robot import open_robot
from loopact.i18n import Name, Phrase, colour_name
from loopact.llm.base import Capabilities, Model
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.small_model import SmallModelPolicy
from loopact.robot.session import RobotSession
from loopact.tools.base import SafetyClass, tool
from loopact.tools.registry import ToolRegistry


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        (
            "drive 2 m forward, then rotate left 30 degrees",
            ["drive 2 m forward", "rotate left 30 degrees"],
        ),
        ("first look up, then look down", ["look up", "look down"]),
        (
            "go to the door and then report your position",
            ["go to the door", "report your position"],
        ),
        ("spin around; then tell me the time", ["spin around", "tell me the time"]),
        ("move 1 m, turn 90 degrees, move 1 m", ["move 1 m", "turn 90 degrees", "move 1 m"]),
        ("reverse half a meter and shake your head", ["reverse half a meter", "shake your head"]),
        ("wait 2 seconds, afterwards nod", ["wait 2 seconds", "nod"]),
        ("please turn left and then please stop", ["please turn left", "please stop"]),
        ("先向前走两米，然后向右转", ["向前走两米", "向右转"]),
        ("去厨房，再回到充电桩", ["去厨房", "回到充电桩"]),
        ("左转45度然后前进", ["左转45度", "前进"]),
        ("点头，接着摇头，最后停下", ["点头", "摇头", "停下"]),
        # 先 ... 再 / 然后 with no comma between the steps (issue 13 names "先 ... 再/然后")
        ("先前进一米再左转90度", ["前进一米", "左转90度"]),
        ("先点头再摇头", ["点头", "摇头"]),
        ("先去厨房再回到充电桩", ["去厨房", "回到充电桩"]),
        ("前进一米然后再左转", ["前进一米", "左转"]),
        ("前进一米再次左转", ["前进一米", "左转"]),
        ("前进一米并且左转90度", ["前进一米", "左转90度"]),
        ("先前进一米，然后再左转90度，最后点头", ["前进一米", "左转90度", "点头"]),
        ("先向左转90度再向左转90度", ["向左转90度", "向左转90度"]),
        ("move forward 2 meters and stop", ["move forward 2 meters", "stop"]),
        # a piece that only says where to takes the motion verb before it (flat_two_rooms)
        (
            "go to the kitchen, then to the bedroom, and come back",
            ["go to the kitchen", "go to the bedroom", "come back"],
        ),
        (
            "drive to the door and then back to the charger",
            ["drive to the door", "drive back to the charger"],
        ),
        (
            "please go to the window, then into the kitchen",
            ["please go to the window", "go into the kitchen"],
        ),
        (
            "patrol charger -> window -> door and come back",
            ["patrol charger", "go to window", "go to door", "come back"],
        ),
        ("move forward 1 m => turn left", ["move forward 1 m", "turn left"]),
        ("巡逻 充电桩 → 窗户 → 门", ["巡逻 充电桩", "去窗户", "去门"]),
        (
            "write what you see into notes.md",
            ["what do you see in front of you?", "write what you see into notes.md"],
        ),
        ("把你看到的东西写进 notes.md", ["你看到了什么？", "把你看到的东西写进 notes.md"]),
        (
            "look around, then write what you see into notes.md",
            ["look around", "write what you see into notes.md"],
        ),
    ],
)
def test_sequences_split_into_their_steps(text: str, clauses: list[str]) -> None:
    assert split_clauses(text) == clauses


@pytest.mark.parametrize(
    "text",
    [
        "move forward three meters",
        "look left and right",
        "turn left, then right",
        "if the door is open, go through it",
        "when you reach the kitchen, stop",
        "what do you see, and what colour is it?",
        "hello there, robot",
        "tell me a story about a cat and a dog",
        "往前走一点",
        "你好，你是谁？",
        "如果看到红色的球，就停下",
        "charger -> window",
        "tell me what you see",
        "describe what you see",
        "drive to the blue ball and stop within a meter of it",
        "go forward and stop at the wall",
        "look at the door, then to the left",
        "give the cup to the man, then to the woman",
        "你看到了什么？",
        "再往前走一米",
        "往前走一米再见",
        "x -> ",
        "",
    ],
)
def test_single_steps_conditions_and_chat_stay_whole(text: str) -> None:
    assert split_clauses(text) == [text]


def _ran(name: str, said: Phrase, ok: bool = True) -> Ran:
    """A call whose result says ``said``, as a robot tool's result does (issue 38)."""
    text = said.text("en")
    return Ran(name, ok, {"result": text} if ok else None, None if ok else text, said)


def test_reply_is_built_from_what_ran() -> None:
    moved = Phrase("motion.moved_forward", distance_m=0.5)
    ok = ClauseResult(
        "move forward half a meter",
        "I moved forward and then turned right.",  # the model's claim is not used
        [_ran("move_forward", moved)],
    )
    looked = ClauseResult("tell me what you see", "I see a red box.", [("seewhat", True, {}, None)])
    reply = compose_reply([ok, looked], [])
    assert reply == "Moved forward 0.50 m and reached the target. Then I see a red box."
    failed = ClauseResult(
        "go to the kitchen", "", [("navigation", False, None, "blocked by an obstacle")]
    )
    reply = compose_reply([failed], ["look around"])
    assert "did not succeed (navigation: blocked by an obstacle)" in reply
    assert "So I did not do: “look around”." in reply
    zh = compose_reply(
        [ClauseResult("点头", "", [_ran("servo_nod", Phrase("head.nodded"))])], ["摇头"], zh=True
    )
    assert zh == "点了点头（表示“是”）。因此没有执行：“摇头”。"
    kitchen = Name("the kitchen", "厨房")
    went = ClauseResult(
        "去厨房", "", [_ran("navigation", Phrase("nav.reached", goal=kitchen, distance_m=4.92))]
    )
    assert compose_reply([went], [], zh=True) == "走了 4.92 米，到达厨房。"
    assert compose_reply([went], []) == "Reached the kitchen after 4.92 m."
    # a failure the runtime said is told in the instruction's language too
    stop = Phrase(
        "motion.stopped_early_to",
        cause=Phrase("cause.obstacle"),
        why=Phrase("stop.obstacle_ahead", clearance_m=0.28),
        distance_m=1.2,
        angle_deg=0.0,
        goal=Name("kitchen", "厨房"),
    )
    blocked = ClauseResult("去厨房", "", [_ran("navigation", stop, ok=False)])
    assert compose_reply([blocked], ["回来"], zh=True) == (
        "“去厨房”没有完成（navigation: 去厨房的路上提前停止，原因：遇到障碍物（机器人前方 "
        "0.28 米处有障碍物）；完成了 1.20 米，0.0 度）。因此没有执行：“回来”。"
    )
    assert compose_reply([blocked], []).startswith(
        "“去厨房” did not succeed (navigation: stopped early by obstacle on the way to the "
        "kitchen: obstacle 0.28 m ahead of the robot; achieved 1.20 m, 0.0 deg)"
    )
    pose = Phrase("motion.pose", x_m=0.5, y_m=-0.25, yaw_deg=-90.0)
    assert ClauseResult("你在哪", "", [_ran("get_current_pose", pose)]).sentence(zh=True) == (
        "机器人在 x=0.50 米，y=-0.25 米，朝向 -90.0 度"
    )
    # a sentence a tool wrote itself stays as it is (never a guessed translation)
    other = ClauseResult("抓起杯子", "", [("grab", True, {"result": "grabbed the cup"}, None)])
    assert compose_reply([other], [], zh=True) == "Grabbed the cup."


def test_the_runtimes_sentences_with_names_and_counts_in_both_languages() -> None:
    """What agent/result_zh.py's regular expressions did, from typed values: names in the
    user's language where they have one ("到达门"), counts said right ("1 lap": commit
    7af1b88), a name without a Chinese one as written."""
    around = Phrase("nav.reached_around", goal=Name("the door"), distance_m=4.74, detours=2)
    assert around.text() == "reached the door after 4.74 m, going around 2 obstacles"
    assert around.text("zh") == "走了 4.74 米，到达 the door，绕过了 2 个障碍物"
    named = Phrase("nav.reached_around", goal=Name("the door", "门"), distance_m=4.74, detours=2)
    assert named.text("zh") == "走了 4.74 米，到达门，绕过了 2 个障碍物"
    one_lap = Phrase(
        "line.followed",
        color=colour_name("purple"),
        elapsed_s=45,
        distance_m=10.4,
        laps=Phrase("line.lap", n=1),
        on_line_s=44,
        cause=Phrase("cause.laps"),
    )
    assert one_lap.text() == (
        "followed the purple line for 45 s: 10.4 m, 1 lap, on the line 44 s; stopped by laps"
    )
    assert one_lap.text("zh") == (
        "沿紫色线行驶了 45 秒：10.4 米，1 圈，在线上 44 秒；停止原因：跑完设定圈数"
    )
    far = Phrase("place.ahead", place=Name("front-door"), distance_m=2.0, angle_deg=0.0)
    assert far.text("zh") == "front-door 在 2.00 米外，在正前方"


async def test_a_clause_about_what_was_seen_is_sent_with_the_observation(
    scripted_server: Any, tmp_path: Path
) -> None:
    """ "write what you see into report.md": the look step put before it ran, and the clause
    goes to the model with what it saw in place of "what you see" (the 0.5B brain wrote
    "What you see?" into the file when it had to copy it from an earlier message)."""

    @tool(safety=SafetyClass.READ_ONLY)
    def seewhat() -> dict[str, str]:
        """What is in view."""
        return {"result": "I see a red box 2.8 m away, 29 degrees right"}

    @tool(safety=SafetyClass.WRITE)
    def file_write(path: str, content: str) -> str:
        """Write a file."""
        (tmp_path / path).write_text(content, encoding="utf-8")
        return f"wrote {path}"

    server = scripted_server(
        [
            {"tool_calls": [call("seewhat", {})], "expect": {"last_user_contains": LOOK_EN}},
            {"text": "A box."},
            {
                "tool_calls": [call("file_write", {"path": "report.md", "content": "red box"})],
                "expect": {"last_user_contains": 'write "I see a red box 2.8 m away, 29 degrees'},
            },
            {"text": "Written."},
        ]
    )
    model = OpenAIChatModel("scripted", server.base_url, "k", current_task_only=True)
    opts = AgentOptions(
        bounds=Bounds(backoff_base_s=0.01), workspace=tmp_path, split_steps=True, auto_approve=True
    )
    agent = Agent(model, ToolRegistry([seewhat, file_write]), opts)
    outcome = await asyncio.wait_for(agent.run_task("write what you see into report.md"), 60)
    await agent.close()
    assert outcome.status == "completed", outcome
    sent = server.requests[2].body["messages"][-1]["content"]
    assert str(sent).endswith('29 degrees right" into report.md'), sent
    looked = ClauseResult(LOOK_ZH, "", [("seewhat", True, {"result": "I see a box"}, None)])
    assert with_seen("把你看到的东西写进 report.md", looked) == "把“I see a box”写进 report.md"
    # only after the look step the splitter put there; a question keeps its words
    other = ClauseResult("look left", "", [("servo_move", True, {"result": "looks left"}, None)])
    assert with_seen("write what you see into a.md", other) == "write what you see into a.md"
    assert with_seen("what do you see?", looked) == "what do you see?"


@pytest.fixture
async def robot() -> AsyncIterator[RobotSession]:
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        yield session
    finally:
        await session.close()


def steps_agent(
    server: Any, session: RobotSession, tmp_path: Path, model: Model | None = None
) -> tuple[Agent, Recorder]:
    model = model or OpenAIChatModel("scripted", server.base_url, "k", current_task_only=True)
    agent = Agent(
        model,
        ToolRegistry(session.tools),
        AgentOptions(
            bounds=Bounds(backoff_base_s=0.01, tool_timeout_s=120),
            system_prompt="Drive the robot.",
            workspace=tmp_path,
            stop_hooks=(session.stop,),
            state_provider=session.state,
            split_steps=True,
        ),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def truth(session: RobotSession) -> tuple[float, float, float]:
    st = session.robot.sim.state()  # type: ignore[attr-defined]  # the simulator's own pose
    return st.x_m, st.y_m, math.degrees(st.yaw_rad)


@pytest.mark.sim
async def test_two_step_instruction_runs_both_steps_and_tells_only_what_ran(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [call("move_forward", {"distance_m": 0.5})],
                "expect": {"last_user_contains": "move forward half a meter"},
            },
            {"text": "I moved forward and turned right."},  # claims the unrun step
            {
                "tool_calls": [call("turn_right", {"angle_deg": 90})],
                "expect": {"last_user_contains": "turn right 90 degrees"},
            },
            {"text": "Turned."},
        ]
    )
    agent, rec = steps_agent(server, robot, tmp_path)
    text = "move forward half a meter, then turn right 90 degrees"
    outcome = await asyncio.wait_for(agent.run_task(text), 120)
    await agent.close()
    assert outcome.status == "completed", outcome
    x, y, yaw = truth(robot)
    assert abs(x - 0.5) <= 0.05 and abs(y) <= 0.05 and abs(yaw + 90) <= 5
    assert outcome.reply.startswith("Moved forward 0.")
    assert "Then turned right " in outcome.reply
    assert "I moved forward and turned right" not in outcome.reply
    # a step's own answer is not streamed to the channels (terminal, web, voice) as the reply
    assert not rec.of("text_delta")
    assert [e.data["text"] for e in rec.of("reply")] == [outcome.reply]
    assert [e.data["text"] for e in rec.of("clause_start")] == [
        "move forward half a meter",
        "turn right 90 degrees",
    ]
    # the second clause's request starts with its own instruction: no earlier call to repeat
    second = server.requests[2].body["messages"]
    assert second[-1]["role"] == "user" and "turn right 90 degrees" in str(second[-1]["content"])
    # each clause is an action: its first response must be a call, the answer rounds are free
    choices = [r.body.get("tool_choice") for r in server.requests]
    assert choices == ["required", None, "required", None]


async def test_a_clause_that_asks_to_be_told_may_answer_from_what_ran(
    scripted_server: Any, tmp_path: Path
) -> None:
    """ "..., then tell me where you are": the answer may come from the last result, so that
    clause's first response is not forced to be a call (only action clauses are)."""

    @tool(safety=SafetyClass.READ_ONLY)
    def get_current_pose() -> dict[str, float]:
        """Where the robot is."""
        return {"x_m": 1.0, "y_m": 0.0, "yaw_deg": 0.0}

    server = scripted_server(
        [
            {"tool_calls": [call("get_current_pose", {})]},
            {"text": "I am at x = 1 m."},
            {"text": "I am at x = 1 m, facing along x."},
        ]
    )
    model = OpenAIChatModel("scripted", server.base_url, "k", current_task_only=True)
    opts = AgentOptions(bounds=Bounds(backoff_base_s=0.01), workspace=tmp_path, split_steps=True)
    agent = Agent(model, ToolRegistry([get_current_pose]), opts)
    outcome = await asyncio.wait_for(
        agent.run_task("check your pose, then tell me where you are"), 60
    )
    await agent.close()
    assert outcome.status == "completed", outcome
    assert [r.body.get("tool_choice") for r in server.requests] == ["required", None, None]
    assert outcome.reply.endswith("I am at x = 1 m, facing along x.")
    assert is_speech("tell me where you are") and is_speech("告诉我你在哪里")
    assert not is_speech("turn left") and not is_speech("点头")


@pytest.mark.sim
async def test_a_deliberate_repeat_runs_twice(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    turn = {"tool_calls": [call("turn_left", {"angle_deg": 90})]}
    server = scripted_server([turn, {"text": "ok"}, turn, {"text": "ok"}])
    agent, _ = steps_agent(server, robot, tmp_path)
    text = "turn left 90 degrees, then turn left 90 degrees again"
    outcome = await asyncio.wait_for(agent.run_task(text), 120)
    await agent.close()
    assert outcome.status == "completed", outcome
    _, _, yaw = truth(robot)
    assert abs(abs(yaw) - 180) <= 5, yaw  # two left turns of 90 degrees (SPEC A3)
    assert outcome.reply.lower().count("turned left ") == 2, outcome.reply


@pytest.mark.sim
async def test_a_deliberate_repeat_runs_twice_on_a_constrained_endpoint(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """The local brain's shape: text calls under a grammar, wrapped in the small-model policy
    whose repeat guard re-asks when a response only calls again the tool just run. A second
    identical motion the user asked for is a step of its own and runs (SPEC A3, issue 13)."""
    turn = {"text": '{"name": "turn_left", "arguments": {"angle_deg": 90}}'}
    server = scripted_server([turn, {"text": "Turned."}, turn, {"text": "Turned again."}])
    caps = Capabilities(
        native_tool_calls=False, constrained_decoding=True, parallel_tool_calls=False
    )
    inner = OpenAIChatModel(
        "scripted", server.base_url, "k", current_task_only=True, capabilities=caps
    )
    agent, _ = steps_agent(server, robot, tmp_path, model=SmallModelPolicy(inner))
    text = "turn left 90 degrees, then turn left 90 degrees again"
    outcome = await asyncio.wait_for(agent.run_task(text), 120)
    await agent.close()
    assert outcome.status == "completed", outcome
    _, _, yaw = truth(robot)
    assert abs(abs(yaw) - 180) <= 5, yaw  # both turns ran, by the simulator's own pose
    calls = [r.json() for r in server.requests]
    assert [c["grammar"].startswith("root ::= call\n") for c in calls] == [
        True,
        False,
        True,
        False,
    ]  # each clause's first round must call; nothing was re-asked without tools
    assert outcome.reply.lower().count("turned left ") == 2, outcome.reply


@pytest.mark.sim
async def test_a_failed_step_ends_the_sequence_and_says_what_did_not_run(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [call("navigation", {"waypoint": "the moon"})]},
            {"text": "I went there."},
        ]
    )
    agent, rec = steps_agent(server, robot, tmp_path)
    outcome = await asyncio.wait_for(agent.run_task("go to the moon, then nod"), 120)
    await agent.close()
    assert outcome.status == "completed", outcome
    assert "did not succeed (navigation:" in outcome.reply
    assert "So I did not do: “nod”." in outcome.reply
    assert [e.data["ok"] for e in rec.of("clause_end")] == [False]
    assert not [e for e in rec.of("tool_call") if e.data["name"] == "servo_nod"]


@pytest.mark.sim
async def test_a_single_instruction_whose_call_failed_is_answered_with_what_failed(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """With split_steps (the local brain), the words after a failed call are not the reply:
    the 0.5B brain answered "drive at 50 m/s" with "It is driving at a distance of 50
    meters." (2026-12-02) while nothing moved. A motion that succeeds after the failure is
    told by the runtime's own sentence, not by the model's words either."""
    server = scripted_server(
        [
            {"tool_calls": [call("move_forward", {"distance_m": 50})]},
            {"text": "The robot is driving at a distance of 50 meters."},
            {"tool_calls": [call("move_forward", {"distance_m": 50})]},
            {"tool_calls": [call("move_forward", {"distance_m": 0.2})]},
            {"text": "Moved 0.2 m instead."},
        ]
    )
    agent, rec = steps_agent(server, robot, tmp_path)
    outcome = await asyncio.wait_for(agent.run_task("drive at 50 m/s"), 120)
    assert outcome.status == "completed", outcome
    assert outcome.reply.startswith("“drive at 50 m/s” did not succeed (move_forward: Not run:")
    assert "50 meters" not in outcome.reply
    assert outcome.reply.endswith("drive(linear_mps)).")  # the error's own full stop is dropped
    assert not rec.of("text_delta")  # the replaced words were never shown
    x, _, _ = truth(robot)
    assert abs(x) < 0.01  # nothing moved
    # a failure and then a call that ran: the model's own answer
    second = await asyncio.wait_for(agent.run_task("go forward 50 meters"), 120)
    await agent.close()
    assert second.status == "completed", second
    assert second.reply.startswith("Moved forward 0.2"), second.reply
    assert "instead" not in second.reply
    assert abs(truth(robot)[0] - 0.2) <= 0.05


@pytest.mark.sim
async def test_a_single_motion_is_answered_with_what_the_robot_did(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """The 0.5B brain drove in circles for "drive to the red box and stop within half a meter
    of it" and answered "... and stopped within half a meter of the red box" (eval,
    2026-12-02, AMD): after a motion the reply is the runtime's sentence of what the robot
    did, in the instruction's language; a look-up keeps the model's answer. (That instruction
    is now a step held to ``approach``, issue 45: tests/agent/test_grounded_steps.py; here a
    drive the model words as if it had reached something.)"""
    server = scripted_server(
        [
            {"tool_calls": [call("drive", {"linear_mps": 0.2, "angular_dps": 0, "duration_s": 1})]},
            {"text": "I stopped within half a meter of the red box."},
            {"tool_calls": [call("turn_left", {"angle_deg": 90})]},
            {"text": "我向右转了九十度。"},
            {"tool_calls": [call("distance_to", {"place": "door"})]},
            {"text": "The door is a few metres away."},
        ]
    )
    agent, rec = steps_agent(server, robot, tmp_path)
    text = "drive ahead slowly for one second"
    outcome = await asyncio.wait_for(agent.run_task(text), 120)
    assert outcome.status == "completed", outcome
    said = re.fullmatch(r"Drove for 1 s: (\d\.\d\d) m, turned -?0\.\d degrees\.", outcome.reply)
    assert said, outcome.reply
    assert abs(float(said[1]) - truth(robot)[0]) <= 0.02  # what the simulator saw
    assert "half a meter" not in outcome.reply
    assert not rec.of("text_delta")  # the replaced words were never shown
    zh = await asyncio.wait_for(agent.run_task("向左转90度"), 120)
    assert zh.status == "completed", zh
    turned = re.fullmatch(r"左转了 (\d+\.\d) 度，到达目标。", zh.reply)
    assert turned, zh.reply
    assert abs(truth(robot)[2] - 90) <= 5 and abs(float(turned[1]) - truth(robot)[2]) <= 1
    asked = await asyncio.wait_for(agent.run_task("how far are you from the door?"), 120)
    await agent.close()
    assert asked.reply == "The door is a few metres away."  # read-only: the model's answer
    assert [e.data["text"] for e in rec.of("reply")] == [
        outcome.reply,
        zh.reply,
        asked.reply,
    ]


@pytest.mark.sim
async def test_a_chinese_sequence_is_told_in_chinese_from_the_tools_own_sentences(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Each tool's real ``data.result`` sentence, run on the simulator, comes out Chinese in the
    reply to a Chinese instruction (rendered from each result's typed outcome, issue 38);
    places by their Chinese names."""
    steps = [
        call("move_forward", {"distance_m": 0.3}),
        call("turn_right", {"angle_deg": 30}),
        call("servo_move", {"pan_deg": 20, "tilt_deg": 0}),
        call("servo_nod", {}),
        call("servo_init", {}),
        call("distance_to", {"place": "door"}),
        call("navigation", {"waypoint": "charger"}),
        call("stop", {}),
    ]
    script: list[dict[str, Any]] = []
    for step in steps:
        script += [{"tool_calls": [step]}, {"text": "好的。"}]
    server = scripted_server(script)
    agent, rec = steps_agent(server, robot, tmp_path)
    text = (
        "前进0.3米，然后右转30度，然后摄像头向左转20度，然后点头，然后摄像头回正，"
        "然后告诉我离门多远，然后去充电桩，然后停"
    )
    outcome = await asyncio.wait_for(agent.run_task(text), 240)
    await agent.close()
    assert outcome.status == "completed", outcome
    assert len(rec.of("clause_start")) == len(steps)
    results = [e.data for e in rec.of("tool_result")]
    assert all(r["ok"] for r in results), results
    # the site map's Chinese names (sim_room.yaml: door -> 门, charger -> 充电桩) name places
    assert not re.findall(r"[A-Za-z]{2,}", outcome.reply), outcome.reply
    for said in ("前进了 0.3", "右转了 ", "摄像头现在朝向左 ", "点了点头", "摄像头已回正"):
        assert said in outcome.reply, (said, outcome.reply)
    assert "然后门在 " in outcome.reply and "米外，在" in outcome.reply
    assert "到达充电桩。" in outcome.reply and outcome.reply.endswith("已停下。")


@pytest.mark.sim
async def test_a_chinese_question_answered_in_english_is_told_in_chinese(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """The local brain answered 离门多远？ in English from distance_to's result; the runtime's
    own sentence, rendered in Chinese, is the reply instead. An English question keeps the
    model's answer, and so does a Chinese one answered in Chinese."""
    ask = call("distance_to", {"place": "door"})
    server = scripted_server(
        [
            {"tool_calls": [ask]},
            {"text": "The door is 5.43 meters away, 6 degrees to the right."},
            {"tool_calls": [ask]},
            {"text": "The door is 5.43 meters away."},
            {"tool_calls": [ask]},
            {"text": "门在 5.43 米外。"},
            {"tool_calls": [call("seewhat", {})]},
            {"text": "I see a red box."},
        ]
    )
    agent, rec = steps_agent(server, robot, tmp_path)
    zh = await asyncio.wait_for(agent.run_task("离门多远？"), 60)
    en = await asyncio.wait_for(agent.run_task("how far is the door?"), 60)
    said = await asyncio.wait_for(agent.run_task("门有多远"), 60)
    seen = await asyncio.wait_for(agent.run_task("你看到了什么？"), 60)
    await agent.close()
    # the offline scene description, rendered: every object and the line, in Chinese
    described = rec.of("tool_result")[-1].data["data"]["result"]
    assert described.startswith("I see a ") and "line on the floor" in described, described
    assert seen.reply.startswith("我看到") and "地面上的紫色线" in seen.reply, seen.reply
    assert not re.findall(r"[A-Za-z]{2,}", seen.reply), seen.reply
    assert seen.reply.count("（") == described.count(" degrees ") + described.count("straight")
    dist = next(e.data for e in rec.of("tool_result"))["data"]["distance_m"]
    assert zh.reply == f"门在 {dist:.2f} 米外，在右方 6 度。", zh.reply  # the runtime's numbers
    assert en.reply == "The door is 5.43 meters away."
    assert said.reply == "门在 5.43 米外。"
    # the English answer was not streamed to the user before the Chinese reply
    first_task = rec.of("task_start")[0].task_id
    assert not [
        e for e in rec.of("text_delta") if e.task_id == first_task and "door" in e.data["text"]
    ]


@pytest.mark.sim
async def test_looking_around_is_told_from_the_four_views_in_the_users_language(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """observe_surroundings writes one sentence from its four views (the offline scene
    description of each); the local brain's reply to 四处看看 is that sentence in Chinese,
    not its own English, and to "look around" the sentence as written."""
    look = call("observe_surroundings", {})
    server = scripted_server(
        [
            {"tool_calls": [look]},
            {"text": "I looked around and saw a red box."},
            {"tool_calls": [look]},
            {"text": "I looked around."},
        ]
    )
    agent, rec = steps_agent(server, robot, tmp_path)
    zh = await asyncio.wait_for(agent.run_task("四处看看"), 120)
    en = await asyncio.wait_for(agent.run_task("look around"), 120)
    await agent.close()
    results = [e.data["data"] for e in rec.of("tool_result")]
    said = results[0]["result"]
    views = results[0]["views"]
    assert said.startswith("looked all around. In front: I see "), said
    for view in views:  # every view's own description is in the sentence, in turning order
        assert view["seen"] in said
    assert [said.index(v["seen"]) for v in views] == sorted(said.index(v["seen"]) for v in views)
    assert zh.reply.startswith("环顾了四周。前方："), zh.reply
    assert all(f"{w}：" in zh.reply for w in ("左边", "后方", "右边")), zh.reply
    assert not re.findall(r"[A-Za-z]{2,}", zh.reply), zh.reply
    # every colour the detector saw in a view is named in Chinese
    seen_colours = {o["color"] for v in views for o in v["objects"]} - {"purple"}
    colour_zh = {"red": "红色", "yellow": "黄色", "green": "绿色", "blue": "蓝色", "brown": "棕色"}
    assert seen_colours, views
    for colour in seen_colours:
        assert colour_zh.get(colour, colour) in zh.reply, (colour, zh.reply)
    sentence = results[1]["result"]
    assert en.reply == sentence[0].upper() + sentence[1:], en.reply
