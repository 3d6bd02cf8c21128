"use strict";
// The console's workflow view: a declared workflow's steps as a DAG (GET /v1/workflows),
// coloured by a run's record (GET /v1/workflows/NAME/runs/ID) or live from a run the
// console streams (POST /v1/workflows/NAME/runs). The drawing code (dagLayout, drawDAG,
// groupSessions) is pure or touches only the box it is given; the panel's controls are
// in the second half.

// dagLayout lays the steps out in layers (no DOM): a step's column is the length of the
// longest path of dependencies that leads to it, so every edge points right. An edge
// that spans columns passes through a slot of its own in each column between (a "dummy"
// row no box takes), so no edge is drawn through a box. The order within a column is
// improved by a few barycenter sweeps (fewer crossings); each column is centred. It
// returns nodes (id → {col, row}), edges ({from, to, via: [{col, row}]}), cols and rows.
function dagLayout(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const depth = new Map();
  const visit = (id, seen) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0; // the server refuses cycles; never loop on one
    seen.add(id);
    let d = 0;
    for (const p of (byId.get(id) || {}).depends_on || []) if (byId.has(p)) d = Math.max(d, visit(p, seen) + 1);
    depth.set(id, d);
    return d;
  };
  for (const s of steps) visit(s.id, new Set());
  const cols = Math.max(1, ...steps.map((s) => depth.get(s.id) + 1));
  const layers = Array.from({ length: cols }, () => []);
  const nbr = new Map(); // key → {up: [keys], down: [keys]}
  const key = (k) => { if (!nbr.has(k)) nbr.set(k, { up: [], down: [] }); return k; };
  for (const s of steps) layers[depth.get(s.id)].push(key(s.id));
  const chains = [];
  for (const s of steps) {
    for (const p of s.depends_on || []) {
      if (!byId.has(p)) continue;
      const chain = [p];
      for (let c = depth.get(p) + 1; c < depth.get(s.id); c++) { const d = key("\u0000" + p + ">" + s.id + "@" + c); layers[c].push(d); chain.push(d); }
      chain.push(s.id);
      for (let i = 1; i < chain.length; i++) { nbr.get(chain[i - 1]).down.push(chain[i]); nbr.get(chain[i]).up.push(chain[i - 1]); }
      chains.push({ from: p, to: s.id, chain });
    }
  }
  const index = new Map();
  const reindex = (layer) => layer.forEach((k, i) => index.set(k, i));
  layers.forEach(reindex);
  const sweep = (c, dir) => {
    const bary = new Map(layers[c].map((k) => {
      const ns = nbr.get(k)[dir];
      return [k, ns.length ? ns.reduce((a, n) => a + index.get(n), 0) / ns.length : index.get(k)];
    }));
    layers[c].sort((a, b) => bary.get(a) - bary.get(b) || index.get(a) - index.get(b));
    reindex(layers[c]);
  };
  for (let round = 0; round < 4; round++) {
    for (let c = 1; c < cols; c++) sweep(c, "up");
    for (let c = cols - 2; c >= 0; c--) sweep(c, "down");
  }
  const rows = Math.max(1, ...layers.map((l) => l.length));
  const place = new Map();
  layers.forEach((l, c) => l.forEach((k, i) => place.set(k, { col: c, row: (rows - l.length) / 2 + i })));
  const nodes = new Map(steps.map((s) => [s.id, place.get(s.id)]));
  const edges = chains.map((e) => ({ from: e.from, to: e.to, via: e.chain.slice(1, -1).map((k) => place.get(k)) }));
  return { nodes, edges, cols, rows };
}

// The sessions a step's calls are stored in (docs/workflows.md#owners): the run's session
// workflow:NAME[:OWNER]:RUNID and ~STEP, or one per fan-out item (~STEP~INDEX); a workflow
// step's are the sub-workflow's runs, ids RUNID.STEP[.INDEX].
function stepSessions(name, owner, runId, step, rec) {
  const sub = step.kind === "workflow";
  const base = sub ? runId + "." + step.id : "workflow:" + name + ":" + (owner ? owner + ":" : "") + runId + "~" + step.id;
  const sep = sub ? "." : "~";
  if (rec && rec.items && rec.items.length) return rec.items.map((_, i) => base + sep + i);
  if (step.kind === "approval" || !rec) return [];
  return [base];
}

