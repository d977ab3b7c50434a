"""What perception has located: objects on the floor in the map frame (issue 40).

Every time a perception tool sees coloured objects with depth, each one's floor position is
kept here under the name a person would use (``red box``), newest sighting first. ``navigation``
drives to a located object ("go to the red box": a pose in front of it) and ``show_map`` draws
them. A pure memory: no robot, no time source of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LocatedObject:
    """An object perception has placed on the floor.

    Attributes:
        name: What a person would call it (``red box``).
        colour: Its colour word.
        x_m: x of its visible surface in ``frame``, metres.
        y_m: y in ``frame``, metres.
        frame: ``map`` when the robot was localized, else ``odom``.
        stamp_s: When it was seen, on the robot's clock.
    """

    name: str
    colour: str
    x_m: float
    y_m: float
    frame: str
    stamp_s: float


@dataclass
class ObjectMemory:
    """The newest sighting of each named object (at most :attr:`capacity` names)."""

    capacity: int = 64
    _items: dict[str, LocatedObject] = field(default_factory=dict)

    def remember(self, obj: LocatedObject) -> None:
        """Keep ``obj`` as the newest sighting of its name."""
        self._items.pop(obj.name, None)
        self._items[obj.name] = obj
        while len(self._items) > self.capacity:
            self._items.pop(next(iter(self._items)))

    def find(self, phrase: str) -> LocatedObject | None:
        """The object a phrase names: exact name, or a name all of whose words the phrase has
        (``the red box`` -> ``red box``; ``red`` alone matches the newest red object)."""
        words = phrase.lower().replace("the ", " ").split()
        if not words:
            return None
        wanted = " ".join(words)
        if wanted in self._items:
            return self._items[wanted]
        for obj in reversed(self._items.values()):
            if set(obj.name.split()) <= set(words) or (len(words) == 1 and words[0] == obj.colour):
                return obj
        return None

    def all(self) -> list[LocatedObject]:
        """Every located object, oldest first."""
        return list(self._items.values())
