// The explorer: replays the engine runs recorded in window.CSD_EXPLORER (csd_lib/teach/explorer_data.py)
// and draws EWIF from the closed forms in ewif.js. Every number shown is read from the recording.
(function () {
  "use strict";
  var D = window.CSD_EXPLORER, $ = function (id) { return document.getElementById(id); };
  if (!D || D.format !== 1) { $("csd-ex-note").textContent = "The recorded runs are missing or of another format."; return; }

  function fill(sel, values, label) {
    values.forEach(function (v, i) {
      var o = document.createElement("option"); o.value = String(i); o.textContent = label ? label(v, i) : String(v);
      sel.appendChild(o);
    });
  }
  fill($("csd-ex-method"), D.axes.methods);
  $("csd-ex-method").value = String(D.axes.methods.indexOf("csd"));
  fill($("csd-ex-prompt"), D.prompts, function (p, i) { return (i + 1) + ": " + p.tokens.slice(0, 6).join("").trim() + "..."; });
  fill($("csd-ex-k12"), D.axes.k12);
  fill($("csd-ex-k22"), D.axes.k22);
  if (D.axes.k22.length < 2) $("csd-ex-k22").parentNode.style.display = "none";
  if (D.axes.mag_rules.length < 2) $("csd-ex-rule").parentNode.style.display = "none";
  [["csd-ex-k11", D.axes.k11], ["csd-ex-len", D.axes.lenience]].forEach(function (p) {
    var r = $(p[0]); r.min = 0; r.max = p[1].length - 1; r.step = 1; r.value = 0;
  });
  function closest(values, want) {
    var best = 0; values.forEach(function (v, i) { if (Math.abs(v - want) < Math.abs(values[best] - want)) best = i; });
    return best;
  }
  $("csd-ex-k11").value = closest(D.axes.k11, D.default_k[0][0]);
  $("csd-ex-k12").value = String(closest(D.axes.k12, D.default_k[0][1]));
  $("csd-ex-k22").value = String(closest(D.axes.k22, D.default_k[1][1]));
  $("csd-ex-len").value = closest(D.axes.lenience, D.default_lenience);

  function setting() {
    var method = D.axes.methods[+$("csd-ex-method").value];
    var k11 = D.axes.k11[+$("csd-ex-k11").value], k12 = D.axes.k12[+$("csd-ex-k12").value];
    var k22 = D.axes.k22[+$("csd-ex-k22").value], l = D.axes.lenience[+$("csd-ex-len").value];
    var rule = l === 1 ? "mag-strict" : $("csd-ex-rule").value;  // at l = 1 both rules are the strict run
    var key = method !== "csd" ? method : "csd|" + k11 + "," + k12 + "," + k22 + "|l" + l + "|" + rule;
    return {method: method, k11: k11, k12: k12, k22: k22, l: l, key: key};
  }

  function traceHtml(prompt, run) {
    return prompt.tokens.map(function (t, i) {
      var lv = D.levels[+run.prov[i]], s = document.createElement("span");
      s.className = "csd-tok"; s.dataset.level = lv.name; s.setAttribute("style", lv.css);
      s.title = "token " + (i + 1) + ": " + lv.name; s.textContent = t;
      return s.outerHTML;
    }).join("");
  }

  function statsHtml(run) {
    var rows = [["target calls", run.target_calls], ["tokens per target call", run.tokens_per_target_call.toFixed(2)],
      ["forward calls", Object.keys(run.calls).map(function (k) { return k + " " + run.calls[k]; }).join(", ")],
      ["SWI, model size", run.swi_model_size.toFixed(2) + "x"], ["SWI, previous work", run.swi_previous_work.toFixed(2) + "x"]];
    return rows.map(function (r) { return "<tr><th>" + r[0] + "</th><td>" + r[1] + "</td></tr>"; }).join("");
  }

  function accFigure(run) {
    var pairs = Object.keys(run.acceptance), dashes = ["solid", "dash", "dot", "dashdot", "longdash"];
    var data = pairs.map(function (pair, i) {
      var ys = run.acceptance[pair];
      var proposer = pair.split("<-")[1], lv = D.levels.filter(function (l) { return l.name === proposer; })[0];
      return {x: ys.map(function (_, j) { return j + 1; }), y: ys, name: pair, mode: "lines+markers", type: "scatter",
        line: {dash: dashes[i % dashes.length], color: lv ? lv.color : undefined},
        customdata: run.reached[pair], hovertemplate: "%{y:.2f} of %{customdata} reached<extra>" + pair + "</extra>"};
    });
    var layout = {title: {text: "acceptance per position (this run)"}, height: 300, margin: {l: 50, r: 10, t: 40, b: 40},
      xaxis: {title: {text: "position in the reviewed block"}, dtick: 1}, yaxis: {title: {text: "P(accept | earlier accepted)"}, range: [0, 1.05]},
      legend: {orientation: "h", y: -0.3}};
    Plotly.react("csd-ex-acc", data, layout, {responsive: true, displaylogo: false});
  }

  function update() {
    var s = setting(), p = +$("csd-ex-prompt").value, prompt = D.prompts[p], rows = D.settings[s.key];
    document.querySelectorAll(".csd-cascade").forEach(function (el) { el.disabled = s.method !== "csd"; });
    $("csd-ex-rule").disabled = s.method !== "csd" || s.l === 1;
    $("csd-ex-k11-val").textContent = s.k11; $("csd-ex-len-val").textContent = s.l;
    $("csd-ex-prompt-text").textContent = "prompt: " + prompt.prompt;
    if (!rows) { $("csd-ex-title").textContent = "not recorded: " + s.key; return; }
    var run = rows[p];
    $("csd-ex-k").textContent = s.method === "csd" ? "K = [[" + s.k11 + ", " + s.k12 + ", " + D.default_k[0][2] + "], [0, " + s.k22 +
      ", " + D.default_k[1][2] + "], ...] (the family's default with k11, k12, k22 set), lenience " + s.l : "method " + s.method + " at its defaults";
    $("csd-ex-title").textContent = s.method + ": " + prompt.tokens.length + " tokens, " + run.target_calls + " target calls";
    $("csd-ex-trace").innerHTML = traceHtml(prompt, run);
    $("csd-ex-trace").dataset.key = s.key;
    var used = {}; for (var i = 0; i < run.prov.length; i++) used[run.prov[i]] = 1;
    $("csd-ex-legend").innerHTML = D.levels.filter(function (_, i) { return used[i]; }).map(function (l) {
      return '<span class="csd-tok" style="' + l.css + '">' + l.name + "</span>"; }).join(" ");
    $("csd-ex-stats").innerHTML = statsHtml(run);
    accFigure(run);
  }

  function ewif() {
    var a = +$("csd-ew-alpha").value, c = Math.pow(10, +$("csd-ew-c").value), ap = +$("csd-ew-ap").value, ks = [], sd = [], vc = [];
    for (var k = 1; k <= 20; k++) { ks.push(k); sd.push(CsdEwif.ewifSd(a, k, c)); vc.push(CsdEwif.ewifVc(a, ap, 10, k, c, 0)); }
    $("csd-ew-alpha-val").textContent = a.toFixed(2); $("csd-ew-c-val").textContent = c.toFixed(3); $("csd-ew-ap-val").textContent = ap.toFixed(2);
    var best = sd.indexOf(Math.max.apply(null, sd));
    $("csd-ew-best").textContent = "best k for SD: " + ks[best] + " (EWIF " + sd[best].toFixed(2) + "); the cascade's best n: " +
      ks[vc.indexOf(Math.max.apply(null, vc))] + " (EWIF " + Math.max.apply(null, vc).toFixed(2) + ")";
    Plotly.react("csd-ew-fig", [
      {x: ks, y: sd, name: "SD (Cor 4.2)", mode: "lines+markers", line: {color: "#0072b2"}},
      {x: ks, y: vc, name: "vertical cascade with a free drafter (Thm 4.3, k=10)", mode: "lines+markers",
        line: {color: "#e69f00", dash: "dash"}, marker: {symbol: "square"}}],
      {title: {text: "EWIF: alpha=" + a.toFixed(2) + ", c=" + c.toFixed(3) + ", alpha'=" + ap.toFixed(2)}, height: 360,
        xaxis: {title: {text: "k (SD) or n (cascade rounds)"}}, yaxis: {title: {text: "EWIF"}},
        shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {dash: "dot", color: "#000"}}],
        legend: {orientation: "h", y: -0.25}, margin: {l: 50, r: 10, t: 40, b: 40}}, {responsive: true, displaylogo: false});
  }

  document.querySelectorAll(".csd-ex-panel select, .csd-ex-panel input").forEach(function (el) { el.addEventListener("input", update); });
  document.querySelectorAll(".csd-ewif input").forEach(function (el) { el.addEventListener("input", ewif); });
  update(); ewif();
})();