// groupSessions splits the session list into chats and workflow runs: a session whose id
// is a run's (workflow:NAME[:OWNER]:RUNID) or one of its steps' (…~STEP[~INDEX]) belongs
// to that run, not to the chats (workflow/owner.go). A sub-workflow's run (id
// PARENT.STEP[.INDEX]) is put under its parent's run when that run is listed.
function groupSessions(sessions) {
  const chats = [], runs = new Map();
  for (const s of sessions) {
    const m = /^workflow:([^:~]+):(?:([^:~]+):)?([A-Za-z0-9._-]+)(~.*)?$/.exec(s.id);
    if (!m) { chats.push(s); continue; }
    const k = "workflow:" + m[1] + ":" + (m[2] ? m[2] + ":" : "") + m[3];
    if (!runs.has(k)) runs.set(k, { key: k, name: m[1], owner: m[2] || "", runId: m[3], sessions: [], children: [], updated: "" });
    const g = runs.get(k);
    g.sessions.push(s);
    if ((s.updated || "") > g.updated) g.updated = s.updated || "";
  }
  const top = [];
  for (const g of runs.values()) {
    let parent = null;
    for (const p of runs.values()) {
      if (p !== g && p.owner === g.owner && g.runId.startsWith(p.runId + ".") && (!parent || p.runId.length > parent.runId.length)) parent = p;
    }
    (parent ? parent.children : top).push(g);
  }
  return { chats, runs: top };
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) { const e = document.createElementNS(SVG, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }
const DAG = { W: 150, H: 46, GX: 56, GY: 16, PAD: 16 };

// edgePath is an edge's SVG path: from the right side of its source box to the left side
// of its target, a curve inside each gap between columns and a straight line through
// each column it passes (through its own slot).
function edgePath(a, b, via) {
  const { W, H, GX, GY, PAD } = DAG;
  const x = (p) => PAD + p.col * (W + GX), y = (p) => PAD + p.row * (H + GY) + H / 2;
  const pts = [[x(a) + W, y(a)]];
  for (const v of via) pts.push([x(v), y(v)], [x(v) + W, y(v)]);
  pts.push([x(b), y(b)]);
  let d = "M" + pts[0][0] + "," + pts[0][1];
  for (let i = 1; i < pts.length; i++) {
    const [x0, y0] = pts[i - 1], [x1, y1] = pts[i];
    if (i % 2) { const m = (x0 + x1) / 2; d += " C" + m + "," + y0 + " " + m + "," + y1 + " " + x1 + "," + y1; } else d += " L" + x1 + "," + y1;
  }
  return d;
}

// drawDAG draws steps into box as SVG: a box per step (class wf-node, data-step,
// data-status: the record's status, or "pending"), an arrow per dependency (class
// wf-edge, data-from, data-to). onPick is called with a step when its box is clicked.
// The drawing fills the box and is fitted to it (box.dataset.zoom); the wheel zooms, a
// drag pans, and wfZoom fits or zooms; a view the user moved is kept across redraws.
function drawDAG(box, steps, record, onPick) {
  const { W, H, GX, GY, PAD } = DAG;
  const lay = dagLayout(steps);
  const cw = PAD * 2 + lay.cols * W + (lay.cols - 1) * GX, ch = PAD * 2 + lay.rows * H + (lay.rows - 1) * GY;
  const root = svg("svg", { class: "wf-dag", width: "100%", height: "100%" });
  const defs = svg("defs", {}), marker = svg("marker", { id: "wf-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#94a3b8" }));
  defs.appendChild(marker); root.appendChild(defs);
  const view = svg("g", { class: "wf-view" });
  root.appendChild(view);
  for (const e of lay.edges) {
    view.appendChild(svg("path", { d: edgePath(lay.nodes.get(e.from), lay.nodes.get(e.to), e.via), class: "wf-edge", "data-from": e.from, "data-to": e.to, fill: "none", stroke: "#94a3b8", "marker-end": "url(#wf-arrow)" }));
  }
  const steprecs = (record && record.steps) || {};
  for (const s of steps) {
    const p = lay.nodes.get(s.id), r = steprecs[s.id];
    const status = r ? r.status : "pending";
    const g = svg("g", { class: "wf-node s-" + status, "data-step": s.id, "data-status": status, transform: "translate(" + (PAD + p.col * (W + GX)) + "," + (PAD + p.row * (H + GY)) + ")", tabindex: 0 });
    g.appendChild(svg("rect", { width: W, height: H, rx: 6 }));
    const t1 = svg("text", { x: 8, y: 19, class: "wf-id" }); t1.textContent = s.id.length > 20 ? s.id.slice(0, 19) + "…" : s.id;
    const items = r && r.items && r.items.length ? " ×" + r.items.length : "";
    const t2 = svg("text", { x: 8, y: 36, class: "wf-kind" }); t2.textContent = s.kind + (s.runs ? " " + s.runs : "") + items + " · " + status;
    const title = svg("title", {}); title.textContent = s.id + " (" + status + ")" + (s.if ? "\nif " + s.if : "") + (s.for_each ? "\nfor_each " + s.for_each : "");
    g.append(t1, t2, title);
    g.addEventListener("click", () => onPick(s, r));
    g.addEventListener("keydown", (e) => { if (e.key === "Enter") onPick(s, r); });
    view.appendChild(g);
  }
  box.replaceChildren(root);
  box.dataset.steps = String(steps.length);
  const st = box.wfView && box.wfView.user ? box.wfView : { user: false };
  box.wfView = Object.assign(st, { cw, ch, g: view });
  if (!st.user) wfZoom(box, "fit"); else wfApply(box);
  if (!box.wfWired) wireDAG(box);
}

