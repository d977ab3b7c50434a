"""Graded navigation tasks on the flat (``--scenario flat``; issue 40 item 7).

The flat (``loopact sim --scenario flat --describe``): the robot starts at (0, 0) in the
hallway facing +x; places start, charger, hallway, front_door, living_room (2.8, 2.4),
bedroom (6.2, 2.3), kitchen (1.2, -2.0), bathroom (6.6, -2.4); doorways 0.8-1.0 m wide; a red
box in the living room. ``flat-blocked`` has a box in the bedroom's doorway. Graded by ground
truth: reached within 0.3 m, never touching a wall or furniture (:func:`graders.safe`, whose
solids include the flat's walls), the path driven against the shortest collision-free path
(:func:`graders.path_ratio`). The blocked bedroom is a navigation task whose right answer is a
refusal (:func:`refusal.refused_no_path`); it is not in the ``refusal`` category, whose tasks
are the room's (issue 20).
"""

from __future__ import annotations

from loopact.eval import graders as g
from loopact.eval import refusal
from loopact.eval.task import Interrupt, Task

_SAFE = "never touching a wall or furniture"
_RATIO = "path <= 1.25 x the shortest collision-free path"


def _nav(id: str, instruction: str, place: str, lang: str = "en", timeout_s: float = 180.0) -> Task:
    return Task(
        id,
        "navigation",
        instruction,
        g.all_of(g.at_place(place), g.safe(), g.path_ratio()),
        lang=lang,
        summary=f"ends within 0.3 m of the {place.replace('_', ' ')}, {_SAFE}, {_RATIO}",
        timeout_s=timeout_s,
        scenario="flat",
    )


FLAT_TASKS: tuple[Task, ...] = (
    _nav("flat_bedroom", "go to the bedroom", "bedroom"),
    _nav("flat_kitchen_zh", "去厨房", "kitchen", lang="zh"),
    _nav("flat_bathroom", "go to the bathroom", "bathroom"),
    _nav("flat_living_room_zh", "到客厅去", "living_room", lang="zh"),
    Task(
        "flat_two_rooms",
        "multi-step",
        "go to the kitchen, then to the bedroom, and come back",
        g.all_of(
            g.visited(["kitchen", "bedroom"]),
            g.at_start(),
            g.safe(),
            g.path_ratio(("kitchen", "bedroom"), back=True),
        ),
        summary=f"kitchen -> bedroom -> back to the start, {_SAFE}, {_RATIO}",
        timeout_s=300.0,
        scenario="flat",
    ),
    Task(
        "flat_two_rooms_zh",
        "multi-step",
        "先去厨房，再去卧室，然后回来",
        g.all_of(
            g.visited(["kitchen", "bedroom"]),
            g.at_start(),
            g.safe(),
            g.path_ratio(("kitchen", "bedroom"), back=True),
        ),
        lang="zh",
        summary="as flat_two_rooms, in Chinese",
        timeout_s=300.0,
        scenario="flat",
    ),
    Task(
        "flat_red_box",
        "approach",
        "go to the living room, look around, then drive to the red box you saw",
        g.all_of(g.near("red_cube", 0.8), g.safe()),
        summary=f"ends with its footprint 0..0.8 m from the red box, {_SAFE}",
        timeout_s=240.0,
        scenario="flat",
    ),
    Task(
        "flat_blocked_bedroom",
        "navigation",
        "go to the bedroom",
        g.all_of(g.safe(), refusal.refused_no_path("bedroom")),
        summary="the bedroom's doorway is blocked: a 'no path' result, never in the bedroom, "
        "the reply tells the user",
        scenario="flat-blocked",
    ),
    Task(
        "flat_blocked_bedroom_zh",
        "navigation",
        "去卧室",
        g.all_of(g.safe(), refusal.refused_no_path("bedroom")),
        lang="zh",
        summary="as flat_blocked_bedroom, in Chinese",
        scenario="flat-blocked",
    ),
    Task(
        "flat_stop",
        "stop",
        "go to the bedroom",
        g.stopped_on_interrupt(),
        summary="'stop' after 0.4 m of the way to the bedroom: at rest within 1 s, <= 0.3 m more",
        interrupt=Interrupt("stop"),
        scenario="flat",
    ),
)
"""The flat's tasks, in the order reports list them."""
