# ruff: noqa: E501
"""What the camera tools say, in English and Chinese (SPEC D5, F5).

The templates of the offline scene description (``scene.*``, ``thing.*``: ``seewhat``'s
sentence, :func:`loopact.vision.scene.describe`), of ``observe_surroundings`` (``around.*``),
``detect_objects`` (``detected.*``), the box selection (``select.*``, ``positioning.*``) and
the tools that drive by the camera: ``follow_line`` (``line.*``), ``track`` (``track.*``),
``approach`` and ``face`` (``approach.*``, ``face.*``). :data:`COLOUR_NAMES` names the
detector's colours in Chinese. The English texts are the sentences the model has always read.
"""

from __future__ import annotations

COLOUR_NAMES: dict[str, str] = {
    "red": "红色", "yellow": "黄色", "green": "绿色", "cyan": "青色", "blue": "蓝色",
    "purple": "紫色", "brown": "棕色", "orange": "橙色", "pink": "粉色", "magenta": "品红色",
    "white": "白色", "black": "黑色", "grey": "灰色", "silver": "银色", "gold": "金色",
}  # fmt: skip
"""A colour's English name (a ``vision.colors`` key) -> its Chinese name."""

PERCEPTION: dict[str, dict[str, str]] = {
    # ---- the offline scene description (vision/scene.py describe; seewhat) ----
    "scene.nothing": {
        "en": "I see no coloured objects and no floor line, only the floor and walls.",
        "zh": "没有看到彩色物体，也没有地面线，只有地面和墙壁",
    },
    "scene.seen": {"en": "I see {items:items}.", "zh": "我看到{items:items}"},
    "scene.thing_at": {
        "en": "a {what} {distance_m:.1f} m away, {where}",
        "zh": "{what}（{distance_m:.1f} 米，{where}）",
    },
    "scene.thing": {"en": "a {what} {where}", "zh": "{what}（{where}）"},
    "scene.line": {"en": "the {color} line on the floor", "zh": "地面上的{color}线"},
    "scene.ahead": {"en": "straight ahead", "zh": "正前方"},
    "scene.left": {"en": "{angle_deg:.0f} degrees left", "zh": "左方 {angle_deg:.0f} 度"},
    "scene.right": {"en": "{angle_deg:.0f} degrees right", "zh": "右方 {angle_deg:.0f} 度"},
    "thing.box": {"en": "{color} box", "zh": "{color}盒子"},
    "thing.ball": {"en": "{color} ball", "zh": "{color}球"},
    "thing.crate": {"en": "{color} crate or table", "zh": "{color}箱子或桌子"},
    "thing.floor_line": {"en": "{color} floor line", "zh": "{color}地面线"},
    "thing.the_floor_line": {"en": "the {color} floor line", "zh": "{color}地面线"},
    # ---- observe_surroundings (robot/perception.py) ----
    "around.all": {"en": "looked all around. {views:lines}", "zh": "环顾了四周。{views:lines}"},
    "around.view": {"en": "{view}: {seen}", "zh": "{view}：{seen}。"},
    "around.front": {"en": "In front", "zh": "前方"},
    "around.left": {"en": "To the left", "zh": "左边"},
    "around.behind": {"en": "Behind", "zh": "后方"},
    "around.right": {"en": "To the right", "zh": "右边"},
    "around.turn_failed": {"en": "turning failed: {why}", "zh": "转身失败：{why}"},
    # ---- detect_objects (robot/perception.py caption) ----
    "detected.none": {"en": "no coloured objects detected", "zh": "没有检测到彩色物体"},
    "detected.some": {"en": "detected: {items:semi}", "zh": "检测到：{items:semi}"},
    "detected.object_at": {
        "en": "{color} object at {distance_m:.1f} m, {side}",
        "zh": "{color}物体（{distance_m:.1f} 米，{side}）",
    },
    "detected.object": {"en": "{color} object, {side}", "zh": "{color}物体（{side}）"},
    "detected.ahead": {"en": "ahead", "zh": "正前方"},
    "detected.left": {"en": "{angle_deg:.0f} deg left", "zh": "左方 {angle_deg:.0f} 度"},
    "detected.right": {"en": "{angle_deg:.0f} deg right", "zh": "右方 {angle_deg:.0f} 度"},
    "perception.unknown_colour": {
        "en": "unknown colour {color!r}; known colours: {known}",
        "zh": "未知的颜色 {color!r}；已知的颜色：{known}",
    },
    # ---- box selection (vision/scene.py select_target; visual_positioning) ----
    "select.no_colour_seen": {
        "en": "no {color} object in view (seen: {seen:comma})",
        "zh": "视野中没有{color}物体（看到了：{seen:comma}）",
    },
    "select.no_colour": {
        "en": "no {color} object in view (no coloured objects in view)",
        "zh": "视野中没有{color}物体（视野中没有彩色物体）",
    },
    "select.none": {"en": "no coloured object in view", "zh": "视野中没有彩色物体"},
    "select.chose": {"en": "the {what} at bbox {bbox}", "zh": "位于框 {bbox} 的{what}"},
    "select.chose_among": {
        "en": "the {what} at bbox {bbox}, chosen among {n} candidates",
        "zh": "位于框 {bbox} 的{what}，从 {n} 个候选中选出",
    },
    "select.chose_leftmost": {
        "en": "the {what} at bbox {bbox}, chosen among {n} candidates as the leftmost",
        "zh": "位于框 {bbox} 的{what}，从 {n} 个候选中选出最左边的",
    },
    "select.chose_rightmost": {
        "en": "the {what} at bbox {bbox}, chosen among {n} candidates as the rightmost",
        "zh": "位于框 {bbox} 的{what}，从 {n} 个候选中选出最右边的",
    },
    "select.closest_round": {
        "en": "nothing round of that colour in view; the closest fit is {chosen}",
        "zh": "视野中没有这种颜色的圆形物体；最接近的是{chosen}",
    },
    "select.closest_boxy": {
        "en": "nothing box-shaped of that colour in view; the closest fit is {chosen}",
        "zh": "视野中没有这种颜色的方形物体；最接近的是{chosen}",
    },
    "positioning.low_confidence": {
        "en": "low confidence ({confidence:.2f}): {reason}; tell the user you are not sure this is the right object",
        "zh": "把握不大（置信度 {confidence:.2f}）：{reason}；不确定是不是要找的物体",
    },
    "positioning.no_range": {
        "en": "no HSV range for colour {color!r} (vision.colors); the camera cannot find {target!r}; known colours: {known}",
        "zh": "颜色 {color!r} 没有 HSV 范围（vision.colors）；摄像头找不到 {target!r}；已知的颜色：{known}",
    },
    "positioning.empty": {
        "en": "target is empty: name the object to find",
        "zh": "目标为空：请说出要找的物体",
    },
    # ---- follow_line (robot/follow_line.py) ----
    "line.followed": {
        "en": "followed the {color} line for {elapsed_s:.0f} s: {distance_m:.1f} m, {laps}, on the line {on_line_s:.0f} s; stopped by {cause}",
        "zh": "沿{color}线行驶了 {elapsed_s:.0f} 秒：{distance_m:.1f} 米，{laps}，在线上 {on_line_s:.0f} 秒；停止原因：{cause}",
    },
    "line.followed_why": {
        "en": "followed the {color} line for {elapsed_s:.0f} s: {distance_m:.1f} m, {laps}, on the line {on_line_s:.0f} s; stopped by {cause} ({why})",
        "zh": "沿{color}线行驶了 {elapsed_s:.0f} 秒：{distance_m:.1f} 米，{laps}，在线上 {on_line_s:.0f} 秒；停止原因：{cause}（{why}）",
    },
    "line.lap": {"en": "{n} lap", "zh": "{n} 圈"},
    "line.laps": {"en": "{n} laps", "zh": "{n} 圈"},
    "line.lost": {
        "en": "no {color} line in view for {lost_s:.1f} s",
        "zh": "{lost_s:.1f} 秒内视野里没有{color}线",
    },
    "line.cannot_start": {
        "en": "follow_line could not start: {why}",
        "zh": "follow_line 无法开始：{why}",
    },
    "line.no_colour": {
        "en": "no HSV range for colour {color!r} (vision.colors); known: {known}",
        "zh": "颜色 {color!r} 没有 HSV 范围（vision.colors）；已知的颜色：{known}",
    },
    "line.bad_laps": {
        "en": "laps must be >= 0 (0: no limit), got {laps}",
        "zh": "laps 必须大于等于 0（0：不限圈数），收到的是 {laps}",
    },
    "perception.duration_range": {
        "en": "duration_s must be in (0, {max_s:g}], got {duration_s}",
        "zh": "duration_s 必须在 (0, {max_s:g}] 之内，收到的是 {duration_s}",
    },
    # ---- track (robot/track.py) ----
    "track.tracked": {
        "en": "tracked the target for {elapsed_s:.0f} s ({in_view_pct:.0f} % of frames in view); stopped by {cause}",
        "zh": "跟踪目标 {elapsed_s:.0f} 秒（{in_view_pct:.0f}% 的画面中可见）；停止原因：{cause}",
    },
    "track.tracked_why": {
        "en": "tracked the target for {elapsed_s:.0f} s ({in_view_pct:.0f} % of frames in view); stopped by {cause} ({why})",
        "zh": "跟踪目标 {elapsed_s:.0f} 秒（{in_view_pct:.0f}% 的画面中可见）；停止原因：{cause}（{why}）",
    },
    "track.lost": {
        "en": "the target was out of sight for {lost_s:.1f} s",
        "zh": "目标有 {lost_s:.1f} 秒不在视野中",
    },
    "track.cannot_start": {"en": "track could not start: {why}", "zh": "track 无法开始：{why}"},
    "track.no_head": {
        "en": "track needs a pan-tilt head; this robot has none",
        "zh": "track 需要云台，这个机器人没有",
    },
    "track.bad_box": {
        "en": "{problem}; pass the bbox visual_positioning returned",
        "zh": "{problem}；请传入 visual_positioning 返回的框",
    },
    "track.not_handed_out": {
        "en": "bbox {bbox} is not a box visual_positioning returned: call visual_positioning(target) first and pass its bbox",
        "zh": "框 {bbox} 不是 visual_positioning 返回的框：请先调用 visual_positioning(target)，再传入它返回的框",
    },
    # ---- approach and face (robot/approach.py) ----
    "face.facing": {
        "en": "now facing the {target}: {bearing_deg:+.1f} deg off straight ahead",
        "zh": "现在面向 {target}：偏离正前方 {bearing_deg:+.1f} 度",
    },
    "face.facing_at": {
        "en": "now facing the {target}: {bearing_deg:+.1f} deg off straight ahead, {distance_m:.2f} m away",
        "zh": "现在面向 {target}：偏离正前方 {bearing_deg:+.1f} 度，距离 {distance_m:.2f} 米",
    },
    "approach.near": {
        "en": "stopped {gap_m:.2f} m from the {target} ({bearing_deg:+.0f} deg), after driving {travelled_m:.2f} m",
        "zh": "行驶 {travelled_m:.2f} 米后停在距 {target} {gap_m:.2f} 米处（{bearing_deg:+.0f} 度）",
    },
    "approach.short": {
        "en": "approach stopped by {cause}: the {target} is {gap_m} m away (asked for {stop_at_m:.2f} m), drove {travelled_m:.2f} m",
        "zh": "接近 {target} 时停止，原因：{cause}；距离 {gap_m} 米（要求 {stop_at_m:.2f} 米），行驶了 {travelled_m:.2f} 米",
    },
    "approach.short_why": {
        "en": "approach stopped by {cause} ({why}): the {target} is {gap_m} m away (asked for {stop_at_m:.2f} m), drove {travelled_m:.2f} m",
        "zh": "接近 {target} 时停止，原因：{cause}（{why}）；距离 {gap_m} 米（要求 {stop_at_m:.2f} 米），行驶了 {travelled_m:.2f} 米",
    },
    "approach.not_found": {
        "en": "no {target!r} in view after a full turn ({reason}); saw {seen:comma}",
        "zh": "转了一整圈也没有看到 {target!r}（{reason}）；看到了：{seen:comma}",
    },
    "approach.not_found_nothing": {
        "en": "no {target!r} in view after a full turn ({reason}); saw no coloured objects",
        "zh": "转了一整圈也没有看到 {target!r}（{reason}）；没有看到彩色物体",
    },
    "approach.lost_sight": {
        "en": "lost sight of the {name} after turning ({reason})",
        "zh": "转身后看不到{name}了（{reason}）",
    },
    "approach.still_off": {
        "en": "the {name} is still {bearing_deg:+.1f} deg off after {tries} turns",
        "zh": "转了 {tries} 次后，{name}仍偏离 {bearing_deg:+.1f} 度",
    },
    "approach.lost": {
        "en": "the {name} was out of sight for {lost_s:.1f} s",
        "zh": "{name}有 {lost_s:.1f} 秒不在视野中",
    },
    "approach.max_distance": {
        "en": "drove the longest approach, {max_m:g} m",
        "zh": "已行驶最长的接近距离 {max_m:g} 米",
    },
    "approach.timeout": {
        "en": "the approach took the longest allowed, {max_s:g} s",
        "zh": "接近用了允许的最长时间 {max_s:g} 秒",
    },
    "approach.empty": {
        "en": "target is empty: name the object",
        "zh": "目标为空：请说出是哪个物体",
    },
    "approach.no_depth": {
        "en": "no depth for the {name}; approach needs the depth camera",
        "zh": "{name}没有深度数据；approach 需要深度相机",
    },
    "approach.stop_at_range": {
        "en": "stop_at_m must be in (0, {max_m:g}] m, got {stop_at_m}",
        "zh": "stop_at_m 必须在 (0, {max_m:g}] 米之内，收到的是 {stop_at_m}",
    },
    "approach.which": {
        "en": "cannot tell which object {target!r} is: name its colour ({known}) or shape (ball, box, cylinder)",
        "zh": "无法判断 {target!r} 是哪个物体：请说出它的颜色（{known}）或形状（球、盒子、圆柱）",
    },
    "approach.cannot_see": {
        "en": "{target!r}: the camera cannot see {color} (no HSV range in vision.colors; known: {known})",
        "zh": "{target!r}：摄像头看不出{color}（vision.colors 中没有它的 HSV 范围；已知的颜色：{known}）",
    },
    "sighting.already": {"en": "already there", "zh": "已经在那里了"},
}