function wfApply(box) {
  const v = box.wfView;
  v.g.setAttribute("transform", "translate(" + v.tx + "," + v.ty + ") scale(" + v.k + ")");
  box.dataset.zoom = v.k.toFixed(3);
}

// wfZoom fits the drawing to the box ("fit"), or zooms by a factor about a point of the
// box (its centre when none is given).
function wfZoom(box, how, px, py) {
  const v = box.wfView;
  if (!v || !v.g) return;
  const bw = box.clientWidth, bh = box.clientHeight;
  if (how === "fit") {
    v.k = Math.max(0.2, Math.min(1.25, (bw - 8) / v.cw, (bh - 8) / v.ch));
    v.tx = (bw - v.cw * v.k) / 2; v.ty = Math.max(4, (bh - v.ch * v.k) / 2); v.user = false;
  } else {
    const k = Math.max(0.2, Math.min(4, v.k * how));
    px = px === undefined ? bw / 2 : px; py = py === undefined ? bh / 2 : py;
    v.tx = px - (px - v.tx) * (k / v.k); v.ty = py - (py - v.ty) * (k / v.k); v.k = k; v.user = true;
  }
  wfApply(box);
}

// wireDAG adds the box's pan and zoom: the wheel zooms about the pointer, a drag on the
// background pans, and a resized box is fitted again unless the user moved the view.
function wireDAG(box) {
  box.wfWired = true;
  box.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = box.getBoundingClientRect();
    wfZoom(box, Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  let drag = null;
  box.addEventListener("pointerdown", (e) => {
    if (e.target.closest && e.target.closest(".wf-node") || !box.wfView) return;
    drag = { x: e.clientX, y: e.clientY, tx: box.wfView.tx, ty: box.wfView.ty };
    try { box.setPointerCapture(e.pointerId); } catch { /* a pointer the browser no longer tracks */ }
    box.classList.add("panning");
  });
  box.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const v = box.wfView;
    v.tx = drag.tx + e.clientX - drag.x; v.ty = drag.ty + e.clientY - drag.y; v.user = true;
    wfApply(box);
  });
  const end = () => { drag = null; box.classList.remove("panning"); };
  box.addEventListener("pointerup", end); box.addEventListener("pointercancel", end);
  if (window.ResizeObserver) new ResizeObserver(() => { if (box.wfView && !box.wfView.user && box.clientWidth) wfZoom(box, "fit"); }).observe(box);
}

