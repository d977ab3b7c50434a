"""The instructions of ``bench/local_brain.py`` and how a run's calls are graded (issue 6, 13).

Each :class:`Case` is one instruction with the call sequences accepted as fully correct:
``S`` single-step, ``M`` multi-step, ``N`` the new multi-step set of issue 13, ``P`` held-out
single-step paraphrases nothing in the runtime was tuned on, ``H`` small talk (no call).
Distances are metres, angles degrees, speeds m/s; a numeric argument is a (value, tolerance)
pair. :func:`matches` is the grader.

``V`` is the perception-dependent set of issue 45 (find, approach, face, if-you-see, pronouns;
English and Chinese): graded by the simulator's ground truth (``--sim-log`` and the world
description, :mod:`loopact.eval.graders`), never by the calls made. Written before any change
of issue 45 was measured on them. In the simulated room (``loopact sim --describe``) the robot
starts at (0, 0) facing +x: the red box is 28 degrees right (in view), the yellow box 6 degrees
left 5.3 m away (in view), the green cylinder 55 degrees left and the blue ball 119 degrees right
(both out of view); there is no cyan object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopact.eval import arm_tasks as at
from loopact.eval import graders as g
from loopact.eval import truth
from loopact.eval.task import Evidence, Grader, Verdict

IGNORED = {"get_current_pose"}
"""Read-only look-ups that do not count against a case unless it expects them."""

Num = tuple[float, float]  # (expected value, absolute tolerance)


@dataclass(frozen=True)
class Call:
    """An expected call: ``args`` maps a name to a value (str/bool) or a (value, tol) pair."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One instruction and the call sequences accepted as fully correct."""

    text: str
    accept: tuple[tuple[Call, ...], ...]
    kind: str = "single"  # single, multi, multi_new, heldout, flat, chat (no call), perception, arm
    grader: Grader | None = None  # ground truth (the perception set): replaces ``accept``
    absent: str = ""  # the object the instruction looks for does not exist (its colour)
    branching: bool = False  # "if you see X": not finding X chooses a branch, it is no failure
    scenario: str = "default"  # the simulator scenario the case runs in (flat: issue 40)


def C(name: str, **args: Any) -> Call:  # noqa: N802 - short constructor for the table
    return Call(name, args)


def one(*calls: Call) -> tuple[Call, ...]:
    return tuple(calls)


def S(text: str, *accept: tuple[Call, ...]) -> Case:  # noqa: N802
    return Case(text, tuple(accept), "single")


def M(text: str, *accept: tuple[Call, ...]) -> Case:  # noqa: N802
    return Case(text, tuple(accept), "multi")


def N(text: str, *accept: tuple[Call, ...]) -> Case:  # noqa: N802
    """A multi-step instruction of the new set (issue 13), reported apart from ``M``."""
    return Case(text, tuple(accept), "multi_new")


def P(text: str, *accept: tuple[Call, ...]) -> Case:  # noqa: N802
    """A held-out single-step instruction: nothing in the runtime was tuned on it."""
    return Case(text, tuple(accept), "heldout")


def F(text: str, place: str) -> Case:  # noqa: N802
    """A place of the flat (``--scenario flat``, its site map ``flat``; issue 40): the place's
    key or any of the names it answers to (``living room``, ``客厅``) is correct, since
    ``navigation`` takes each of them to the same place."""
    from loopact.robot.profile import load_site

    names = (place, place.replace("_", " "), *load_site("flat").waypoints[place].names)
    accept = tuple(one(C("navigation", waypoint=n.lower())) for n in dict.fromkeys(names))
    return Case(text, accept, "flat", scenario="flat")


def H(text: str) -> Case:  # noqa: N802
    """Small talk: correct when the brain answers without any robot call."""
    return Case(text, ((),), "chat")


def V(text: str, grader: Grader, absent: str = "") -> Case:  # noqa: N802
    """A perception-dependent instruction (issue 45), graded by ground truth; ``absent``: the
    colour of a looked-for object that is not in the room."""
    branching = text.startswith(("if ", "如果"))
    return Case(text, (), "perception", grader, absent, branching)


def A(text: str, grader: Grader) -> Case:  # noqa: N802
    """A single-step arm instruction in the arm scene (issue 43), graded by ground truth (the
    sim log's objects and arm); reported apart."""
    return Case(text, (), "arm", grader, scenario="arm")


