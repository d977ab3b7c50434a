"""The arm scene (``--scenario arm``; issue 43, SPEC D6): a mobile manipulator at a low table.

The room of :mod:`loopact.sim.world` without its big coloured objects, plus:

- a low grey table in front of the robot's start (top at :data:`TABLE_TOP_Z_M`);
- graspable objects on it: a red, a green and a blue 4 cm cube and a yellow cylinder;
- two containers on it: a cyan bin (right) and a brown wooden tray (left, further away);
- the arm of :file:`models/loopact_arm.xml` on the robot's base, at the mount of the
  ``sim_arm`` hardware profile (:data:`ARM_MOUNT_M`).

Every object and container is a free body (it falls, slides and is carried by physics); the
table is fixed. Contact is tuned so that a grasp holds (elliptic friction cones, an impedance
ratio of 10, finger pads with high friction and torsional friction). Lengths in metres,
masses in kilograms; the world frame is the room's (x forward at the robot's start, z up).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any
from xml.etree import ElementTree as ET

ARM_DESCRIPTION = "models/loopact_arm.xml"
"""The arm's MJCF, inside this package (``package://loopact.sim/models/loopact_arm.xml``)."""

ARM_MOUNT_M = (-0.03, -0.13, 0.165)
"""Where the arm's root body sits on the robot's base (base frame, metres): on the base's
top, right of the camera mast and behind the camera, so that the folded arm is never in the
camera's view (the governor's obstacle stop reads that view)."""

ARM_HOME_RAD = (0.0, -1.5708, 2.93, 1.78, 0.0)
"""The stowed pose the arm starts in (the ``sim_arm`` profile's ``arm.home_rad``), radians."""

TABLE_CENTER_M = (0.34, -0.08)
TABLE_SIZE_M = (0.28, 0.52)
"""Full x and y extents of the table's top, metres."""
TABLE_TOP_Z_M = 0.15
"""Height of the table's top surface above the floor, metres."""
TABLE_THICKNESS_M = 0.02
TABLE_RGBA = (0.72, 0.72, 0.74, 1.0)

ARM_OPTION: dict[str, str | float] = {"cone": "elliptic", "impratio": 10.0}
"""Physics options of the arm scene: elliptic friction cones and a high impedance ratio keep a
squeezed object from creeping out of the fingers. A sparse constraint Jacobian and sleeping
bodies at rest keep the scene well faster than real time."""


@dataclass(frozen=True)
class ArmObject:
    """A free body of the arm scene: something to grasp or a container.

    Attributes:
        name: Identifier; the MJCF body is ``obj_<name>``.
        colour: The colour word the detector knows it by.
        shape: ``box``, ``cylinder``, ``bin`` or ``tray``.
        x_m: Centre x at the start, metres (world).
        y_m: Centre y at the start, metres.
        size_m: Full extents ``(x, y, z)``, metres (a cylinder: diameter, diameter, height).
        mass_kg: Mass.
        rgba: Colour.
        container: True for the bin and the tray.
        wall_m: A container's wall thickness, metres.
    """

    name: str
    colour: str
    shape: str
    x_m: float
    y_m: float
    size_m: tuple[float, float, float]
    mass_kg: float
    rgba: tuple[float, float, float, float]
    container: bool = False
    wall_m: float = 0.006

    @property
    def z_m(self) -> float:
        """Centre height at the start (resting on the table), metres."""
        return TABLE_TOP_Z_M + self.size_m[2] / 2


CUBE_M = 0.04
"""Edge of the cubes, metres."""