// ---- the panel: pick a workflow and a run, start one, decide its approvals ----
// It uses the page's helpers ($, el, api, headers, selectSession, loadSessions). For
// scripts and tests the body carries data-workflow (NAME/RUNID of what is drawn),
// data-wf-state (the drawn run's status, "definition" with none) and data-wf-picked.
const wf = { list: [], poll: 0, streaming: false };
const wfNamed = () => wf.list.find((w) => w.name === $("wf-name").value);
function wfPicked() { // an owned run's option is OWNER/RUNID (run ids have no "/")
  const v = $("wf-run").value, cut = v.lastIndexOf("/");
  return { owner: cut < 0 ? "" : v.slice(0, cut), runId: v.slice(cut + 1) };
}
async function showWorkflows(pickName, pickRun, pickStep) {
  for (const id of ["trace", "insights", "memory", "resources"]) $(id).hidden = true;
  $("workflows").hidden = false;
  $("wf-detail").replaceChildren();
  try {
    wf.list = await api("/v1/workflows");
    $("wf-name").replaceChildren(...wf.list.map((w) => el("option", "", w.name)));
    if (!wf.list.length) { $("wf-box").replaceChildren(el("div", "muted", "no workflows declared")); return; }
    if (pickName) $("wf-name").value = pickName;
    await loadWorkflowRuns(pickRun, pickStep);
  } catch (e) { $("wf-box").replaceChildren(el("div", "banner", e.message)); }
}
async function loadWorkflowRuns(pickRun, pickStep) {
  const name = $("wf-name").value;
  let runs = [];
  try { runs = await api("/v1/workflows/" + encodeURIComponent(name) + "/runs"); }
  catch (e) { $("wf-detail").replaceChildren(el("div", "banner", e.message)); }
  $("wf-run").replaceChildren(el("option", "", "(definition)"), ...runs.map((r) => { const o = el("option", "", r.run_id + (r.owner ? " · " + r.owner : "") + " · " + r.status); o.value = (r.owner ? r.owner + "/" : "") + r.run_id; return o; }));
  $("wf-run").firstChild.value = "";
  let found = false;
  if (pickRun) { // OWNER/RUNID, or a bare run id of any owner's (the caller's own run just started)
    const o = [...$("wf-run").options].find((x) => x.value === pickRun) || [...$("wf-run").options].find((x) => x.value.endsWith("/" + pickRun));
    if (o) { $("wf-run").value = o.value; found = true; }
  }
  await drawWorkflowRun(pickStep);
  return found;
}

// drawWorkflowRun draws the picked run from its stored record (the truth), opens its
// waiting approval (or pickStep), and polls the record while the run is still running
// elsewhere, so its steps change colour as they end.
async function drawWorkflowRun(pickStep) {
  clearTimeout(wf.poll);
  const name = $("wf-name").value, w = wfNamed(), { owner, runId } = wfPicked();
  if (!w) return;
  let record = null;
  if (runId) {
    try { record = await api("/v1/workflows/" + encodeURIComponent(name) + "/runs/" + encodeURIComponent(runId) + (owner ? "?owner=" + encodeURIComponent(owner) : "")); }
    catch (e) { $("wf-detail").replaceChildren(el("div", "banner", e.message)); }
  }
  wfDraw(w, record, owner, runId);
  const steps = (record && record.steps) || {};
  const waiting = w.steps.find((s) => steps[s.id] && steps[s.id].status === "waiting");
  const pick = w.steps.find((s) => s.id === pickStep) || waiting;
  if (pick) pickWorkflowStep(w, pick, steps[pick.id], owner, runId, record);
  else if (document.body.dataset.wfPicked) $("wf-detail").replaceChildren();
  if (record && record.status === "running" && !wf.streaming) {
    wf.poll = setTimeout(() => { if (!$("workflows").hidden && wfPicked().runId === runId) drawWorkflowRun($("wf-detail").dataset.step); }, 1000);
  }
}
function wfDraw(w, record, owner, runId) {
  drawDAG($("wf-box"), w.steps, record, (step, rec) => pickWorkflowStep(w, step, rec, owner, runId, record));
  document.body.dataset.workflow = w.name + "/" + (runId || "");
  document.body.dataset.wfState = wf.streaming ? "running" : record ? record.status : "definition";
}

// readable shows a value as a person reads it: text as text, a list as its items, an
// object as "key: value" lines; only what nests deeper is shown as indented JSON.
function readable(v) {
  if (v === null || v === undefined) return el("span", "muted", "(none)");
  if (typeof v !== "object") return el("span", "wf-value", String(v));
  const dl = el("dl", "wf-fields");
  for (const [k, x] of Object.entries(v)) dl.append(el("dt", "", k), el("dd", "", typeof x === "object" && x !== null ? JSON.stringify(x, null, 1) : String(x)));
  return dl;
}

