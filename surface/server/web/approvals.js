"use strict";
// Delegated trust in the console (docs/approvals.md, docs/credentials.md):
//  - a call waiting for approval shows what the answer is bound to (the rule that asked,
//    when the request expires) with Approve / Deny and the scope of a yes: this call
//    once, this tool (or the rule) for this session, or for me for N hours; the answer
//    is the AG-UI resume payload the HTTP API reads ({approved, args_hash, scope,
//    for_rule, hours});
//  - the Grants panel lists the caller's standing grants (GET /v1/approvals/grants),
//    the users they are for and who gave them by name (the id as the cell's title),
//    each revocable (DELETE /v1/approvals/grants/{id});
//  - a call waiting for the user to connect their account to a per-user MCP server
//    (input_required with a connect link) offers Connect, which opens the sign-in in a
//    new window, and Resume once they have signed in.
// Uses index.html's $, el, api, headers, run, cards, card, setCardState, setStatus and me.

// approvalOfEvent is an approval_required event's data in the interrupt metadata's shape.
function approvalOfEvent(d) {
  return { toolName: d.name, arguments: d.arguments, argsHash: d.args_hash, expiresAt: d.expires_at, rule: d.rule };
}

function askApproval(id, message, meta) {
  const m = meta || {};
  const c = cards.get(id) || card(id, m.toolName || "tool");
  setCardState(c, "awaiting approval", "awaiting");
  if (c.querySelector(".approval")) return;
  const box = el("div", "approval");
  const facts = el("dl", "approval-call");
  if (m.rule) facts.append(el("dt", "", "asked by rule"), el("dd", "rule", m.rule));
  if (m.expiresAt) {
    const dd = el("dd", "expires", new Date(m.expiresAt).toLocaleString());
    dd.dataset.at = m.expiresAt;
    facts.append(el("dt", "", "expires"), dd);
  }
  const scope = el("select", "scope"); scope.setAttribute("aria-label", "Allow for");
  for (const [v, label] of [["once", "this call once"], ["session", "for this session"], ["user", "for me for…"]]) {
    const o = el("option", "", label); o.value = v; scope.appendChild(o);
  }
  const hours = el("input", "hours"); hours.type = "number"; hours.min = "1"; hours.max = "8784"; hours.value = "8";
  const hoursField = el("label", "hours-field"); hoursField.append(hours, " hours"); hoursField.hidden = true;
  const forRule = el("input", "for-rule"); forRule.type = "checkbox";
  const ruleField = el("label", "for-rule-field"); ruleField.append(forRule, " the rule, not only " + (m.toolName || "this tool"));
  ruleField.hidden = true;
  // Hours are for a grant for me; "the rule" for any grant, when a rule asked.
  scope.onchange = () => { hoursField.hidden = scope.value !== "user"; ruleField.hidden = !m.rule || scope.value === "once"; };
  const yes = el("button", "primary approve", "Approve"), no = el("button", "reject", "Deny");
  yes.onclick = () => {
    // A grant for a user names them: a caller with no name (the administrator's token)
    // cannot give one, and the host would take the answer as a no.
    if (scope.value === "user" && !me.name) { setStatus("a grant for yourself needs you signed in as a user", "error"); return; }
    const p = { approved: true, scope: scope.value };
    if (m.argsHash) p.args_hash = m.argsHash; // binds the yes to the arguments shown
    if (scope.value !== "once" && m.rule && forRule.checked) p.for_rule = true;
    if (scope.value === "user") p.hours = Number(hours.value);
    run([], [{ interruptId: id, status: "resolved", payload: p }]);
  };
  no.onclick = () => run([], [{ interruptId: id, status: "resolved", payload: { approved: false, reason: "denied in the console" } }]);
  const allow = el("label", "scope-field", "Allow "); allow.appendChild(scope);
  box.append(el("span", "muted", message || "This call needs your approval."), facts, allow, hoursField, ruleField, yes, no);
  c.appendChild(box);
}