OBJECTS: tuple[ArmObject, ...] = (
    ArmObject("red_cube", "red", "box", 0.32, -0.04, (CUBE_M,) * 3, 0.05, (0.9, 0.05, 0.05, 1)),
    ArmObject("green_cube", "green", "box", 0.38, 0.0, (CUBE_M,) * 3, 0.05, (0.05, 0.75, 0.1, 1)),
    ArmObject("blue_cube", "blue", "box", 0.38, -0.12, (CUBE_M,) * 3, 0.05, (0.05, 0.2, 0.95, 1)),
    ArmObject(
        "yellow_cylinder", "yellow", "cylinder", 0.27, -0.10, (0.04, 0.04, 0.06), 0.06,
        (0.95, 0.85, 0.05, 1),
    ),
    ArmObject(
        "bin", "cyan", "bin", 0.30, -0.24, (0.10, 0.10, 0.07), 0.4, (0.0, 0.8, 0.8, 1),
        container=True,
    ),
    ArmObject(
        "tray", "brown", "tray", 0.40, 0.10, (0.10, 0.12, 0.025), 0.3, (0.55, 0.36, 0.2, 1),
        container=True,
    ),
)  # fmt: skip
"""The objects at their start positions (x within the arm's reach, on the table)."""


def _f(*values: float) -> str:
    return " ".join(f"{v:.5g}" for v in values)


_GRASPABLE = 'contype="1" conaffinity="3" condim="4" friction="1.0 0.02 0.001"'
"""Objects collide with the world (bit 1) and with the arm (bit 2)."""


def _body(o: ArmObject) -> str:
    sx, sy, sz = (s / 2 for s in o.size_m)
    head = (
        f'<body name="obj_{o.name}" pos="{_f(o.x_m, o.y_m, o.z_m)}">'
        f'<freejoint name="obj_{o.name}_free"/>'
    )
    rgba = _f(*o.rgba)
    if o.shape == "box":
        geoms = [
            f'<geom name="obj_{o.name}" type="box" size="{_f(sx, sy, sz)}" '
            f'mass="{o.mass_kg}" rgba="{rgba}" {_GRASPABLE}/>'
        ]
    elif o.shape == "cylinder":
        geoms = [
            f'<geom name="obj_{o.name}" type="cylinder" size="{_f(sx, sz)}" '
            f'mass="{o.mass_kg}" rgba="{rgba}" {_GRASPABLE}/>'
        ]
    else:  # a container: a floor and four walls
        w = o.wall_m / 2
        parts = [
            ("floor", (0.0, 0.0, -sz + w), (sx, sy, w)),
            # the walls stand on the floor plate: only the plate touches the table
            ("wall_xp", (sx - w, 0.0, w), (w, sy, sz - w)),
            ("wall_xn", (-sx + w, 0.0, w), (w, sy, sz - w)),
            ("wall_yp", (0.0, sy - w, w), (sx - 2 * w, w, sz - w)),
            ("wall_yn", (0.0, -sy + w, w), (sx - 2 * w, w, sz - w)),
        ]
        share = o.mass_kg / len(parts)
        geoms = [
            f'<geom name="obj_{o.name}_{part}" type="box" pos="{_f(*pos)}" size="{_f(*size)}" '
            f'mass="{share:.4g}" rgba="{rgba}" {_GRASPABLE}/>'
            for part, pos, size in parts
        ]
    return head + "".join(geoms) + "</body>"


