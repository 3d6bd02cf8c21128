"use strict";
// The console's trace view: a run's stored events as spans on a timeline. traceSpans is a
// pure function of the events (no DOM), so what the bars say can be checked against the
// store: each span's start and duration are milliseconds from the run's start, computed
// from the events' own timestamps and nothing else.
//
// Spans: the run; each model call (from the run entering model_running, or the previous
// call's end, to the call's usage event, with its tokens); each tool call (step_start to
// step_complete, with its result, marked "cached" when the tool-result cache answered);
// and zero-length marks for approvals asked, hooks,
// guardrails, hand-offs, errors and retries.
function traceSpans(events) {
  const ms = (e) => Date.parse(e.time);
  const start = events.length ? ms(events[0]) : 0;
  const at = (e) => ms(e) - start;
  const spans = [];
  const open = new Map(); // tool call id → its span
  let modelFrom = null, state = "";
  for (const e of events) {
    const d = e.data || {};
    switch (e.type) {
      case "status":
        state = d.state || "";
        modelFrom = state === "model_running" ? at(e) : null;
        break;
      case "usage":
        if (modelFrom !== null) {
          spans.push({ kind: "model", label: "model call" + (d.provider ? " (" + d.provider + ")" : ""), start: modelFrom, dur: at(e) - modelFrom,
            detail: { prompt_tokens: d.prompt_tokens || 0, completion_tokens: d.completion_tokens || 0, cost_usd: d.cost_usd || 0 }, events: [e] });
          modelFrom = state === "model_running" ? at(e) : null;
        }
        break;
      case "step_start": {
        const s = { kind: "tool", label: d.name, id: d.id, start: at(e), dur: 0, detail: {}, events: [e] };
        open.set(d.id, s); spans.push(s);
        break;
      }
      case "tool_call": case "tool_result": {
        const s = open.get(d.id);
        if (s) {
          s.events.push(e);
          if (e.type === "tool_result") {
            s.detail.is_error = !!d.is_error; s.detail.duration_ms = d.duration_ms;
            // A result from the tool-result cache: the tool did not run (the span carries agenthost.tool.cached).
            if (d.cached) { s.detail.cached = true; s.detail.cache_age_ms = d.cache_age_ms || 0; s.label += " (cached, " + ageText(d.cache_age_ms || 0) + " old)"; }
          }
        }
        break;
      }
      case "step_complete": {
        const s = open.get(d.id);
        if (s) { s.dur = at(e) - s.start; s.detail.status = d.status; s.events.push(e); open.delete(d.id); }
        break;
      }
      case "approval_required": case "hook": case "guardrail": case "handoff": case "error": case "circuit":
        spans.push({ kind: e.type === "approval_required" ? "approval" : e.type, label: markLabel(e), start: at(e), dur: 0, detail: d, events: [e] });
        break;
      case "run_finished":
        spans.unshift({ kind: "run", label: "run " + (d.status || ""), start: 0, dur: at(e), detail: { status: d.status, reason: d.reason, usage: d.usage }, events: [e] });
        break;
    }
  }
  if (!spans.length || spans[0].kind !== "run") { // a run still going, or cut short
    const end = events.length ? at(events[events.length - 1]) : 0;
    spans.unshift({ kind: "run", label: "run (not finished)", start: 0, dur: end, detail: {}, events: [] });
  }
  return spans;
}

// ageText is a cached result's age as a person reads it: "850 ms", "12 s", "3 min", "2 h".
function ageText(ms) {
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return Math.round(ms / 1000) + " s";
  if (ms < 3600000) return Math.round(ms / 60000) + " min";
  return Math.round(ms / 3600000) + " h";
}

function markLabel(e) {
  const d = e.data || {};
  switch (e.type) {
    case "approval_required": return "approval asked: " + d.name;
    case "hook": return "hook " + d.name + " " + (d.point || "") + ": " + (d.verdict || "");
    case "guardrail": return "guardrail " + (d.name || "") + ": " + (d.action || "");
    case "handoff": return "hand-off " + d.from + " → " + d.to;
    case "circuit": return "circuit " + (d.provider || "") + " " + (d.state || "");
  }
  return e.type + ": " + (d.message || d.kind || "");
}

// drawTrace renders spans into box as rows: a label, then a track holding the bar,
// scaled to zoom (1 = the track's width). Each bar carries data-kind, data-start-ms and
// data-dur-ms; clicking a row shows its span's events.
function drawTrace(box, spans, zoom, onPick) {
  const total = Math.max(1, spans[0].dur);
  const lane = document.createElement("div");
  lane.className = "trace-lane";
  for (const s of spans) {
    const row = document.createElement("div");
    row.className = "trace-row";
    const label = document.createElement("span");
    label.className = "trace-label";
    label.textContent = s.label + " · " + s.dur + " ms";
    label.title = label.textContent;
    const track = document.createElement("div");
    track.className = "trace-track";
    track.style.width = "calc(" + (100 * zoom) + "% - 248px)"; // the label takes 248px
    const bar = document.createElement("div");
    bar.className = "trace-bar k-" + s.kind + (s.detail && (s.detail.is_error || s.detail.status === "error") ? " error" : "");
    bar.dataset.kind = s.kind;
    bar.dataset.startMs = String(s.start);
    bar.dataset.durMs = String(s.dur);
    if (s.id) bar.dataset.id = s.id;
    if (s.detail && s.detail.cached) { // striped: the result came from the cache
      bar.classList.add("cached"); bar.dataset.cached = "true"; bar.dataset.cacheAgeMs = String(s.detail.cache_age_ms);
      bar.style.backgroundImage = "repeating-linear-gradient(135deg, #bbf7d0 0 4px, #fff 4px 8px)"; bar.style.outline = "1px solid #15803d";
    }
    // A mark at the very end stays on the track (its data says where it is exactly).
    bar.style.left = Math.min(100 * s.start / total, 99.4) + "%";
    bar.style.width = s.dur > 0 ? Math.max(0.6, 100 * s.dur / total) + "%" : "3px";
    bar.title = label.textContent;
    track.appendChild(bar);
    row.append(label, track);
    row.onclick = () => onPick(s);
    lane.appendChild(row);
  }
  lane.style.width = "100%";
  box.replaceChildren(lane);
  box.dataset.zoom = String(zoom);
}
