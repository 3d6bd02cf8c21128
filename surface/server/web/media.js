"use strict";
// Media in the console. A stored message's image, audio and file parts hold a reference
// (attachment: the sha256 of the bytes), never the bytes: showMedia fetches each one from
// GET /v1/sessions/{id}/attachments/{ref} with the page's token and shows an image
// inline (a blob: URL, which the page's CSP allows for images only) and offers any other
// file as a download. The upload control (Attach, drag and drop onto the prompt, paste)
// reads files and sends them with the next message as AG-UI binary parts, through
// resources.js's attachments. Uses index.html's $, el, headers, setStatus and thread.

const mediaBlobs = new Map(); // session/ref → blob: URL, for this page's life

function attachmentPath(ref, name) {
  return "/v1/sessions/" + encodeURIComponent(thread) + "/attachments/" + encodeURIComponent(ref) +
    (name ? "?name=" + encodeURIComponent(name) : "");
}

async function attachmentURL(ref, name) {
  const key = thread + "/" + ref;
  if (!mediaBlobs.has(key)) {
    mediaBlobs.set(key, (async () => {
      const r = await fetch(attachmentPath(ref, name), { headers: headers() });
      if (!r.ok) throw new Error("attachment " + ref.slice(0, 12) + ": " + r.status);
      return URL.createObjectURL(await r.blob());
    })());
  }
  try { return await mediaBlobs.get(key); } catch (e) { mediaBlobs.delete(key); throw e; }
}

function sizeText(n) {
  if (!n) return "";
  if (n < 1024) return n + " B";
  if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
  return (n / (1 << 20)).toFixed(1) + " MiB";
}

// showMedia appends to box the media parts of parts (stored loop parts: type,
// attachment, mime_type, name, size); nothing when there are none.
function showMedia(box, parts) {
  const media = (parts || []).filter((p) => p.attachment && p.type !== "text");
  if (!media.length || !thread) return;
  const row = el("div", "media");
  for (const p of media) {
    const name = p.name || p.attachment.slice(0, 12);
    const label = name + " · " + [p.mime_type, sizeText(p.size)].filter(Boolean).join(" · ");
    if (p.type === "image") {
      const img = el("img", "media-image");
      img.alt = name; img.title = label; img.dataset.ref = p.attachment;
      attachmentURL(p.attachment, p.name).then((u) => { img.src = u; }, (e) => { img.replaceWith(el("span", "banner", e.message)); });
      row.appendChild(img);
    } else {
      const a = el("a", "media-file", label);
      a.href = "#"; a.dataset.ref = p.attachment; a.title = "download " + name;
      a.onclick = async (e) => {
        if (a.download) return; // the blob is ready: the browser downloads it
        e.preventDefault();
        try { a.href = await attachmentURL(p.attachment, p.name); a.download = name; a.click(); }
        catch (err) { setStatus("download " + name + ": " + err.message, "error"); }
      };
      row.appendChild(a);
    }
  }
  box.appendChild(row);
}

// ---- upload: files become binary parts of the next message ----
function readBase64(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ""));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

async function attachFiles(files) {
  for (const f of files) {
    try {
      const data = await readBase64(f);
      // The type is the browser's guess; the server sniffs the bytes and keeps its own.
      attachments.push({ server: "", uri: f.name + " (" + sizeText(f.size) + ")", parts: [{ type: "binary", mimeType: f.type || "application/octet-stream", filename: f.name, data }] });
    } catch (e) { setStatus("attach " + f.name + ": " + e.message, "error"); }
  }
  showAttachments();
}

// Set up once the page's own script (which defines $ and el, after this one) has run.
function uploadControl() {
  const input = el("input"); input.type = "file"; input.multiple = true; input.id = "upload"; input.hidden = true;
  const button = el("button", "", "Attach"); button.id = "attach-file"; button.title = "Attach files to the next message (or drop or paste them)";
  button.onclick = () => input.click();
  input.onchange = async () => { await attachFiles([...input.files]); input.value = ""; };
  const prompt = $("prompt");
  prompt.parentNode.insertBefore(input, prompt);
  prompt.parentNode.insertBefore(button, prompt);
  prompt.addEventListener("dragover", (e) => { if (e.dataTransfer.types.includes("Files")) e.preventDefault(); });
  prompt.addEventListener("drop", (e) => { if (e.dataTransfer.files.length) { e.preventDefault(); attachFiles([...e.dataTransfer.files]); } });
  prompt.addEventListener("paste", (e) => { const fs = [...(e.clipboardData || {}).files || []]; if (fs.length) { e.preventDefault(); attachFiles(fs); } });
}
document.addEventListener("DOMContentLoaded", uploadControl);
