# ruff: noqa: E501
"""What the robot's tools and its safety governor say, in English and Chinese (SPEC F5, X3).

The templates of the :class:`~loopact.i18n.phrase.Phrase` values that robot tools return
(``motion.*``, ``head.*``, ``nav.*``, ``place.*``, ``line.*``, ``track.*``, ``approach.*``,
``face.*``), of the causes that end a motion (``cause.*``, one per
:class:`loopact.errors.StopCause`), of why the governor stopped one (``stop.*``) and of its
refusals (``governor.*``). The English texts are the sentences the model has always read
(``data.result``, ``error``); a parameter's unit is in its name (``distance_m``, ``angle_deg``).
"""

from __future__ import annotations

ROBOT: dict[str, dict[str, str]] = {
    # ---- why a motion ended (loopact.errors.StopCause; English: the stopped_by word) ----
    "cause.target": {"en": "target", "zh": "到达目标"},
    "cause.obstacle": {"en": "obstacle", "zh": "遇到障碍物"},
    "cause.geofence": {"en": "geofence", "zh": "到达地理围栏边界"},
    "cause.deadline": {"en": "deadline", "zh": "到达动作时限"},
    "cause.watchdog": {"en": "watchdog", "zh": "看门狗超时"},
    "cause.emergency_stop": {"en": "emergency_stop", "zh": "急停"},
    "cause.stopped": {"en": "cancelled", "zh": "被叫停"},
    "cause.preempted": {"en": "cancelled", "zh": "被新的指令打断"},
    "cause.replaced": {"en": "cancelled", "zh": "被另一个动作接管"},
    "cause.taken_over": {"en": "taken_over", "zh": "被操作员接管"},
    "cause.duration": {"en": "duration", "zh": "到达设定时长"},
    "cause.laps": {"en": "laps", "zh": "跑完设定圈数"},
    "cause.line_lost": {"en": "line_lost", "zh": "丢失了线"},
    "cause.lost": {"en": "lost", "zh": "目标丢失"},
    "cause.max_distance": {"en": "max_distance", "zh": "达到最长行驶距离"},
    "cause.timeout": {"en": "timeout", "zh": "超时"},
    "cause.error": {"en": "error", "zh": "出错"},
    "cause.no_path": {"en": "no_path", "zh": "没有路径"},
    "cause.nav2_aborted": {"en": "nav2_aborted", "zh": "Nav2 中止了目标"},
    "cause.nav2_cancelled": {"en": "nav2_cancelled", "zh": "Nav2 取消了目标"},
    "cause.refused": {"en": "refused", "zh": "被拒绝"},
    "cause.slipped": {"en": "slipped", "zh": "物体从夹爪中滑落"},
    # ---- what the governor says about a stop (a lease's detail) ----
    "stop.reason": {"en": "{reason}", "zh": "{reason}"},
    "stop.finished": {"en": "finished", "zh": "已完成"},
    "stop.not_started": {"en": "not started", "zh": "没有开始"},
    "stop.replaced": {"en": "replaced by {name}", "zh": "被 {name} 取代"},
    "stop.taken": {"en": "another motion took the base", "zh": "另一个动作接管了底盘"},
    "stop.recentred": {"en": "head re-centred for {name}", "zh": "为 {name} 回正了云台"},
    "stop.obstacle_ahead": {
        "en": "obstacle {clearance_m:.2f} m ahead of the robot",
        "zh": "机器人前方 {clearance_m:.2f} 米处有障碍物",
    },
    "stop.cannot_check": {
        "en": "cannot check the path: {problem}",
        "zh": "无法检查前方路径：{problem}",
    },
    "stop.geofence": {
        "en": "geofence: stopped at ({x_m:.2f}, {y_m:.2f})",
        "zh": "地理围栏：停在 ({x_m:.2f}, {y_m:.2f})",
    },
    "stop.deadline": {
        "en": "motion deadline reached after {elapsed_s:.1f} s",
        "zh": "动作运行 {elapsed_s:.1f} 秒后到达时限",
    },
    "stop.deadline_watchdog": {
        "en": "motion deadline reached (watchdog)",
        "zh": "动作到达时限（看门狗）",
    },
    "stop.watchdog": {"en": "no command for {idle_s:.2f} s", "zh": "{idle_s:.2f} 秒没有收到指令"},
    "stop.taken_over": {
        "en": "taken over by the operator ({who})",
        "zh": "被操作员接管（{who}）",
    },
    "stop.operator_released": {
        "en": "the operator let go ({why})",
        "zh": "操作员松手了（{why}）",
    },
    # ---- the resources an operator may hold ----
    "resource.base": {"en": "base", "zh": "底盘"},
    "resource.head": {"en": "head", "zh": "云台"},
    "resource.arm": {"en": "arm", "zh": "机械臂"},
    # ---- obstacle sensors without a depth camera (issue 41) ----
    "scan.none": {
        "en": "the laser scan has no usable beam (all ranges invalid)",
        "zh": "激光扫描没有可用的光束（所有距离都无效）",
    },
    "scan.missing": {
        "en": "the profile declares a laser scan, but this robot gives none",
        "zh": "配置声明了激光雷达，但这个机器人没有提供扫描数据",
    },
    "bumper.missing": {
        "en": "the profile declares a bumper, but this robot gives no bumper state",
        "zh": "配置声明了碰撞传感器，但这个机器人没有提供它的状态",
    },
    # ---- the governor's refusals ----
    "governor.view_panned": {
        "en": "the camera is not looking forward (head panned)",
        "zh": "摄像头没有朝向前方（云台已水平转动）",
    },
    "governor.view_high": {
        "en": "the camera looks too high to see the floor ahead (head tilted up)",
        "zh": "摄像头朝向过高，看不到前方地面（云台上仰）",
    },
    "governor.obstacle_ahead": {
        "en": "obstacle {clearance_m:.2f} m in front of the robot (the limit is {limit_m} m): forward motion refused",
        "zh": "机器人前方 {clearance_m:.2f} 米处有障碍物（下限为 {limit_m} 米）：拒绝前进",
    },
    "governor.cannot_check": {
        "en": "cannot check the path ahead: {problem}",
        "zh": "无法检查前方路径：{problem}",
    },
    "governor.estop_latched": {
        "en": "emergency stop is latched ({reason}); a person must reset it before the robot can move",
        "zh": "急停已锁定（{reason}）；需要有人复位后机器人才能移动",
    },
    "governor.operator_holds": {
        "en": "taken over by the operator: {who} drives the {resource} now; motion refused until they let go",
        "zh": "被操作员接管：{who} 正在控制{resource}；松手之前拒绝运动",
    },
    "governor.blind": {
        "en": "no obstacle sensor watches the path ahead (obstacle_sensors: {sensors}) and the profile does not allow blind forward motion (limits.blind_max_linear_mps): forward motion refused",
        "zh": "没有障碍物传感器检查前方路径（obstacle_sensors: {sensors}），且配置不允许盲行前进（limits.blind_max_linear_mps）：拒绝前进",
    },
    "governor.not_finite": {
        "en": "{name} must be a finite number, got {value}: refused",
        "zh": "{name} 必须是有限的数，收到的是 {value}：已拒绝",
    },
    "governor.bad_duration": {
        "en": "duration_s must be > 0, got {duration_s}: refused",
        "zh": "duration_s 必须大于 0，收到的是 {duration_s}：已拒绝",
    },
    "governor.no_head": {"en": "this robot has no pan-tilt head", "zh": "这个机器人没有云台"},
    "governor.pan_limits": {
        "en": "pan_deg {pan_deg} is outside the pan limits [{low_deg}, {high_deg}] degrees",
        "zh": "pan_deg {pan_deg} 超出水平转动范围 [{low_deg}, {high_deg}] 度",
    },
    "governor.tilt_limits": {
        "en": "tilt_deg {tilt_deg} is outside the tilt limits [{low_deg}, {high_deg}] degrees (down positive)",
        "zh": "tilt_deg {tilt_deg} 超出俯仰范围 [{low_deg}, {high_deg}] 度（向下为正）",
    },
    "robot.stale_pose": {
        "en": "the robot's pose is {age_s:.2f} s old (limit {limit_s} s); odometry may be down",
        "zh": "机器人的位姿数据已过时 {age_s:.2f} 秒（上限 {limit_s} 秒）；里程计可能停了",
    },
    # ---- motion tools (robot/motion.py) ----
    "motion.moved_forward": {
        "en": "moved forward {distance_m:.2f} m and reached the target",
        "zh": "前进了 {distance_m:.2f} 米，到达目标",
    },
    "motion.moved_backward": {
        "en": "moved backward {distance_m:.2f} m and reached the target",
        "zh": "后退了 {distance_m:.2f} 米，到达目标",
    },
    "motion.turned_left": {
        "en": "turned left {angle_deg:.1f} degrees and reached the target",
        "zh": "左转了 {angle_deg:.1f} 度，到达目标",
    },
    "motion.turned_right": {
        "en": "turned right {angle_deg:.1f} degrees and reached the target",
        "zh": "右转了 {angle_deg:.1f} 度，到达目标",
    },
    "motion.drove": {
        "en": "drove for {duration_s:g} s: {distance_m:.2f} m, turned {angle_deg:.1f} degrees",
        "zh": "行驶了 {duration_s:g} 秒：{distance_m:.2f} 米，转了 {angle_deg:.1f} 度",
    },
    "motion.clamped": {
        "en": "{said} (speed clamped to the robot's limit)",
        "zh": "{said}（速度已限制在机器人的上限内）",
    },
    "motion.stopped": {"en": "stopped", "zh": "已停下"},
    "motion.pose": {
        "en": "the robot is at x={x_m:.2f} m, y={y_m:.2f} m, heading {yaw_deg:.1f} degrees",
        "zh": "机器人在 x={x_m:.2f} 米，y={y_m:.2f} 米，朝向 {yaw_deg:.1f} 度",
    },
    "motion.stopped_early": {
        "en": "stopped early by {cause}: {why}; achieved {distance_m:.2f} m, {angle_deg:.1f} deg",
        "zh": "提前停止，原因：{cause}（{why}）；完成了 {distance_m:.2f} 米，{angle_deg:.1f} 度",
    },
    "motion.stopped_early_to": {
        "en": "stopped early by {cause} on the way to the {goal}: {why}; achieved {distance_m:.2f} m, {angle_deg:.1f} deg",
        "zh": "去 {goal} 的路上提前停止，原因：{cause}（{why}）；完成了 {distance_m:.2f} 米，{angle_deg:.1f} 度",
    },
    "motion.outside_fence": {
        "en": "refused: the end point ({x_m:.2f}, {y_m:.2f}) is outside the geofence",
        "zh": "已拒绝：终点 ({x_m:.2f}, {y_m:.2f}) 在地理围栏之外",
    },
    "motion.too_long_move": {
        "en": "moving {distance_m} m at {speed_mps} m/s takes {need_s:.0f} s, more than the {max_s:.0f} s allowed per motion; split it into moves of at most {split_m:.1f} m",
        "zh": "以 {speed_mps} 米/秒移动 {distance_m} 米需要 {need_s:.0f} 秒，超过每个动作允许的 {max_s:.0f} 秒；请分成每段不超过 {split_m:.1f} 米的移动",
    },
    "motion.too_long_turn": {
        "en": "turning {angle_deg} deg at {speed_dps} deg/s takes {need_s:.0f} s, more than the {max_s:.0f} s allowed per motion",
        "zh": "以 {speed_dps} 度/秒转 {angle_deg} 度需要 {need_s:.0f} 秒，超过每个动作允许的 {max_s:.0f} 秒",
    },
    "motion.not_finite": {
        "en": "{name} must be a finite number, got {value}",
        "zh": "{name} 必须是有限的数，收到的是 {value}",
    },
    "motion.not_positive": {
        "en": "{name} must be > 0, got {value}",
        "zh": "{name} 必须大于 0，收到的是 {value}",
    },
    "motion.distance_other_way": {
        "en": "distance_m must be > 0, got {value} (use {other} to go the other way)",
        "zh": "distance_m 必须大于 0，收到的是 {value}（反方向请用 {other}）",
    },
    "motion.not_holonomic": {
        "en": "refused: {what} moves the robot sideways, which a {drive} base cannot do (only a mecanum base strafes)",
        "zh": "已拒绝：{what} 需要横向移动，{drive} 底盘做不到（只有麦克纳姆轮底盘能横移）",
    },
    "motion.strafe_zero": {
        "en": "distance_m must not be 0 (positive: to the left, negative: to the right)",
        "zh": "distance_m 不能为 0（正数向左，负数向右）",
    },
    "motion.strafed_left": {
        "en": "moved {distance_m:.3f} m to the left and reached the target",
        "zh": "向左横移了 {distance_m:.3f} 米，到达目标",
    },
    "motion.strafed_right": {
        "en": "moved {distance_m:.3f} m to the right and reached the target",
        "zh": "向右横移了 {distance_m:.3f} 米，到达目标",
    },
    "motion.angle_range": {
        "en": "angle_deg must be in (0, 720], got {value} (use {other} for the other way)",
        "zh": "angle_deg 必须在 (0, 720] 之内，收到的是 {value}（反方向请用 {other}）",
    },
    # ---- head tools (robot/head.py) ----
    "head.looks": {
        "en": "the camera now looks {pan} and {tilt}",
        "zh": "摄像头现在朝向{pan}，{tilt}",
    },
    "head.ahead": {"en": "straight ahead", "zh": "正前方"},
    "head.left": {"en": "{angle_deg:.0f} degrees left", "zh": "左 {angle_deg:.0f} 度"},
    "head.right": {"en": "{angle_deg:.0f} degrees right", "zh": "右 {angle_deg:.0f} 度"},
    "head.down": {"en": "{angle_deg:.0f} degrees down", "zh": "向下 {angle_deg:.0f} 度"},
    "head.up": {"en": "{angle_deg:.0f} degrees up", "zh": "向上 {angle_deg:.0f} 度"},
    "head.centred": {"en": "centred the camera", "zh": "摄像头已回正"},
    "head.shook": {"en": 'shook the head ("no")', "zh": "摇了摇头（表示“不”）"},
    "head.nodded": {"en": 'nodded ("yes")', "zh": "点了点头（表示“是”）"},
    "head.interrupted": {"en": "interrupted: {why}", "zh": "被中断：{why}"},
    "head.too_slow": {
        "en": "the head did not reach its target in time",
        "zh": "云台没有及时到达目标位置",
    },
    # ---- navigation (robot/navigation/texts.py) ----
    "nav.reached": {
        "en": "reached {goal} after {distance_m:.2f} m",
        "zh": "走了 {distance_m:.2f} 米，到达 {goal}",
    },
    "nav.reached_around_one": {
        "en": "reached {goal} after {distance_m:.2f} m, going around 1 obstacle",
        "zh": "走了 {distance_m:.2f} 米，到达 {goal}，绕过了 1 个障碍物",
    },
    "nav.reached_around": {
        "en": "reached {goal} after {distance_m:.2f} m, going around {detours} obstacles",
        "zh": "走了 {distance_m:.2f} 米，到达 {goal}，绕过了 {detours} 个障碍物",
    },
    "nav.reached_replanned_one": {
        "en": "reached {goal} after {distance_m:.2f} m, replanning 1 time around obstacles not on the map",
        "zh": "走了 {distance_m:.2f} 米，到达 {goal}，为绕开地图上没有的障碍物重新规划了 1 次",
    },
    "nav.reached_replanned": {
        "en": "reached {goal} after {distance_m:.2f} m, replanning {n} times around obstacles not on the map",
        "zh": "走了 {distance_m:.2f} 米，到达 {goal}，为绕开地图上没有的障碍物重新规划了 {n} 次",
    },
    "nav.odometry_pose": {
        "en": "{said} (the pose is from odometry: the robot is not localized)",
        "zh": "{said}（位姿来自里程计：机器人没有定位）",
    },
    "nav.reached_nav2": {"en": "reached {goal} (Nav2)", "zh": "到达 {goal}（Nav2）"},
    "nav.unknown_waypoint": {
        "en": "unknown waypoint {name!r}; known waypoints: {known}",
        "zh": "未知的路点 {name!r}；已知的路点：{known}",
    },
    "nav.unknown_waypoint_seen": {
        "en": "unknown waypoint {name!r}; known waypoints: {known}; objects seen so far: {located}",
        "zh": "未知的路点 {name!r}；已知的路点：{known}；目前看到过的物体：{located}",
    },
    "nav.unknown_place": {
        "en": "unknown place {name!r}; known places: {known}",
        "zh": "未知的地点 {name!r}；已知的地点：{known}",
    },
    "nav.outside_fence": {
        "en": "{goal} lies outside the geofence: refused",
        "zh": "{goal} 在地理围栏之外：已拒绝",
    },
    "nav.no_path": {
        "en": "no path from {origin} to {goal}: {why}",
        "zh": "从 {origin} 到 {goal} 没有路径：{why}",
    },
    "nav.no_path_in": {
        "en": "no path from {origin} to {goal} in {room}: {why}",
        "zh": "从 {origin} 到 {room} 的 {goal} 没有路径：{why}",
    },
    "nav.doorway_blocked": {
        "en": "the doorway to {room} is blocked",
        "zh": "通往 {room} 的门口被堵住了",
    },
    "nav.doorway_out_blocked": {
        "en": "the doorway out of {room} is blocked",
        "zh": "{room} 的出口被堵住了",
    },
    "nav.not_reachable": {
        "en": "it is not reachable on the map (walls or furniture in the way)",
        "zh": "在地图上到不了（有墙或家具挡着）",
    },
    "nav.blocked_on_the_way": {
        "en": "obstacles seen on the way cut every path (after {n} replans)",
        "zh": "路上看到的障碍物挡住了所有路径（重新规划了 {n} 次）",
    },
    "nav.bad_goal": {"en": "cannot go there: {detail}", "zh": "无法去那里：{detail}"},
    "nav.gave_up": {
        "en": "could not reach {goal} after {n} attempts: {why}",
        "zh": "尝试了 {n} 次，仍没能到达 {goal}：{why}",
    },
    "nav.stopped_early": {
        "en": "stopped early by {cause} on the way to {goal}: {why}; travelled {distance_m:.2f} m",
        "zh": "去 {goal} 的路上提前停止，原因：{cause}（{why}）；走了 {distance_m:.2f} 米",
    },
    "nav.nav2_aborted": {
        "en": "Nav2 aborted the goal to {goal}: {detail}",
        "zh": "Nav2 中止了去 {goal} 的目标：{detail}",
    },
    "nav.nav2_cancelled": {
        "en": "Nav2 cancelled the goal to {goal}: {detail}",
        "zh": "Nav2 取消了去 {goal} 的目标：{detail}",
    },
    "nav.nav2_ended": {
        "en": "Nav2 ended the goal to {goal} with {status}: {detail}",
        "zh": "Nav2 以 {status} 结束了去 {goal} 的目标：{detail}",
    },
    "nav.nav2_timeout": {
        "en": "Nav2 did not reach {goal} within {timeout_s:.0f} s: the goal was cancelled",
        "zh": "Nav2 没有在 {timeout_s:.0f} 秒内到达 {goal}：目标已取消",
    },
    "nav.nav2_gone": {
        "en": "Nav2 is not available: the action server vanished mid-goal to {goal}",
        "zh": "Nav2 不可用：去 {goal} 的途中动作服务器消失了",
    },
    "nav.nav2_no_server": {
        "en": "Nav2 is not available: no {action} action server",
        "zh": "Nav2 不可用：没有 {action} 动作服务器",
    },
    "nav.nav2_rejected": {
        "en": "Nav2 is not available: it rejected the goal",
        "zh": "Nav2 不可用：它拒绝了这个目标",
    },
    "nav.nav2_no_answer": {
        "en": "Nav2 is not available: it did not answer the goal in time",
        "zh": "Nav2 不可用：它没有及时回应这个目标",
    },
    "nav.place_by_path": {
        "en": "{place} {distance_m:.1f} m by path",
        "zh": "{place}：沿路径 {distance_m:.1f} 米",
    },
    "nav.place_no_path": {"en": "{place} no path", "zh": "{place}：没有路径"},
    "nav.place_unplannable": {"en": "{place} {detail}", "zh": "{place}：无法规划（{detail}）"},
    "nav.place_straight": {
        "en": "{place} {distance_m:.1f} m straight",
        "zh": "{place}：直线 {distance_m:.1f} 米",
    },
    "nav.map_in_room": {
        "en": "the robot is in {room} (pose in the {frame} frame); places: {places:semi}",
        "zh": "机器人在 {room}（位姿在 {frame} 坐标系）；各地点：{places:semi}",
    },
    "nav.map_on_map": {
        "en": "the robot is on the map (pose in the {frame} frame); places: {places:semi}",
        "zh": "机器人在地图上（位姿在 {frame} 坐标系）；各地点：{places:semi}",
    },
    "nav.too_far": {
        "en": "{name!r} is {distance_m:.1f} m away: more than one motion may take ({max_s:.0f} s at {speed_mps} m/s); move closer first",
        "zh": "{name!r} 在 {distance_m:.1f} 米外：超过一个动作能走的距离（{speed_mps} 米/秒下 {max_s:.0f} 秒）；请先靠近一些",
    },
    "place.there": {
        "en": "the {place} is {distance_m:.2f} m away, the robot is there",
        "zh": "{place} 在 {distance_m:.2f} 米外，机器人就在那里",
    },
    "place.ahead": {
        "en": "the {place} is {distance_m:.2f} m away, straight ahead",
        "zh": "{place} 在 {distance_m:.2f} 米外，在正前方",
    },
    "place.behind": {
        "en": "the {place} is {distance_m:.2f} m away, straight behind",
        "zh": "{place} 在 {distance_m:.2f} 米外，在正后方",
    },
    "place.left": {
        "en": "the {place} is {distance_m:.2f} m away, {angle_deg:.0f} degrees to the left",
        "zh": "{place} 在 {distance_m:.2f} 米外，在左方 {angle_deg:.0f} 度",
    },
    "place.right": {
        "en": "the {place} is {distance_m:.2f} m away, {angle_deg:.0f} degrees to the right",
        "zh": "{place} 在 {distance_m:.2f} 米外，在右方 {angle_deg:.0f} 度",
    },
}
