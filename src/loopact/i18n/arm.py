# ruff: noqa: E501
"""What the arm's tools and its governor say, in English and Chinese (issue 43, SPEC F5, X3).

The templates of the :class:`~loopact.i18n.phrase.Phrase` values the arm tools return
(``pick``, ``place``, ``arm_move``, ``arm_home``, ``gripper``, ``arm_state``: ``arm.*``) and of
the arm's safety rules (``arm.*`` too: a refusal names the part, the rule and the numbers).
A parameter's unit is in its name (``distance_m``, ``value_deg``, ``force_n``); a part of the
arm (``fore``, ``finger left``) and a joint keep their technical names in both languages.
"""

from __future__ import annotations

ARM: dict[str, dict[str, str]] = {
    # ---- the rules (robot/arm/rules.py) ----
    "arm.bad_trajectory": {
        "en": "a trajectory must name the arm's joints ({joints}) and have points",
        "zh": "轨迹必须给出机械臂的关节（{joints}）并包含轨迹点",
    },
    "arm.bad_times": {
        "en": "a trajectory's times must increase from the start",
        "zh": "轨迹点的时间必须从起点开始递增",
    },
    "arm.joint_limit": {
        "en": "{joint} = {value_deg:.1f} deg is outside its limits [{low_deg:.0f}, {high_deg:.0f}] deg",
        "zh": "{joint} = {value_deg:.1f} 度，超出关节范围 [{low_deg:.0f}, {high_deg:.0f}] 度",
    },
    "arm.too_fast": {
        "en": "{joint} would turn at {speed_dps:.0f} deg/s; the limit is {limit_dps:.0f} deg/s",
        "zh": "{joint} 将以 {speed_dps:.0f} 度/秒转动；上限是 {limit_dps:.0f} 度/秒",
    },
    "arm.floor": {
        "en": "the {part} would come down to {z_m:.3f} m above the floor (at least {clearance_m} m)",
        "zh": "{part} 会降到离地面 {z_m:.3f} 米处（至少要 {clearance_m} 米）",
    },
    "arm.workspace": {
        "en": "the {part} would leave the arm's workspace at ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) m",
        "zh": "{part} 会在 ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) 米处离开机械臂的工作空间",
    },
    "arm.body": {
        "en": "the {part} would hit the robot's {region}",
        "zh": "{part} 会撞到机器人的 {region}",
    },
    "arm.surface": {
        "en": "the {part} would go into the {surface}: down to {z_m:.3f} m, its top is at {top_m:.2f} m",
        "zh": "{part} 会碰到 {surface}：降到 {z_m:.3f} 米，而它的表面在 {top_m:.2f} 米",
    },
    "arm.fence": {
        "en": "the {part} would reach past the geofence, to ({x_m:.2f}, {y_m:.2f}) m",
        "zh": "{part} 会伸出地理围栏，到达 ({x_m:.2f}, {y_m:.2f}) 米",
    },
    "arm.gap_range": {
        "en": "a gap of {gap_m} m is outside what the gripper opens: 0 to {max_m} m",
        "zh": "开口 {gap_m} 米超出夹爪的范围：0 到 {max_m} 米",
    },
    "arm.grip_force": {
        "en": "a grip force of {force_n} N is not allowed: more than 0 and at most {limit_n} N",
        "zh": "夹持力 {force_n} 牛不允许：必须大于 0 且不超过 {limit_n} 牛",
    },
    "arm.out_of_reach": {
        "en": "({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) m is out of reach with the gripper pointing down: it is {distance_m:.2f} m from the shoulder, and the arm reaches {reach_m:.2f} m",
        "zh": "夹爪朝下时够不到 ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) 米：它离肩部 {distance_m:.2f} 米，而机械臂只能伸到 {reach_m:.2f} 米",
    },
    "arm.no_arm": {"en": "this robot has no arm", "zh": "这个机器人没有机械臂"},
    "arm.controller": {
        "en": "the arm's controller refused or failed: {text}",
        "zh": "机械臂控制器拒绝或执行失败：{text}",
    },
    "arm.not_stowed": {
        "en": "the arm is out (not stowed): the base does not move until arm_home has stowed it",
        "zh": "机械臂没有收起：先用 arm_home 收起机械臂，底盘才能移动",
    },
    # ---- the tools' outcomes (robot/arm/tools.py) ----
    "arm.picked": {
        "en": "picked up the {name} and lifted it (gripper gap {gap_m:.3f} m)",
        "zh": "已抓起{name}并举起（夹爪开口 {gap_m:.3f} 米）",
    },
    "arm.placed": {"en": "put the {name} in the {target}", "zh": "已把{name}放进{target}"},
    "arm.moved": {
        "en": "moved the gripper to ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) m",
        "zh": "夹爪已移到 ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) 米",
    },
    "arm.homed": {"en": "the arm is stowed", "zh": "机械臂已收起"},
    "arm.gripper_done": {
        "en": "gripper {action}: the gap is {gap_m:.3f} m",
        "zh": "夹爪已{action}：开口 {gap_m:.3f} 米",
    },
    "arm.gripper_action": {
        "en": "gripper action {action!r} is unknown: use open or close",
        "zh": "未知的夹爪动作 {action!r}：请用 open 或 close",
    },
    "arm.state": {
        "en": "gripper at ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) m, gap {gap_m:.3f} m, holding {holding}",
        "zh": "夹爪在 ({x_m:.2f}, {y_m:.2f}, {z_m:.2f}) 米，开口 {gap_m:.3f} 米，持有 {holding}",
    },
    "arm.not_found": {
        "en": "no {target} in view of the arm's camera: nothing was picked or placed",
        "zh": "机械臂的摄像头没有看到 {target}：没有抓取或放置任何东西",
    },
    "arm.missed": {
        "en": "the grasp of the {name} failed: the gripper closed to {gap_m:.3f} m with nothing between its pads",
        "zh": "抓取{name}失败：夹爪合到 {gap_m:.3f} 米，中间没有物体",
    },
    "arm.no_fresh_view": {
        "en": "the camera sent no frame taken after the head stood still (the newest is {age_s:.1f} s old): nothing was located",
        "zh": "摄像头没有发来头部静止后拍的画面（最新的一帧是 {age_s:.1f} 秒前的）：没有定位任何物体",
    },
    "arm.already_holding": {
        "en": "the gripper already holds the {name}: place it first",
        "zh": "夹爪已经拿着{name}：请先放下",
    },
    "arm.nothing_held": {"en": "the gripper holds nothing to place", "zh": "夹爪没有拿着东西"},
    "arm.stopped": {
        "en": "the arm stopped early by {cause} ({why}); a held object stays in the gripper",
        "zh": "机械臂因{cause}提前停止（{why}）；夹住的物体仍在夹爪中",
    },
    # ---- what stopped an arm motion (the lease's detail) ----
    "arm.slip_detail": {
        "en": "the {name} slipped out of the gripper (the gap closed to {gap_m:.3f} m)",
        "zh": "{name} 从夹爪中滑落了（开口合到 {gap_m:.3f} 米）",
    },
    "arm.blocked": {
        "en": "the arm is blocked: {text}",
        "zh": "机械臂被挡住了：{text}",
    },
}
"""Key -> ``{lang: template}`` of the arm (``arm.*``)."""
