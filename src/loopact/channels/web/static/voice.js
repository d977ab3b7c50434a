// loopact web console: microphone and speaker over the console's WebSocket (issue 16).
// The microphone goes out as binary messages of 16 kHz mono s16le PCM; the robot's voice comes
// back the same way and is played in order. Push-to-talk: hold the button. Hands-free: tick
// the box; the server's voice activity detection ends each utterance. Plain JS, no build step.
(function () {
  "use strict";

  var RATE = 16000;
  var $ = function (id) { return document.getElementById(id); };
  var voice = {
    ctx: null, stream: null, node: null, source: null, on: false, mode: "ptt",
    sentBytes: 0, receivedBytes: 0, playing: [], nextTime: 0
  };
  window.loopactVoice = voice;  // read by the browser tests

  function ws() {
    var c = window.loopactConsole;
    return c && c.ws && c.ws.readyState === 1 ? c.ws : null;
  }
  function context() {
    if (!voice.ctx) {
      var AC = window.AudioContext || window.webkitAudioContext;
      voice.ctx = new AC({ sampleRate: RATE });
    }
    if (voice.ctx.state === "suspended") { voice.ctx.resume(); }
    return voice.ctx;
  }
  function say(text, isError) {
    var n = $("notice");
    n.textContent = text || "";
    n.className = "notice" + (isError ? " error" : "");
  }

  // ---- speaker ---------------------------------------------------------------------------
  voice.play = function (buffer) {
    var pcm = new Int16Array(buffer);
    if (!pcm.length) { return; }
    voice.receivedBytes += buffer.byteLength;
    var ctx = context();
    var audio = ctx.createBuffer(1, pcm.length, RATE);
    var data = audio.getChannelData(0);
    for (var i = 0; i < pcm.length; i++) { data[i] = pcm[i] / 32768; }
    var src = ctx.createBufferSource();
    src.buffer = audio;
    src.connect(ctx.destination);
    var at = Math.max(ctx.currentTime + 0.02, voice.nextTime);
    src.start(at);
    voice.nextTime = at + audio.duration;
    voice.playing.push(src);
    src.onended = function () {
      var k = voice.playing.indexOf(src);
      if (k >= 0) { voice.playing.splice(k, 1); }
    };
  };
  function silence() {  // barge-in or stop: drop what is still scheduled
    voice.playing.forEach(function (s) { try { s.stop(); } catch (e) { /* ended */ } });
    voice.playing = [];
    voice.nextTime = 0;
  }
  voice.onSpeechOut = function (ev) {
    if (ev.state === "paused" || ev.state === "stopped") { silence(); }
  };

  // ---- microphone ------------------------------------------------------------------------
  function send(obj) { var s = ws(); if (s) { s.send(JSON.stringify(obj)); } }
  function startCapture() {
    if (voice.stream) { return Promise.resolve(); }
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      return Promise.reject(new Error("this browser gives no microphone (needs https or localhost)"));
    }
    return navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true }
    }).then(function (stream) {
      var ctx = context();
      voice.stream = stream;
      voice.source = ctx.createMediaStreamSource(stream);
      voice.node = ctx.createScriptProcessor(1024, 1, 1);
      voice.node.onaudioprocess = function (e) {
        if (!voice.on) { return; }
        var s = ws();
        if (!s) { return; }
        var input = e.inputBuffer.getChannelData(0);
        var out = new Int16Array(input.length);
        for (var i = 0; i < input.length; i++) {
          var v = Math.max(-1, Math.min(1, input[i]));
          out[i] = v < 0 ? v * 32768 : v * 32767;
        }
        s.send(out.buffer);
        voice.sentBytes += out.byteLength;
      };
      voice.source.connect(voice.node);
      voice.node.connect(ctx.destination);  // a processor runs only when connected
    });
  }
  function micOn(mode) {
    return startCapture().then(function () {
      voice.mode = mode;
      voice.on = true;
      send({ type: "mic", state: "start", mode: mode });
      $("mic").classList.add("busy");
      say(mode === "handsfree" ? "listening (hands-free)" : "listening\u2026 release to send");
    }).catch(function (e) { say("microphone: " + e.message, true); });
  }
  function micOff() {
    if (!voice.on) { return; }
    voice.on = false;
    send({ type: "mic", state: "stop" });
    $("mic").classList.remove("busy");
    say("");
  }

  var mic = $("mic");
  var handsfree = $("handsfree");
  if (!mic || !handsfree) { return; }
  mic.addEventListener("pointerdown", function (e) {
    e.preventDefault();
    if (!handsfree.checked) { micOn("ptt"); }
  });
  ["pointerup", "pointerleave"].forEach(function (name) {
    mic.addEventListener(name, function () { if (!handsfree.checked) { micOff(); } });
  });
  handsfree.addEventListener("change", function () {
    if (handsfree.checked) { micOn("handsfree"); } else { micOff(); }
  });
})();