function pickWorkflowStep(w, step, rec, owner, runId, record) {
  for (const n of document.querySelectorAll(".wf-node")) n.classList.toggle("picked", n.dataset.step === step.id);
  const d = $("wf-detail"), status = rec ? rec.status : "pending";
  d.dataset.step = step.id;
  const head = el("div", "wf-step-head");
  head.append(el("b", "", step.id), " ", el("span", "muted", step.kind + (step.runs ? " " + step.runs : "")), " ", el("span", "wf-status s-" + status, status));
  const body = el("div", "wf-step");
  if (step.kind === "approval" && status === "waiting" && runId) body.appendChild(approvalCard(w, step, rec, record));
  else {
    const facts = { attempts: rec && rec.attempts, started: rec && rec.started, ended: rec && rec.ended, items: rec && rec.items ? rec.items.length : undefined, if: step.if, for_each: step.for_each, depends_on: step.depends_on.join(", ") };
    const dl = el("dl", "wf-fields");
    for (const [k, v] of Object.entries(facts)) if (v !== undefined && v !== "" && v !== null) dl.append(el("dt", "", k), el("dd", "", String(v)));
    body.appendChild(dl);
    if (rec && rec.error) body.appendChild(el("div", "banner", rec.error));
    if (rec && rec.output !== undefined) { const o = el("div", "wf-output"); o.append(el("span", "muted", "output "), readable(rec.output)); body.appendChild(o); }
  }
  const links = el("div", "wf-sessions");
  for (const sid of runId ? stepSessions(w.name, owner, runId, step, rec) : []) {
    const a = el("button", "wf-session", step.kind === "workflow" ? "sub-run " + sid : "transcript " + sid);
    a.dataset.session = sid;
    a.onclick = () => {
      if (step.kind === "workflow") { showWorkflows(step.runs, (owner ? owner + "/" : "") + sid); return; }
      $("workflows").hidden = true; selectSession(sid);
    };
    links.appendChild(a);
  }
  d.replaceChildren(head, body, links);
  document.body.dataset.wfPicked = step.id;
}

// approvalCard is a waiting approval step as a person decides it: the question, what the
// steps it follows produced, what runs once it is approved, and Approve / Reject (with
// an optional comment) that resume the run (POST …/runs with its runId and a resume
// entry for the step).
function approvalCard(w, step, rec, record) {
  const c = el("div", "wf-approval");
  c.appendChild(el("p", "wf-question", ((rec && rec.output) || {}).prompt || "Approve " + step.id + "?"));
  const steps = (record && record.steps) || {};
  const before = el("dl", "wf-fields");
  for (const dep of step.depends_on) { const r = steps[dep]; if (r) { const dd = el("dd"); dd.appendChild(readable(r.output)); before.append(el("dt", "", dep), dd); } }
  if (before.children.length) c.append(el("div", "muted", "Based on"), before);
  const next = w.steps.filter((s) => s.depends_on.includes(step.id)).map((s) => s.id + " (" + s.kind + (s.runs ? " " + s.runs : "") + ")");
  if (next.length) c.appendChild(el("div", "muted wf-next", "Approving runs next: " + next.join(", ")));
  const comment = el("input", "wf-comment"); comment.placeholder = "comment (optional)"; comment.setAttribute("aria-label", "Comment");
  const yes = el("button", "primary wf-approve", "Approve"), no = el("button", "wf-reject", "Reject");
  const decide = (approved) => {
    yes.disabled = no.disabled = true;
    const payload = { approved, reason: comment.value.trim() || (approved ? "" : "rejected in the console") };
    streamWorkflow(w.name, { runId: record.run_id, resume: [{ interruptId: step.id, status: "resolved", payload }] }, record);
  };
  yes.onclick = () => decide(true); no.onclick = () => decide(false);
  const row = el("div", "approval"); row.append(comment, yes, no);
  c.appendChild(row);
  return c;
}

