"""The runtime's result sentences in Chinese, for the reply to a Chinese instruction (issue 13).

Motion, head and navigation tools describe what happened in one English sentence,
``data.result`` ("turned left 90.0 degrees and reached the target"); the model reads it as it
is. When the local brain's reply to a Chinese instruction is built from those sentences
(:func:`~loopact.agent.steps.compose_reply`), each is rendered here in Chinese
("左转了 90.0 度，到达目标"), numbers and names unchanged. A sentence with no rendering
stays English: never a guess.

The patterns follow the sentences of :mod:`loopact.robot.motion`, ``head``, ``navigation``,
``approach``, ``follow_line`` and ``track``, the offline scene description of ``seewhat``
(:func:`loopact.vision.scene.describe`) and the four views of ``observe_surroundings``;
``tests/agent/test_steps.py`` runs those tools on the simulated robot and checks that their
sentences come out Chinese.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_NUM = r"[+-]?\d+(?:\.\d+)?"
_HAN = "[\u4e00-\u9fff]"
_WAY = {
    "forward": "前进", "backward": "后退", "left": "左", "right": "右", "down": "向下",
    "up": "向上",
}  # fmt: skip
#: ``stopped_by`` of a motion lease (:class:`loopact.robot.lease.MotionLease`) and of the
#: line follower and tracker.
_STOPPED_BY = {
    "target": "到达目标", "obstacle": "遇到障碍物", "geofence": "到达地理围栏边界",
    "deadline": "时间到", "cancelled": "被取消", "emergency_stop": "急停",
    "watchdog": "看门狗超时", "duration": "到达设定时长", "laps": "跑完设定圈数",
    "line_lost": "丢失了线", "lost": "目标丢失", "error": "出错",
}  # fmt: skip

_WHERE = {
    "straight ahead": "在正前方", "straight behind": "在正后方",
    "the robot is there": "机器人就在那里",
}  # fmt: skip


def _where(text: str) -> str:
    """``straight ahead`` / ``30 degrees to the left`` / ``the robot is there`` in Chinese."""
    if text in _WHERE:
        return _WHERE[text]
    m = re.fullmatch(rf"({_NUM}) degrees to the (left|right)", text)
    return f"在{_WAY[m[2]]}方 {m[1]} 度" if m else text


def _looks(m: re.Match[str]) -> str:
    pan = "正前方" if m[1] == "straight ahead" else f"{_WAY[m[3]]} {m[2]} 度"
    return f"摄像头现在朝向{pan}，{_WAY[m[5]]} {m[4]} 度"


def _stopped_by(m: re.Match[str], group: int) -> str:
    why = _STOPPED_BY.get(m[group], m[group])
    return f"停止原因：{why}" + (f"（{m[group + 1]}）" if m[group + 1] else "")


_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = tuple(
    (re.compile(pattern), render)
    for pattern, render in (
        (
            rf"moved (forward|backward) ({_NUM}) m and reached the target",
            lambda m: f"{_WAY[m[1]]}了 {m[2]} 米，到达目标",
        ),
        (
            rf"turned (left|right) ({_NUM}) degrees and reached the target",
            lambda m: f"{_WAY[m[1]]}转了 {m[2]} 度，到达目标",
        ),
        (
            rf"drove for ({_NUM}) s: ({_NUM}) m, turned ({_NUM}) degrees",
            lambda m: f"行驶了 {m[1]} 秒：{m[2]} 米，转了 {m[3]} 度",
        ),
        (
            rf"reached the (.+?) after ({_NUM}) m(?:, going around (\d+) obstacles?)?",
            lambda m: (
                f"走了 {m[2]} 米，到达 {m[1]}" + (f"，绕过了 {m[3]} 个障碍物" if m[3] else "")
            ),
        ),
        (
            rf"the camera now looks (straight ahead|({_NUM}) degrees (left|right))"
            rf" and ({_NUM}) degrees (down|up)",
            _looks,
        ),
        (
            rf"the robot is at x=({_NUM}) m, y=({_NUM}) m, heading ({_NUM}) degrees",
            lambda m: f"机器人在 x={m[1]} 米，y={m[2]} 米，朝向 {m[3]} 度",
        ),
        (r"centred the camera", lambda m: "摄像头已回正"),
        (r'shook the head \("no"\)', lambda m: "摇了摇头（表示“不”）"),
        (r'nodded \("yes"\)', lambda m: "点了点头（表示“是”）"),
        (r"stopped", lambda m: "已停下"),
        (r"already there", lambda m: "已经在那里了"),
        (
            rf"now facing the (.+?): ({_NUM}) deg off straight ahead(?:, ({_NUM}) m away)?",
            lambda m: (
                f"现在面向 {m[1]}：偏离正前方 {m[2]} 度" + (f"，距离 {m[3]} 米" if m[3] else "")
            ),
        ),
        (
            rf"stopped ({_NUM}) m from the (.+?) \(({_NUM}) deg\), after driving ({_NUM}) m",
            lambda m: f"行驶 {m[4]} 米后停在距 {m[2]} {m[1]} 米处（{m[3]} 度）",
        ),
        (
            rf"the (.+?) is ({_NUM}) m away, (.+)",
            lambda m: f"{m[1]} 在 {m[2]} 米外，{_where(m[3])}",
        ),
        (
            rf"followed the (.+?) line for ({_NUM}) s: ({_NUM}) m, (\d+) laps?,"
            rf" on the line ({_NUM}) s; stopped by (\w+)(?: \((.*)\))?",
            lambda m: (
                f"沿 {m[1]} 线行驶了 {m[2]} 秒：{m[3]} 米，{m[4]} 圈，在线上 {m[5]} 秒；"
                + _stopped_by(m, 6)
            ),
        ),
        (
            rf"tracked the target for ({_NUM}) s \(({_NUM}) % of frames in view\);"
            rf" stopped by (\w+)(?: \((.*)\))?",
            lambda m: f"跟踪目标 {m[1]} 秒（{m[2]}% 的画面中可见）；" + _stopped_by(m, 3),
        ),
    )
)
_CLAMPED = " (speed clamped to the robot's limit)"


_COLOURS = {
    "red": "红色", "yellow": "黄色", "green": "绿色", "cyan": "青色", "blue": "蓝色",
    "purple": "紫色", "brown": "棕色", "orange": "橙色", "pink": "粉色", "magenta": "品红色",
    "white": "白色", "black": "黑色",
}  # fmt: skip
_THINGS = {"box": "盒子", "ball": "球", "crate or table": "箱子或桌子"}
_NOTHING_SEEN = "I see no coloured objects and no floor line, only the floor and walls."
_SEEN_THING = re.compile(
    rf"a (\w+) (box|ball|crate or table)(?: ({_NUM}) m away,)? "
    rf"(straight ahead|({_NUM}) degrees (left|right))"
)
_SEEN_LINE = re.compile(r"the (\w+) line on the floor")


def _scene(text: str) -> str | None:
    """The offline scene description (:func:`loopact.vision.scene.describe`: ``I see a red
    box 2.8 m away, 29 degrees right; ...; and the purple line on the floor.``) in Chinese,
    or None when a part is not one it writes."""
    if text == _NOTHING_SEEN:
        return "没有看到彩色物体，也没有地面线，只有地面和墙壁"
    if not (text.startswith("I see ") and text.endswith(".")):
        return None
    out = []
    for part in text[len("I see ") : -1].split("; "):
        part = part.removeprefix("and ")
        if m := _SEEN_THING.fullmatch(part):
            where = "正前方" if m[4] == "straight ahead" else f"{_WAY[m[6]]}方 {m[5]} 度"
            dist = f"{m[3]} 米，" if m[3] else ""
            out.append(f"{_COLOURS.get(m[1], m[1])}{_THINGS[m[2]]}（{dist}{where}）")
        elif m := _SEEN_LINE.fullmatch(part):
            out.append(f"地面上的{_COLOURS.get(m[1], m[1])}线")
        else:
            return None
    return "我看到" + "；".join(out)


_VIEWS_ZH = {"In front": "前方", "To the left": "左边", "Behind": "后方", "To the right": "右边"}
_VIEW_SPLIT = re.compile(r"(?:^| )(In front|To the left|Behind|To the right): ")


def _around(text: str) -> str | None:
    """``observe_surroundings``' sentence (:func:`loopact.robot.perception.around_sentence`:
    ``looked all around. In front: I see ... To the left: I see ...``) in Chinese, or None
    when a part is not one it writes."""
    head = "looked all around."
    if not text.startswith(head):
        return None
    pieces = _VIEW_SPLIT.split(text[len(head) :])
    if pieces[0].strip() or len(pieces) < 3:
        return None
    out = []
    for label, seen in zip(pieces[1::2], pieces[2::2]):  # noqa: B905 (pairs by construction)
        scene = _scene(seen.strip())
        if scene is None:
            return None
        out.append(f"{_VIEWS_ZH[label]}：{scene}。")
    return "环顾了四周。" + "".join(out)


def result_zh(sentence: str, names: Mapping[str, str] | None = None) -> str:
    """``sentence`` (one of the runtime's result sentences) in Chinese, or as it is.

    Args:
        sentence: A tool's ``data.result``, e.g. ``"moved forward 0.50 m and reached the
            target"``.
        names: English name -> Chinese name, used in a rendered sentence (a site map's
            ``kitchen`` -> ``厨房``, from the result's ``place`` and ``place_zh``); other
            names stay as they are.

    Returns:
        The Chinese sentence (``"前进了 0.50 米，到达目标"``), or ``sentence`` unchanged when
        it is not one the runtime writes.
    """
    scene = _scene(sentence.strip()) or _around(sentence.strip())
    if scene is not None:
        return scene
    text, clamped = sentence.strip(), ""
    if text.endswith(_CLAMPED):
        text, clamped = text[: -len(_CLAMPED)], "（速度已限制在机器人的上限内）"
    for pattern, render in _RULES:
        m = pattern.fullmatch(text)
        if m:
            out = render(m)
            for en, zh in (names or {}).items():
                named = re.sub(rf"(?<![\w-]){re.escape(en)}(?![\w-])", zh, out, flags=re.ASCII)
                # no space between Chinese words ("到达 门" -> "到达门")
                out = re.sub(rf"(?<={_HAN}) (?={_HAN})", "", named) if named != out else out
            return out + clamped
    return sentence
