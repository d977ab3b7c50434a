// loopact web console: settings page (SPEC F2). The API key is write-only.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var tr = window.loopactTexts.tr;
  // the reader's language, kept in a cookie the server reads (issue 42 item 6)
  var langCookie = (document.cookie.match(/(?:^|; )loopact_lang=([a-z]+)/) || [])[1] || "";
  $("f-language").value = langCookie;
  $("f-language").addEventListener("change", function () {
    var v = this.value;
    document.cookie = "loopact_lang=" + v + "; path=/; SameSite=Strict" +
      (v ? "; max-age=31536000" : "; max-age=0");
    location.reload();
  });
  function keyState(v) {  // "set" / "not set", never the key
    $("key-state").dataset.state = v;
    $("key-state").textContent = tr(v === "set" ? "console.key_set" : "console.key_not_set");
  }
  var FIELDS = ["provider", "model", "base_url", "robot_profile"];
  // The endpoint the current key belongs to: a new provider or base URL needs the key
  // typed again, or "keep the current key" ticked (issue 21).
  var loaded = { provider: "", base_url: "", key: "not set" };

  function fill(select, values, current) {
    select.textContent = "";
    values.forEach(function (v) {
      var o = document.createElement("option");
      o.value = v; o.textContent = v;
      select.appendChild(o);
    });
    if (current && values.indexOf(current) < 0) {
      var o = document.createElement("option");
      o.value = current; o.textContent = current;
      select.appendChild(o);
    }
    select.value = current || "";
  }
  function clearErrors() {
    document.querySelectorAll(".field-error").forEach(function (e) { e.textContent = ""; });
  }
  function endpointMoved() {
    return $("f-provider").value !== loaded.provider ||
      $("f-base_url").value.trim() !== loaded.base_url;
  }
  function updateKeep() {
    var offer = loaded.key === "set" && endpointMoved() && !$("f-api_key").value;
    $("keep-row").hidden = !offer;
    if (!offer) { $("f-keep_api_key").checked = false; }
  }
  function show(s) {
    fill($("f-provider"), s.providers, s.provider);
    fill($("f-robot_profile"), s.profiles, s.robot_profile);
    $("f-model").value = s.model || "";
    $("f-base_url").value = s.base_url || "";
    $("f-api_key").value = "";
    keyState(s.api_key);
    loaded = { provider: s.provider || "", base_url: s.base_url || "", key: s.api_key };
    updateKeep();
    if (s.editable === false) {
      $("apply").disabled = true;
      $("saved").textContent = tr("console.not_editable");
    }
  }
  function load() {
    fetch("/api/settings", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(show);
  }
  $("settings-form").addEventListener("submit", function (e) {
    e.preventDefault();
    clearErrors();
    $("saved").textContent = "";
    var body = {};
    FIELDS.forEach(function (f) { body[f] = $("f-" + f).value; });
    var key = $("f-api_key").value;
    if (key) { body.api_key = key; }
    body.keep_api_key = !$("keep-row").hidden && $("f-keep_api_key").checked;
    fetch("/api/settings", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (d) {
        if (r.ok) {
          $("f-api_key").value = "";
          keyState(d.settings.api_key);
          loaded = { provider: d.settings.provider, base_url: d.settings.base_url,
                     key: d.settings.api_key };
          updateKeep();
          $("saved").textContent = tr("console.saved");
          return;
        }
        var errors = d.errors || { form: d.detail || r.statusText };
        Object.keys(errors).forEach(function (k) {
          var slot = document.querySelector('.field-error[data-for="' + k + '"]') ||
            document.querySelector('.field-error[data-for="form"]');
          slot.textContent = k + ": " + errors[k];
        });
      });
    }).catch(function (err) { $("saved").textContent = err.message; });
  });
  ["f-provider", "f-base_url", "f-api_key"].forEach(function (id) {
    $(id).addEventListener("input", updateKeep);
    $(id).addEventListener("change", updateKeep);
  });
  load();
})();
