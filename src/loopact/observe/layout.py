"""The Foxglove layout for a loopact recording or live view (docs/foxglove-layout.json).

Built with ``foxglove.layouts`` (foxglove-sdk) from the topics of
:mod:`loopact.observe.topics`, so the layout names only channels loopact writes:
``tests/observe/test_layout.py`` checks that docs/foxglove-layout.json is what
:func:`layout_json` returns. Import it in Foxglove with *Layouts > Import from file*.

- the 3D panel in the ``map`` frame, following ``base_link``: TF, odometry, ground truth,
  the site, governor decisions, moving objects, the map and the planned path;
- the camera and the last image a tool showed;
- the Log panel (every agent event), the events as JSON, and a plot of the true and the
  odometry x.
"""

from __future__ import annotations

import foxglove.layouts as fl

from loopact.observe import topics as tp
from loopact.observe.recorder import SIM_LOG

LAYOUT_TOPICS = (
    tp.ODOM_POSE,
    tp.TRUTH_POSE,
    tp.SITE,
    tp.GOVERNOR,
    tp.TRUTH_OBJECTS,
    tp.MAP,
    tp.PLAN,
    tp.CAMERA,
    tp.TOOL_IMAGE,
    tp.LOG,
    tp.EVENTS,
)
"""Every topic the layout shows (besides ``/tf``, which the 3D panel reads by itself)."""


def layout() -> fl.Layout:
    """The layout (see the module docstring)."""
    scene = fl.ThreeDeePanel(
        title="robot (map)",
        config=fl.ThreeDeeConfig(
            fixed_frame=tp.MAP_FRAME,
            follow_tf=tp.BASE_FRAME,
            follow_mode="follow-position",
            topics={
                tp.ODOM_POSE: fl.BaseRendererPoseTopicSettings(visible=True),
                tp.TRUTH_POSE: fl.BaseRendererPoseTopicSettings(visible=True),
                tp.MAP: fl.BaseRendererGridTopicSettings(visible=True),
                tp.PLAN: fl.BaseRendererPosesTopicSettings(visible=True),
                # scene updates (markers) have no settings of their own: shown when visible
                tp.SITE: fl.BaseRendererPoseTopicSettings(visible=True),
                tp.GOVERNOR: fl.BaseRendererPoseTopicSettings(visible=True),
                tp.TRUTH_OBJECTS: fl.BaseRendererPoseTopicSettings(visible=True),
            },
        ),
    )
    images = fl.SplitContainer(
        direction="column",
        items=[
            fl.SplitItem(content=_image(tp.CAMERA, "camera")),
            fl.SplitItem(content=_image(tp.TOOL_IMAGE, "what a tool showed")),
        ],
    )
    plot = fl.PlotPanel(
        title="x: truth and odometry (m)",
        config=fl.PlotConfig(
            paths=[
                fl.PlotSeries(value=f"{SIM_LOG}.x_m", label="true x"),
                fl.PlotSeries(value=f"{tp.ODOM_POSE}.pose.position.x", label="odometry x"),
            ]
        ),
    )
    log = fl.LogPanel(title="agent events", config=fl.LogConfig(topic_to_render=tp.LOG))
    events = fl.RawMessagesPanel(config=fl.RawMessagesConfig(topic_path=tp.EVENTS))
    bottom = fl.SplitContainer(
        direction="row",
        items=[
            fl.SplitItem(proportion=2, content=log),
            fl.SplitItem(content=events),
            fl.SplitItem(content=plot),
        ],
    )
    top = fl.SplitContainer(
        direction="row",
        items=[fl.SplitItem(proportion=2, content=scene), fl.SplitItem(content=images)],
    )
    return fl.Layout(
        content=fl.SplitContainer(
            direction="column",
            items=[fl.SplitItem(proportion=2, content=top), fl.SplitItem(content=bottom)],
        )
    )


def _image(topic: str, title: str) -> fl.ImagePanel:
    return fl.ImagePanel(
        title=title, config=fl.ImageConfig(image_mode=fl.ImageModeConfig(image_topic=topic))
    )


def layout_json() -> str:
    """The layout as the JSON file Foxglove imports (indented, one trailing newline)."""
    import json

    return json.dumps(json.loads(layout().to_json()), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m loopact.observe.layout > docs/foxglove-layout.json
    print(layout_json(), end="")