def table_mjcf() -> str:
    """The MJCF geoms of the low table (top and four legs, fixed to the world)."""
    tx, ty = TABLE_CENTER_M
    sx, sy = TABLE_SIZE_M
    t = TABLE_THICKNESS_M / 2
    top_z = TABLE_TOP_Z_M - t
    rgba = _f(*TABLE_RGBA)
    out = [
        f'<geom name="arm_table" type="box" pos="{_f(tx, ty, top_z)}" '
        f'size="{_f(sx / 2, sy / 2, t)}" rgba="{rgba}" contype="1" conaffinity="3" '
        'friction="0.8 0.005 0.0001"/>'
    ]
    leg_h = (TABLE_TOP_Z_M - TABLE_THICKNESS_M) / 2
    for i, (dx, dy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        lx, ly = tx + dx * (sx / 2 - 0.03), ty + dy * (sy / 2 - 0.03)
        out.append(
            f'<geom name="arm_table_leg{i}" type="box" pos="{_f(lx, ly, leg_h)}" '
            f'size="{_f(0.015, 0.015, leg_h)}" rgba="{rgba}" contype="1" conaffinity="1"/>'
        )
    return "\n".join(out)


def scene_mjcf() -> str:
    """The arm scene's own MJCF for the world body: a floor that objects land on (hidden;
    the base slides above it), the table and every free body."""
    floor = (
        '<geom name="arm_floor" type="plane" size="8 8 0.1" group="5" rgba="0 0 0 0" '
        'contype="1" conaffinity="2"/>'
    )
    return "\n".join([floor, table_mjcf(), *(_body(o) for o in OBJECTS)])


def arm_description_xml() -> str:
    """The arm's MJCF as text (packaged with loopact)."""
    return (resources.files("loopact.sim") / ARM_DESCRIPTION).read_text(encoding="utf-8")


def build_mjcf(room_xml: str, mount_m: tuple[float, float, float] = ARM_MOUNT_M) -> str:
    """The room's MJCF with the arm seated on the robot's base.

    The arm's description (:func:`arm_description_xml`) is merged in as a document: its root
    body goes into the base body at ``mount_m``, its defaults, contact exclusions and
    actuators beside the room's. Physics options for grasping are set (:data:`ARM_OPTION`).

    Args:
        room_xml: The room's MJCF with the arm scene's bodies in it (:func:`scene_mjcf`).
        mount_m: The arm's root in the base's frame, metres.

    Raises:
        ValueError: Either document is not the MJCF expected (no ``base`` body, no arm).
    """
    room = ET.fromstring(room_xml)
    arm = ET.fromstring(arm_description_xml())
    base = room.find(".//body[@name='base']")
    arm_root = arm.find("./worldbody/body")
    if base is None or arm_root is None:
        raise ValueError("the room has no base body or the arm description no body")
    mount = ET.SubElement(base, "body", name="arm_mount", pos=_f(*mount_m))
    mount.append(arm_root)
    for section in ("default", "contact", "actuator"):
        theirs = arm.find(section)
        if theirs is None:
            continue
        ours = room.find(section)
        if ours is None:
            ours = ET.SubElement(room, section)
        ours.extend(list(theirs))
    contact = room.find("contact")
    assert contact is not None
    for link in ("arm_base", "arm_link1"):  # seated on the base's top
        ET.SubElement(contact, "exclude", body1="base", body2=link)
    option = room.find("option")
    if option is None:
        option = ET.SubElement(room, "option")
    option.set("cone", str(ARM_OPTION["cone"]))
    option.set("impratio", f"{ARM_OPTION['impratio']:g}")
    option.set("jacobian", "sparse")
    # Bodies at rest sleep (no contacts computed) until something touches them or their
    # controls change: the resting objects cost nothing, the scene runs ~10x real time.
    ET.SubElement(option, "flag", sleep="enable")
    return ET.tostring(room, encoding="unicode")


def describe_objects() -> list[dict[str, Any]]:
    """The arm scene's objects for ``sim --describe`` (start positions; metres)."""
    return [
        {
            "name": o.name,
            "colour": o.colour,
            "shape": o.shape,
            "position_m": {"x_m": o.x_m, "y_m": o.y_m, "z_m": round(o.z_m, 4)},
            "size_m": {"x_m": o.size_m[0], "y_m": o.size_m[1], "z_m": o.size_m[2]},
            "mass_kg": o.mass_kg,
            "movable": True,
            "container": o.container,
        }
        for o in OBJECTS
    ]


def describe_table() -> dict[str, Any]:
    """The low table for ``sim --describe`` (metres)."""
    return {
        "name": "arm_table",
        "colour": "grey",
        "shape": "table",
        "position_m": {
            "x_m": TABLE_CENTER_M[0],
            "y_m": TABLE_CENTER_M[1],
            "z_m": TABLE_TOP_Z_M / 2,
        },
        "size_m": {"x_m": TABLE_SIZE_M[0], "y_m": TABLE_SIZE_M[1], "z_m": TABLE_TOP_Z_M},
    }
