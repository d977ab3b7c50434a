// loopact web console: the page's texts from the one catalogue (SPEC F5; issue 42 item 6).
// The server puts the console.* templates of the page's language in <script id="texts">;
// tr(key, {name: value}) fills their {name} fields. Every text a script shows goes through it.
(function () {
  "use strict";
  var data = { lang: "en", texts: {} };
  try { data = JSON.parse(document.getElementById("texts").textContent); } catch (e) { /* English keys */ }
  function tr(key, params) {
    var s = data.texts[key];
    if (s === undefined) { s = key; }
    if (params) {
      Object.keys(params).forEach(function (k) { s = s.split("{" + k + "}").join(String(params[k])); });
    }
    return s;
  }
  window.loopactTexts = { lang: data.lang, tr: tr };
})();