// askConnect is a call waiting for the user to connect their account: Connect asks the
// server for the sign-in URL (GET link, with the console's token) and opens it in a
// new window; Resume runs the call again once they have signed in.
function askConnect(id, message, link) {
  const c = cards.get(id) || card(id, "tool");
  setCardState(c, "awaiting connection", "awaiting");
  if (c.querySelector(".approval")) return;
  const box = el("div", "approval connect-box");
  const connect = el("button", "primary connect", "Connect"), resume = el("button", "resume", "Resume"), no = el("button", "decline", "Decline");
  const note = el("span", "muted connect-note", "");
  connect.onclick = async () => {
    const w = window.open("", "_blank"); // opened on the click itself, so no popup blocker stops it
    try {
      // The console speaks to its own server: the link's path, on this origin.
      const { url } = await api(new URL(link, location.href).pathname);
      if (w) { w.opener = null; w.location.href = url; note.textContent = "Sign in in the new window, then Resume."; }
      else { const a = el("a", "connect-link", "open the sign-in page"); a.href = url; a.target = "_blank"; a.rel = "noopener"; note.replaceChildren(a, ", then Resume."); }
      document.body.dataset.connect = "opened";
    } catch (e) { if (w) w.close(); note.textContent = "connect: " + e.message; }
  };
  resume.onclick = () => run([], [{ interruptId: id, status: "resolved", payload: { approved: true } }]);
  no.onclick = () => run([], [{ interruptId: id, status: "resolved", payload: { approved: false, reason: "declined in the console" } }]);
  box.append(el("span", "muted", message || "Connect your account to go on."), connect, resume, no, note);
  c.appendChild(box);
}

// ---- the Grants panel ----
// userCell shows a user by the name the server gave (as text: a name is anyone's to
// choose), the id in its title; by the id when the server knows no name.
function userCell(cls, prefix, id, name) {
  const td = el("td", cls, prefix + (name || id || ""));
  if (name) td.title = id;
  return td;
}

async function showGrants() {
  const box = $("grants"); box.hidden = false;
  for (const p of ["trace", "insights", "memory", "resources", "workflows"]) if ($(p)) $(p).hidden = true;
  const bar = el("div", "bar"), close = el("button", "", "close"), list = el("table", "grants-list");
  close.onclick = () => { box.hidden = true; };
  bar.append(el("b", "", "Grants"), el("span", "muted", "standing approvals you gave or that are yours"), close);
  box.replaceChildren(bar, list);
  try {
    const { grants } = await api("/v1/approvals/grants");
    const head = el("tr");
    for (const h of ["allows", "scope", "for", "given by", "expires", ""]) head.appendChild(el("th", "", h));
    list.appendChild(head);
    for (const g of grants || []) {
      const tr = el("tr", "grant"); tr.dataset.id = g.id;
      const revoke = el("button", "revoke", "Revoke");
      revoke.onclick = async () => {
        const r = await fetch("/v1/approvals/grants/" + encodeURIComponent(g.id), { method: "DELETE", headers: headers() });
        if (r.ok || r.status === 404) showGrants(); else setStatus("revoke: " + r.status, "error");
      };
      const exp = el("td", "expires", new Date(g.expires).toLocaleString()); exp.dataset.at = g.expires;
      tr.append(el("td", "allows", g.rule ? "rule " + g.rule : g.tool), el("td", "scope", g.scope),
        g.scope === "session" ? el("td", "for", "session " + g.session) : userCell("for", "user ", g.user, g.user_name),
        userCell("by", "", g.by, g.by_name), exp);
      const td = el("td"); td.appendChild(revoke); tr.appendChild(td);
      list.appendChild(tr);
    }
    if (!(grants || []).length) box.appendChild(el("div", "muted no-grants", "no grants"));
    document.body.dataset.grants = String((grants || []).length);
  } catch (e) { box.appendChild(el("div", "banner", e.message)); document.body.dataset.grants = "error"; }
}

// The panel and its sidebar button are added here, so the page's markup stays the same
// (this runs before the page's own script: plain DOM calls). #grants=1 opens the panel.
(function addGrantsPanel() {
  const b = document.createElement("button"); b.id = "show-grants"; b.textContent = "Grants"; b.onclick = () => showGrants();
  document.getElementById("show-memory").after(b);
  const s = document.createElement("section"); s.id = "grants"; s.className = "panel"; s.hidden = true;
  document.getElementById("memory").after(s);
  window.addEventListener("load", () => { if (new URLSearchParams(location.hash.slice(1)).get("grants")) showGrants(); });
})();
