// loopact web console: tabs, the emergency stop, the drive pad (SPEC X3, F2; issue 42 items
// 2, 3, 5). The E-stop and the pad use the governor's endpoints (/api/estop, /api/teleop:
// channels/web/panel_routes.py); the reset proof is HMAC-SHA256(secret, nonce), computed
// here: the secret never leaves the page.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var tr = window.loopactTexts.tr;
  var con = window.loopactConsole;
  var hasRobot = document.body.dataset.robot === "1";

  // ---- tabs (phones) ------------------------------------------------------------------
  document.querySelectorAll(".tabs button").forEach(function (b) {
    b.addEventListener("click", function () {
      document.body.dataset.tab = b.dataset.tab;
      document.querySelectorAll(".tabs button").forEach(function (o) {
        o.classList.toggle("active", o === b);
        o.setAttribute("aria-selected", o === b ? "true" : "false");
      });
      window.dispatchEvent(new Event("resize"));  // the map redraws at its new size
    });
  });

  // ---- HMAC-SHA256 (WebCrypto is missing on plain http beyond localhost) ----------------
  var K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2];
  function sha256(bytes) {  // bytes: array of 0..255 -> array of 32 bytes
    var h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
      0x1f83d9ab, 0x5be0cd19];
    var msg = bytes.slice();
    var bitLen = bytes.length * 8;
    msg.push(0x80);
    while (msg.length % 64 !== 56) { msg.push(0); }
    for (var s = 7; s >= 0; s--) { msg.push(s >= 4 ? 0 : (bitLen >>> (s * 8)) & 0xff); }
    var w = new Array(64);
    for (var off = 0; off < msg.length; off += 64) {
      for (var i = 0; i < 16; i++) {
        w[i] = (msg[off + 4 * i] << 24) | (msg[off + 4 * i + 1] << 16) |
          (msg[off + 4 * i + 2] << 8) | msg[off + 4 * i + 3];
      }
      for (i = 16; i < 64; i++) {
        var x = w[i - 15], y = w[i - 2];
        var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
        var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
      for (i = 0; i < 64; i++) {
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var ch = (e & f) ^ (~e & g);
        var t1 = (k + S1 + ch + K[i] + w[i]) | 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var maj = (a & b) ^ (a & c) ^ (b & c);
        var t2 = (S0 + maj) | 0;
        k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h = [h[0] + a, h[1] + b, h[2] + c, h[3] + d, h[4] + e, h[5] + f, h[6] + g, h[7] + k]
        .map(function (v) { return v | 0; });
    }
    var out = [];
    h.forEach(function (v) { out.push((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff); });
    return out;
  }
  function utf8(text) { return Array.prototype.slice.call(new TextEncoder().encode(text)); }
  function hmacHex(secret, message) {
    var key = utf8(secret);
    if (key.length > 64) { key = sha256(key); }
    while (key.length < 64) { key.push(0); }
    var inner = sha256(key.map(function (v) { return v ^ 0x36; }).concat(utf8(message)));
    var outer = sha256(key.map(function (v) { return v ^ 0x5c; }).concat(inner));
    return outer.map(function (v) { return (v < 16 ? "0" : "") + v.toString(16); }).join("");
  }
  con.hmacHex = hmacHex;  // the browser test checks it against Python's hmac

  // ---- the emergency stop ---------------------------------------------------------------
  var RESET_REASONS = {  // why the latch refused a reset (loopact.robot.estop.ResetResult)
    "wrong proof": "console.reset_wrong_proof", "replayed proof": "console.reset_replayed",
    "unknown nonce": "console.reset_unknown_nonce", "no proof": "console.reset_no_proof",
    "no reset secret configured": "console.reset_no_secret",
    "token sent in clear": "console.reset_in_clear"
  };
  var estop = { latched: false, nonce: null };
  con.estop = estop;
  function showEstop(s) {
    if (!s) { return; }
    estop.latched = !!s.latched;
    estop.nonce = s.nonce || null;
    $("estop-banner").hidden = !estop.latched;
    document.body.classList.toggle("latched", estop.latched);
    $("estop").setAttribute("aria-pressed", estop.latched ? "true" : "false");
    if (estop.latched) {
      $("estop-why").textContent = tr("console.estop_by", { source: s.source || "?", reason: s.reason || "" });
    }
    con.driving = s.operator && s.operator.holder ? s.operator : null;
  }
  function estopLoop() {
    if (!hasRobot) { return; }
    fetch("/api/estop", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(showEstop)
      .catch(function () { /* the connection badge says it */ })
      .then(function () { setTimeout(estopLoop, document.hidden ? 2000 : 500); });
  }
  $("estop").addEventListener("click", function () {
    padStop();
    con.api("/api/estop", { reason: tr("console.estop_reason") }).then(showEstop)
      .catch(function (e) { con.notice(e.message, true); });
  });
  $("estop-reset").addEventListener("submit", function (e) {
    e.preventDefault();
    var secret = $("estop-secret").value;
    fetch("/api/estop", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        var proof = hmacHex(secret, s.nonce || "");
        return con.api("/api/estop/reset", { nonce: s.nonce, proof: proof, by: "console" });
      })
      .then(function (d) {
        $("estop-secret").value = "";
        $("estop-note").textContent = "";
        con.notice(tr("console.estop_released"));
        showEstop(d.state);
      })
      .catch(function (err) {
        // the latch's reason is one of a few fixed words: said in the page's language
        var why = err.data && err.data.reason ? err.data.reason : err.message;
        var key = RESET_REASONS[why];
        $("estop-note").textContent = tr("console.estop_refused", { reason: key ? tr(key) : why });
        $("estop-note").dataset.reason = why;
      });
  });

  // ---- the drive pad: hold to drive, the deadman does the rest ---------------------------
  var SEND_EVERY_MS = 150;  // the lease holds 0.5 s: at least every 0.25 s while held
  var held = {};
  var timer = null;
  function twist() {
    var v = parseFloat($("pad-speed").value) || 0.3;
    var lin = (held.forward ? v : 0) - (held.backward ? v : 0);
    var ang = ((held.left ? 1 : 0) - (held.right ? 1 : 0)) * 90 * v;
    return { linear_mps: lin, angular_dps: ang };
  }
  // One request at a time: a command still on its way when the pad is let go would take the
  // base again after the release (and hold it for the deadman's 0.5 s).
  var inflight = null;
  function sendTwist() {
    if (inflight) { return inflight; }
    var t = twist();
    t.by = "drive pad";
    con.padSent = (con.padSent || 0) + 1;
    inflight = con.api("/api/teleop", t).then(function () {
      if (timer) { $("pad-info").textContent = tr("console.driving"); }
    }).catch(function (e) {
      $("pad-info").textContent = tr("console.pad_refused", { error: e.message });
    }).then(function () { inflight = null; });
    return inflight;
  }
  function padGo(dir) {
    if (held[dir]) { return; }
    held[dir] = true;
    document.querySelectorAll('.pad-btn[data-dir="' + dir + '"]').forEach(function (b) { b.classList.add("held"); });
    sendTwist();
    if (!timer) { timer = setInterval(sendTwist, SEND_EVERY_MS); }
  }
  function padEnd(dir) {
    if (!held[dir]) { return; }
    delete held[dir];
    document.querySelectorAll('.pad-btn[data-dir="' + dir + '"]').forEach(function (b) { b.classList.remove("held"); });
    if (Object.keys(held).length) { sendTwist(); return; }
    padStop();
  }
  function padStop() {
    var was = timer !== null || Object.keys(held).length > 0;
    held = {};
    document.querySelectorAll(".pad-btn.held").forEach(function (b) { b.classList.remove("held"); });
    if (timer) { clearInterval(timer); timer = null; }
    if (was) {
      (inflight || Promise.resolve()).then(function () {
        return con.api("/api/teleop/release", {});
      }).catch(function () { /* the deadman stops it */ });
      $("pad-info").textContent = tr("console.pad_hint");
    }
  }
  con.padStop = padStop;
  function showSpeed() {
    $("pad-speed-value").textContent = tr("console.speed_value", { v: (+$("pad-speed").value).toFixed(1) });
  }
  $("pad-speed").addEventListener("input", showSpeed);
  showSpeed();
  document.querySelectorAll(".pad-btn").forEach(function (b) {
    b.addEventListener("pointerdown", function (e) {
      e.preventDefault();
      if (b.setPointerCapture) { b.setPointerCapture(e.pointerId); }
      padGo(b.dataset.dir);
    });
    ["pointerup", "pointercancel", "lostpointercapture"].forEach(function (name) {
      b.addEventListener(name, function () { padEnd(b.dataset.dir); });
    });
    b.addEventListener("contextmenu", function (e) { e.preventDefault(); });
  });
  var KEYS = { ArrowUp: "forward", KeyW: "forward", ArrowDown: "backward", KeyS: "backward",
               ArrowLeft: "left", KeyA: "left", ArrowRight: "right", KeyD: "right" };
  var pad = $("pad");
  pad.addEventListener("keydown", function (e) {
    var dir = KEYS[e.code];
    if (!dir) { return; }
    e.preventDefault();
    if (!e.repeat) { padGo(dir); }
  });
  pad.addEventListener("keyup", function (e) { var dir = KEYS[e.code]; if (dir) { e.preventDefault(); padEnd(dir); } });
  pad.addEventListener("blur", padStop);
  window.addEventListener("blur", padStop);
  document.addEventListener("visibilitychange", function () { if (document.hidden) { padStop(); } });
  window.addEventListener("pagehide", function () {
    if (timer && navigator.sendBeacon) { navigator.sendBeacon("/api/teleop/release"); }
    padStop();
  });

  if (hasRobot) { estopLoop(); } else {
    ["pad-forward", "pad-backward", "pad-left", "pad-right"].forEach(function (id) { $(id).disabled = true; });
    $("pad-info").textContent = tr("console.no_robot");
  }
})();
