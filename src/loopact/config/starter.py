"""The starter config ``loopact init`` writes (also the body of docs/config.md).

Every key with its default and a comment; keep it in step with :mod:`loopact.config.sections`.
:func:`starter_config` puts given values in place of the defaults (``loopact init``'s answers),
keeping every comment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_PLAIN = re.compile(r"^[A-Za-z0-9_./:@+-]+$")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"})

STARTER_CONFIG = """\
# loopact configuration. Every key is optional; defaults are shown.
# Environment variables override this file: LOOPACT_API_KEY (or OPENAI_API_KEY),
# LOOPACT_BASE_URL, LOOPACT_MODEL, LOOPACT_ROBOT, LOOPACT_ROBOT_PROFILE, LOOPACT_LANG,
# LOOPACT_MQTT_BROKER, LOOPACT_MQTT_USERNAME, LOOPACT_MQTT_PASSWORD, LOOPACT_MQTT_CA_FILE,
# LOOPACT_MQTT_CERT_FILE, LOOPACT_MQTT_KEY_FILE. Command-line flags override both.

model:
  provider: openai            # openai: OpenAI-compatible chat/completions (OpenAI, Qwen,
                              # DeepSeek, OpenRouter, vLLM, Ollama, llama.cpp, LM Studio, ...);
                              # anthropic: Anthropic Messages; dify: a Dify chat app
  base_url: null              # e.g. https://api.openai.com/v1 or http://localhost:11434/v1
  model: gpt-4o-mini
  api_key: null               # better: export LOOPACT_API_KEY=...
  api_key_env: null           # or the name of the variable that holds the key (MY_KEY)
  temperature: null           # sampling temperature 0-2 sent with every request; null: the
                              # endpoint's default (not for dify: the app sets its own)
  thinking_budget_tokens: null  # anthropic only: extended thinking with this budget in
                              # tokens (>= 1024; like --thinking-budget); its thinking blocks
                              # go back to the API with their signatures
  # capabilities:             # what the endpoint can do; the loop adapts to it
  #   vision: true
  #   native_tool_calls: true
  #   parallel_tool_calls: true   # sent as parallel_tool_calls with native tools ...
  #   audio_input: false      # true: it hears audio (input_audio parts; voice.to_model)
  #   parallel_tool_calls_param: true  # ... unless false (an endpoint that refuses it; one
  #                           # that answers HTTP 400 naming it is remembered anyway)
  #   context_tokens: 128000
  #   stream_usage: true      # set false if the endpoint rejects stream_options

agent:
  mode: task                  # task (a new command replaces the running one), plan
                              # (write a JSON plan first, then run its steps; a rejected
                              # plan is sent back once with the reason) or continuous
                              # (always running; messages are injected, it replies through
                              # send_message; only a stop interrupts it)
  context_limit: null         # prompt tokens above which older turns are summarised
                              # (null: the system prompt and the tools, plus 60% of
                              # the room they leave in the model's context size, that
                              # is model.capabilities.context_tokens or, for the local
                              # brain, local.context_tokens); a plain trim keeps pairs
                              # at 1.25x this, never past 85% of the context size;
                              # a server that refuses a prompt as too long ("maximum
                              # context length is N tokens") teaches the agent N: it
                              # compresses and asks once more; an instruction that
                              # cannot fit even compressed is refused, never sent (its
                              # size counts all the model is sent: system prompt, tool
                              # descriptions or catalogue, the task's messages)
  hourly_rounds: 120          # continuous mode: model rounds per rolling hour
  hourly_tokens: 400000       # continuous mode: tokens per rolling hour
  tool_calling: auto          # native (the API's tools), text (action lines such as
                              # move_forward(1.0), for Dify apps and models without tool
                              # calling) or auto (text when the endpoint has neither tool
                              # calling nor constrained decoding)
  lang: en                    # en or zh: language of messages for people
  modality: any               # G3: any, text (no images, no voice), image+text (no voice)
                              # or voice+text (no images); others are refused clearly
  workspace: workspace        # file tools are confined to this folder
  # system_prompt: "..."      # extra instructions appended to the built-in prompt
  bounds:
    max_rounds: 6             # tool rounds per task, then one final answer without tools
                              # (the local brain, local.split_steps: a reply built from
                              # what ran instead, docs/local-brain.md)
    max_tries: 3              # tries per model request (429/5xx/connection errors)
    request_timeout_s: 60
    stream_idle_timeout_s: 30
    tool_timeout_s: 30
    task_timeout_s: 300
    token_budget: 200000      # tokens per task; a stream is no longer read past it
    max_tokens_round: 8192    # max_tokens sent with each request, by kind: a tool round,
    max_tokens_final: 1024    # the final answer after a bound, a context summary, plan
    max_tokens_summary: 1024  # mode's plan; an answer longer than that (a server that
    max_tokens_plan: 2048     # ignores it) is not read on: the task ends on a bound

