"use strict";
// The console's workflow view: a declared workflow's steps as a DAG (GET /v1/workflows),
// coloured by a stored run's record (GET /v1/workflows/NAME/runs/ID). dagLayout is a pure
// function of the steps (no DOM): a step's column is the length of the longest path of
// dependencies that leads to it, so every edge points right; its row is its order among
// the steps of that column.
function dagLayout(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const depth = new Map();
  const visit = (id, seen) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0; // the server refuses cycles; never loop on one
    seen.add(id);
    const s = byId.get(id);
    let d = 0;
    for (const p of (s && s.depends_on) || []) if (byId.has(p)) d = Math.max(d, visit(p, seen) + 1);
    depth.set(id, d);
    return d;
  };
  const rows = new Map();
  return steps.map((s) => {
    const col = visit(s.id, new Set());
    const row = rows.get(col) || 0;
    rows.set(col, row + 1);
    return { id: s.id, col, row };
  });
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

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) { const e = document.createElementNS(SVG, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }

// drawDAG draws steps into box as SVG: a box per step (class wf-node, data-step,
// data-status: the record's status, or "pending"), an arrow per dependency (class
// wf-edge, data-from, data-to). onPick is called with a step when its box is clicked.
function drawDAG(box, steps, record, onPick) {
  const W = 150, H = 44, GX = 60, GY = 18, PAD = 12;
  const pos = new Map(dagLayout(steps).map((p) => [p.id, p]));
  const cols = Math.max(1, ...[...pos.values()].map((p) => p.col + 1));
  const rows = Math.max(1, ...[...pos.values()].map((p) => p.row + 1));
  const root = svg("svg", { width: PAD * 2 + cols * W + (cols - 1) * GX, height: PAD * 2 + rows * H + (rows - 1) * GY, class: "wf-dag" });
  const defs = svg("defs", {}), marker = svg("marker", { id: "wf-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#94a3b8" }));
  defs.appendChild(marker); root.appendChild(defs);
  const xy = (id) => { const p = pos.get(id); return { x: PAD + p.col * (W + GX), y: PAD + p.row * (H + GY) }; };
  for (const s of steps) {
    for (const d of s.depends_on || []) {
      if (!pos.has(d)) continue;
      const a = xy(d), b = xy(s.id);
      root.appendChild(svg("line", { x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, class: "wf-edge", "data-from": d, "data-to": s.id, stroke: "#94a3b8", "marker-end": "url(#wf-arrow)" }));
    }
  }
  const steprecs = (record && record.steps) || {};
  for (const s of steps) {
    const { x, y } = xy(s.id), r = steprecs[s.id];
    const status = r ? r.status : "pending";
    const g = svg("g", { class: "wf-node s-" + status, "data-step": s.id, "data-status": status, transform: "translate(" + x + "," + y + ")", tabindex: 0 });
    g.appendChild(svg("rect", { width: W, height: H, rx: 6 }));
    const t1 = svg("text", { x: 8, y: 18, class: "wf-id" }); t1.textContent = s.id;
    const items = r && r.items && r.items.length ? " ×" + r.items.length : "";
    const t2 = svg("text", { x: 8, y: 35, class: "wf-kind" }); t2.textContent = s.kind + (s.runs ? " " + s.runs : "") + items + " · " + status;
    const title = svg("title", {}); title.textContent = s.id + " (" + status + ")" + (s.if ? "\nif " + s.if : "") + (s.for_each ? "\nfor_each " + s.for_each : "");
    g.append(t1, t2, title);
    g.addEventListener("click", () => onPick(s, r));
    g.addEventListener("keydown", (e) => { if (e.key === "Enter") onPick(s, r); });
    root.appendChild(g);
  }
  box.replaceChildren(root);
  box.dataset.steps = String(steps.length);
}
