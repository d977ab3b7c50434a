# ruff: noqa: E501
"""The web console's texts, in English and Chinese (SPEC F2, F5; issue 42).

``console.*``: every label, button, badge and line the console's pages show (the templates
name them as ``{{console.key}}``, the scripts as ``tr("console.key", {...})``; a test lists
the names without a catalogue entry). ``call.*``: what a tool call does, as a sentence for
people, by tool name, its parameters the call's arguments (``call.move_forward`` with
``distance_m``); a tool without one is ``call.any``. The page's own templates take ``{name}``
fields without a format spec (the page fills them); ``call.*`` are rendered on the server
(``call.<tool>_pose`` when the call gives a pose instead of the name ``call.<tool>`` needs).
"""

from __future__ import annotations

CONSOLE: dict[str, dict[str, str]] = {
    # ---- the page -------------------------------------------------------------------------
    "console.title": {"en": "loopact console", "zh": "loopact 控制台"},
    "console.settings": {"en": "Settings", "zh": "设置"},
    "console.chat": {"en": "Chat", "zh": "对话"},
    "console.map": {"en": "Map", "zh": "地图"},
    "console.camera": {"en": "Camera", "zh": "摄像头"},
    "console.drive": {"en": "Drive", "zh": "驾驶"},
    "console.pose": {"en": "Pose", "zh": "位姿"},
    "console.panels": {"en": "Panels", "zh": "面板"},
    "console.connecting": {"en": "connecting", "zh": "正在连接"},
    "console.connected": {"en": "connected", "zh": "已连接"},
    "console.reconnecting": {"en": "reconnecting", "zh": "正在重连"},
    "console.unauthorized": {"en": "unauthorized", "zh": "未授权"},
    "console.idle": {"en": "idle", "zh": "空闲"},
    "console.busy": {"en": "busy", "zh": "忙碌"},
    "console.local_brain": {
        "en": "local brain: {state} ({file})",
        "zh": "本地模型：{state}（{file}）",
    },
    "console.image": {"en": "Image", "zh": "图片"},
    "console.image_title": {
        "en": "Attach an image (checked by the image gate)",
        "zh": "附加图片（经图像关卡检查）",
    },
    "console.placeholder": {
        "en": "Tell the robot what to do (Enter sends, Shift+Enter: new line)",
        "zh": "告诉机器人做什么（回车发送，Shift+回车换行）",
    },
    "console.send": {"en": "Send", "zh": "发送"},
    "console.talk": {"en": "Hold to talk", "zh": "按住说话"},
    "console.talk_title": {
        "en": "Hold to talk (push-to-talk); release to send",
        "zh": "按住说话，松开发送",
    },
    "console.handsfree": {"en": "hands-free", "zh": "免提"},
    "console.handsfree_title": {
        "en": "Listen all the time; voice activity ends each utterance",
        "zh": "一直收听；说完一句自动结束",
    },
    "console.stop": {"en": "Stop", "zh": "停止"},
    "console.stop_title": {
        "en": "Stop the running task and the robot's motion",
        "zh": "停止当前任务和机器人的运动",
    },
    "console.new": {"en": "New", "zh": "新对话"},
    "console.new_title": {"en": "Start a new conversation", "zh": "开始新的对话"},
    "console.checking_image": {"en": "checking image…", "zh": "正在检查图片…"},
    "console.image_attached": {"en": "image attached", "zh": "图片已附加"},
    "console.image_blurry": {
        "en": "image attached, but it looks blurry",
        "zh": "图片已附加，但看起来有些模糊",
    },
    "console.blurry": {"en": "(blurry)", "zh": "（模糊）"},
    # ---- camera and pose --------------------------------------------------------------------
    "console.camera_alt": {"en": "live camera", "zh": "实时摄像头画面"},
    "console.no_robot": {
        "en": "No robot: this console runs without one, so there is no camera, map or drive pad.",
        "zh": "没有机器人：本控制台未连接机器人，因此没有摄像头画面、地图和驾驶控制。",
    },
    "console.no_camera": {"en": "no camera", "zh": "没有摄像头"},
    "console.camera_error": {"en": "camera: {error}", "zh": "摄像头：{error}"},
    "console.frame": {"en": "frame {seq}, t = {stamp} s", "zh": "第 {seq} 帧，t = {stamp} 秒"},
    "console.perception_image": {"en": "Last perception image", "zh": "最近的感知图像"},
    "console.model_image": {"en": "Last image sent to the model", "zh": "最近发给模型的图像"},
    "console.none_yet": {"en": "none yet", "zh": "暂无"},
    "console.unknown": {"en": "unknown", "zh": "未知"},
    "console.pose_line": {
        "en": "x {x} m, y {y} m, heading {yaw}°",
        "zh": "x {x} 米，y {y} 米，朝向 {yaw}°",
    },
    # ---- events -----------------------------------------------------------------------------
    "console.thinking": {"en": "thinking… (round {round})", "zh": "思考中…（第 {round} 轮）"},
    "console.model_retry": {
        "en": "the model did not answer; retry {attempt}: {error}",
        "zh": "模型没有回应；第 {attempt} 次重试：{error}",
    },
    "console.details": {"en": "details", "zh": "详情"},
    "console.done": {"en": "done", "zh": "完成"},
    "console.failed": {"en": "failed", "zh": "失败"},
    "console.running": {"en": "running", "zh": "进行中"},
    "console.progress_m": {"en": "{done} m of {total} m", "zh": "已走 {done} 米，共 {total} 米"},
    "console.progress_deg": {"en": "{done}° of {total}°", "zh": "已转 {done}°，共 {total}°"},
    "console.progress_s": {"en": "{done} s of {total} s", "zh": "已过 {done} 秒，共 {total} 秒"},
    "console.result_ok": {"en": "done", "zh": "完成"},
    "console.result_error": {"en": "failed: {error}", "zh": "失败：{error}"},
    "console.what_to_do": {"en": "What to do: {hint}", "zh": "怎么办：{hint}"},
    "console.hint_tool": {
        "en": "read the reason above; change the instruction or the robot's situation and ask again.",
        "zh": "请看上面的原因；修改指令或机器人的处境后再试。",
    },
    "console.hint_estop": {
        "en": "the emergency stop is latched: make the area safe, then reset it with the operator's secret.",
        "zh": "急停已锁定：确认现场安全后，用操作员密钥复位。",
    },
    "console.hint_model": {
        "en": "check the model's address and key in Settings, then send the instruction again.",
        "zh": "请在设置中检查模型地址和密钥，然后重新发送指令。",
    },
    "console.hint_bound": {
        "en": "the task hit a limit; split it into smaller steps or raise the limit in the config.",
        "zh": "任务触到了上限；请拆成更小的步骤，或在配置中调高上限。",
    },
    "console.error": {"en": "Error: {message}", "zh": "错误：{message}"},
    "console.bound": {
        "en": "limit reached: {name} (limit {limit})",
        "zh": "达到上限：{name}（上限 {limit}）",
    },
    "console.stopped": {"en": "stopped", "zh": "已停止"},
    "console.stopped_from": {"en": "stopped from {source}", "zh": "由 {source} 停止"},
    "console.task_completed": {
        "en": "task done ({rounds} rounds)",
        "zh": "任务完成（{rounds} 轮）",
    },
    "console.task_preempted": {
        "en": "task stopped ({rounds} rounds)",
        "zh": "任务已停止（{rounds} 轮）",
    },
    "console.task_failed": {"en": "task failed ({rounds} rounds)", "zh": "任务失败（{rounds} 轮）"},
    "console.task_other": {
        "en": "task ended: {status} ({rounds} rounds)",
        "zh": "任务结束：{status}（{rounds} 轮）",
    },
    "console.input": {"en": "input: {text}", "zh": "输入：{text}"},
    "console.compressed": {
        "en": "context {method}: {before} → {after} tokens",
        "zh": "上下文{method}：{before} → {after} 个 token",
    },
    "console.model_switched": {
        "en": "model switched to {provider} / {model}",
        "zh": "模型已切换为 {provider} / {model}",
    },
    "console.step": {"en": "step {n} of {of}: {text}", "zh": "第 {n} 步（共 {of} 步）：{text}"},
    "console.node_added": {
        "en": "node added: {name} ({kind})",
        "zh": "已加入节点：{name}（{kind}）",
    },
    "console.mcp_retrying": {
        "en": "{detail} (retrying in {delay} s)",
        "zh": "{detail}（{delay} 秒后重试）",
    },
    "console.mcp_back": {
        "en": "MCP server {name} is back: {detail}",
        "zh": "MCP 服务器 {name} 已恢复：{detail}",
    },
    "console.dropped": {
        "en": "{n} events skipped (slow connection)",
        "zh": "跳过了 {n} 条事件（连接较慢）",
    },
    "console.heard": {"en": "heard: {text}", "zh": "听到：{text}"},
    "console.voice_error": {"en": "voice: {error}", "zh": "语音：{error}"},
    "console.local_brain_note": {"en": "local brain {detail}", "zh": "本地模型 {detail}"},
    # ---- confirmations ----------------------------------------------------------------------
    "console.confirm_title": {"en": "The robot asks to run {name}", "zh": "机器人请求执行 {name}"},
    "console.confirm_args": {"en": "with {args}", "zh": "参数：{args}"},
    "console.allow": {"en": "Allow", "zh": "允许"},
    "console.deny": {"en": "Deny", "zh": "拒绝"},
    "console.allowed_by": {"en": "allowed by {by}", "zh": "已由 {by} 允许"},
    "console.denied_by": {"en": "denied by {by}", "zh": "已由 {by} 拒绝"},
    "console.allowed": {"en": "allowed", "zh": "已允许"},
    "console.denied": {"en": "denied", "zh": "已拒绝"},
    # ---- the emergency stop -----------------------------------------------------------------
    "console.estop": {"en": "E-STOP", "zh": "急停"},
    "console.estop_title": {
        "en": "Emergency stop: latches the robot at zero speed until the operator resets it",
        "zh": "紧急停止：机器人锁定为零速度，直到操作员复位",
    },
    "console.estop_reason": {
        "en": "E-STOP pressed on the web console",
        "zh": "在网页控制台按下了急停",
    },
    "console.estop_latched": {"en": "EMERGENCY STOP LATCHED", "zh": "急停已锁定"},
    "console.estop_by": {"en": "by {source}: {reason}", "zh": "来源 {source}：{reason}"},
    "console.estop_reset": {"en": "Reset", "zh": "复位"},
    "console.estop_secret": {"en": "Operator's secret", "zh": "操作员密钥"},
    "console.estop_secret_hint": {
        "en": "The page proves the secret (HMAC of a fresh nonce); it never sends it.",
        "zh": "页面只发送密钥的证明（对新随机数的 HMAC），不会发送密钥本身。",
    },
    "console.estop_released": {"en": "emergency stop released", "zh": "急停已解除"},
    "console.estop_refused": {"en": "reset refused: {reason}", "zh": "复位被拒绝：{reason}"},
    "console.reset_wrong_proof": {
        "en": "wrong proof: the secret is not the operator's",
        "zh": "证明不对：密钥不是操作员的",
    },
    "console.reset_replayed": {"en": "this proof was used before", "zh": "这个证明已经用过"},
    "console.reset_unknown_nonce": {
        "en": "the stop was latched again: try once more",
        "zh": "急停已重新锁定：请再试一次",
    },
    "console.reset_no_proof": {"en": "type the operator's secret", "zh": "请输入操作员密钥"},
    "console.reset_no_secret": {
        "en": "no reset secret is configured (robot.estop.reset_token)",
        "zh": "未配置复位密钥（robot.estop.reset_token）",
    },
    "console.reset_in_clear": {
        "en": "the secret was sent in clear: change it",
        "zh": "密钥被明文发送：请更换",
    },
    "console.cancel": {"en": "Cancel", "zh": "取消"},
    # ---- the drive pad ----------------------------------------------------------------------
    "console.pad_hint": {
        "en": "Hold an arrow (or arrow keys / WASD here) to drive; release to stop.",
        "zh": "按住方向键（或在此处按方向键 / WASD）驾驶；松开即停。",
    },
    "console.forward": {"en": "Forward", "zh": "前进"},
    "console.backward": {"en": "Backward", "zh": "后退"},
    "console.left": {"en": "Turn left", "zh": "左转"},
    "console.right": {"en": "Turn right", "zh": "右转"},
    "console.speed": {"en": "Speed", "zh": "速度"},
    "console.speed_value": {"en": "{v} m/s", "zh": "{v} 米/秒"},
    "console.driving": {
        "en": "you are driving: the agent's motion waits",
        "zh": "正在手动驾驶：智能体的运动已暂停",
    },
    "console.pad_refused": {"en": "drive refused: {error}", "zh": "驾驶被拒绝：{error}"},
    # ---- the map ----------------------------------------------------------------------------
    "console.map_hint": {
        "en": "Click a place or a point to send the robot there.",
        "zh": "点击地点或地图上的点，让机器人前往。",
    },
    "console.no_map": {"en": "no map", "zh": "没有地图"},
    "console.zoom_in": {"en": "Zoom in", "zh": "放大"},
    "console.zoom_out": {"en": "Zoom out", "zh": "缩小"},
    "console.fit": {"en": "Fit", "zh": "适应"},
    "console.go_place": {"en": "Go to the {place}.", "zh": "去{place}。"},
    "console.go_point": {
        "en": "Go to the point x={x} m, y={y} m on the map.",
        "zh": "去地图上的点 x={x} 米，y={y} 米。",
    },
    "console.legend_robot": {"en": "robot", "zh": "机器人"},
    "console.legend_path": {"en": "planned path", "zh": "规划路径"},
    "console.legend_trail": {"en": "trajectory", "zh": "轨迹"},
    "console.legend_fence": {"en": "geofence", "zh": "电子围栏"},
    "console.legend_object": {"en": "objects", "zh": "物体"},
    # ---- settings ---------------------------------------------------------------------------
    "console.language": {"en": "Language", "zh": "语言"},
    "console.language_auto": {"en": "the browser's language", "zh": "跟随浏览器"},
    "console.provider": {"en": "Provider", "zh": "服务商"},
    "console.model": {"en": "Model", "zh": "模型"},
    "console.base_url": {"en": "Base URL", "zh": "接口地址"},
    "console.base_url_placeholder": {"en": "provider default", "zh": "服务商默认地址"},
    "console.api_key": {"en": "API key", "zh": "API 密钥"},
    "console.api_key_placeholder": {
        "en": "leave empty to keep the current key",
        "zh": "留空则保留当前密钥",
    },
    "console.keep_key": {
        "en": "Keep the current API key for the new provider / base URL (the key is sent there)",
        "zh": "新的服务商 / 接口地址继续使用当前 API 密钥（密钥会发往那里）",
    },
    "console.robot_profile": {"en": "Robot profile", "zh": "机器人配置"},
    "console.apply": {"en": "Apply", "zh": "应用"},
    "console.saved": {"en": "saved", "zh": "已保存"},
    "console.key_set": {"en": "set", "zh": "已设置"},
    "console.key_not_set": {"en": "not set", "zh": "未设置"},
    "console.not_editable": {
        "en": "settings cannot be changed in this console",
        "zh": "此控制台不能修改设置",
    },
    # ---- what a tool call does (rendered on the server from the call's arguments) -------------
    "call.any": {"en": "Running {tool}", "zh": "正在执行 {tool}"},
    "call.move_forward": {
        "en": "Moving forward {distance_m:.2f} m",
        "zh": "向前移动 {distance_m:.2f} 米",
    },
    "call.move_backward": {
        "en": "Moving backward {distance_m:.2f} m",
        "zh": "向后移动 {distance_m:.2f} 米",
    },
    "call.turn_left": {"en": "Turning left {angle_deg:.0f}°", "zh": "向左转 {angle_deg:.0f}°"},
    "call.turn_right": {"en": "Turning right {angle_deg:.0f}°", "zh": "向右转 {angle_deg:.0f}°"},
    "call.drive": {
        "en": "Driving at {linear_mps:.2f} m/s, turning {angular_dps:.0f}°/s for {duration_s:.1f} s",
        "zh": "以 {linear_mps:.2f} 米/秒行驶、每秒转 {angular_dps:.0f}°，持续 {duration_s:.1f} 秒",
    },
    "call.stop": {"en": "Stopping the base", "zh": "让底盘停下"},
    "call.get_current_pose": {"en": "Reading the robot's pose", "zh": "读取机器人的位姿"},
    "call.seewhat": {"en": "Looking with the camera", "zh": "用摄像头观察"},
    "call.observe_surroundings": {"en": "Looking around", "zh": "观察四周"},
    "call.detect_objects": {"en": "Looking for objects", "zh": "寻找物体"},
    "call.visual_positioning": {"en": "Locating {target}", "zh": "定位{target}"},
    "call.approach": {"en": "Approaching {target}", "zh": "靠近{target}"},
    "call.face": {"en": "Turning to face {target}", "zh": "转向{target}"},
    "call.navigation": {"en": "Going to {waypoint}", "zh": "前往{waypoint}"},
    "call.navigation_pose": {
        "en": "Going to x={x_m:.2f} m, y={y_m:.2f} m",
        "zh": "前往 x={x_m:.2f} 米，y={y_m:.2f} 米",
    },
    "call.navigate_to": {"en": "Going to {place}", "zh": "前往{place}"},
    "call.distance_to": {"en": "Measuring the way to {place}", "zh": "测量到{place}的距离"},
    "call.show_map": {"en": "Drawing the map", "zh": "绘制地图"},
    "call.follow_line": {"en": "Following the line", "zh": "沿线行驶"},
    "call.servo_move": {
        "en": "Turning the camera to {pan_deg:.0f}° pan, {tilt_deg:.0f}° tilt",
        "zh": "摄像头转到水平 {pan_deg:.0f}°、俯仰 {tilt_deg:.0f}°",
    },
    "call.servo_init": {"en": "Centring the camera", "zh": "摄像头回中"},
    "call.servo_nod": {"en": "Nodding", "zh": "点头"},
    "call.servo_shake": {"en": "Shaking the head", "zh": "摇头"},
    "call.track": {
        "en": "Following the object with camera and base",
        "zh": "用摄像头和底盘跟踪目标",
    },
    "call.shell_exec": {"en": "Running the command {command}", "zh": "执行命令 {command}"},
    "call.system_status": {"en": "Checking the computer's state", "zh": "查看计算机状态"},
    "call.generate_image": {"en": "Drawing a picture: {prompt}", "zh": "生成图片：{prompt}"},
    "call.wait": {"en": "Waiting {seconds:.1f} s", "zh": "等待 {seconds:.1f} 秒"},
    "call.say": {"en": "Saying: {text}", "zh": "说：{text}"},
    "call.send_message": {"en": "Sending a message: {text}", "zh": "发送消息：{text}"},
    "call.file_read": {"en": "Reading the file {path}", "zh": "读取文件 {path}"},
    "call.file_write": {"en": "Writing the file {path}", "zh": "写入文件 {path}"},
    "call.file_list": {"en": "Listing the folder {path}", "zh": "列出文件夹 {path}"},
}
