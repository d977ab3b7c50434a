// loopact web console: chat, events, camera (SPEC F2, F6, A8, C5). Plain JS, no build step.
(function () {
  "use strict";

  var CAMERA_FPS = 10;          // frames asked for per second while the page is visible
  var STATUS_PERIOD_MS = 1000;  // status + pose refresh
  var MAX_TEXT = 300;           // compact display of arguments and results

  var $ = function (id) { return document.getElementById(id); };
  var logEl = $("log");
  var state = {
    frames: 0, lastSeq: null, events: 0, tasks: {}, pending: [], ws: null, wsOk: false
  };
  window.loopactConsole = state;  // read by the browser tests

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
  function scrollDown() { logEl.scrollTop = logEl.scrollHeight; }
  function add(node) { logEl.appendChild(node); scrollDown(); return node; }
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
          throw new Error(typeof msg === "string" ? msg : JSON.stringify(msg));
        }
        return data;
      });
    });
  }

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

  var handlers = {
    task_start: function (ev) {
      setBusy(true);
      var m = add(el("div", "msg user", ev.text));
      m.dataset.task = ev.task_id || "";
      if (ev.source && ev.source !== "web") { m.appendChild(el("span", "source", ev.source)); }
    },
    model_request: function (ev) { line("plan", "thinking\u2026 (round " + ev.round + ")", ev); },
    model_retry: function (ev) {
      line("warn", "model retry " + ev.attempt + ": " + short(ev.error), ev);
    },
    text_delta: function (ev) {
      var t = task(ev.task_id);
      t.text += ev.text;
      replyBubble(ev.task_id).textContent = t.text;
      scrollDown();
    },
    model_response: function (ev) {
      var t = task(ev.task_id);
      if (ev.text && !t.text) { t.text = ev.text; replyBubble(ev.task_id).textContent = ev.text; }
      // the next round streams into a new bubble
      if (ev.tool_calls && ev.tool_calls.length) { t.reply = null; t.text = ""; }
    },
    tool_call: function (ev) {
      var n = line("tool-call", "\u25B6 " + ev.name + "(" + short(ev.arguments) + ")", ev);
      n.dataset.call = ev.id;
    },
    tool_progress: function (ev) { line("progress", "\u2026 " + ev.name + ": " + short(ev.text), ev); },
    tool_image: function (ev) {  // what a perception tool saw, with its overlay (SPEC F6)
      // ?at=: call ids repeat across tasks; each event's image is its own URL
      var src = "/images/" + encodeURIComponent(ev.id) + "/shown/" + ev.n + ".jpg?at=" + ev.ts;
      var box = $("perception-image");
      box.textContent = "";
      box.className = "model-image";
      var img = el("img");
      img.src = src;
      img.alt = "last perception image: " + ev.caption;
      box.appendChild(img);
      box.appendChild(el("div", "muted", ev.name + ": " + ev.caption));
    },
    tool_result: function (ev) {
      // a robot tool's outcome, rendered in agent.lang (outcome_text); else its data / error
      var text = ev.ok
        ? "\u2714 " + ev.name + ": " + short(ev.outcome_text || ev.data)
        : "\u2716 " + ev.name + ": " + short(ev.outcome_text || ev.error);
      var n = line(ev.ok ? "tool-result ok" : "tool-result failed", text, ev);
      n.dataset.call = ev.id;
      var count = ev.n_images || (ev.images ? ev.images.length : 0);
      for (var i = 0; i < count; i++) {
        var src = "/images/" + encodeURIComponent(ev.id) + "/" + i + ".jpg?at=" + ev.ts;
        var img = el("img", "thumb");
        img.src = src;
        img.alt = ev.name + " image " + i;
        n.appendChild(img);
        showModelImage(src, ev.name);
      }
    },
    confirm_request: function (ev) {
      if ($("confirm-" + ev.id)) { return; }  // replayed to a reconnecting page
      // ev.shown: every argument by name, each value cut on its own (the server's
      // agent/confirm.py shown_arguments), so a long content cannot hide the path
      var args = typeof ev.shown === "string" ? ev.shown : JSON.stringify(ev.arguments);
      var box = line("confirm", "Allow " + ev.name + "(" + args + ")?", ev);
      box.id = "confirm-" + ev.id;
      var allow = el("button", "allow", "Allow");
      var deny = el("button", "deny", "Deny");
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
    },
    confirm_response: function (ev) {
      var box = $("confirm-" + ev.id);
      var text = (ev.allowed ? "allowed" : "denied") + (ev.by ? " by " + ev.by : "");
      if (box) {
        box.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
        box.appendChild(el("span", "answer", text));
        box.classList.add(ev.allowed ? "allowed" : "denied");
      } else {
        line("confirm", "confirmation " + text, ev);
      }
    },
    reply: function (ev) {
      var t = task(ev.task_id);
      t.text = ev.text || "";
      var b = replyBubble(ev.task_id);
      b.textContent = t.text;
      b.classList.add("final");
    },
    error: function (ev) { line("error", "error: " + short(ev.message), ev); },
    bound: function (ev) { line("warn", "bound reached: " + ev.name + " (limit " + ev.limit + ")", ev); },
    stop: function (ev) { line("warn", "stopped" + (ev.source ? " from " + ev.source : ""), ev); },
    robot_state: function (ev) { showPose(ev); },
    task_end: function (ev) {
      setBusy(false);
      var n = line("end " + ev.status, "task " + ev.status + " (" + ev.rounds + " rounds)", ev);
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
    input_snapshot: function (ev) { line("plan", "input: " + short(ev.text), ev); },
    context_compressed: function (ev) {
      line("plan", "context " + ev.method + ": " + ev.before_tokens + " \u2192 " +
        ev.after_tokens + " tokens", ev);
    },
    provider_switch: function (ev) {
      line("warn", "model switched to " + ev.provider + " / " + ev.model, ev);
      $("model").textContent = ev.provider + " / " + ev.model;
    },
    clause_start: function (ev) { line("plan", "step " + ev.n + "/" + ev.of + ": " + ev.text, ev); },
    local_brain: function (ev) {
      showBackend(Object.assign({ kind: "local" }, ev));
      if (ev.state === "crashed" || ev.state === "failed") { line("error", ev.detail, ev); }
      else if (ev.state === "ready" && ev.restarts) { line("warn", "local brain " + ev.detail, ev); }
    },
    node_added: function (ev) { line("plan", "node added: " + ev.name + " (" + ev.kind + ")", ev); },
    mcp_server: function (ev) {  // issue 18: an MCP server dropped (and is retried) or is back
      if (ev.state === "restarting") { line("warn", ev.detail + " (retrying in " + ev.delay_s + " s)", ev); }
      else if (ev.state === "connected" && ev.restarts) { line("plan", "MCP server " + ev.name + " is back: " + ev.detail, ev); }
    },
    dropped: function (ev) { line("warn", ev.n + " events skipped (slow connection)", ev); },
    // issue 16: what was heard and said (voice.js plays and records the audio itself)
    transcript: function (ev) {
      if (ev.text) { line("progress heard", "\uD83C\uDFA4 heard: " + short(ev.text), ev); }
      if (ev.error || ev.note) { line("warn", "voice: " + (ev.error || ev.note), ev); }
    },
    speech_out: function (ev) {
      if (window.loopactVoice) { window.loopactVoice.onSpeechOut(ev); }
      if (ev.state === "playing") { line("progress", "\uD83D\uDD0A " + short(ev.text), ev); }
      else if (ev.state === "failed") { line("warn", "voice: " + short(ev.error), ev); }
    },
    voice: function (ev) { notice("voice: " + ev.error, true); }
  };

  // The local brain's server (issue 13): starting, ready, crashed, restarting, failed.
  function showBackend(b) {
    var badge = $("brain");
    if (!b || b.kind !== "local") { badge.hidden = true; return; }
    badge.hidden = false;
    badge.textContent = "local brain: " + b.state + " (" + b.model_file + ")";
    badge.title = b.detail || (b.restarts ? b.restarts + " restart(s); log " + b.log_path : "");
    badge.className = "badge brain-" + b.state +
      (b.state === "ready" ? " on" : (b.state === "failed" || b.state === "crashed" ? " off" : ""));
  }

  function setBusy(busy) {
    $("busy").textContent = busy ? "busy" : "idle";
    $("busy").className = "badge" + (busy ? " busy" : "");
  }

  function onEvent(ev) {
    state.events += 1;
    var h = handlers[ev.type];
    if (h) { h(ev); }
  }

  function connect() {
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(proto + location.host + "/ws");
    state.ws = ws;
    ws.onopen = function () {
      state.wsOk = true;
      $("conn").textContent = "connected";
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
      $("conn").className = "badge off";
      if (e.code === 4401) { $("conn").textContent = "unauthorized"; return; }
      $("conn").textContent = "reconnecting";
      setTimeout(connect, 1000);
    };
  }

  // ---- composer -----------------------------------------------------------------------
  function send() {
    var input = $("input");
    var text = input.value.trim();
    if (!text) { return; }
    var ids = state.pending.map(function (p) { return p.id; });
    api("/api/message", { text: text, image_ids: ids }).then(function () {
      input.value = "";
      state.pending = [];
      $("attachments").textContent = "";
      notice("");
    }).catch(function (e) { notice(e.message, true); });
  }
  $("composer").addEventListener("submit", function (e) { e.preventDefault(); send(); });
  $("input").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  $("stop").addEventListener("click", function () {
    api("/api/stop").catch(function (e) { notice(e.message, true); });
  });
  $("reset").addEventListener("click", function () {
    api("/api/reset").then(function () { logEl.textContent = ""; state.tasks = {}; })
      .catch(function (e) { notice(e.message, true); });
  });
  $("file").addEventListener("change", function () {
    var f = this.files && this.files[0];
    if (!f) { return; }
    var form = new FormData();
    form.append("file", f);
    notice("checking image\u2026");
    fetch("/api/upload", { method: "POST", body: form, credentials: "same-origin" })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (d) {
          if (!r.ok) { throw new Error(d.detail || r.statusText); }
          return d;
        });
      })
      .then(function (d) {
        state.pending.push(d);
        var chip = el("span", "chip", f.name + (d.blurry ? " (blurry)" : ""));
        chip.dataset.upload = d.id;
        var img = el("img", "thumb");
        img.src = URL.createObjectURL(f);
        chip.insertBefore(img, chip.firstChild);
        $("attachments").appendChild(chip);
        notice(d.blurry ? "image attached, but it looks blurry" : "image attached");
      })
      .catch(function (e) { notice(e.message, true); })
      .then(function () { $("file").value = ""; });
  });

  // ---- camera, pose, status -----------------------------------------------------------
  function showModelImage(src, name) {
    var box = $("model-image");
    box.textContent = "";
    box.className = "model-image";
    var img = el("img");
    img.src = src;
    img.alt = "last image sent to the model";
    box.appendChild(img);
    box.appendChild(el("div", "muted", name));
  }
  function num(v) { return typeof v === "number" ? v.toFixed(2) : "?"; }
  function showPose(p) {
    if (!p) { return; }
    var yaw = typeof p.yaw_rad === "number" ? (p.yaw_rad * 180 / Math.PI).toFixed(1) : "?";
    $("pose").textContent = "x " + num(p.x_m) + " m, y " + num(p.y_m) + " m, yaw " + yaw +
      "\u00B0" + (p.frame ? " (" + p.frame + ")" : "");
    $("pose").className = "pose";
  }

  var cameraUrl = null;
  var cameraOn = true;
  function cameraLoop() {
    if (!cameraOn) { return; }
    if (document.hidden) { setTimeout(cameraLoop, 500); return; }
    var started = Date.now();
    fetch("/api/camera/frame.jpg", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 404) { cameraOn = false; throw new Error("no camera"); }
        if (!r.ok) { throw new Error("camera " + r.status); }
        var seq = r.headers.get("X-Frame-Seq");
        var stamp = r.headers.get("X-Frame-Stamp");
        return r.blob().then(function (b) {
          if (seq === state.lastSeq) { return false; }
          state.lastSeq = seq;
          var url = URL.createObjectURL(b);
          var img = $("camera");
          img.onload = function () { if (cameraUrl && cameraUrl !== url) { URL.revokeObjectURL(cameraUrl); } cameraUrl = url; };
          img.src = url;
          state.frames += 1;
          img.dataset.seq = seq;
          $("camera-info").textContent = "frame " + seq + ", t = " + stamp + " s";
          return true;
        });
      })
      .then(function (fresh) {
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
        if (!s.camera && cameraOn) { cameraOn = false; $("camera-info").textContent = "no camera"; }
      })
      .catch(function () { /* shown by the connection badge */ })
      .then(function () { setTimeout(statusLoop, STATUS_PERIOD_MS); });
  }

  connect();
  statusLoop();
  cameraLoop();
})();
