"use strict";
// The console's time travel and test cases: "fork from here" on a stored message or
// tool call (POST /v1/sessions/{id}/fork, the host's door decides and checks the typed
// edits), a fork's lineage with Resume and Compare (GET /v1/sessions/{a}/diff/{b}), and
// "save as test case" (GET /v1/sessions/{id}/fixture: the replay fixture `sessions export
// --fixture` writes, as a zip). It uses the page's own helpers ($, el, api, headers,
// conv, cards, run, selectSession, loadSessions, setStatus, thread). Every text comes
// from a model, a tool or a user: set with textContent, never as HTML.
//
// The page tells it which stored entry each drawn message or tool card is (forkMark, as
// renderStored draws), and hands it the session it drew (sessionTools). A click on a
// marked message or card puts a small bar under it; the page's own markup is unchanged.

const forkSeq = new WeakMap(); // a drawn message or tool card → {seq, role, call}

// forkMark records that node shows the stored entry e (a message entry).
function forkMark(node, e) {
  const m = e.message || {};
  forkSeq.set(node, { seq: e.seq, role: m.role, call: m.tool_call_id || "" });
  return node;
}

(function forkStyle() {
  const s = document.createElement("style");
  s.textContent = `
  #conversation > .msg, #conversation > .tool-card { cursor: pointer; }
  #conversation > .picked { outline: 2px solid var(--accent); outline-offset: 1px; }
  .fork-bar { align-self: stretch; border: 1px dashed var(--accent); border-radius: 6px; padding: 6px 10px; font-size: 13px; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
  .fork-bar textarea { flex: 1 1 100%; min-height: 3em; font: 12px monospace; border: 1px solid var(--line); border-radius: 4px; padding: 4px; }
  .fork-bar .banner { flex: 1 1 100%; }
  .lineage { align-self: stretch; background: #eef2ff; border-radius: 6px; padding: 6px 10px; font-size: 13px; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
  .tool-card.cached .state::after { content: " · cached"; color: var(--ok); }
  #compare .sides { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
  #compare .side { border: 1px solid var(--line); border-radius: 6px; padding: 6px; min-width: 0; }
  #compare .side .cmsg { white-space: pre-wrap; overflow-wrap: anywhere; border-top: 1px solid var(--line); padding: 3px 0; font-size: 13px; }
  #compare .side .role { color: var(--muted); font-size: 11px; text-transform: uppercase; margin-right: 6px; }`;
  document.head.appendChild(s);
})();

// sessionTools runs after the page drew a stored session (detail: GET
// /v1/sessions/{id}): the fork's lineage, the cached results' mark, "save as test case".
function sessionTools(detail) {
  for (const e of detail.entries || []) {
    const d = (e.event && e.event.data) || {};
    if (e.kind === "event" && e.event.type === "tool_result" && d.cached && cards.has(d.id)) cards.get(d.id).classList.add("cached");
  }
  if (detail.lineage) conv().prepend(lineageBar(detail.lineage, detail.entries || []));
  const ends = conv().querySelectorAll(".run-end");
  if (ends.length) {
    const b = el("button", "save-case", "save as test case");
    b.title = "the last run as a replay fixture for eval --replay (a zip)";
    b.onclick = () => saveTestCase(b);
    ends[ends.length - 1].append(" ", b);
  }
}

// ---- fork from here ----
// (On the document: this script loads before the page's own.)
document.addEventListener("click", (ev) => {
  if (!ev.target.closest || ev.target.closest("button, a, input, select, textarea, form, summary, .fork-bar, .lineage")) return;
  let node = ev.target;
  while (node && node.parentNode && node.parentNode !== conv()) node = node.parentNode;
  if (!node || node.parentNode !== conv()) return;
  if (!node || !forkSeq.has(node)) return;
  pickForFork(node);
});

function pickForFork(node) {
  for (const old of conv().querySelectorAll(".fork-bar")) old.remove();
  for (const old of conv().querySelectorAll(".picked")) old.classList.remove("picked");
  node.classList.add("picked");
  const at = forkSeq.get(node), bar = el("div", "fork-bar");
  bar.dataset.seq = String(at.seq);
  const go = el("button", "primary fork-here", "Fork from here"), cancel = el("button", "fork-cancel", "cancel");
  cancel.onclick = () => { bar.remove(); node.classList.remove("picked"); };
  go.onclick = () => { go.remove(); forkForm(bar, node, at, cancel); };
  bar.append(el("span", "muted", "entry " + at.seq + " (" + at.role + ")"), go, cancel);
  node.after(bar);
}

// The typed edits a fork may make (loop.EditOp); the server checks them and says why not.
const forkOps = [
  ["", "no edit"],
  ["replace_tool_result", "replace a tool result"],
  ["edit_last_user", "edit the last user message"],
  ["drop_last_user", "drop the last user message"],
  ["drop_last_turn", "drop the last turn"],
];