confirm:
  auto_approve: false         # true: never ask before write tools (like --yes)
  allow: []                   # write tools allowed without asking, e.g. [file_write]; an
                              # MCP server's tool by server and name: mcp:lab/echo (a plain
                              # name allows loopact's own tools only); a name no tool has
                              # at start is warned about (closest name)
  timeout_s: 60               # no answer within this time means denied
  channels: [terminal, web, voice]  # who may answer a confirmation: also ros2 and mqtt
                              # (their text channels) when listed; whoever may publish on
                              # their input topic then approves writes (docs/security.md)

robot:
  kind: sim                   # sim (MuJoCo, built in), ros2 (any robot on ROS 2 topics) or none
  profile: sim                # hardware profile: sim, turtlebot4, mecanum_ptz, or a YAML path
  site: sim_room              # site map with waypoints and geofence, or a YAML path; a
                              # waypoint's optional names ([厨房]) are other names it answers
                              # to, the first Chinese one used in Chinese replies
  sim_speed: 1.0              # simulated time per real second
  scenario: default           # sim only: default, moving-target (a cyan ball circling), flat
                              # (five rooms; its own site map flat), flat-blocked or arm
  map: null                   # a Nav2 map_server YAML (image + YAML) to plan on; the sim
                              # draws its own, a site file may name one (map:)
  sim_log: null               # sim only: write the ground-truth poses here (JSON Lines, 20 Hz)
  recentre_on_stop: false     # true: a stopped or preempted task brings the camera back to
                              # its home position (like --recentre-on-stop)
  estop:                      # the emergency stop: anyone may latch it (every channel);
                              # releasing it needs the operator:
    reset_token: null         # the operator's secret (better: LOOPACT_ESTOP_TOKEN); a reset
                              # carries a proof of it over the governor's nonce, never the
                              # secret (loopact estop proof; docs/security.md), or
    reset_topic: null         # "reset" on this operator topic of loopact base, e.g.
                              # /operator/estop_reset (restrict its publishers with SROS2)

vision:
  max_side_px: 1024           # the image gate (G1): every image for a model is scaled to at
                              # most this long side, in pixels (16-8192) ...
  blur_threshold: 4.0         # ... and held back as blurry below this sharpness (variance of
                              # the Laplacian; 4.0 passes every sharp frame measured)
  colors: {}                  # HSV ranges (OpenCV: H 0..179) by colour name, added to or
                              # replacing the built-in ones measured on the simulator, e.g.
                              # orange: [[[8, 150, 120], [20, 255, 255]]]
  use_main_model: true        # box selection and descriptions by the main model when it has
                              # vision (model.capabilities.vision); else the detector alone
  # model:                    # a separate vision model for seewhat and visual_positioning:
  #   base_url: http://localhost:8081/v1   # an OpenAI-compatible vision endpoint
  #   model: qwen2.5-vl
  #   api_key_env: VISION_API_KEY
  # model:                    # or a local llama.cpp vision model, served by loopact:
  #   model_path: ~/models/qwen2.5-vl-3b-instruct-q4_k_m.gguf
  #   mmproj_path: ~/models/mmproj-qwen2.5-vl-3b-instruct-f16.gguf   # its projector
  #   chat_format: mtmd       # or qwen2.5-vl, gemma4, llava-1-5, llava-1-6, minicpm-v-2.6, ...
  min_confidence: 0.5         # below this a perception result says it is unsure (G2)
  line_lost_grace_s: 1.5      # follow_line stops when the line stays out of view this long
  line_speed_mps: 0.25        # follow_line's forward speed on a straight line
  track_distance_m: 1.2       # track keeps this distance to the target (depth)

trace:
  path: null                  # write a JSON Lines trace here (like --trace)
  full: false                 # also record every request's messages
record:                       # the run as MCAP for Foxglove (docs/observability.md)
  path: null                  # like --record run.mcap
  camera_hz: 1                # camera frames per second in the file (0: none)
  pose_hz: 10                 # pose and TF messages per second
  jpeg_quality: 75
