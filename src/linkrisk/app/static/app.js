// linkrisk web app. Every user-supplied string (file and column names, category values,
// messages) reaches the page as text (textContent), never as HTML.
"use strict";
(function () {
  // the session is this tab's: issued with the page, kept in memory only (not a cookie)
  const sid = document.querySelector('meta[name="linkrisk-session"]').content;
  const state = { meta: null, schema: null, edits: { kinds: {}, qi: null, ids: null },
                  data: {}, points: [] };

  // ------------------------------------------------------------------ helpers
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "checked" || k === "selected" || k === "disabled") el[k] = !!v;
      else if (k === "value") el.value = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  const $ = (id) => document.getElementById(id);
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }
  function flash(msg, error) {
    const f = $("flash");
    f.textContent = msg;
    f.className = error ? "error" : "";
    f.hidden = !msg;
  }
  async function api(method, path, body, extra) {
    const headers = { "X-Linkrisk-Session": sid };
    let payload = body;
    if (body !== undefined && !(body instanceof Blob)) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
    Object.assign(headers, extra || {});
    const r = await fetch(path, { method, headers, body: payload, credentials: "same-origin" });
    let data = null;
    try { data = await r.json(); } catch (e) { data = { error: `HTTP ${r.status}` }; }
    if (!r.ok) throw new Error((data && data.error) || `HTTP ${r.status}`);
    return data;
  }
  function fileUrl(job, name) {
    return `/api/jobs/${encodeURIComponent(job)}/files/${encodeURIComponent(name)}?s=${encodeURIComponent(sid)}`;
  }
  const pct = (x) => (x === null || x === undefined ? "—" : `${(100 * x).toFixed(2)} %`);
  const fmt = (x, d = 2) => (x === null || x === undefined ? "—" :
    typeof x === "number" ? x.toLocaleString("en", { maximumFractionDigits: d }) : String(x));

  // ------------------------------------------------------------------ jobs
  const watchers = {};
  function renderJob(box, job, onCancel) {
    clear(box);
    if (!job) return;
    const kids = [h("strong", {}, job.label), " ", h("span", { class: "state", "data-state": job.state }, job.state)];
    if (job.state === "queued" && job.position) kids.push(` — position ${job.position} in the queue`);
    if (job.state === "running" || job.state === "queued") {
      kids.push(" ", h("button", { type: "button", class: "cancel", onclick: onCancel }, "cancel"));
    }
    if (job.seconds) kids.push(h("span", { class: "sub" }, ` ${job.seconds.toFixed(1)} s`));
    box.append(h("div", {}, kids));
    const p = job.progress || {};
    if (job.state !== "running") { if (job.state === "error") box.append(h("div", { class: "error" }, `error: ${job.error}`)); return; }
    if (p.stage) box.append(h("div", { class: "sub" }, p.stage));
    if (p.attacks) {
      const t = h("table", { class: "progress" });
      for (const [name, [done, total]] of Object.entries(p.attacks)) {
        const frac = total ? done / total : (job.state === "done" ? 1 : 0);
        t.append(h("tr", {}, h("td", {}, name),
          h("td", {}, h("div", { class: "bar" }, h("div", { style: `width:${(100 * frac).toFixed(0)}%` }))),
          h("td", { class: "num" }, total ? `${done.toLocaleString()}/${total.toLocaleString()}` : "")));
      }
      box.append(t);
    }
    if (p.total) {
      box.append(h("div", {}, h("div", { class: "bar" }, h("div", { style: `width:${(100 * p.done / p.total).toFixed(0)}%` })),
        ` ${p.done}/${p.total} replications`));
    }
  }
  function watch(job, box, onDone) {
    const id = job.id;
    const cancel = async () => {
      try { renderJob(box, await api("POST", `/api/jobs/${id}/cancel`, {}), null); }
      catch (e) { flash(e.message, true); }
      refreshJobs();
    };
    renderJob(box, job, cancel);
    clearTimeout(watchers[id]);
    const tick = async () => {
      let j;
      try { j = await api("GET", `/api/jobs/${id}`); } catch (e) { flash(e.message, true); return; }
      renderJob(box, j, cancel);
      if (j.state === "queued" || j.state === "running") {
        watchers[id] = setTimeout(tick, 250);
      } else {
        refreshJobs();
        if (j.state === "done" && onDone) onDone(j);
      }
    };
    watchers[id] = setTimeout(tick, 150);
    refreshJobs();
  }
  async function refreshJobs() {
    let jobs;
    try { jobs = await api("GET", "/api/jobs"); } catch (e) { return; }
    const box = clear($("jobs"));
    if (!jobs.length) { box.append(h("p", { class: "sub" }, "no job yet")); return; }
    const t = h("table", { id: "jobs-table" }, h("tr", {}, h("th", {}, "job"), h("th", {}, "state"), h("th", {}, "seconds")));
    for (const j of jobs.slice().reverse()) {
      t.append(h("tr", { "data-job": j.id }, h("td", {}, j.label),
        h("td", {}, j.state + (j.position ? ` (queue position ${j.position})` : "") + (j.error ? `: ${j.error}` : "")),
        h("td", { class: "num" }, j.seconds.toFixed(1))));
    }
    box.append(t);
  }

  // ------------------------------------------------------------------ tabs
  function showTab(name) {
    for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.tab === name);
    for (const p of document.querySelectorAll(".panel")) p.hidden = p.id !== `panel-${name}`;
    if (name === "choose" && state.points.length) Plotly.Plots.resize($("map"));
  }
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showTab(b.dataset.tab));

  // ------------------------------------------------------------------ data
  function setStatus(role, text, cls) {
    const s = $(`status-${role}`);
    s.textContent = text;
    s.className = `status ${cls || ""}`;
  }
  function loaded(role, job) {
    const r = job.result;
    setStatus(role, `${job.label.replace(/^read /, "")}: ${r.rows.toLocaleString()} records × ${r.columns.length} columns`, "ok");
    state.data[role] = r;
    for (const w of r.warnings || []) $(`status-${role}`).append(h("div", { class: "warning" }, `warning: ${w}`));
    if (role === "original") { state.edits = { kinds: {}, qi: null, ids: null }; }
    inspect();
  }
  function startLoad(role, job) {
    setStatus(role, `reading ${job.label.replace(/^read /, "")} …`);
    watch(job, $(`status-${role}`), (j) => loaded(role, j));
  }
  async function upload(role, file) {
    flash("");
    if (file.size > state.meta.max_upload) {
      flash(`${file.name} is larger than the upload limit of ${state.meta.max_upload_text}: open it by path instead (a file on this machine is read in place), or start the server with a larger --max-upload`, true);
      return;
    }
    try {
      const job = await api("PUT", `/api/data/${role}/upload`, file, { "X-Filename": encodeURIComponent(file.name) });
      startLoad(role, job);
    } catch (e) { flash(e.message, true); }
  }
  for (const role of ["original", "release"]) {
    const drop = $(`drop-${role}`);
    drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => {
      e.preventDefault(); drop.classList.remove("over");
      if (e.dataTransfer.files.length) upload(role, e.dataTransfer.files[0]);
    });
    $(`file-${role}`).addEventListener("change", (e) => { if (e.target.files.length) upload(role, e.target.files[0]); });
  }
  for (const f of document.querySelectorAll(".path-form, .dataset-form")) {
    f.addEventListener("submit", async (e) => {
      e.preventDefault(); flash("");
      const role = f.dataset.role;
      const body = f.classList.contains("path-form") ? { path: $(`path-${role}`).value } : { dataset: $(`dataset-${role}`).value };
      try { startLoad(role, await api("POST", `/api/data/${role}`, body)); } catch (err) { flash(err.message, true); }
    });
  }

  // ------------------------------------------------------------------ schema
  let inspectTimer = null;
  function schemaArgs() {
    const e = state.edits;
    return { qi: e.qi, ids: e.ids, kinds: qiKinds() };
  }
  function qiKinds() {
    // only the kinds the user changed, for the QIs (as --kinds on the command line)
    const out = {};
    const qis = state.edits.qi || (state.schema ? state.schema.qi : []);
    for (const [c, k] of Object.entries(state.edits.kinds)) if (!state.edits.qi || qis.includes(c)) out[c] = k;
    return out;
  }
  function inspect() {
    clearTimeout(inspectTimer);
    inspectTimer = setTimeout(async () => {
      if (!state.data.original) return;
      try {
        const job = await api("POST", "/api/inspect", schemaArgs());
        state.inspecting = job.id;
        watch(job, $("schema-general"), (j) => {
          if (j.id !== state.inspecting) return;  // a newer read of the schema is on its way
          state.schema = j.result; renderSchema(); clear($("schema-general")); renderGeneral();
        });
      } catch (e) { flash(e.message, true); }
    }, 120);
  }
  function renderGeneral() {
    const g = clear($("schema-general"));
    const s = state.schema;
    if (!s) return;
    if (s.error) g.append(h("div", { class: "error" }, `error: ${s.error}`));
    for (const w of s.warnings) g.append(h("div", { class: "warning" }, `warning: ${w}`));
  }
  function renderSchema() {
    const s = state.schema;
    const box = clear($("schema"));
    const t = h("table", { id: "schema-table" }, h("tr", {},
      ["column", "type", "kind", "QI", "id", "weight", "household", "distinct", "examples", "warnings"].map((x) => h("th", {}, x))));
    const hh = $("household").value;
    for (const c of s.columns) {
      const kind = h("select", { class: "kind", "data-col": c.name, onchange: (e) => {
        if (e.target.value === c.inferred) delete state.edits.kinds[c.name]; else state.edits.kinds[c.name] = e.target.value;
        inspect();
      } }, ["numeric", "ordinal", "nominal"].map((k) => h("option", { value: k, selected: k === c.kind }, k)));
      const qi = h("input", { type: "checkbox", class: "qi", "data-col": c.name, checked: c.qi, disabled: !c.in_release, onchange: () => {
        state.edits.qi = [...document.querySelectorAll("#schema-table input.qi")].filter((x) => x.checked).map((x) => x.dataset.col);
        inspect();
      } });
      const id = h("input", { type: "checkbox", class: "id", "data-col": c.name, checked: state.edits.ids ? state.edits.ids.includes(c.name) : false, onchange: () => {
        const ids = [...document.querySelectorAll("#schema-table input.id")].filter((x) => x.checked).map((x) => x.dataset.col);
        state.edits.ids = ids.length ? ids : null;
        inspect();
      } });
      const weight = h("input", { type: "radio", name: "weight", class: "weight", "data-col": c.name, checked: $("weights").value === c.name, onchange: () => { $("weights").value = c.name; } });
      const house = h("input", { type: "radio", name: "household", class: "household", "data-col": c.name, checked: hh === c.name, onchange: () => { $("household").value = c.name; } });
      const notes = h("td", { class: "notes" });
      if (c.id) notes.append(h("div", { class: "sub" }, "id-like (unique per record or named like an identifier)"));
      if (c.weight) notes.append(h("div", { class: "sub" }, "weight-like (named like a survey weight)"));
      if (!c.in_release) notes.append(h("div", { class: "sub" }, "not in the release"));
      for (const w of c.warnings) notes.append(h("div", { class: "warning" }, `warning: ${w}`));
      t.append(h("tr", { "data-col": c.name }, h("td", { class: "colname" }, c.name), h("td", {}, c.dtype), h("td", {}, kind),
        h("td", {}, qi), h("td", {}, id), h("td", {}, weight), h("td", {}, house),
        h("td", { class: "num" }, c.distinct.toLocaleString()), h("td", { class: "examples" }, c.examples.join(" · ")), notes));
    }
    box.append(h("p", { class: "sub" }, `${s.rows.toLocaleString()} records` + (s.release_rows !== null ? `; release ${s.release_rows.toLocaleString()} records; QIs: ${s.qi.join(", ")}` : "; open the release to see the QIs and the warnings")));
    box.append(t);
    for (const sel of ["weights", "household"]) {
      const el = $(sel);
      const cur = el.value;
      clear(el).append(h("option", { value: "" }, "—"), ...s.columns.map((c) => h("option", { value: c.name, selected: c.name === cur }, c.name)));
    }
    updateCommand();
  }

  // ------------------------------------------------------------------ assess
  function assessBody(point) {
    const attacks = $("attacks-all").checked ? null :
      [...document.querySelectorAll("#attack-list input:checked")].map((x) => x.value);
    return { qi: state.edits.qi, ids: state.edits.ids, kinds: qiKinds(), attacks,
      rank_swap_p: $("rank-swap-p").value, max_risk: $("max-risk").value, seed: $("assess-seed").value,
      weights: $("weights").value, household: $("household").value, suda_max_size: $("suda").value, point };
  }
  function updateCommand() {
    const b = assessBody();
    const parts = ["linkrisk assess ORIGINAL RELEASE"];
    if (b.attacks) parts.push(`--method ${b.attacks.join(",")}`);
    if (b.qi) parts.push(`--qi ${b.qi.join(",")}`);
    if (b.ids) parts.push(`--ids ${b.ids.join(",")}`);
    const k = Object.entries(b.kinds).map(([c, v]) => `${c}=${v}`);
    if (k.length) parts.push(`--kinds ${k.join(",")}`);
    if (b.rank_swap_p) parts.push(`--rank-swap-p ${b.rank_swap_p}`);
    if (b.max_risk) parts.push(`--max-risk ${b.max_risk}%`);
    $("assess-command").textContent = `same as: ${parts.join(" ")}`;
  }
  $("assess-form").addEventListener("input", updateCommand);
  $("attacks-all").addEventListener("change", () => {
    for (const x of document.querySelectorAll("#attack-list input")) x.disabled = $("attacks-all").checked;
    updateCommand();
  });
  async function runAssess(point) {
    flash("");
    clear($("assess-result"));
    try {
      const job = await api("POST", "/api/assess", assessBody(point));
      showTab("assess");
      watch(job, $("assess-job"), (j) => renderAssessment(j));
    } catch (e) { flash(e.message, true); }
  }
  $("assess-form").addEventListener("submit", (e) => { e.preventDefault(); runAssess(null); });

  function table(columns, rows, id) {
    return h("table", { id }, h("tr", {}, columns.map((c) => h("th", {}, c))),
      rows.map((r) => h("tr", {}, r.map((v) => h("td", { class: typeof v === "number" ? "num" : "" }, typeof v === "number" ? fmt(v, 4) : v)))));
  }
  function renderAssessment(job) {
    const r = job.result;
    const box = clear($("assess-result"));
    const w = r.worst;
    const cls = r.exceeds === true ? "bad" : r.exceeds === false ? "ok" : "";
    box.append(h("div", { class: `verdict ${cls}`, id: "verdict" },
      h("div", {}, "Worst case: ", h("span", { class: "big", id: "worst-percent", "data-rate": String(w.rate) }, `${w.percent} %`),
        " of the records re-identified by ", h("strong", { id: "worst-attack" }, w.attack),
        ` (${fmt(w.correct_links)} of ${w.n.toLocaleString()}), ${w.attacker}.`),
      h("div", {}, `${r.certain.toLocaleString()} records are linked with certainty. Truth: ${r.truth}.`),
      r.max_risk !== null ? h("div", {}, r.exceeds ? `above the limit: worst case ${w.percent} % > ${r.max_risk} %` : `within the limit: worst case ${w.percent} % ≤ ${r.max_risk} %`) : null,
      r.verdict_notes.map((n) => h("div", { class: "warning" }, n)),
      h("div", { class: "sub" }, `QIs: ${r.qi.join(", ")} · ${r.seconds.toFixed(2)} s`)));
    box.append(h("div", { class: "downloads" }, "Download: ",
      h("a", { href: fileUrl(job.id, "report.html"), download: "report.html", id: "dl-report" }, "HTML report"),
      h("a", { href: fileUrl(job.id, "assessment.json"), download: "assessment.json", id: "dl-json" }, "JSON"),
      h("a", { href: fileUrl(job.id, "records.csv"), download: "records.csv", id: "dl-records" }, "per-record risk (CSV)")));
    for (const x of [...r.warnings, ...r.notes]) box.append(h("div", { class: "warning" }, `warning: ${x}`));
    for (const [k, why] of Object.entries(r.skipped)) box.append(h("div", { class: "sub" }, `not run ${k}: ${why}`));
    const charts = h("div", { class: "charts" }, h("div", { class: "chart", id: "chart-attacks" }), h("div", { class: "chart", id: "chart-records" }));
    box.append(charts);
    Plotly.newPlot("chart-attacks", [{ type: "bar", orientation: "h", y: r.attacks.map((a) => a.attack).reverse(),
      x: r.attacks.map((a) => 100 * a.rate).reverse(), hovertemplate: "%{y}: %{x:.2f} %<extra></extra>", marker: { color: "#1f5fbf" } }],
      { title: { text: "re-identified by each attack (%)" }, margin: { l: 110, r: 20, t: 40, b: 40 }, xaxis: { range: [0, 100] } },
      { displaylogo: false, responsive: true });
    const e = r.histogram.edges;
    Plotly.newPlot("chart-records", [{ type: "bar", x: r.histogram.counts.map((_, i) => (e[i] + e[i + 1]) / 2), y: r.histogram.counts,
      width: 0.045, hovertemplate: "risk %{x:.2f}: %{y} records<extra></extra>", marker: { color: "#b54708" } }],
      { title: { text: "per-record risk (best attack probability)" }, margin: { l: 50, r: 20, t: 40, b: 40 }, xaxis: { range: [0, 1] } },
      { displaylogo: false, responsive: true });
    box.append(h("h2", {}, "Attacks"));
    box.append(table(["attack", "re-identified", "correct links", "records", "seconds"],
      r.attacks.map((a) => [a.attack, pct(a.rate), a.correct_links, a.n, a.seconds]), "attacks-table"));
    const m = Object.entries(r.measures).filter(([, v]) => typeof v === "number");
    if (m.length) { box.append(h("h2", {}, "Measures")); box.append(table(["measure", "value"], m, "measures-table")); }
    if (r.frequency) {
      const f = r.frequency;
      box.append(h("h2", {}, "Frequency risk"), h("p", {}, `${fmt(f.sample_uniques)} sample uniques; expected re-identifications ${fmt(f.global_risk_ER)} (${fmt(f.global_risk_pct, 3)} %)`));
    }
    box.append(h("h2", {}, `Most exposed records (${r.records.rows.length} shown; all in the CSV)`));
    box.append(table(r.records.columns, r.records.rows, "records-table"));
  }

  // ------------------------------------------------------------------ mask (form from the registry)
  function paramInput(p, prefix) {
    const id = `${prefix}-${p.name}`;
    let input;
    if (p.choices.length) {
      input = h("select", { id, "data-param": p.name }, p.required ? null : h("option", { value: "" }, "(default)"),
        p.choices.map((c) => h("option", { value: c, selected: c === p.default }, c)));
    } else if (p.type === "bool") {
      input = h("select", { id, "data-param": p.name }, h("option", { value: "" }, "(default)"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    } else {
      input = h("input", { type: "text", id, "data-param": p.name, placeholder: p.required ? "required" : `default ${p.shown_default}`, required: p.required });
    }
    return h("div", { class: "param" }, h("label", { for: id }, `${p.name} (${p.shown_type})`), input, h("span", { class: "sub" }, p.help));
  }
  function renderMaskForm() {
    const m = state.meta.methods.find((x) => x.name === $("mask-method").value);
    $("mask-summary").textContent = `${m.summary}${m.deterministic ? " (deterministic)" : ""}`;
    clear($("mask-params")).append(...m.params.map((p) => paramInput(p, "mask-param")));
  }
  $("mask-method").addEventListener("change", renderMaskForm);
  $("mask-new-seed").addEventListener("click", () => { $("mask-seed").value = Math.floor(Math.random() * 2 ** 31); });
  $("mask-form").addEventListener("submit", async (e) => {
    e.preventDefault(); flash("");
    const params = {};
    for (const x of document.querySelectorAll("#mask-params [data-param]")) if (x.value !== "") params[x.dataset.param] = x.value;
    const body = { method: $("mask-method").value, params, seed: $("mask-seed").value, columns: $("mask-columns").value, format: $("mask-format").value,
      ids: state.edits.ids ? state.edits.ids.join(",") : null };
    clear($("mask-result"));
    try {
      const job = await api("POST", "/api/mask", body);
      watch(job, $("mask-job"), (j) => {
        const r = j.result;
        $("mask-seed").value = r.seed;
        const box = clear($("mask-result"));
        box.append(h("p", { id: "mask-done" }, `${r.records.toLocaleString()} records masked with ${body.method}, seed ${r.seed}.`));
        box.append(h("div", { class: "downloads" }, "Download: ",
          h("a", { href: fileUrl(j.id, r.files[0]), download: r.files[0], id: "dl-release" }, r.files[0]),
          h("a", { href: fileUrl(j.id, r.files[1]), download: r.files[1], id: "dl-sidecar" }, r.files[1])));
        box.append(h("button", { type: "button", id: "use-release", onclick: async () => {
          try { await api("POST", "/api/data/release/from-job", { job: j.id }); setStatus("release", `${r.name} (masked here): ${r.records.toLocaleString()} records`, "ok"); state.data.release = r; inspect(); flash("the masked file is now the release: assess it"); }
          catch (err) { flash(err.message, true); }
        } }, "use as the release"));
        for (const w of r.warnings) box.append(h("div", { class: "warning" }, `warning: ${w}`));
      });
    } catch (err) { flash(err.message, true); }
  });

  // ------------------------------------------------------------------ choose
  function renderGrids() {
    // one line per registered method: its grid as `linkrisk choose --method METHOD:GRID`
    // takes it (PARAM=VALUES[/PARAM=VALUES]), prefilled with choose's default grid
    const box = clear($("grids"));
    for (const m of state.meta.methods) {
      const grid = Object.entries(m.grid).map(([k, v]) => `${k}=${v}`).join("/");
      const needed = m.params.filter((p) => p.required && p.type !== "list" && p.type !== "object");
      const hint = (needed.length ? needed : m.params.slice(0, 1)).map((p) => `${p.name}=a,b,c`).join("/");
      box.append(h("div", { class: "grid-line" },
        h("label", { title: m.params.map((p) => `${p.name} (${p.shown_type}): ${p.help}`).join("\n") },
          h("input", { type: "checkbox", class: "grid-on", "data-method": m.name }), ` ${m.name}`),
        h("div", {}, h("input", { type: "text", class: "grid-values", "data-method": m.name, value: grid,
          placeholder: hint ? `${hint} or a..b` : "no parameter", size: 34 }),
          h("span", { class: "sub" }, ` ${m.summary}`))));
    }
  }
  $("choose-form").addEventListener("submit", async (e) => {
    e.preventDefault(); flash("");
    const methods = [];
    for (const c of document.querySelectorAll(".grid-on:checked")) {
      const v = document.querySelector(`.grid-values[data-method="${c.dataset.method}"]`);
      methods.push(v.value.trim() ? `${c.dataset.method}:${v.value.trim()}` : c.dataset.method);
    }
    const body = { methods, max_risk: $("choose-max-risk").value, replications: $("replications").value, seed: $("choose-seed").value,
      confidential: $("confidential").value, ordered: $("ordered").checked, qi: state.edits.qi };
    clear($("choose-result"));
    try {
      const job = await api("POST", "/api/choose", body);
      watch(job, $("choose-job"), renderChoice);
    } catch (err) { flash(err.message, true); }
  });
  function renderChoice(job) {
    const r = job.result;
    state.points = r.points;
    const box = clear($("choose-result"));
    box.append(h("div", { class: "verdict", id: "headline" }, r.headline));
    for (const x of r.reasons) box.append(h("div", { class: "sub" }, `– ${x}`));
    for (const x of r.notes) box.append(h("div", { class: "warning" }, `note: ${x}`));
    box.append(h("div", { class: "downloads" }, "Download: ", r.files.map((f) => h("a", { href: fileUrl(job.id, f), download: f, class: "dl-choose" }, f))));
    box.append(h("p", { class: "sub" }, "hover a point for its figures; click it to open its assessment"));
    box.append(h("div", { class: "chart", id: "map" }));
    const methods = [...new Set(r.points.map((p) => p.method))];
    const traces = methods.map((m) => {
      const ps = r.points.filter((p) => p.method === m);
      return { type: "scatter", mode: "markers+lines", name: m, x: ps.map((p) => p.IL), y: ps.map((p) => p.risk),
        customdata: ps.map((p) => p.index),
        text: ps.map((p) => `${p.point}<br>IL ${p.IL.toFixed(2)} %<br>worst-case risk ${p.risk.toFixed(2)} % (95 % high ${p.risk_hi.toFixed(2)} %, ${p.attack})<br>Score ${p.Score.toFixed(2)}`),
        hovertemplate: "%{text}<extra></extra>", marker: { size: 11 } };
    });
    const rec = r.points.find((p) => p.recommended);
    if (rec) traces.push({ type: "scatter", mode: "markers", name: "recommended", x: [rec.IL], y: [rec.risk], customdata: [rec.index],
      text: [`recommended: ${rec.point}`], hovertemplate: "%{text}<extra></extra>", marker: { size: 22, symbol: "star", color: "#067647", line: { width: 1, color: "#000" } } });
    const layout = { title: { text: "risk–utility map" }, xaxis: { title: { text: "information loss IL (%)" } }, yaxis: { title: { text: "worst-case re-identification (%)" } },
      margin: { l: 60, r: 20, t: 40, b: 50 }, hovermode: "closest" };
    if (r.max_risk !== null && r.max_risk !== undefined) layout.shapes = [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: r.max_risk, y1: r.max_risk, line: { dash: "dash", color: "#b42318" } }];
    Plotly.newPlot("map", traces, layout, { displaylogo: false, responsive: true })
      .then(() => { $("map").dataset.drawn = "1"; });
    $("map").on("plotly_click", (ev) => {
      const idx = ev.points[0].customdata;
      const p = r.points.find((x) => x.index === idx);
      if (!p) return;
      // a rank swap's p is known to the attacker: its rsrl attacks run, as in the sweep
      $("rank-swap-p").value = ["rank_swap", "rank_swap_pdist"].includes(p.method) ? p.params.p : "";
      runAssess({ label: p.point, method: p.method, params: p.params, seed: p.seed, columns: r.qi });
    });
    box.append(h("h2", {}, "Points"));
    box.append(table(["point", "IL %", "worst-case %", "95 % high", "attack", "Score", ""],
      r.points.map((p) => [p.point, p.IL, p.risk, p.risk_hi, p.attack, p.Score, p.recommended ? "← recommended" : (p.feasible ? "" : "over limit")]), "points-table"));
  }

  // ------------------------------------------------------------------ start
  async function start() {
    try { state.meta = await api("GET", "/api/meta"); } catch (e) { flash(e.message, true); return; }
    for (const role of ["original", "release"]) {
      $(`dataset-${role}`).append(...state.meta.datasets.map((d) => h("option", { value: d }, d)));
    }
    $("attack-list").append(...state.meta.attacks.map((a) => h("label", { title: a.summary }, h("input", { type: "checkbox", value: a.name, disabled: true, class: "attack" }), ` ${a.name}`)));
    $("mask-method").append(...state.meta.methods.map((m) => h("option", { value: m.name }, m.name)));
    $("mask-format").append(...state.meta.formats.map((f) => h("option", { value: f }, f)));
    $("mask-seed").value = Math.floor(Math.random() * 2 ** 31);
    renderMaskForm();
    renderGrids();
    updateCommand();
    await refreshJobs();
    document.body.dataset.ready = "1";
  }
  start();
})();
