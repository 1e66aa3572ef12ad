// The console's one script (no build step, no library): the debate page follows its SSE stream
// and swaps in the body the server renders; the start form shows the estimate before starting;
// review buttons post the decision. Every page works as plain HTML without it, except those two
// forms.
"use strict";

function follow(box) {
  const id = box.dataset.live, query = box.dataset.query || "";
  let timer = null, busy = false, again = false, done = false;
  const refresh = async () => {
    timer = null;
    if (busy) { again = true; return; }
    busy = true;
    try {
      const reply = await fetch(`/debates/${id}/live${query}`, {credentials: "same-origin"});
      if (reply.ok) {
        box.innerHTML = await reply.text();
        box.dataset.updates = String(Number(box.dataset.updates || 0) + 1);
      }
    } catch (e) { /* the next event tries again */ }
    busy = false;
    if (again) { again = false; schedule(); }
  };
  const schedule = () => { if (!timer) timer = setTimeout(refresh, 150); };
  const stream = new EventSource(`/api/debates/${id}/events${query}`);
  for (const kind of (box.dataset.kinds || "").split(" ")) {
    if (kind && kind !== "settled") stream.addEventListener(kind, schedule);
  }
  stream.addEventListener("settled", () => {
    // finished, or waiting for a reviewer: nothing more will come, so do not reconnect
    done = true;
    stream.close();
    box.dataset.stream = "closed";
    schedule();
  });
  stream.addEventListener("open", () => { box.dataset.stream = "open"; });
  stream.addEventListener("error", () => {
    if (!done && stream.readyState === EventSource.CLOSED) box.dataset.stream = "failed";
  });
}

function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

function money(usd) {  // as the server prints it (views.usd)
  const places = usd >= 1 || usd === 0 ? 2 : usd >= 0.001 ? 4 : 6;
  const [whole, cents] = usd.toFixed(places).split(".");
  return `$${whole}.${cents.slice(0, 2)}${cents.slice(2).replace(/0+$/, "")}`;
}

function startForm(form) {
  const out = document.getElementById("estimate"), problem = document.getElementById("start-error");
  const body = () => {
    const data = Object.fromEntries(new FormData(form));
    if (!data.mode) delete data.mode;
    data.topic = (data.topic || "").trim();
    return data;
  };
  const say = (el, text) => { el.textContent = text; el.hidden = !text; };
  const estimate = debounce(async () => {
    const data = body();
    if (!data.topic) { out.textContent = "Type a topic to see what it will cost."; return; }
    try {
      const reply = await fetch("/api/estimate", {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(data)});
      const e = await reply.json();
      if (!reply.ok) { out.textContent = e.error || "No estimate."; return; }
      if (e.cached_from) {   // a finished debate answers it: docs/caching-and-replay.md
        out.textContent = `Answered by debate ${e.cached_from}, finished within the cache ` +
          `window: its result is reused, no new calls, $0.`;
        out.dataset.ready = "true";
        return;
      }
      const range = e.usd_high > e.usd_low ? `${money(e.usd_low)}–${money(e.usd_high)}, typically ` +
        `${money(e.usd)} (it may hold up to ${money(e.ceiling_usd)} if replies run long)` :
        `about ${money(e.usd)}`;
      out.textContent = `Estimate: ${e.calls} calls, ${e.depth} dependent rounds, ${range}` +
        `${e.rehearsal ? " (rehearsal: the offline model costs nothing)" : ""}.`;
      out.dataset.ready = "true";
    } catch (err) { out.textContent = "Could not reach the server for an estimate."; }
  }, 250);
  form.addEventListener("input", estimate);
  form.preset.addEventListener("change", () => {
    for (const s of document.querySelectorAll("[data-preset]")) s.hidden = s.dataset.preset !== form.preset.value;
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = body();
    if (!data.topic) { say(problem, "Say what to debate: the topic is empty."); form.topic.focus(); return; }
    say(problem, "");
    form.querySelector("button").disabled = true;
    try {
      const reply = await fetch("/api/debates", {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(data)});
      const j = await reply.json();
      if (reply.ok) { location.assign(`/debates/${j.id}`); return; }
      say(problem, j.error || `The server refused (${reply.status}).`);
    } catch (err) { say(problem, "Could not reach the server: is it running?"); }
    form.querySelector("button").disabled = false;
  });
}

async function decide(event) {
  event.preventDefault();
  const form = event.target, problem = form.querySelector("[role=alert]");
  const decision = event.submitter ? event.submitter.value : "approve";
  const reason = form.reason.value.trim();
  const say = (text) => { problem.textContent = text; problem.hidden = false; };
  if (decision === "escalate" && !reason) {
    say("Say why you escalate: the reason goes with the escalation.");
    form.reason.focus();
    return;
  }
  const body = {decision, reason};
  if (form.about && form.about.value) body.about = form.about.value;
  if (form.winner && form.winner.value) body.winner = form.winner.value;
  const buttons = form.querySelectorAll("button");
  for (const b of buttons) b.disabled = true;
  try {
    const reply = await fetch(`/api/reviews/${form.dataset.review}/decision`, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    const j = await reply.json();
    if (reply.ok) {
      location.assign(j.rerun_id ? `/debates/${j.rerun_id}` : location.pathname + location.search);
      return;
    }
    say(j.error || `The server refused (${reply.status}).`);
  } catch (err) { say("Could not reach the server: nothing was decided."); }
  for (const b of buttons) b.disabled = false;
}

const live = document.querySelector("[data-live]");
if (live) follow(live);
const start = document.getElementById("start");
if (start) startForm(start);
document.addEventListener("submit", (event) => {
  if (event.target.matches("form.decide")) decide(event);
});