foxglove: {enabled: false, host: 127.0.0.1, port: 8765}  # live view (--foxglove), loopback
telemetry:                    # OpenTelemetry spans over OTLP/HTTP; OTEL_EXPORTER_OTLP_* win
  otlp_endpoint: null         # e.g. http://127.0.0.1:4318 (spans to /v1/traces)
  service_name: loopact

web:
  enabled: true               # the console at http://localhost:8080 (not with --once)
  host: 127.0.0.1             # beyond loopback (e.g. 0.0.0.0) a token is required
  port: 8080
  token: null                 # required on every request when set (--web-token);
                              # at least 16 characters (docs/security.md)
  language: null              # en or zh: the console's language (null: the browser's;
                              # each reader can switch it in the console's settings)

memory:
  enabled: true               # Git-backed memory: rules, diaries, facts, skills
  path: null                  # null: <user data folder>/loopact/memory (like --memory DIR)
  remote: null                # a Git remote shared by several robots: pulled at start, then
                              # synced (fetch, merge, push) while running and at exit
  sync_interval_s: 300        # seconds between syncs while running (0: at start and exit
                              # only); a remote out of reach is retried sooner, nothing is lost
  machine_id: null            # prefix of diary entries; null: /etc/machine-id or hostname
  snapshots: true             # a JSON snapshot of the context per model round
  snapshot_retention: 200     # snapshots kept per machine

tools:
  shell:
    enabled: false            # shell_exec is absent unless true
    allow: {}                 # executable -> allowed first arguments ([] = any), e.g.
                              #   uptime: []
                              #   ls: []
                              #   systemctl: [status]
    timeout_s: 10             # the command's process group is killed after this
    max_output_chars: 8000    # stdout + stderr kept for the model (the rest is cut)

documents:
  font: null                  # TrueType font for PDF text beyond Latin-1 (Chinese ...);
                              # null: the first installed one that has every glyph
                              # (fonts-wqy-microhei, installed by scripts/system-deps.sh)

images:                       # generate_image exists only when base_url and model are set
  base_url: null              # an OpenAI-compatible API root, e.g. https://api.openai.com/v1
  model: null                 # e.g. gpt-image-1
  api_key: null               # better: LOOPACT_IMAGES_API_KEY; null with the same base_url
                              # as model.base_url: the model's key
  default_size: 1024x1024
  timeout_s: 120

board:
  kind: sim                   # sim (a simulated board), linux (gpiod, sysfs PWM, IIO,
                              # smbus2, spidev) or none; like --board
  file: null                  # board description (YAML); null: the built-in sim board
  poll_s: 1.0                 # seconds between sensor threshold checks (input events)

# messages: channels of send_message beyond the console; each exists only when set.
# messages:
#   email:                    # send_message(channel="email", to=..., text=...)
#     host: 127.0.0.1
#     port: 587
#     starttls: true          # required unless false; the certificate is verified
#     username: robot
#     password_env: LOOPACT_SMTP_PASSWORD   # the password is read from this variable
#     from_addr: robot@example.com
#     allow_to: [ops@example.com]           # only these recipients (* wildcards)
#     ca_file: null           # PEM file of a private CA
#     timeout_s: 20           # per SMTP step
#     subject: null           # null: the message's first line
#   ros2:                     # send_message(channel="ros2", to=TOPIC): std_msgs/String
#     allow_to: [/ops/chat]
#   mqtt:                     # send_message(channel="mqtt", to=TOPIC): QoS 1 on the
#     allow_to: [alerts/#]    # mqtt.broker (MQTT filters or * wildcards)

mcp:                          # MCP servers whose tools the agent uses (docs/mcp.md); also
  servers: {}                 # --mcp-config FILE (JSON or YAML with a servers mapping). E.g.
  #   files: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", /data]}
  #   lab:                    # streamable HTTP; ${VAR} takes a value from the environment
  #     url: http://127.0.0.1:9000/mcp
  #     headers: {Authorization: "Bearer ${LAB_TOKEN}"}
  #     trust: false          # true: the server's readOnlyHint makes a tool read-only;
  #                           # otherwise every tool is a write tool (asks first)
  #     safety: {}            # per tool name or pattern: read_only, idempotent, write
  #     timeout_s: null       # per call; null: agent.bounds.tool_timeout_s
  #     connect_timeout_s: 30 # start-up and initialize
  token: null                 # bearer token of `loopact mcp --http` (needed beyond
                              # loopback); better: LOOPACT_MCP_TOKEN or --token

