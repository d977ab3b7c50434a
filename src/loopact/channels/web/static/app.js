// loopact web console: chat and readable events, camera, status (SPEC F2, F5, F6, A8, C5;
// issue 42 item 4). Plain JS, no build step. Texts: window.loopactTexts (texts.js).
(function () {
  "use strict";

  var CAMERA_FPS = 10;          // frames asked for per second while the page is visible
  var STATUS_PERIOD_MS = 1000;  // status + pose refresh
  var MAX_TEXT = 300;           // compact display of free text
  var MAX_LOG = 400;            // chat entries kept on the page

  var $ = function (id) { return document.getElementById(id); };
  var tr = window.loopactTexts.tr;
  var lang = window.loopactTexts.lang;
  var logEl = $("log");
  var hasRobot = document.body.dataset.robot === "1";
  var state = {
    frames: 0, lastSeq: null, events: 0, tasks: {}, pending: [], ws: null, wsOk: false,
    pose: null, calls: {}, listeners: []
  };
  window.loopactConsole = state;  // read by the browser tests and panels.js

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function short(value) {
    var s = typeof value === "string" ? value : JSON.stringify(value);
    if (s === undefined) { s = ""; }
    return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + "\u2026" : s;
  }
  function atBottom() { return logEl.scrollHeight - logEl.scrollTop - logEl.clientHeight < 80; }
  function scrollDown() { logEl.scrollTop = logEl.scrollHeight; }
  function add(node) {
    var follow = atBottom();
    logEl.appendChild(node);
    while (logEl.childElementCount > MAX_LOG) { logEl.removeChild(logEl.firstElementChild); }
    if (follow) { scrollDown(); }
    return node;
  }
  function notice(text, isError) {
    var n = $("notice");
    n.textContent = text || "";
    n.className = "notice" + (isError ? " error" : "");
  }

  function api(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body || {})
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) {
          var msg = data.detail || (data.errors && JSON.stringify(data.errors)) || r.statusText;
          var err = new Error(typeof msg === "string" ? msg : JSON.stringify(msg));
          err.status = r.status; err.data = data;
          throw err;
        }
        return data;
      });
    });
  }
  state.api = api;
  state.notice = notice;

  // ---- events -------------------------------------------------------------------------
  function task(id) {
    var key = id || "_";
    if (!state.tasks[key]) { state.tasks[key] = { reply: null, text: "" }; }
    return state.tasks[key];
  }
  function replyBubble(id) {
    var t = task(id);
    if (!t.reply) {
      t.reply = add(el("div", "msg assistant"));
      t.reply.dataset.task = id || "";
    }
    return t.reply;
  }
  function line(cls, text, ev) {
    var n = el("div", "event " + cls, text);
    if (ev && ev.task_id) { n.dataset.task = ev.task_id; }
    return add(n);
  }
  function withHint(node, hintKey) {
    node.appendChild(el("span", "hint", tr("console.what_to_do", { hint: tr(hintKey) })));
    return node;
  }
  function saidOf(ev) { return ev.said ? (ev.said[lang] || ev.said.en) : null; }

  // The JSON behind a card, one click away.
  function detailsToggle(card, head) {
    var btn = el("button", "details-btn", tr("console.details"));
    btn.type = "button";
    btn.onclick = function () {
      var pre = card.querySelector("pre.json");
      if (pre) { pre.remove(); return; }
      pre = el("pre", "json", JSON.stringify(card._events || [], null, 2));
      card.appendChild(pre);
    };
    head.appendChild(btn);
  }

  // Progress as a live figure: how far a motion call has come, from the live pose.
  function unwrap(a) { while (a > Math.PI) { a -= 2 * Math.PI; } while (a < -Math.PI) { a += 2 * Math.PI; } return a; }
  // -> [done, total, catalogue key] or null when the call has no figure
  function progressFigure(c) {
    var a = c.args || {};
    var p = state.pose;
    if ((c.name === "move_forward" || c.name === "move_backward") && p && c.start && a.distance_m > 0) {
      return [Math.hypot(p.x_m - c.start.x_m, p.y_m - c.start.y_m), a.distance_m, "console.progress_m"];
    }
    if ((c.name === "turn_left" || c.name === "turn_right") && p && c.start && a.angle_deg > 0) {
      c.turned = (c.turned || 0) + Math.abs(unwrap(p.yaw_rad - (c.lastYaw === undefined ? c.start.yaw_rad : c.lastYaw)));
      c.lastYaw = p.yaw_rad;
      return [c.turned * 180 / Math.PI, a.angle_deg, "console.progress_deg"];
    }
    var goal = c.name === "navigation" && state.goalOf ? state.goalOf(a) : null;
    if (goal && p && c.start) {  // straight-line distance to the goal, done of the total
      c.total = c.total || Math.hypot(goal[0] - c.start.x_m, goal[1] - c.start.y_m);
      var left = Math.hypot(goal[0] - p.x_m, goal[1] - p.y_m);
      return [Math.max(0, c.total - left), c.total, "console.progress_m"];
    }
    var seconds = c.name === "drive" ? a.duration_s : (c.name === "wait" ? a.seconds : null);
    if (seconds > 0) { return [(Date.now() - c.t0) / 1000, seconds, "console.progress_s"]; }
    return null;
  }
  function updateProgress() {
    Object.keys(state.calls).forEach(function (id) {
      var c = state.calls[id];
      if (c.done) { return; }
      var fig = progressFigure(c);
      if (fig === null) { return; }
      var f = Math.max(0, Math.min(1, fig[0] / fig[1]));
      c.figured = true;
      c.bar.hidden = false;
      c.bar.firstChild.style.width = (f * 100).toFixed(0) + "%";
      c.card.dataset.fraction = f.toFixed(3);
      var digits = fig[2] === "console.progress_m" ? 2 : 0;
      c.progress.textContent = tr(fig[2], { done: fig[0].toFixed(digits), total: (+fig[1]).toFixed(digits) });
    });
  }
  state.listeners.push(updateProgress);

  function toolCard(ev) {
    var card = el("div", "event tool-call");
    card.dataset.call = ev.id;
    card.dataset.tool = ev.name;
    if (ev.task_id) { card.dataset.task = ev.task_id; }
    card._events = [ev];
    var head = el("div", "tool-head");
    head.appendChild(el("span", "tool-said", saidOf(ev) || ev.name));
    head.appendChild(el("span", "tool-state", tr("console.running")));
    detailsToggle(card, head);
    card.appendChild(head);
    var progress = el("div", "tool-progress");
    card.appendChild(progress);
    var bar = el("div", "bar");
    bar.appendChild(el("span"));
    bar.hidden = true;
    card.appendChild(bar);
    var key = (ev.task_id || "") + "/" + ev.id;
    state.calls[key] = {
      card: card, progress: progress, bar: bar, name: ev.name, args: ev.arguments || {},
      start: state.pose, t0: Date.now(), done: false
    };
    return add(card);
  }
  function callOf(ev) { return state.calls[(ev.task_id || "") + "/" + ev.id]; }

  function outcomeHint(ev) {
    // the outcome's phrase ids (its cause's too), never its text
    var ids = (JSON.stringify(ev.outcome || {}).match(/"id":"[^"]*"/g) || []).join(" ");
    return /estop|emergency/.test(ids) ? "console.hint_estop" : "console.hint_tool";
  }

  var handlers = {
    task_start: function (ev) {
      setBusy(true);
      var m = add(el("div", "msg user", ev.text));
      m.dataset.task = ev.task_id || "";
      if (ev.source && ev.source !== "web") { m.appendChild(el("span", "source", ev.source)); }
      scrollDown();
    },
    model_request: function (ev) { line("plan", tr("console.thinking", { round: ev.round }), ev); },
    model_retry: function (ev) {
      withHint(line("warn", tr("console.model_retry", { attempt: ev.attempt, error: short(ev.error) }), ev), "console.hint_model");
    },
    text_delta: function (ev) {
      var t = task(ev.task_id);
      t.text += ev.text;
      var follow = atBottom();
      replyBubble(ev.task_id).textContent = t.text;
      if (follow) { scrollDown(); }
    },
    model_response: function (ev) {
      var t = task(ev.task_id);
      if (ev.text && !t.text) { t.text = ev.text; replyBubble(ev.task_id).textContent = ev.text; }
      // the next round streams into a new bubble
      if (ev.tool_calls && ev.tool_calls.length) { t.reply = null; t.text = ""; }
    },
    tool_call: toolCard,
    tool_progress: function (ev) {
      var c = callOf(ev);
      var text = String(ev.text || "");
      var prefix = ev.name + ": ";  // motion tools name themselves; the card already does
      if (text.indexOf(prefix) === 0) { text = text.slice(prefix.length); }
      if (!c) { line("progress", short(text), ev); return; }
      c.card._events.push(ev);
      // one live line per call, not a growing log; a motion's own figure in the page's
      // language where it has one (the tool's text is in "details")
      if (!c.figured && lang === "en") { c.progress.textContent = short(text); }
    },
    tool_image: function (ev) {  // what a perception tool saw, with its overlay (SPEC F6)
      // ?at=: call ids repeat across tasks; each event's image is its own URL
      var src = "/images/" + encodeURIComponent(ev.id) + "/shown/" + ev.n + ".jpg?at=" + ev.ts;
      var box = $("perception-image");
      box.textContent = "";
      box.className = "model-image";
      var img = el("img");
      img.src = src;
      img.alt = ev.caption;
      box.appendChild(img);
      box.appendChild(el("div", "muted", ev.caption));
    },
    tool_result: function (ev) {
      // a robot tool's typed outcome in this page's language (ev.said); else its data / error
      var c = callOf(ev);
      var card = c ? c.card : toolCard({ id: ev.id, name: ev.name, task_id: ev.task_id, arguments: {} });
      c = callOf(ev);
      c.done = true;
      card._events.push(ev);
      card.classList.add(ev.ok ? "ok" : "failed");
      card.querySelector(".tool-state").textContent = tr(ev.ok ? "console.done" : "console.failed");
      if (ev.ok) { c.bar.firstChild.style.width = "100%"; }
      c.progress.textContent = "";
      var said = saidOf(ev);
      var body;
      if (ev.ok) {
        // a tool without a typed outcome speaks English: inline in an English page, else
        // in "details" (an error is always shown, with what to do in the page's language)
        var data = ev.data === null || ev.data === undefined || lang !== "en" ? "" : short(ev.data);
        body = el("div", "tool-result ok", said || data || tr("console.result_ok"));
      } else {
        body = el("div", "tool-result failed", tr("console.result_error", { error: short(said || ev.error) }));
        withHint(body, outcomeHint(ev));
      }
      card.appendChild(body);
      var count = ev.n_images || (ev.images ? ev.images.length : 0);
      for (var i = 0; i < count; i++) {
        var src = "/images/" + encodeURIComponent(ev.id) + "/" + i + ".jpg?at=" + ev.ts;
        var img = el("img", "thumb");
        img.src = src;
        img.alt = said || ev.name;
        body.appendChild(img);
        showModelImage(src, said || ev.name);
      }
      delete state.calls[(ev.task_id || "") + "/" + ev.id];
    },
    confirm_request: function (ev) {
      if ($("confirm-" + ev.id)) { return; }  // replayed to a reconnecting page
      // ev.shown: every argument by name, each value cut on its own (the server's
      // agent/confirm.py shown_arguments), so a long content cannot hide the path
      var args = typeof ev.shown === "string" ? ev.shown : JSON.stringify(ev.arguments);
      var box = el("div", "card confirm event");
      box.id = "confirm-" + ev.id;
      if (ev.task_id) { box.dataset.task = ev.task_id; }
      box.appendChild(el("div", "confirm-title", tr("console.confirm_title", { name: ev.name })));
      box.appendChild(el("div", "confirm-args", ev.name + "(" + args + ")"));
      var allow = el("button", "allow", tr("console.allow"));
      var deny = el("button", "deny", tr("console.deny"));
      function answer(yes) {
        allow.disabled = true; deny.disabled = true;
        api("/api/confirm", { id: ev.id, allow: yes }).catch(function (e) {
          notice(e.message, true);
        });
      }
      allow.onclick = function () { answer(true); };
      deny.onclick = function () { answer(false); };
      box.appendChild(allow);
      box.appendChild(deny);
      add(box);
      scrollDown();
    },
    confirm_response: function (ev) {
      var box = $("confirm-" + ev.id);
      var text = ev.by
        ? tr(ev.allowed ? "console.allowed_by" : "console.denied_by", { by: ev.by })
        : tr(ev.allowed ? "console.allowed" : "console.denied");
      if (box) {
        box.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
        box.appendChild(el("span", "answer", text));
        box.classList.add(ev.allowed ? "allowed" : "denied");
      } else {
        line("plan", text, ev);
      }
    },
    reply: function (ev) {
      var t = task(ev.task_id);
      t.text = ev.text || "";
      var b = replyBubble(ev.task_id);
      b.textContent = t.text;
      b.classList.add("final");
    },
    error: function (ev) {
      withHint(line("error", tr("console.error", { message: short(ev.message) }), ev), "console.hint_model");
    },
    bound: function (ev) {
      withHint(line("warn", tr("console.bound", { name: ev.name, limit: ev.limit }), ev), "console.hint_bound");
    },
    stop: function (ev) {
      line("warn stop", ev.source ? tr("console.stopped_from", { source: ev.source }) : tr("console.stopped"), ev);
    },
    robot_state: function (ev) { showPose(ev); },
    task_end: function (ev) {
      setBusy(false);
      var key = { completed: "console.task_completed", preempted: "console.task_preempted",
                  failed: "console.task_failed" }[ev.status] || "console.task_other";
      var n = line("end " + ev.status, tr(key, { status: ev.status, rounds: ev.rounds }), ev);
      n.dataset.status = ev.status;
      delete state.tasks[ev.task_id || "_"];
    },
    message: function (ev) {  // send_message / continuous mode (A7)
      var m = add(el("div", "msg assistant final", ev.text));
      m.dataset.task = ev.task_id || "";
    },
    input: function (ev) {  // a message injected into a running continuous loop (A7)
      var m = add(el("div", "msg user", ev.text));
      if (ev.source && ev.source !== "web") { m.appendChild(el("span", "source", ev.source)); }
    },
    input_snapshot: function (ev) { line("plan", tr("console.input", { text: short(ev.text) }), ev); },
    context_compressed: function (ev) {
      line("plan", tr("console.compressed", { method: ev.method, before: ev.before_tokens, after: ev.after_tokens }), ev);
    },
    provider_switch: function (ev) {
      line("warn", tr("console.model_switched", { provider: ev.provider, model: ev.model }), ev);
      $("model").textContent = ev.provider + " / " + ev.model;
    },
    clause_start: function (ev) { line("plan", tr("console.step", { n: ev.n, of: ev.of, text: ev.text }), ev); },
    local_brain: function (ev) {
      showBackend(Object.assign({ kind: "local" }, ev));
      if (ev.state === "crashed" || ev.state === "failed") { withHint(line("error", ev.detail, ev), "console.hint_model"); }
      else if (ev.state === "ready" && ev.restarts) { line("warn", tr("console.local_brain_note", { detail: ev.detail }), ev); }
    },
    node_added: function (ev) { line("plan", tr("console.node_added", { name: ev.name, kind: ev.kind }), ev); },
    mcp_server: function (ev) {  // issue 18: an MCP server dropped (and is retried) or is back
      if (ev.state === "restarting") { line("warn", tr("console.mcp_retrying", { detail: ev.detail, delay: ev.delay_s }), ev); }
      else if (ev.state === "connected" && ev.restarts) { line("plan", tr("console.mcp_back", { name: ev.name, detail: ev.detail }), ev); }
    },
    dropped: function (ev) { line("warn", tr("console.dropped", { n: ev.n }), ev); },
    // issue 16: what was heard and said (voice.js plays and records the audio itself)
    transcript: function (ev) {
      if (ev.text) { line("progress heard", "\uD83C\uDFA4 " + tr("console.heard", { text: short(ev.text) }), ev); }
      if (ev.error || ev.note) { line("warn", tr("console.voice_error", { error: ev.error || ev.note }), ev); }
    },
    speech_out: function (ev) {
      if (window.loopactVoice) { window.loopactVoice.onSpeechOut(ev); }
      if (ev.state === "playing") { line("progress", "\uD83D\uDD0A " + short(ev.text), ev); }
      else if (ev.state === "failed") { line("warn", tr("console.voice_error", { error: short(ev.error) }), ev); }
    },
    voice: function (ev) { notice(tr("console.voice_error", { error: ev.error }), true); }
  };

  // The local brain's server (issue 13): starting, ready, crashed, restarting, failed.
  function showBackend(b) {
    var badge = $("brain");
    if (!b || b.kind !== "local") { badge.hidden = true; return; }
    badge.hidden = false;
    badge.textContent = tr("console.local_brain", { state: b.state, file: b.model_file });
    badge.title = b.detail || (b.restarts ? b.restarts + " \u21BB " + b.log_path : "");
    badge.className = "badge brain-" + b.state +
      (b.state === "ready" ? " on" : (b.state === "failed" || b.state === "crashed" ? " off" : ""));
  }

  function setBusy(busy) {
    $("busy").textContent = tr(busy ? "console.busy" : "console.idle");
    $("busy").className = "badge" + (busy ? " busy" : "");
    $("busy").dataset.busy = busy ? "1" : "0";
  }

  function onEvent(ev) {
    state.events += 1;
    var h = handlers[ev.type];
    if (h) { h(ev); }
    state.listeners.forEach(function (f) { if (f.onEvent) { f.onEvent(ev); } });
  }
  state.onEvent = onEvent;

  function connect() {
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(proto + location.host + "/ws");
    state.ws = ws;
    ws.onopen = function () {
      state.wsOk = true;
      $("conn").textContent = tr("console.connected");
      $("conn").className = "badge on";
    };
    ws.binaryType = "arraybuffer";
    ws.onmessage = function (m) {
      if (m.data instanceof ArrayBuffer) {  // the robot's voice (issue 16)
        if (window.loopactVoice) { window.loopactVoice.play(m.data); }
        return;
      }
      try { onEvent(JSON.parse(m.data)); } catch (e) { console.error(e); }
    };
    ws.onclose = function (e) {
      state.wsOk = false;
      if (state.padStop) { state.padStop(); }  // no driving blind (the deadman stops it anyway)
      $("conn").className = "badge off";
      if (e.code === 4401) { $("conn").textContent = tr("console.unauthorized"); return; }
      $("conn").textContent = tr("console.reconnecting");
      setTimeout(connect, 1000);
    };
  }

  // ---- composer -----------------------------------------------------------------------
  function submit(text) {
    var ids = state.pending.map(function (p) { return p.id; });
    return api("/api/message", { text: text, image_ids: ids }).then(function (d) {
      state.pending = [];
      $("attachments").textContent = "";
      notice("");
      return d;
    });
  }
  state.submit = submit;
  function send() {
    var input = $("input");
    var text = input.value.trim();
    if (!text) { return; }
    submit(text).then(function () { input.value = ""; })
      .catch(function (e) { notice(e.message, true); });
  }
  $("composer").addEventListener("submit", function (e) { e.preventDefault(); send(); });
  $("input").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  $("stop").addEventListener("click", function () {
    api("/api/stop").catch(function (e) { notice(e.message, true); });
  });
  $("reset").addEventListener("click", function () {
    api("/api/reset").then(function () { logEl.textContent = ""; state.tasks = {}; state.calls = {}; })
      .catch(function (e) { notice(e.message, true); });
  });
  $("file").addEventListener("change", function () {
    var f = this.files && this.files[0];
    if (!f) { return; }
    var form = new FormData();
    form.append("file", f);
    notice(tr("console.checking_image"));
    fetch("/api/upload", { method: "POST", body: form, credentials: "same-origin" })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (d) {
          if (!r.ok) { throw new Error(d.detail || r.statusText); }
          return d;
        });
      })
      .then(function (d) {
        state.pending.push(d);
        var chip = el("span", "chip", f.name + (d.blurry ? " " + tr("console.blurry") : ""));
        chip.dataset.upload = d.id;
        var img = el("img", "thumb");
        img.src = URL.createObjectURL(f);
        chip.insertBefore(img, chip.firstChild);
        $("attachments").appendChild(chip);
        notice(tr(d.blurry ? "console.image_blurry" : "console.image_attached"));
      })
      .catch(function (e) { notice(e.message, true); })
      .then(function () { $("file").value = ""; });
  });

  // ---- camera, pose, status -----------------------------------------------------------
  function showModelImage(src, caption) {
    var box = $("model-image");
    box.textContent = "";
    box.className = "model-image";
    var img = el("img");
    img.src = src;
    img.alt = caption;
    box.appendChild(img);
    box.appendChild(el("div", "muted", caption));
  }
  function num(v) { return typeof v === "number" ? v.toFixed(2) : "?"; }
  function showPose(p) {
    if (!p || typeof p.x_m !== "number") { return; }
    state.pose = p;
    var yaw = typeof p.yaw_rad === "number" ? (p.yaw_rad * 180 / Math.PI).toFixed(1) : "?";
    $("pose").textContent = tr("console.pose_line", { x: num(p.x_m), y: num(p.y_m), yaw: yaw });
    $("pose").className = "pose";
    state.listeners.forEach(function (f) { f(p); });
  }
  state.showPose = showPose;

  function noRobot() {
    var info = $("camera-info");
    info.textContent = tr("console.no_robot");
    info.className = "no-robot";
    $("camera").hidden = true;
  }

  var cameraUrl = null;
  var cameraOn = hasRobot;
  function cameraLoop() {
    if (!cameraOn) { return; }
    if (document.hidden) { setTimeout(cameraLoop, 500); return; }
    var started = Date.now();
    fetch("/api/camera/frame.jpg", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 404) { cameraOn = false; noRobot(); return null; }
        if (!r.ok) { throw new Error(tr("console.camera_error", { error: r.status })); }
        var seq = r.headers.get("X-Frame-Seq");
        var stamp = r.headers.get("X-Frame-Stamp");
        return r.blob().then(function (b) {
          if (seq === state.lastSeq) { return false; }
          state.lastSeq = seq;
          var url = URL.createObjectURL(b);
          var img = $("camera");
          img.onload = function () { if (cameraUrl && cameraUrl !== url) { URL.revokeObjectURL(cameraUrl); } cameraUrl = url; };
          img.src = url;
          img.hidden = false;
          state.frames += 1;
          img.dataset.seq = seq;
          $("camera-info").textContent = tr("console.frame", { seq: seq, stamp: stamp });
          return true;
        });
      })
      .then(function (fresh) {
        if (fresh === null) { return; }
        // a repeated frame: the next one is due soon, ask again shortly
        var wait = fresh ? 1000 / CAMERA_FPS - (Date.now() - started) : 20;
        setTimeout(cameraLoop, Math.max(0, wait));
      })
      .catch(function (e) {
        $("camera-info").textContent = e.message;
        if (cameraOn) { setTimeout(cameraLoop, 1000); }
      });
  }

  function statusLoop() {
    if (document.hidden) { setTimeout(statusLoop, STATUS_PERIOD_MS); return; }
    fetch("/api/status", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) { return; }
        setBusy(s.busy);
        $("model").textContent = (s.provider || "") + (s.model ? " / " + s.model : "");
        if (s.pose) { showPose(s.pose); }
        showBackend(s.backend);
        if (!s.camera && cameraOn) { cameraOn = false; noRobot(); }
      })
      .catch(function () { /* shown by the connection badge */ })
      .then(function () { setTimeout(statusLoop, STATUS_PERIOD_MS); });
  }

  if (!hasRobot) { noRobot(); }
  connect();
  statusLoop();
  cameraLoop();
})();
