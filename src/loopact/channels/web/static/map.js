// loopact web console: the live map (issue 42 item 1; SPEC F2, D3). The navigation map
// (/api/map, /api/map.png), the places, the geofence, and live (/api/map/live) the robot's
// pose and heading, its trajectory, the planned path and the located objects. Wheel or +/-
// to zoom, drag to pan; a click on a place or a point sends "go there" as an instruction.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var tr = window.loopactTexts.tr;
  var lang = window.loopactTexts.lang;
  var con = window.loopactConsole;
  var canvas = $("map");
  var LIVE_MS = 250;
  var TRAIL_MAX = 2000;
  var PICK_PX = 14;  // a click this close to a place picks the place

  var m = {
    info: null, img: null, live: null, trail: [], view: null, drawn: null,
    toCanvas: toCanvas, toWorld: toWorld
  };
  con.map = m;  // read by the browser tests
  if (document.body.dataset.robot !== "1") {
    $("map-info").textContent = tr("console.no_robot");
    return;
  }

  function size() {
    var r = canvas.getBoundingClientRect();
    var dpr = window.devicePixelRatio || 1;
    var w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    return { w: r.width, h: r.height, dpr: dpr };
  }
  function toCanvas(x, y) {  // world metres -> CSS pixels in the canvas
    var s = size(), v = m.view;
    return [(x - v.cx) * v.scale + s.w / 2, s.h / 2 - (y - v.cy) * v.scale];
  }
  function toWorld(px, py) {
    var s = size(), v = m.view;
    return [(px - s.w / 2) / v.scale + v.cx, (s.h / 2 - py) / v.scale + v.cy];
  }
  function bounds() {
    var xs = [], ys = [];
    var g = m.info && m.info.map;
    if (g) {
      xs.push(g.origin_x_m, g.origin_x_m + g.width * g.resolution_m);
      ys.push(g.origin_y_m, g.origin_y_m + g.height * g.resolution_m);
    } else if (m.info) {
      m.info.fence.concat(m.info.places.map(function (p) { return [p.x_m, p.y_m]; }))
        .forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });
    }
    var pose = m.live && m.live.pose;
    if (pose) { xs.push(pose.x_m - 1, pose.x_m + 1); ys.push(pose.y_m - 1, pose.y_m + 1); }
    if (!xs.length) { return [-3, -3, 3, 3]; }
    return [Math.min.apply(null, xs), Math.min.apply(null, ys), Math.max.apply(null, xs), Math.max.apply(null, ys)];
  }
  function fit() {
    var b = bounds(), s = size();
    if (s.w < 10 || s.h < 10) { m.view = null; return; }  // a hidden tab: fit when shown
    var scale = Math.min(s.w / Math.max(0.5, b[2] - b[0]), s.h / Math.max(0.5, b[3] - b[1])) * 0.88;
    m.view = { cx: (b[0] + b[2]) / 2, cy: (b[1] + b[3]) / 2, scale: scale };
    draw();
  }
  function placeName(p) { return lang === "zh" && p.zh ? p.zh : p.en; }

  function line(ctx, pts, colour, width, dash) {
    if (!pts || pts.length < 2) { return; }
    ctx.beginPath();
    pts.forEach(function (p, i) { var c = toCanvas(p[0], p[1]); if (i) { ctx.lineTo(c[0], c[1]); } else { ctx.moveTo(c[0], c[1]); } });
    ctx.strokeStyle = colour; ctx.lineWidth = width; ctx.setLineDash(dash || []);
    ctx.stroke(); ctx.setLineDash([]);
  }
  function draw() {
    if (!m.view) { return; }
    var s = size(), ctx = canvas.getContext("2d");
    ctx.setTransform(s.dpr, 0, 0, s.dpr, 0, 0);
    ctx.fillStyle = "#dde3e9";
    ctx.fillRect(0, 0, s.w, s.h);
    var drawn = { robot: null, image: null, places: {} };
    var g = m.info && m.info.map;
    if (g && m.img && m.img.complete && m.img.naturalWidth) {
      var tl = toCanvas(g.origin_x_m, g.origin_y_m + g.height * g.resolution_m);
      var w = g.width * g.resolution_m * m.view.scale, h = g.height * g.resolution_m * m.view.scale;
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(m.img, tl[0], tl[1], w, h);
      drawn.image = { left: tl[0], top: tl[1], width: w, height: h, cells_x: g.width, cells_y: g.height };
    }
    if (m.info && m.info.fence.length > 2) { line(ctx, m.info.fence.concat([m.info.fence[0]]), "#d9822b", 2, [6, 4]); }
    line(ctx, m.trail, "#2f6fd1", 2);
    var live = m.live || {};
    line(ctx, live.path, "#2e8540", 2.5, [4, 3]);
    ctx.font = "12px system-ui, sans-serif";
    (m.info ? m.info.places : []).forEach(function (p) {
      var c = toCanvas(p.x_m, p.y_m);
      drawn.places[p.key] = c;
      ctx.fillStyle = "#1d2b3a";
      ctx.beginPath(); ctx.arc(c[0], c[1], 4, 0, 2 * Math.PI); ctx.fill();
      var label = placeName(p);
      ctx.fillStyle = "rgba(255,255,255,.8)";
      ctx.fillRect(c[0] + 6, c[1] - 9, ctx.measureText(label).width + 6, 16);
      ctx.fillStyle = "#1d2b3a";
      ctx.fillText(label, c[0] + 9, c[1] + 3);
    });
    (live.objects || []).forEach(function (o) {
      var c = toCanvas(o.x_m, o.y_m);
      ctx.fillStyle = "#8e44ad";
      ctx.fillRect(c[0] - 4, c[1] - 4, 8, 8);
    });
    var pose = live.pose;
    if (pose) {
      var c = toCanvas(pose.x_m, pose.y_m);
      var r = Math.max(5, 0.17 * m.view.scale);
      ctx.fillStyle = "#d9302b";
      ctx.beginPath(); ctx.arc(c[0], c[1], r, 0, 2 * Math.PI); ctx.fill();
      ctx.strokeStyle = "#fff"; ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(c[0], c[1]);
      ctx.lineTo(c[0] + Math.cos(pose.yaw_rad) * r * 1.8, c[1] - Math.sin(pose.yaw_rad) * r * 1.8);
      ctx.stroke();
      drawn.robot = c;
    }
    m.drawn = drawn;
  }

  function load() {
    fetch("/api/map", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (info) {
        if (!info) { $("map-info").textContent = tr("console.no_map"); return; }
        m.info = info;
        if (info.map) {
          var img = new Image();
          img.onload = draw;
          img.src = info.map.png;
          m.img = img;
        }
        fit();
      })
      .catch(function () { setTimeout(load, 2000); });
  }
  function liveLoop() {
    if (document.hidden) { setTimeout(liveLoop, 1000); return; }
    var asked = Date.now();
    fetch("/api/map/live", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (live) {
        if (!live) { return; }
        m.live = live;
        m.liveWindow = [asked, Date.now()];  // the pose was read between these (wall ms)
        var p = live.pose;
        if (p) {
          var last = m.trail[m.trail.length - 1];
          if (!last || Math.hypot(last[0] - p.x_m, last[1] - p.y_m) > 0.02) { m.trail.push([p.x_m, p.y_m]); }
          if (m.trail.length > TRAIL_MAX) { m.trail.shift(); }
          con.showPose(p);
        }
        m.updates = (m.updates || 0) + 1;
        if (!m.view) { fit(); } else { draw(); }
      })
      .catch(function () { /* the connection badge says it */ })
      .then(function () { setTimeout(liveLoop, LIVE_MS); });
  }

  // ---- zoom, pan, click to go ------------------------------------------------------------
  function zoom(f, px, py) {
    if (!m.view) { return; }
    var s = size();
    var at = toWorld(px === undefined ? s.w / 2 : px, py === undefined ? s.h / 2 : py);
    m.moved = true;
    m.view.scale = Math.max(2, Math.min(2000, m.view.scale * f));
    var now = toWorld(px === undefined ? s.w / 2 : px, py === undefined ? s.h / 2 : py);
    m.view.cx += at[0] - now[0];
    m.view.cy += at[1] - now[1];
    draw();
  }
  $("zoom-in").addEventListener("click", function () { zoom(1.4); });
  $("zoom-out").addEventListener("click", function () { zoom(1 / 1.4); });
  $("zoom-fit").addEventListener("click", function () { m.moved = false; fit(); });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = canvas.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  var drag = null;
  canvas.addEventListener("pointerdown", function (e) {
    drag = { x: e.clientX, y: e.clientY, moved: 0 };
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener("pointermove", function (e) {
    if (!drag || !m.view) { return; }
    var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.moved += Math.abs(dx) + Math.abs(dy);
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.moved > 5) {
      m.moved = true;
      m.view.cx -= dx / m.view.scale;
      m.view.cy += dy / m.view.scale;
      draw();
    }
  });
  canvas.addEventListener("pointerup", function (e) {
    var d = drag;
    drag = null;
    if (!d || d.moved > 5 || !m.view) { return; }
    var r = canvas.getBoundingClientRect();
    goTo(e.clientX - r.left, e.clientY - r.top);
  });
  function goTo(px, py) {
    var best = null, bestD = PICK_PX;
    (m.info ? m.info.places : []).forEach(function (p) {
      var c = toCanvas(p.x_m, p.y_m), d = Math.hypot(c[0] - px, c[1] - py);
      if (d <= bestD) { best = p; bestD = d; }
    });
    var text;
    if (best) { text = tr("console.go_place", { place: placeName(best) }); }
    else {
      var w = toWorld(px, py);
      text = tr("console.go_point", { x: w[0].toFixed(2), y: w[1].toFixed(2) });
    }
    con.submit(text).catch(function (e) { con.notice(e.message, true); });
  }
  m.goTo = goTo;
  // where a navigation call goes, for its progress figure: a pose, or a place by any name
  con.goalOf = function (args) {
    if (typeof args.x_m === "number" && typeof args.y_m === "number") { return [args.x_m, args.y_m]; }
    var want = String(args.waypoint || "").toLowerCase().replace(/^the /, "");
    var found = (m.info ? m.info.places : []).filter(function (p) {
      return [p.key, p.en, p.zh].some(function (n) { return n && n.toLowerCase() === want; });
    })[0];
    return found ? [found.x_m, found.y_m] : null;
  };
  // a new size refits the map until the operator zooms or pans it themselves
  window.addEventListener("resize", function () { if (m.view && m.moved) { draw(); } else { fit(); } });

  load();
  liveLoop();
})();