voice:                        # spoken commands and replies (docs/voice.md)
  enabled: false              # true: microphone and speaker of this machine (like --voice)
  input_device: null          # PortAudio device name or number; null: the default
  output_device: null
  audio_in: null              # a WAV file or - (raw 16 kHz s16le PCM on stdin), like --audio-in
  audio_out: null             # a WAV file or - (raw PCM on stdout), like --audio-out
  ros2_topics: false          # true: listen on /<agent>/audio/in, speak on /<agent>/audio/out
                              # (std_msgs/UInt8MultiArray of 16 kHz s16le PCM; robot.kind ros2)
  to_model: transcript        # what the model gets of a spoken command: transcript, audio
                              # (the clip instead of its words) or both; the clip needs a
                              # model with model.capabilities.audio_input (docs/voice.md)
  barge_in: true              # speech over the robot's voice stops it at once
  vad_aggressiveness: 2       # WebRTC VAD 0..3 (3 rejects the most noise)
  onset_ms: 60                # speech needed to count as a person talking (barge-in)
  end_silence_ms: 600         # silence that ends an utterance
  max_utterance_s: 30         # a longer utterance is cut here
  stt:
    engine: whisper           # whisper: offline (tiny.en, English); openai: an OpenAI-
                              # compatible /audio/transcriptions endpoint
    base_url: null            # openai: the API root (null: model.base_url)
    model: whisper-1
    api_key_env: null         # variable holding its key (null: the model's key, same URL)
    model_path: null          # whisper: another CTranslate2 Whisper folder (multilingual)
    timeout_s: 20
    window_s: 10              # whisper: shortest encoder window in s (30: Whisper's fixed
                              # window, 5x slower on a short command, same words)
  tts:
    engine: espeak            # espeak: offline espeak-ng (English, Chinese); openai: an
                              # OpenAI-compatible /audio/speech endpoint; none: no speech
    base_url: null
    model: tts-1
    voice: alloy
    espeak_voices: {en: en-us, zh: cmn}
    rate_wpm: 165
    timeout_s: 20

# local: the offline brain, used only when no endpoint (base_url / API key) is configured.
# See docs/local-brain.md. `make local-brain` builds and downloads what it needs.
local:
  model_path: null            # any GGUF file; null = the pinned Qwen2.5-Coder-0.5B-Instruct
  context_tokens: 8192        # context size of the llama.cpp server
  threads: null               # CPU threads; null = all cores
  chat_format: null           # llama-cpp-python chat format; null = chatml for ChatML models,
                              # else the GGUF's own template
  build: auto                 # llama.cpp build profile: auto = x86-64-v4 (AVX-512 + VNNI, no
                              # AMX) or x86-64-v3 (AVX2) where the CPU has it, else x86-64-v2 /
                              # x86-64; never -march=native (docs/local-brain.md)
  prompt_cache: true          # evaluate the system prompt + tool catalogue once and keep the
                              # evaluated state on disk (<cache>/prompt-states/)
  max_restarts: 3             # restarts of a crashed local server allowed ...
  restart_window_s: 300       # ... within this many seconds, then a final error
  split_steps: true           # run "do A, then B" as one step per clause (docs/local-brain.md)

# nodes: hot-pluggable tool and sensor nodes (docs/ros2.md, docs/mqtt.md)
nodes:
  transport: auto             # auto (ROS 2 when robot.kind is ros2), ros2, mqtt or none
                              # (--transport); with mqtt the simulator's tools are served
                              # over the broker next to the robot and its governor
  shared: true                # mqtt: also use the fleet's shared nodes (loopact node --shared)
  trust: []                   # node (tool) names or patterns whose announced safety class
                              # is used, e.g. [lidar_scan, lab_*]; every other node's tool is
                              # a write tool that asks first (docs/security.md)
  safety: {}                  # node name (or pattern) -> the class you grant it, whatever it
                              # announces: read_only, idempotent, write or motion