function forkForm(bar, node, at, cancel) {
  const op = el("select", "fork-op"), call = el("select", "fork-call"), content = el("textarea", "fork-content"), send = el("button", "primary fork-go", "Fork");
  for (const [v, label] of forkOps) { const o = el("option", "", label); o.value = v; op.appendChild(o); }
  for (const [id, c] of cards) { const o = el("option", "", c.querySelector(".name").textContent + " [" + id + "]"); o.value = id; call.appendChild(o); }
  op.setAttribute("aria-label", "edit"); call.setAttribute("aria-label", "tool call"); content.setAttribute("aria-label", "new text");
  // What a pick suggests: a tool result is replaced; a user message edited; else no edit.
  if (at.role === "tool") { op.value = "replace_tool_result"; call.value = at.call; content.value = node.querySelector(".result").textContent; }
  else if (at.role === "user") { op.value = "edit_last_user"; content.value = node.textContent; }
  const shape = () => {
    call.hidden = op.value !== "replace_tool_result";
    content.hidden = op.value !== "replace_tool_result" && op.value !== "edit_last_user";
  };
  op.onchange = shape; shape();
  send.onclick = async () => {
    const edit = { op: op.value };
    if (!call.hidden) edit.call_id = call.value;
    if (!content.hidden) edit.content = content.value;
    send.disabled = true;
    for (const b of bar.querySelectorAll(".banner")) b.remove();
    try {
      const r = await fetch("/v1/sessions/" + encodeURIComponent(thread) + "/fork", { method: "POST",
        headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify({ at: at.seq, edits: op.value ? [edit] : [] }) });
      const b = await r.json();
      if (!r.ok) throw new Error(b.error || String(r.status));
      await loadSessions(); await selectSession(b.session);
      setStatus("forked " + b.lineage.parent + " at entry " + b.lineage.at);
      document.body.dataset.fork = b.session;
    } catch (e) {
      bar.appendChild(el("div", "banner fork-error", e.message));
      send.disabled = false;
    }
  };
  bar.append(op, call, send, cancel, content);
}

// lineageBar says where a fork came from, and offers Resume (when its last stored
// message waits for the model: a tool result or a user message) and Compare.
function lineageBar(lin, entries) {
  const bar = el("div", "lineage"), edits = (lin.edits || []).map((e) => e.op + (e.call_id ? " " + e.call_id : "")).join("; ");
  bar.dataset.parent = lin.parent;
  bar.append(el("span", "", "Forked from " + lin.parent + " at entry " + lin.at + (edits ? " · edited: " + edits : "")));
  let last = null;
  for (const e of entries) if (e.kind === "message") last = e;
  const m = last && last.message;
  if (m && (m.role === "tool" || m.role === "user")) {
    const resume = el("button", "primary fork-resume", "Resume");
    resume.title = "run the model on the fork as it stands";
    resume.onclick = () => run([resumeMessage(last)]);
    bar.append(resume);
  }
  const cmp = el("button", "fork-compare", "Compare with " + lin.parent);
  cmp.onclick = () => showCompare(lin.parent, thread);
  bar.append(cmp);
  return bar;
}

// resumeMessage is the fork's stored last message sent back as AG-UI input: the server
// knows it for its own (the same text, by call id or by its entry id) and stores nothing
// twice, so the run goes on from the history as the fork holds it.
function resumeMessage(e) {
  const m = e.message, text = (m.content || []).map((p) => p.text || "").join("");
  if (m.role === "tool") return { id: uid("msg"), role: "tool", toolCallId: m.tool_call_id, content: text };
  return { id: thread + ":entry:" + e.seq, role: "user", content: text };
}

// ---- compare (GET /v1/sessions/{a}/diff/{b}) ----
async function showCompare(a, b) {
  let box = $("compare");
  if (!box) { box = el("section", "panel"); box.id = "compare"; $("raw").before(box); }
  for (const id of ["trace", "insights", "memory", "workflows", "resources"]) if ($(id)) $(id).hidden = true;
  box.hidden = false;
  const close = el("button", "", "close"); close.onclick = () => { box.hidden = true; };
  const head = el("div", "bar"); head.append(el("b", "", "Compare"), el("span", "muted", a + " · " + b), close);
  box.replaceChildren(head);
  try {
    const c = await api("/v1/sessions/" + encodeURIComponent(a) + "/diff/" + encodeURIComponent(b));
    const sides = el("div", "sides");
    sides.append(compareSide(c.a), compareSide(c.b));
    box.append(sides);
    document.body.dataset.compare = a + "|" + b;
  } catch (e) { box.append(el("div", "banner compare-error", e.message)); document.body.dataset.compare = "error"; }
}

function compareSide(s) {
  const d = el("div", "side");
  d.dataset.session = s.session;
  d.append(el("b", "", s.session), el("div", "muted totals", "from entry " + s.from + " · " + s.runs + " run" + (s.runs === 1 ? "" : "s") +
    " · " + s.tokens + " tokens · $" + (s.cost_usd || 0).toFixed(4)));
  for (const m of s.messages || []) {
    const text = (m.content || []).map((p) => p.text || "").join("") +
      (m.tool_calls || []).map((c) => " → " + c.name + " " + c.arguments).join("");
    const row = el("div", "cmsg " + m.role);
    row.append(el("span", "role", m.role + (m.tool_call_id ? " " + m.tool_call_id : "")), text);
    d.appendChild(row);
  }
  if (!(s.messages || []).length) d.appendChild(el("div", "muted", "no messages after the point they part"));
  return d;
}

// ---- save as test case (GET /v1/sessions/{id}/fixture) ----
async function saveTestCase(button) {
  button.disabled = true;
  try {
    const r = await fetch("/v1/sessions/" + encodeURIComponent(thread) + "/fixture", { headers: headers() });
    if (!r.ok) { const b = await r.json(); throw new Error(b.error || String(r.status)); }
    const name = (/filename="([^"]+)"/.exec(r.headers.get("Content-Disposition") || "") || [])[1] || "fixture.zip";
    const url = URL.createObjectURL(await r.blob()), a = el("a");
    a.href = url; a.download = name; document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    setStatus("saved " + name + ": unzip it and run eval --replay " + name.replace(/\.zip$/, ""));
    document.body.dataset.saved = name;
  } catch (e) { setStatus("save as test case: " + e.message, "error"); }
  button.disabled = false;
}

// #session=B&compare=A opens the page on B compared with A (a link can show a comparison).
window.addEventListener("load", () => {
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.get("compare") && p.get("session")) showCompare(p.get("compare"), p.get("session"));
});
