"use strict";
// MCP resources in the console (GET /v1/mcp/resources, …/read): the Resources panel lists
// each MCP server's resources and templates; "attach" reads one and keeps what the server
// answered (AG-UI content parts, headed by where they are from) until the next message,
// which carries them after the typed text. Uses index.html's $, el, api and setStatus.

let attachments = []; // [{server, uri, parts}]

function showAttachments() {
  const box = $("attachments");
  box.replaceChildren();
  for (const [i, a] of attachments.entries()) {
    const chip = el("span", "attachment", "📎 " + a.uri + " ");
    chip.dataset.server = a.server; chip.dataset.uri = a.uri;
    const drop = el("button", "drop", "×"); drop.title = "remove";
    drop.onclick = () => { attachments.splice(i, 1); showAttachments(); };
    chip.appendChild(drop);
    box.appendChild(chip);
  }
  box.hidden = attachments.length === 0;
  document.body.dataset.attachments = String(attachments.length);
}

async function attachResource(server, uri) {
  try {
    const r = await api("/v1/mcp/resources/read?server=" + encodeURIComponent(server) + "&uri=" + encodeURIComponent(uri));
    attachments.push({ server, uri, parts: r.parts });
    showAttachments();
  } catch (e) { setStatus("attach " + uri + ": " + e.message, "error"); }
}

// messageContent is what the next user message carries: the typed text alone, or with the
// attachments a list of parts (and the attachments are then spent).
function messageContent(text) {
  if (!attachments.length) return text;
  const parts = text ? [{ type: "text", text }] : [];
  for (const a of attachments) parts.push(...a.parts);
  attachments = []; showAttachments();
  return parts;
}
function hasAttachments() { return attachments.length > 0; }

// contentText shows a message's content: a string, or its parts' text one after another
// (an image by URL as "[image]"; stored media are shown by media.js, showMedia).
function contentText(content) {
  if (typeof content === "string") return content;
  return (content || []).map((p) => p.type === "image" && !p.attachment ? "[image]" : (p.text || "")).filter(Boolean).join("\n\n");
}

async function showResources() {
  const box = $("resources"); box.hidden = false; $("workflows").hidden = true;
  for (const id of ["trace", "insights", "memory", "workflows"]) $(id).hidden = true;
  const close = el("button", "", "close"); close.onclick = () => { box.hidden = true; };
  const bar = el("div", "bar"); bar.append(el("b", "", "MCP resources"), el("span", "muted", "attach one to your next message"), close);
  const list = el("ul", "resource-list");
  box.replaceChildren(bar, list);
  try {
    const { servers } = await api("/v1/mcp/resources");
    for (const [server, resources] of Object.entries(servers)) {
      list.appendChild(el("li", "resource-server", server));
      for (const r of resources) {
        const li = el("li", "resource" + (r.uri_template ? " template" : ""));
        li.dataset.server = server;
        li.append(el("span", "name", r.name), " ");
        const attach = el("button", "attach", "attach");
        if (r.uri_template) { // a template: the user fills in its variables
          const uri = el("input", "uri"); uri.value = r.uri_template; uri.size = Math.max(20, r.uri_template.length);
          uri.setAttribute("aria-label", "URI of " + r.name);
          li.dataset.uri = r.uri_template;
          attach.onclick = () => attachResource(server, uri.value.trim());
          li.append(uri, " ", attach);
        } else {
          li.dataset.uri = r.uri;
          attach.onclick = () => attachResource(server, r.uri);
          li.append(el("span", "muted", r.uri + (r.mime_type ? " · " + r.mime_type : "")), " ", attach);
        }
        if (r.description) li.title = r.description;
        list.appendChild(li);
      }
    }
    if (!Object.keys(servers).length) list.appendChild(el("li", "muted", "no MCP server of this agent offers resources"));
    document.body.dataset.resources = "shown";
  } catch (e) { list.appendChild(el("li", "banner", e.message)); }
}