// startForm is the form to start a run: a field per property of the workflow's inputs
// schema (numbers, booleans, enums, text; required ones marked), or a JSON box when the
// schema names no properties, and an optional run id.
function startForm() {
  const w = wfNamed();
  if (!w) return;
  const schema = w.inputs || {}, props = schema.properties || {}, req = new Set(schema.required || []);
  const form = el("form", "input-form wf-start");
  form.appendChild(el("div", "muted", "Start " + w.name + (w.description ? ": " + w.description : "")));
  const fields = {};
  for (const [name, p] of Object.entries(props)) {
    const label = el("label", "field", (p.title || name) + (req.has(name) ? " *" : "") + " ");
    let input;
    if (p.enum) { input = el("select"); for (const v of p.enum) input.appendChild(el("option", "", String(v))); }
    else { input = el("input"); input.type = p.type === "boolean" ? "checkbox" : (p.type === "number" || p.type === "integer") ? "number" : "text"; if (input.type === "number") input.step = "any"; }
    input.name = name; input.required = req.has(name) && input.type !== "checkbox";
    if (p.description) input.title = p.description;
    if (p.default !== undefined) { if (input.type === "checkbox") input.checked = !!p.default; else input.value = String(p.default); }
    if (p.type === "array" || p.type === "object") input.placeholder = "JSON";
    fields[name] = [input, p.type];
    label.appendChild(input); form.appendChild(label);
  }
  let raw = null;
  if (!Object.keys(props).length) { raw = el("textarea", "wf-raw-input", "{}"); raw.setAttribute("aria-label", "Inputs (JSON)"); form.appendChild(raw); }
  const rid = el("input", "wf-run-id"); rid.placeholder = "run id (optional)"; rid.setAttribute("aria-label", "Run id");
  const go = el("button", "primary wf-go", "Start");
  form.append(rid, go);
  form.onsubmit = (e) => {
    e.preventDefault();
    let input = {};
    try {
      if (raw) input = JSON.parse(raw.value || "{}");
      for (const [name, [f, type]] of Object.entries(fields)) {
        if (type === "boolean") input[name] = f.checked;
        else if (f.value === "") continue;
        else if (type === "number" || type === "integer") input[name] = Number(f.value);
        else if (type === "array" || type === "object") input[name] = JSON.parse(f.value);
        else input[name] = f.value;
      }
    } catch (err) { form.appendChild(el("div", "banner", "inputs: " + err.message)); return; }
    const body = { input };
    if (rid.value.trim()) body.runId = rid.value.trim();
    streamWorkflow(w.name, body, null);
  };
  $("wf-detail").replaceChildren(form);
  $("wf-detail").dataset.step = "";
  document.body.dataset.wfPicked = "";
}

// streamWorkflow starts or resumes a run and redraws the DAG from its AG-UI events as
// they come (a step turns running, then ok, skipped or waiting); when the stream ends,
// the run is drawn again from its stored record and the session list reloaded.
async function streamWorkflow(name, body, base) {
  const w = wf.list.find((x) => x.name === name);
  const rec = { run_id: body.runId || "", status: "running", steps: Object.assign({}, (base && base.steps) || {}) };
  const owner = wfPicked().owner, err = (m) => $("wf-detail").appendChild(el("div", "banner wf-error", m));
  wf.streaming = true; clearTimeout(wf.poll);
  document.body.dataset.wfState = "running";
  try {
    const r = await fetch("/v1/workflows/" + encodeURIComponent(name) + "/runs", { method: "POST", headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }), body: JSON.stringify(body) });
    if (!r.ok) { const b = await r.json().catch(() => ({})); throw new Error(r.status + " " + (b.error || r.statusText)); }
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const data = buf.slice(0, i).split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        buf = buf.slice(i + 2);
        if (!data) continue;
        const ev = JSON.parse(data);
        if (ev.type === "RUN_STARTED") rec.run_id = ev.runId;
        else if (ev.type === "STEP_STARTED") rec.steps[ev.stepName] = Object.assign({}, rec.steps[ev.stepName], { status: "running" });
        else if (ev.type === "CUSTOM" && ev.name === "agenthost.workflow_step") { const v = ev.value || {}; rec.steps[v.step] = Object.assign({}, rec.steps[v.step], { status: v.status, output: v.prompt !== undefined ? { prompt: v.prompt } : v.output, error: v.error }); }
        else if (ev.type === "RUN_ERROR") { rec.status = "failed"; err(ev.message); }
        else if (ev.type === "RUN_FINISHED") rec.status = (ev.result || {}).status || "completed";
        else continue;
        wfDraw(w, rec, owner, rec.run_id);
      }
    }
  } catch (e) { wf.streaming = false; err(e.message); document.body.dataset.wfState = "error"; return; }
  wf.streaming = false;
  loadSessions();
  if ($("wf-name").value !== name || !rec.run_id) return;
  if (await loadWorkflowRuns(rec.run_id)) return;
  // The stored runs are read by operators; a user sees their own run as it streamed,
  // and decides its approval from there.
  $("wf-detail").replaceChildren();
  wfDraw(w, rec, owner, rec.run_id);
  const waiting = w.steps.find((s) => rec.steps[s.id] && rec.steps[s.id].status === "waiting");
  if (waiting) pickWorkflowStep(w, waiting, rec.steps[waiting.id], owner, rec.run_id, rec);
}