def _gripper_closed() -> Grader:
    def grade(ev: Evidence) -> Verdict:
        gap = [p["arm"]["gap_m"] for p in ev.poses if "arm" in p]
        ok = bool(gap) and gap[-1] < 0.01
        return Verdict(
            ok, f"the gripper ends {gap[-1] if gap else float('nan'):.3f} m open (< 0.01)"
        )

    return grade


def _head_swing(axis: str, min_deg: float) -> Grader:
    """The head swung at least ``min_deg`` on ``axis`` (``pan``: a shake, ``tilt``: a nod)."""

    def grade(ev: Evidence) -> Verdict:
        values = [p["head"][f"{axis}_deg"] for p in ev.poses if "head" in p]
        swing = max(values) - min(values) if values else 0.0
        return Verdict(swing >= min_deg, f"head {axis} swung {swing:.0f} deg (>= {min_deg:.0f})")

    return grade


def _stayed(within_m: float = 0.15) -> Grader:
    """The robot never left its start by more than ``within_m`` (turning in place is fine)."""

    def grade(ev: Evidence) -> Verdict:
        far = max(truth.dist(p, truth.start(ev.poses)) for p in ev.poses)
        return Verdict(far <= within_m, f"went at most {far:.2f} m from its start (<= {within_m})")

    return grade


def _said(*words: str) -> Grader:
    """The reply names one of ``words`` (what was not found)."""

    def grade(ev: Evidence) -> Verdict:
        said = any(w in ev.reply.lower() for w in words)
        return Verdict(said, f"the reply {'names' if said else 'does not name'} {words[0]!r}")

    return grade


def _reached(name: str) -> Grader:
    return g.all_of(g.near(name, 0.8), g.safe())


SHOOK = _head_swing("pan", 15.0)


D1 = (1.0, 0.05)
LOOK = (one(C("seewhat")), one(C("detect_objects")))
AROUND = (one(C("observe_surroundings")),)