# mqtt: the broker of the MQTT transport and of the mqtt_* tools (docs/mqtt.md)
mqtt:
  broker: mqtt://127.0.0.1:1883  # mqtts://host:8883 for TLS (--broker, LOOPACT_MQTT_BROKER)
  prefix: loopact             # topic prefix of the node protocol
  username: null              # LOOPACT_MQTT_USERNAME
  password: null              # better: export LOOPACT_MQTT_PASSWORD=... (never logged)
  tls:
    ca_file: null             # CA that signed the broker's certificate; TLS on when set
    cert_file: null           # client certificate (PEM) for mutual TLS
    key_file: null            # its key (PEM)
    insecure: false           # true: do not check the broker's host name
  keepalive_s: 10             # the broker fires a dead client's last will after 1.5x this
  client_id: null             # null: loopact-<role>-<random>, one per process run
  tools: true                 # the mqtt_* tools, when the transport is mqtt or
                              # subscriptions are set
  text_channel: false         # <agent>/text_input and text_output on the broker: whoever
                              # may publish there instructs the agent as its user, whoever
                              # may subscribe reads all it reads; on only behind a broker
                              # ACL (docs/security.md)
  teleop: false               # <agent>/teleop: an operator's drive commands take the robot
                              # over (0.5 s deadman); on only behind a broker ACL
  brokers: []                 # other brokers mqtt_connect may use (same credentials)
  allow_subscribe: ["#"]      # topic filters the tools may subscribe to
  allow_publish: ["#"]        # topics mqtt_publish may write (a write tool: confirmed)
  min_publish_interval_s: 0.1 # per topic; at least 0.1
  max_publish_bytes: 65536    # largest mqtt_publish payload
  history_per_topic: 100      # messages kept per topic for mqtt_history
  retained: skip              # a retained message (the broker's copy of an earlier one):
                              # skip: rules and inject mode ignore it; inject: it reaches
                              # the agent marked "retained" with its age where known
  subscriptions: []           # subscribed at start, e.g.
                              # - {topic: home/+/temperature, mode: filter,
                              #    rules: ["temperature > 30"]}  (retained: per topic)
"""


def starter_sections() -> dict[str, str]:
    """:data:`STARTER_CONFIG` cut into its top-level sections, in order.

    ``"_header"`` is the comment before the first section; each other key is a top-level key
    of the file (``model``, ``robot``, ...) with its text up to the next one, comment lines
    directly above a key belonging to that key. The docs show the file in parts, one page per
    group of sections (docs/config.md, config-robot.md, config-connect.md;
    ``scripts/sync-config-docs.py`` rewrites them, tests/test_docs_and_surface.py checks).

    Returns:
        Section name -> its lines, each ending in a newline, trailing blank lines left out.
    """
    lines = STARTER_CONFIG.splitlines(keepends=True)
    starts: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        key = line.split(":", 1)[0]
        if line[:1].isalpha() and key.isidentifier():
            first = i
            while first > 0 and lines[first - 1].startswith("#"):
                first -= 1
            starts.append((first, key))
    bounds = [(0, "_header"), *starts, (len(lines), "")]
    sections: dict[str, str] = {}
    for (begin, name), (end, _) in zip(bounds, bounds[1:], strict=False):
        sections[name] = "".join(lines[begin:end]).rstrip("\n") + "\n"
    return sections


def _yaml_value(value: Any) -> str:
    """``value`` as a YAML scalar (a string that YAML would read otherwise is quoted)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS and not _is_number(text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def starter_config(values: Mapping[str, Any] | None = None) -> str:
    """The starter config with ``values`` in place of the defaults, every comment kept.

    Args:
        values: ``{"section.key": value}`` for keys the starter config has on a line of
            their own (``model.provider``, ``web.host``, ...).

    Returns:
        The YAML text.

    Raises:
        KeyError: A key the starter config does not have.
    """
    lines = STARTER_CONFIG.splitlines(keepends=True)
    for dotted, value in (values or {}).items():
        section, key = dotted.split(".", 1)
        lines[_line_of(lines, section, key)] = _with_value(
            lines[_line_of(lines, section, key)], key, value
        )
    return "".join(lines)


def _line_of(lines: list[str], section: str, key: str) -> int:
    inside = False
    for n, line in enumerate(lines):
        if line[:1] not in (" ", "#", "\n", ""):
            inside = re.match(rf"^{re.escape(section)}:(\s|$)", line) is not None
        elif inside and re.match(rf"^  {re.escape(key)}:(\s|$)", line):
            return n
    raise KeyError(f"{section}.{key}")


def _with_value(line: str, key: str, value: Any) -> str:
    """``line`` (``  key: old   # comment``) with ``value``, the comment kept in its column."""
    new = f"  {key}: {_yaml_value(value)}"
    at = line.find(" #")
    if at == -1:
        return new + "\n"
    hash_col = at + 1
    return f"{new}{' ' * max(1, hash_col - len(new))}{line[hash_col:]}"
