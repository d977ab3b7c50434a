# ruff: noqa: E501
"""Texts of the runtime for people, in English and Chinese (SPEC F5): fallback texts, CLI
hints, terminal labels, the agent's refusals. Keys are stable; add both languages when adding
one. The robot's outcomes are in :mod:`loopact.i18n.robot`.
"""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {
    "bound.max_rounds": {
        "en": "I stopped after {limit} tool rounds (the limit for one task).",
        "zh": "已达到单个任务的工具调用轮数上限（{limit} 轮），我先停下。",
    },
    "bound.tokens": {
        "en": "I stopped: this task used {used} tokens, over its budget of {limit}.",
        "zh": "已停止：本任务用了 {used} 个 token，超过预算 {limit}。",
    },
    "bound.output_tokens": {
        "en": (
            "I stopped reading the model's answer: it passed the limit of {limit} output "
            "tokens for one response (agent.bounds.max_tokens_*)."
        ),
        "zh": "已停止读取模型的回答：超过了单次回答 {limit} 个输出 token 的上限（agent.bounds.max_tokens_*）。",
    },
    "bound.wall_clock": {
        "en": "I stopped: the task ran longer than its {limit} s time limit.",
        "zh": "已停止：任务运行超过了 {limit} 秒的时间上限。",
    },
    "bound.invalid_rounds": {
        "en": (
            "I stopped: {limit} rounds in a row had tool calls that could not run "
            "(unknown tools, bad arguments, or a tool called more often than allowed)."
        ),
        "zh": "已停止：连续 {limit} 轮的工具调用无法执行（工具不存在、参数错误或调用次数超过上限）。",
    },
    "bound.hourly": {
        "en": (
            "I paused: the hourly budget ({rounds} model rounds, {tokens} tokens) is used up. "
            "Waiting messages will be handled when it frees up."
        ),
        "zh": "已暂停：每小时预算（{rounds} 轮模型请求、{tokens} 个 token）已用完，等待中的消息将在预算恢复后处理。",
    },
    "bound.nothing_ran": {
        "en": "Nothing was done: no action ran.",
        "zh": "什么也没有做：没有执行任何动作。",
    },
    "bound.no_answer": {
        "en": "I could not produce a final answer.",
        "zh": "我没能给出最终答复。",
    },
    "final.ask": {
        "en": (
            "The tool budget for this task is used up. Do not call tools. Answer the user now "
            "in one short paragraph: what was done, what was not, and what you saw."
        ),
        "zh": "本任务的工具调用次数已用完。不要再调用工具。现在用一小段话回答用户：做了什么、没做什么、看到了什么。",
    },
    "final.cut": {
        "en": "(The answer was cut off at the limit of {limit} output tokens for one response.)",
        "zh": "（回答在单次回答 {limit} 个输出 token 的上限处被截断。）",
    },
    "final.empty": {
        "en": "Your last reply was empty. Answer the user now in one or two sentences.",
        "zh": "你上一条回复是空的。现在用一两句话回答用户。",
    },
    "guard.repeat": {
        "en": "result unchanged, answer now",
        "zh": "结果没有变化，请直接回答",
    },
    "guard.units": {
        "en": (
            'Not run: "{said}" is a {said_kind}, but {name}.{argument} is a {kind}. '
            "Call a function that takes a {said_kind}: {takers}."
        ),
        "zh": "未执行：“{said}”是{said_kind}，但 {name}.{argument} 是{kind}。请调用接受{said_kind}的函数：{takers}。",
    },
    "guard.units_none": {
        "en": (
            'Not run: "{said}" is a {said_kind}, but {name}.{argument} is a {kind}, '
            "and no function takes a {said_kind}. Tell the user."
        ),
        "zh": "未执行：“{said}”是{said_kind}，但 {name}.{argument} 是{kind}，且没有函数接受{said_kind}。请告诉用户。",
    },
    "unit.length": {"en": "length", "zh": "长度"},
    "unit.angle": {"en": "angle", "zh": "角度"},
    "unit.time": {"en": "time", "zh": "时间"},
    "unit.speed": {"en": "speed", "zh": "速度"},
    "unit.angular_speed": {"en": "turn rate", "zh": "角速度"},
    "guard.too_many": {
        "en": "refused: {name} was already called {count} times in this task (limit {limit})",
        "zh": "已拒绝：本任务中 {name} 已被调用 {count} 次（上限 {limit}）",
    },
    "tool.truncated": {
        "en": (
            "your call to {name} was truncated (the response hit its length limit) and was "
            "not executed; call it again with complete arguments"
        ),
        "zh": "你对 {name} 的调用被截断（回复达到长度上限），未执行；请用完整参数重新调用",
    },
    "tool.cancelled": {
        "en": "cancelled: the task was stopped before this call finished",
        "zh": "已取消：任务在此调用完成前被停止",
    },
    "tool.not_run": {
        "en": "not run: the model response was cut before this call was complete",
        "zh": "未执行：模型回复在此调用完整之前中断",
    },
    "confirm.denied": {
        "en": "the user denied {name}",
        "zh": "用户拒绝了 {name}",
    },
    "confirm.timeout": {
        "en": "no confirmation for {name} within {timeout_s} s, so it was not run",
        "zh": "{timeout_s} 秒内没有确认 {name}，因此未执行",
    },
    "confirm.noninteractive": {
        "en": (
            "{name} is a write tool (it changes files, devices or the world outside) and needs "
            "the user's confirmation, which cannot be asked in --once mode; run again with "
            "--yes, or add {entry} to confirm.allow in the config"
        ),
        "zh": "{name} 是写入类工具（会修改文件、设备或外部世界），需要用户确认，而 --once 模式无法询问；请加 --yes 重新运行，或把 {entry} 加入配置中的 confirm.allow",
    },
    "confirm.untrusted_mcp": {
        "en": (
            "{name} comes from the MCP server '{source}', which is not trusted, so it needs a "
            "person's confirmation, which cannot be asked in --once mode; run again with "
            "--yes, or add {entry} to confirm.allow in the config, or trust the server: give "
            "it a class for {remote} in its `safety` mapping (read_only, idempotent, write), "
            "or `trust: true` so that its readOnlyHint counts (docs/mcp.md)"
        ),
        "zh": (
            "{name} 来自未受信任的 MCP 服务器 '{source}'，因此需要人工确认，而 --once 模式无法询问；"
            "请加 --yes 重新运行，或把 {entry} 加入配置中的 confirm.allow，或信任该服务器：在它的 "
            "`safety` 中为 {remote} 指定类别（read_only、idempotent、write），或设置 "
            "`trust: true` 使其 readOnlyHint 生效（docs/mcp.md）"
        ),
    },
    "confirm.untrusted_node": {
        "en": (
            "{name} comes from a remote node that is not trusted, so it needs a person's "
            "confirmation, which cannot be asked in --once mode; run again with --yes, or add "
            "{name} to confirm.allow in the config, or trust the node: list {remote} in "
            "nodes.trust (its announced class counts) or grant it a class in nodes.safety "
            "(docs/security.md)"
        ),
        "zh": (
            "{name} 来自未受信任的远程节点，因此需要人工确认，而 --once 模式无法询问；"
            "请加 --yes 重新运行，或把 {name} 加入配置中的 confirm.allow，或信任该节点：把 "
            "{remote} 列入 nodes.trust（采用它声明的类别），或在 nodes.safety 中为它指定类别"
            "（docs/security.md）"
        ),
    },
    "confirm.not_an_answer": {
        "en": "not a y/n answer: denied; that line runs as the next instruction",
        "zh": "不是 y/n 回答：已拒绝；这一行将作为下一条指令执行",
    },
    "confirm.refused": {
        "en": "your answer to {id} did not count: {why}",
        "zh": "你对 {id} 的回答没有生效：{why}",
    },
    "confirm.refused_answered": {
        "en": "{by} answered it first",
        "zh": "{by} 已先回答",
    },
    "confirm.refused_unknown": {
        "en": "no such confirmation is waiting (it expired or was never asked)",
        "zh": "没有这条待确认的请求（已过期或从未发出）",
    },
    "confirm.refused_channel": {
        "en": "this channel may not answer confirmations (confirm.channels)",
        "zh": "这个通道不能回答确认请求（confirm.channels）",
    },
    "confirm.spoken": {
        "en": "May I run {name}? Say yes or no.",
        "zh": "可以执行 {name} 吗？请说是或否。",
    },
    "operator.handed_back": {
        "en": (
            "[operator] {who} let go of the robot after {held_s:.1f} s of teleop: the base is "
            "yours again. Resume your task if it is unfinished."
        ),
        "zh": "[操作员] {who} 遥控 {held_s:.1f} 秒后松手了：底盘交还给你。如果任务未完成，请继续。",
    },
    "operator.taken_over": {
        "en": "taken over by the operator ({who})",
        "zh": "被操作员接管（{who}）",
    },
    "estop.latched": {
        "en": "Emergency stop latched ({source}): the robot will not move until an operator resets it.",
        "zh": "急停已锁定（{source}）：操作员复位之前机器人不会移动。",
    },
    "estop.released": {
        "en": "Emergency stop released by {by}.",
        "zh": "急停已由 {by} 解除。",
    },
    "estop.refused": {
        "en": "Emergency stop reset refused: {reason}.",
        "zh": "急停复位被拒绝：{reason}。",
    },
    "estop.none": {
        "en": "no robot: there is no emergency stop to latch",
        "zh": "没有机器人：没有可锁定的急停",
    },
    "estop.word_latched": {"en": "latched", "zh": "已锁定"},
    "estop.word_released": {"en": "released", "zh": "未锁定"},
    "estop.state": {
        "en": "emergency stop: {state}; nonce {nonce} (reset: /estop reset PROOF, with PROOF from `loopact estop proof {nonce}`)",
        "zh": "急停：{state}；nonce {nonce}（复位：/estop reset PROOF，PROOF 由 `loopact estop proof {nonce}` 算出）",
    },
    "confirm.prompt": {
        "en": "Allow {name}({args})? [y/N] ",
        "zh": "允许执行 {name}({args}) 吗？[y/N] ",
    },
    "image.no_vision": {
        "en": "[image omitted: this model has no vision]",
        "zh": "[已省略图像：该模型不支持视觉]",
    },
    "model.failed": {
        "en": "The model request failed: {error}",
        "zh": "模型请求失败：{error}",
    },
    "model.not_sent": {
        "en": "Not sent to the model: {error}",
        "zh": "未发送给模型：{error}",
    },
    "task.done": {"en": "Done.", "zh": "完成。"},
    "task.stopped": {
        "en": "Stopped.",
        "zh": "已停止。",
    },
    "cli.no_endpoint": {
        "en": (
            "No model endpoint is configured, so the agent has no brain to think with.\n\n"
            "Point loopact at any OpenAI-compatible endpoint in one of three ways:\n\n"
            "  1. Environment variables:\n"
            "       export LOOPACT_BASE_URL=https://api.openai.com/v1\n"
            "       export LOOPACT_API_KEY=sk-...        (or OPENAI_API_KEY)\n"
            "       export LOOPACT_MODEL=gpt-4o-mini\n\n"
            "  2. Flags:\n"
            "       loopact run --base-url URL --model NAME --api-key KEY\n"
            "     (with make: make run ARGS='--base-url URL --model NAME')\n\n"
            "  3. A config file: `loopact init` writes a commented ./loopact.yaml;\n"
            "     fill in model.base_url, model.model and model.api_key.\n\n"
            "Local servers work too (Ollama: http://localhost:11434/v1, vLLM, llama.cpp,\n"
            "LM Studio): give the base URL; an API key is then optional.\n"
            "To try loopact offline, run the scripted model server:\n"
            "       loopact scripted-server docs/examples/demo-script.json\n"
            "and point --base-url at the address it prints."
        ),
        "zh": (
            "尚未配置模型服务，智能体没有可用的“大脑”。\n\n"
            "可用以下三种方式之一指向任意兼容 OpenAI 的服务：\n\n"
            "  1. 环境变量：\n"
            "       export LOOPACT_BASE_URL=https://api.openai.com/v1\n"
            "       export LOOPACT_API_KEY=sk-...        （或 OPENAI_API_KEY）\n"
            "       export LOOPACT_MODEL=gpt-4o-mini\n\n"
            "  2. 命令行参数：\n"
            "       loopact run --base-url URL --model NAME --api-key KEY\n"
            "     （用 make：make run ARGS='--base-url URL --model NAME'）\n\n"
            "  3. 配置文件：`loopact init` 会生成带注释的 ./loopact.yaml，\n"
            "     填写 model.base_url、model.model 和 model.api_key。\n\n"
            "本地服务同样可用（Ollama: http://localhost:11434/v1、vLLM、llama.cpp、LM Studio），\n"
            "填写 base URL 即可，API key 可省略。\n"
            "离线试用可运行脚本化模型服务：\n"
            "       loopact scripted-server docs/examples/demo-script.json\n"
            "并把 --base-url 指向它打印的地址。"
        ),
    },
    "term.welcome": {
        "en": (
            "loopact {version} - model {model} via {provider} at {base_url}; robot: {robot}\n"
            "Type an instruction. Commands: {commands}. "
            "Typing while a task runs replaces it."
        ),
        "zh": (
            "loopact {version} - 模型 {model}（{provider}，{base_url}）；机器人：{robot}\n"
            "输入指令。命令：{commands}。任务运行时输入新指令会替换当前任务。"
        ),
    },
    "term.reset": {"en": "Conversation reset.", "zh": "对话已重置。"},
    "term.console": {
        "en": "Web console: {url} (chat, live camera, settings)",
        "zh": "网页控制台：{url}（对话、实时画面、设置）",
    },
    "term.provider_usage": {
        "en": "Usage: /provider openai|anthropic|dify [MODEL [BASE_URL]]",
        "zh": "用法：/provider openai|anthropic|dify [模型 [BASE_URL]]",
    },
    "term.provider_carried": {
        "en": "Now using {model} via {provider}; the conversation was carried over.",
        "zh": "已切换到 {model}（{provider}），对话历史已保留。",
    },
    "term.provider_fresh": {
        "en": (
            "Now using {model} via {provider}; its protocol cannot hold the earlier "
            "conversation, so a new one starts."
        ),
        "zh": "已切换到 {model}（{provider}）；该协议无法承接之前的对话，已开始新对话。",
    },
    "term.bye": {"en": "Bye.", "zh": "再见。"},
    "term.ctrl_c": {
        "en": "Stopped the current task. Press Ctrl-C again to quit.",
        "zh": "已停止当前任务。再按一次 Ctrl-C 退出。",
    },
    "term.line_cut": {
        "en": (
            "This line reached the terminal's limit of {n} characters, so the rest of it was "
            "cut off; it was not run. Send long text with --once, or pipe it from a file."
        ),
        "zh": "这一行达到了终端每行 {n} 个字符的上限，后面的内容被截掉了，因此没有执行。"
        "较长的文字请用 --once，或从文件用管道输入。",
    },
    "term.unknown_command": {
        "en": "Unknown command {cmd}. Commands: {commands}",
        "zh": "未知命令 {cmd}。可用命令：{commands}",
    },
    "term.model_retry": {
        "en": "model request failed ({error}); retry {attempt} in {delay} s",
        "zh": "模型请求失败（{error}）；{delay} 秒后第 {attempt} 次重试",
    },
    "term.bound": {
        "en": "bound reached: {name} (limit {limit})",
        "zh": "达到上限：{name}（上限 {limit}）",
    },
    "term.step": {"en": "step {n}/{of}: {text}", "zh": "第 {n}/{of} 步：{text}"},
    "term.stop": {"en": "stop ({source})", "zh": "停止（{source}）"},
    # the small model's steps that act on what perception finds (issue 45)
    "step.check": {"en": "do you see {target}?", "zh": "你看到{target}了吗？"},
    "step.seen": {"en": "I see {target}", "zh": "我看到了{target}"},
    "step.not_seen": {"en": "I do not see {target}", "zh": "我没有看到{target}"},
    "step.not_found": {"en": "I did not find {target}", "zh": "我没有找到{target}"},
}