CASES: list[Case] = [
    # --- English, single step
    S("move forward one meter", one(C("move_forward", distance_m=D1))),
    S("Go forward 2 meters.", one(C("move_forward", distance_m=(2.0, 0.05)))),
    S("move forward 50 centimeters", one(C("move_forward", distance_m=(0.5, 0.02)))),
    S("drive ahead 0.3 m", one(C("move_forward", distance_m=(0.3, 0.02)))),
    S("back up half a meter", one(C("move_backward", distance_m=(0.5, 0.02)))),
    S("move backward 1 meter", one(C("move_backward", distance_m=D1))),
    S("turn left 90 degrees", one(C("turn_left", angle_deg=(90, 1)))),
    S("turn right 90 degrees", one(C("turn_right", angle_deg=(90, 1)))),
    S("turn left by 45 degrees", one(C("turn_left", angle_deg=(45, 1)))),
    S("rotate right 30 degrees", one(C("turn_right", angle_deg=(30, 1)))),
    S(
        "turn around",
        one(C("turn_left", angle_deg=(180, 1))),
        one(C("turn_right", angle_deg=(180, 1))),
    ),
    S("go to the kitchen", one(C("navigation", waypoint="kitchen"))),
    S("navigate to the door", one(C("navigation", waypoint="door"))),
    S("go back to the charger", one(C("navigation", waypoint="charger"))),
    S("stop", one(C("stop"))),
    S("Stop moving now!", one(C("stop"))),
    S("what do you see?", *LOOK),
    S("look around", *AROUND),
    S("look 30 degrees to the left", one(C("servo_move", pan_deg=(30, 1), tilt_deg=(0, 1)))),
    S("center your camera", one(C("servo_init"))),
    S("nod your head", one(C("servo_nod"))),
    S("shake your head", one(C("servo_shake"))),
    S("where are you?", one(C("get_current_pose"))),
    # --- Chinese, single step
    S("前进一米", one(C("move_forward", distance_m=D1))),
    S("向前走两米", one(C("move_forward", distance_m=(2.0, 0.05)))),
    S("往前走50厘米", one(C("move_forward", distance_m=(0.5, 0.02)))),
    S("后退一米", one(C("move_backward", distance_m=D1))),
    S("左转90度", one(C("turn_left", angle_deg=(90, 1)))),
    S("向右转45度", one(C("turn_right", angle_deg=(45, 1)))),
    S("去厨房", one(C("navigation", waypoint="kitchen"))),
    S("到门口去", one(C("navigation", waypoint="door"))),
    S("停下", one(C("stop"))),
    S("你看到了什么？", *LOOK),
    S("环顾四周", *AROUND),
    S("点头", one(C("servo_nod"))),
    S("摇头", one(C("servo_shake"))),
    S("摄像头回到中间", one(C("servo_init"))),
    # --- multi-step
    M(
        "move forward one meter, then turn left 90 degrees",
        one(C("move_forward", distance_m=D1), C("turn_left", angle_deg=(90, 1))),
    ),
    M(
        "turn right 90 degrees and then move forward 0.5 meters",
        one(C("turn_right", angle_deg=(90, 1)), C("move_forward", distance_m=(0.5, 0.02))),
    ),
    M(
        "go to the kitchen and tell me what you see",
        one(C("navigation", waypoint="kitchen"), C("seewhat")),
        one(C("navigation", waypoint="kitchen"), C("detect_objects")),
    ),
    M(
        "先前进一米，再左转90度",
        one(C("move_forward", distance_m=D1), C("turn_left", angle_deg=(90, 1))),
    ),
    M(
        "去门口，然后停下",
        one(C("navigation", waypoint="door"), C("stop")),
        one(C("navigation", waypoint="door")),
    ),
    M(
        "move backward 0.5 meters and nod",
        one(C("move_backward", distance_m=(0.5, 0.02)), C("servo_nod")),
    ),
    # --- multi-step, new set (issue 13): written before any multi-step change was
    # measured on them (2 and 3 steps, English and Chinese; motion, head, navigation and
    # perception mixed). Reported apart from the six above as "multi_new".
    N(
        "move forward half a meter, then turn right 90 degrees",
        one(C("move_forward", distance_m=(0.5, 0.02)), C("turn_right", angle_deg=(90, 1))),
    ),
    N(
        "turn left 90 degrees, then turn left 90 degrees again",
        one(C("turn_left", angle_deg=(90, 1)), C("turn_left", angle_deg=(90, 1))),
    ),
    N(
        "go to the window and then look around",
        one(C("navigation", waypoint="window"), C("observe_surroundings")),
    ),
    N(
        "first nod, then shake your head",
        one(C("servo_nod"), C("servo_shake")),
    ),
    N(
        "back up 30 centimeters and then turn around",
        one(C("move_backward", distance_m=(0.3, 0.02)), C("turn_left", angle_deg=(180, 1))),
        one(C("move_backward", distance_m=(0.3, 0.02)), C("turn_right", angle_deg=(180, 1))),
    ),
    N(
        "look 20 degrees to the right, then tell me what you see",
        one(C("servo_move", pan_deg=(-20, 1), tilt_deg=(0, 1)), C("seewhat")),
        one(C("servo_move", pan_deg=(-20, 1), tilt_deg=(0, 1)), C("detect_objects")),
    ),
    N(
        "go to the door, after that go to the charger",
        one(C("navigation", waypoint="door"), C("navigation", waypoint="charger")),
    ),
    N(
        "move forward 1 meter, turn left 45 degrees, then move forward 0.5 meters",
        one(
            C("move_forward", distance_m=D1),
            C("turn_left", angle_deg=(45, 1)),
            C("move_forward", distance_m=(0.5, 0.02)),
        ),
    ),
    N(
        "turn right 30 degrees and then tell me where you are",
        one(C("turn_right", angle_deg=(30, 1)), C("get_current_pose")),
    ),
    N(
        "center the camera, then nod",
        one(C("servo_init"), C("servo_nod")),
    ),
    N(
        "go to the kitchen, look around, then come back to the start",
        one(
            C("navigation", waypoint="kitchen"),
            C("observe_surroundings"),
            C("navigation", waypoint="start"),
        ),
    ),
    N(
        "drive forward 2 meters and after that stop",
        one(C("move_forward", distance_m=(2.0, 0.05)), C("stop")),
        one(C("move_forward", distance_m=(2.0, 0.05))),
    ),
    N(
        "先后退半米，然后右转90度",
        one(C("move_backward", distance_m=(0.5, 0.02)), C("turn_right", angle_deg=(90, 1))),
    ),
    N(
        "去厨房，然后告诉我你看到了什么",
        one(C("navigation", waypoint="kitchen"), C("seewhat")),
        one(C("navigation", waypoint="kitchen"), C("detect_objects")),
    ),
    N(
        "先点头，再摇头",
        one(C("servo_nod"), C("servo_shake")),
    ),
    N(
        "左转90度，再左转90度",
        one(C("turn_left", angle_deg=(90, 1)), C("turn_left", angle_deg=(90, 1))),
    ),
    N(
        "前进一米，之后去充电桩",
        one(C("move_forward", distance_m=D1), C("navigation", waypoint="charger")),
    ),
    N(
        "先去窗户那边，再环顾四周，最后回到起点",
        one(
            C("navigation", waypoint="window"),
            C("observe_surroundings"),
            C("navigation", waypoint="start"),
        ),
    ),
    N(
        "向右转45度，然后前进50厘米",
        one(C("turn_right", angle_deg=(45, 1)), C("move_forward", distance_m=(0.5, 0.02))),
    ),
    N(
        "摄像头回到中间，然后告诉我你在哪里",
        one(C("servo_init"), C("get_current_pose")),
    ),
    N(
        "后退一米，接着左转30度，然后点头",
        one(
            C("move_backward", distance_m=D1),
            C("turn_left", angle_deg=(30, 1)),
            C("servo_nod"),
        ),
    ),
    N(
        "turn left 60 degrees and then move forward 70 cm",
        one(C("turn_left", angle_deg=(60, 1)), C("move_forward", distance_m=(0.7, 0.02))),
    ),
    # --- held-out single-step paraphrases: written in session 3 before any
    # change was measured on them; nothing in the runtime or the tools was tuned on them.
    P("go forward 1.5 meters", one(C("move_forward", distance_m=(1.5, 0.05)))),
    P("move ahead 70 cm", one(C("move_forward", distance_m=(0.7, 0.02)))),
    P("reverse 0.4 meters", one(C("move_backward", distance_m=(0.4, 0.02)))),
    P("turn 60 degrees to the right", one(C("turn_right", angle_deg=(60, 1)))),
    P("spin left 180 degrees", one(C("turn_left", angle_deg=(180, 1)))),
    P("head to the kitchen", one(C("navigation", waypoint="kitchen"))),
    P("return to the start", one(C("navigation", waypoint="start"))),
    P("halt", one(C("stop"))),
    P("tell me what you can see", *LOOK),
    P("look right 45 degrees", one(C("servo_move", pan_deg=(-45, 1), tilt_deg=(0, 1)))),
    P("look down 15 degrees", one(C("servo_move", pan_deg=(0, 1), tilt_deg=(15, 1)))),
    P("what is your current position?", one(C("get_current_pose"))),
    P("后退半米", one(C("move_backward", distance_m=(0.5, 0.02)))),
    P("右转九十度", one(C("turn_right", angle_deg=(90, 1)))),
    P("向左转30度", one(C("turn_left", angle_deg=(30, 1)))),
    P("去充电桩", one(C("navigation", waypoint="charger"))),
    P("停止", one(C("stop"))),
    P("看看周围", *AROUND),
    P("你能看到什么", *LOOK),
    P("去窗户那边", one(C("navigation", waypoint="window"))),
    # --- perception-dependent (issue 45), graded by ground truth (module docstring)
    V("find the blue ball and go to it", _reached("blue_sphere")),
    V("find the green cylinder, then face it", g.faces("green_cylinder")),
    V("go to the green cylinder", _reached("green_cylinder")),
    V("drive up to the blue ball", _reached("blue_sphere")),
    V("face the blue ball", g.faces("blue_sphere")),
    V("turn toward the green cylinder", g.faces("green_cylinder")),
    V("find the red box", g.faces("red_cube")),
    V("look for the blue ball, then drive over to it", _reached("blue_sphere")),
    V("find the red box and go there", _reached("red_cube")),
    V("search for the green cylinder and go to that one", _reached("green_cylinder")),
    V("look for the yellow box and drive up to it", _reached("yellow_box")),
    V(
        "if you see the red box, go to it, otherwise turn left 90 degrees",
        _reached("red_cube"),
    ),
    V("if you see the blue ball, nod, otherwise shake your head", g.all_of(SHOOK, _stayed())),
    V(
        "if you can see the green cylinder, face it; if not, turn right 90 degrees",
        g.turned(-90),
    ),
    V("find the cyan ball and go to it", g.all_of(_stayed(), _said("cyan")), absent="cyan"),
    V("找到蓝色的球，然后走到它那里", _reached("blue_sphere")),
    V("找到绿色的圆柱，然后转向它", g.faces("green_cylinder")),
    V("走到绿色的圆柱旁边", _reached("green_cylinder")),
    V("面向蓝色的球", g.faces("blue_sphere")),
    V("找一下红色的箱子", g.faces("red_cube")),
    V("如果看到红色的箱子，就开过去，否则左转90度", _reached("red_cube")),
    V("如果你看到蓝色的球就点头，否则摇头", g.all_of(SHOOK, _stayed())),
    V("找到红色的箱子，然后去那里", _reached("red_cube")),
    V("先找到绿色的圆柱，再开过去", _reached("green_cylinder")),
    V("找到蓝色的球，然后对着它", g.faces("blue_sphere")),
    V("找到青色的球，然后走过去", g.all_of(_stayed(), _said("青", "cyan")), absent="cyan"),
    # --- the flat's places (issue 40; target >= 90 %), English and Chinese
    F("go to the bedroom", "bedroom"),
    F("去厨房", "kitchen"),
    F("go to the kitchen", "kitchen"),
    F("去卧室", "bedroom"),
    F("go to the bathroom", "bathroom"),
    F("去卫生间", "bathroom"),
    F("go to the living room", "living_room"),
    F("到客厅去", "living_room"),
    F("go to the hallway", "hallway"),
    F("去走廊", "hallway"),
    F("go to the front door", "front_door"),
    F("到大门那边去", "front_door"),
    F("go back to the charger", "charger"),
    F("回充电桩", "charger"),
    # --- the arm scene (issue 43; target >= 80 %), English and Chinese, written before any
    # tuning: graded by where the objects end and what the reply says
    A("pick up the red cube", g.all_of(at.lifted("red_cube"), at.arm_off_table())),
    A("拿起红色方块", g.all_of(at.lifted("red_cube"), at.arm_off_table())),
    A("pick up the green cube", g.all_of(at.lifted("green_cube"), at.arm_off_table())),
    A("把绿色的方块拿起来", g.all_of(at.lifted("green_cube"), at.arm_off_table())),
    A("grab the yellow cylinder", at.lifted("yellow_cylinder")),
    A("拿起黄色的圆柱", at.lifted("yellow_cylinder")),
    A(
        "put the red cube in the bin",
        g.all_of(at.inside("red_cube", "bin"), at.never_dropped("red_cube")),
    ),
    A("把蓝色方块放进桶里", g.all_of(at.inside("blue_cube", "bin"), at.never_dropped("blue_cube"))),
    A("close the gripper", _gripper_closed()),
    A("合上夹爪", _gripper_closed()),
    A("lift the table", g.all_of(at.nothing_moved(), at.told())),
    A("把桌子举起来", g.all_of(at.nothing_moved(), at.told())),
    # --- small talk: a text answer, no call (guards against forcing calls)
    H("hello, who are you?"),
    H("你好"),
    H("thank you!"),
]


def matches(got: list[tuple[str, dict[str, Any]]], accept: tuple[Call, ...]) -> bool:
    """True when the executed calls are exactly the accepted sequence (within tolerances)."""
    wanted_names = {c.name for c in accept}
    got = [g for g in got if g[0] not in IGNORED or g[0] in wanted_names]
    if len(got) != len(accept):
        return False
    for (name, args), exp in zip(got, accept, strict=True):
        if name != exp.name:
            return False
        for key, want in exp.args.items():
            have = args.get(key)
            if isinstance(want, tuple):
                if not isinstance(have, (int, float)) or abs(float(have) - want[0]) > want[1]:
                    return False
            elif isinstance(want, str):
                if not isinstance(have, str) or have.strip().lower() != want:
                    return False
            elif have != want:
                return False
    return True
