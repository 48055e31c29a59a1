// The testbed's dashboard: live state from GET /v1/events (server-sent
// events read with fetch, so the token travels as a header), a job's
// attempts from GET /v1/jobs/{id} for its timeline. No build step, no
// dependencies. Everything from the server is inserted as text, never HTML.
"use strict";

const KEY = "mrtb-token";
const $ = (id) => document.getElementById(id);
let token = null;
let selected = null; // job id number
let lastState = null;
let jobTimer = null;
let bars = []; // drawn bars of the timeline, for hovering
let fromLink = false; // the secret came in the address (#token=)

function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

function setHash(params) {
  const s = params.toString();
  history.replaceState(null, "", s ? "#" + s : location.pathname);
}

function init() {
  const p = hashParams();
  if (p.has("token")) {
    sessionStorage.setItem(KEY, p.get("token"));
    p.delete("token");
    setHash(p);
    fromLink = true;
  }
  if (p.has("job")) selected = parseJob(p.get("job"));
  token = sessionStorage.getItem(KEY);
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $("token").value);
    token = $("token").value;
    fromLink = false;
    $("login").hidden = true;
    start();
  });
  $("job-close").addEventListener("click", () => selectJob(null));
  $("gantt").addEventListener("mousemove", hover);
  $("gantt").addEventListener("mouseleave", () => ($("tip").hidden = true));
  window.addEventListener("resize", () => lastJob && drawGantt(lastJob));
  if (!token) {
    showLogin("");
  } else {
    start();
  }
}

// A link may carry only a read credential: one that can change the
// cluster (the administrator's cluster.token, a client's or a worker's)
// is dropped and asked for instead, so that no address bar, history or
// shared link holds it. Typed in, any credential opens the page, with a
// warning that it can change the cluster.
async function start() {
  let role = null;
  try {
    const r = await fetch("/v1/whoami", auth());
    if (r.status === 401) {
      sessionStorage.removeItem(KEY);
      showLogin("wrong token");
      return;
    }
    if (r.ok) role = (await r.json()).role;
  } catch (e) {
    // the master is away: connect() retries
  }
  if (role && role !== "read" && fromLink) {
    sessionStorage.removeItem(KEY);
    token = null;
    showLogin("a link may carry only a read credential");
    $("login-why").textContent =
      "The link carried a credential of the " + role + " role, which can change the cluster. " +
      "Give the dashboard a read one ([credentials] read in cluster.toml), or type a secret here.";
    return;
  }
  $("role").textContent = role && role !== "read" ? role + " credential: it can change the cluster" : "";
  connect();
}

function parseJob(s) {
  const n = parseInt(String(s).replace(/^job-/, ""), 10);
  return Number.isFinite(n) ? n : null;
}

function showLogin(msg) {
  $("main").hidden = true;
  $("login").hidden = false;
  setConn(msg || "token needed", "down");
}

function setConn(text, cls) {
  const c = $("conn");
  c.textContent = text;
  c.className = "badge " + (cls || "");
}

function auth() {
  return { headers: { Authorization: "Bearer " + token } };
}

// Reads the event stream until it ends, then reconnects.
async function connect() {
  for (;;) {
    try {
      const resp = await fetch("/v1/events", auth());
      if (resp.status === 401) {
        sessionStorage.removeItem(KEY);
        showLogin("wrong token");
        return;
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      setConn("live", "live");
      $("main").hidden = false;
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          handleEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
    } catch (e) {
      // fall through to the retry
    }
    setConn("reconnecting", "down");
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function handleEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (event === "state" && data.length) render(JSON.parse(data.join("\n")));
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function mb(bytes) {
  return (bytes / 1e6).toFixed(bytes >= 1e8 ? 0 : 1);
}

// A bar of segments [[fraction, colour], ...] and a label.
function bar(segments, label) {
  const td = el("td");
  const b = el("span", null, "bar");
  let left = 0;
  for (const [f, colour] of segments) {
    const s = el("span");
    const w = Math.max(0, Math.min(1, f)) * 100;
    s.style.left = left + "%";
    s.style.width = w + "%";
    s.style.background = colour;
    left += w;
    b.appendChild(s);
  }
  td.appendChild(b);
  td.appendChild(el("span", label, "bar-label"));
  return td;
}

function describeScheduler(s) {
  const params = Object.entries(s)
    .filter(([k]) => k !== "policy")
    .map(([k, v]) => k + "=" + (typeof v === "object" ? JSON.stringify(v) : v));
  return s.policy + (params.length ? " (" + params.join(", ") + ")" : "");
}

function render(state) {
  lastState = state;
  $("scheduler").textContent =
    "scheduler: " + describeScheduler(state.scheduler) + " · reduces: " + state.cluster.reduce_placement;
  const c = state.cluster;
  $("cluster-summary").textContent =
    `${c.workers_alive} of ${c.workers_configured} workers alive · ${c.slots_alive} slots · ` +
    `${c.pending_tasks} maps waiting · ${c.maps_rerun} maps re-run · ${c.blocks_copied} blocks copied`;
  renderWorkers(state.workers);
  renderJobs(state.jobs);
  if (selected !== null) {
    const j = state.jobs.find((j) => j.job === selected);
    // A running job's timeline follows it; a finished one is fetched once.
    if (j && (!lastJob || lastJob.job !== selected || lastJob.state !== j.state || !["succeeded", "failed"].includes(j.state)))
      scheduleJobFetch();
  }
}

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

function renderWorkers(workers) {
  const tb = $("workers").tBodies[0];
  tb.replaceChildren();
  for (const w of workers) {
    const tr = el("tr");
    tr.dataset.worker = w.name;
    if (!w.alive) tr.className = "lost";
    tr.appendChild(el("td", w.name));
    tr.appendChild(el("td", w.alive ? "alive" : "lost"));
    // Busy: the attempts the master has running there (its own record,
    // newer than the worker's last heartbeat).
    const busy = w.alive ? w.running : 0;
    const free = Math.max(0, w.slots - busy - w.background);
    const n = Math.max(1, w.slots);
    tr.appendChild(
      bar(
        [[busy / n, css("--reduce")], [w.background / n, "#9aa0a8"]],
        `${busy} / ${w.background} / ${w.alive ? free : 0}`,
      ),
    );
    for (const [rate, total] of [[w.nic_rx_rate, w.nic_rx_bytes], [w.nic_tx_rate, w.nic_tx_bytes]]) {
      const cap = w.nic_cap;
      const label = cap
        ? `${mb(rate)} / ${mb(cap)} MB/s`
        : `${mb(rate)} MB/s (no cap)`;
      const td = bar([[cap ? rate / cap : 0, css("--remote")]], label);
      td.title = `${mb(total)} MB in all`;
      tr.appendChild(td);
    }
    tr.appendChild(el("td", String(w.blocks)));
    tr.appendChild(el("td", w.disk_free_bytes == null ? "" : mb(w.disk_free_bytes) + " MB"));
    tb.appendChild(tr);
  }
}

const MAX_JOB_ROWS = 500;

function renderJobs(jobs) {
  const tb = $("jobs").tBodies[0];
  tb.replaceChildren();
  for (const j of jobs.slice(0, MAX_JOB_ROWS)) {
    const tr = el("tr");
    tr.dataset.job = j.job;
    if (j.job === selected) tr.className = "selected";
    tr.addEventListener("click", () => selectJob(j.job));
    tr.appendChild(el("td", "job-" + j.job));
    tr.appendChild(el("td", j.name));
    tr.appendChild(el("td", j.workload));
    tr.appendChild(el("td", j.state, "state state-" + j.state));
    const maps = j.tasks;
    tr.appendChild(bar([[maps ? j.tasks_done / maps : 0, css("--local")]], `${j.tasks_done} / ${maps}`));
    tr.appendChild(
      j.reduces
        ? bar([[j.reduces_done / j.reduces, css("--reduce")]], `${j.reduces_done} / ${j.reduces}`)
        : el("td", "–"),
    );
    const done = j.data_local + j.data_remote;
    tr.appendChild(el("td", done ? ((100 * j.data_local) / done).toFixed(0) + "%" : "–"));
    tr.appendChild(el("td", j.jct_ms == null ? "" : (j.jct_ms / 1000).toFixed(2) + " s"));
    tb.appendChild(tr);
  }
  if (jobs.length > MAX_JOB_ROWS) {
    const tr = el("tr");
    const td = el("td", `… and ${jobs.length - MAX_JOB_ROWS} older jobs`, "muted");
    td.colSpan = 8;
    tr.appendChild(td);
    tb.appendChild(tr);
  }
}

function selectJob(id) {
  selected = id;
  lastJob = null;
  const p = hashParams();
  if (id === null) p.delete("job");
  else p.set("job", "job-" + id);
  setHash(p);
  $("job").hidden = id === null;
  if (lastState) renderJobs(lastState.jobs);
  if (id !== null) scheduleJobFetch();
}

// At most one fetch of the selected job's report a second.
let lastJob = null;
let decisionsKept = null; // unknown until the first answer
let fetching = false;
let lastFetch = 0;

function scheduleJobFetch() {
  if (fetching || jobTimer) return;
  const wait = Math.max(0, 1000 - (Date.now() - lastFetch));
  jobTimer = setTimeout(fetchJob, wait);
}

async function fetchJob() {
  jobTimer = null;
  if (selected === null) return;
  fetching = true;
  lastFetch = Date.now();
  try {
    const resp = await fetch("/v1/jobs/" + selected, auth());
    if (resp.ok) {
      const r = await resp.json();
      // The decision record, when the master keeps one: why each attempt
      // went where it did, shown on hover.
      if (decisionsKept !== false) {
        const d = await fetch("/v1/decisions?job=" + selected, auth());
        if (d.ok) {
          const log = await d.json();
          decisionsKept = log.recording;
          r.decisions = log.recording ? log : null;
        }
      }
      if (r.job === selected) {
        lastJob = r;
        $("job").hidden = false;
        renderJob(r);
      }
    }
  } finally {
    fetching = false;
  }
}

function renderJob(r) {
  $("job-title").textContent = `job-${r.job} ${r.name} (${r.workload} of ${r.input}, ${r.scheduler}): ${r.state}`;
  const rows = [
    ["state", r.state + (r.error ? ": " + r.error : "")],
    ["data-local maps (DATA_LOCAL_MAPS)", r.data_local],
    ["data-remote maps (OTHER_LOCAL_MAPS)", r.data_remote],
    ["maps done / total", `${r.tasks_done} / ${r.tasks}`],
    ["reduces done / total", `${r.reduces_done} / ${r.reduces}`],
    ["map input read locally", mb(r.bytes_local) + " MB"],
    ["map input read remotely", mb(r.bytes_remote) + " MB"],
    ["shuffled", mb(r.shuffle_bytes) + " MB"],
    ["attempts", r.attempts.length + " (" + r.attempts.filter((a) => !a.ok).length + " unsuccessful), " +
      (r.running || []).length + " running"],
    ["JCT", r.jct_ms == null ? "running" : (r.jct_ms / 1000).toFixed(2) + " s"],
  ];
  if (r.output) {
    const n = r.output_replication;
    rows.push(["output", n == null ? r.output : `${r.output} (${n} ${n === 1 ? "replica" : "replicas"})`]);
  }
  const tb = $("counters").tBodies[0];
  tb.replaceChildren();
  for (const [k, v] of rows) {
    const tr = el("tr");
    tr.appendChild(el("th", k));
    const td = el("td", String(v));
    td.dataset.counter = k;
    tr.appendChild(td);
    tb.appendChild(tr);
  }
  drawGantt(r);
}

// The timeline: one row per worker slot, one bar per attempt; running
// attempts are drawn pale up to now.
function drawGantt(r) {
  const canvas = $("gantt");
  const attempts = r.attempts;
  const nowMs = Math.max(0, Date.now() - r.submit_unix_ms);
  const running = (r.running || []).map((a) => ({ ...a, end_ms: nowMs, running: true, ok: true }));
  const rowKey = (a) => a.worker + "\u0000" + (a.slot == null ? "?" : a.slot);
  const keys = [...new Set(attempts.concat(running).map(rowKey))];
  const natural = new Intl.Collator(undefined, { numeric: true });
  keys.sort((x, y) => {
    const [wx, sx] = x.split("\u0000");
    const [wy, sy] = y.split("\u0000");
    return natural.compare(wx, wy) || Number(sx) - Number(sy);
  });
  const row = new Map(keys.map((k, i) => [k, i]));
  const rowH = keys.length > 60 ? 8 : 18;
  const left = 90, top = 8, axis = 24;
  const width = Math.max(600, $("gantt-box").clientWidth - 2);
  const height = top + keys.length * rowH + axis;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.width = width + "px";
  canvas.style.height = height + "px";
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, height);
  const end = Math.max(1, ...attempts.map((a) => a.end_ms), ...running.map((a) => a.end_ms), r.jct_ms || 0);
  const x = (ms) => left + ((width - left - 10) * ms) / end;
  // Axis and grid.
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = css("--muted");
  g.strokeStyle = css("--line");
  const step = niceStep(end / 1000 / 8);
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  for (let i = 0; i * step <= end / 1000 + 1e-9; i++) {
    const t = i * step;
    const px = x(t * 1000);
    g.beginPath();
    g.moveTo(px, top);
    g.lineTo(px, height - axis + 4);
    g.stroke();
    g.fillText(t.toFixed(decimals) + " s", px - 8, height - 6);
  }
  keys.forEach((k, i) => {
    if (rowH >= 12 || i % Math.ceil(12 / rowH) === 0) {
      const [w, s] = k.split("\u0000");
      g.fillText(`${w} · ${s}`, 4, top + i * rowH + rowH - 4);
    }
  });
  bars = [];
  const why = decisionsOf(r);
  const colours = { local: css("--local"), remote: css("--remote"), reduce: css("--reduce"), failed: css("--failed") };
  const colourOf = (a) => (a.kind === "reduce" ? colours.reduce : a.locality === "data-remote" ? colours.remote : colours.local);
  for (const a of attempts) {
    const y = top + row.get(rowKey(a)) * rowH + 1;
    const x0 = x(a.start_ms);
    const w = Math.max(1.5, x(a.end_ms) - x0);
    const h = rowH - 2;
    if (a.ok) {
      g.fillStyle = colourOf(a);
      g.fillRect(x0, y, w, h);
    } else {
      g.strokeStyle = colours.failed;
      g.lineWidth = 1.5;
      g.strokeRect(x0 + 0.75, y + 0.75, Math.max(0.5, w - 1.5), h - 1.5);
    }
    bars.push({ x0, x1: x0 + w, y0: y, y1: y + h, a, why: why(a) });
  }
  canvas.dataset.bars = String(bars.length);
  g.globalAlpha = 0.35;
  for (const a of running) {
    const y = top + row.get(rowKey(a)) * rowH + 1;
    const x0 = x(a.start_ms);
    const w = Math.max(1.5, x(a.end_ms) - x0);
    g.fillStyle = colourOf(a);
    g.fillRect(x0, y, w, rowH - 2);
    bars.push({ x0, x1: x0 + w, y0: y, y1: y + rowH - 2, a, why: why(a) });
  }
  g.globalAlpha = 1;
  canvas.dataset.running = String(running.length);
}

// The decision record's row for an attempt: the launch of the same task and
// kind on the same worker nearest the attempt's start (ms since the job's
// submission); a function from attempt to its row's words, or to "".
function decisionsOf(r) {
  const log = r.decisions;
  if (!log) return () => "";
  const name = (w) => log.workers[w] ?? "w?" + w;
  const launches = log.decisions.filter((d) => d.kind !== "idle");
  return (a) => {
    let best = null;
    for (const d of launches) {
      if (d.task !== a.task || d.kind !== a.kind || name(d.worker) !== a.worker) continue;
      const t = log.now_unix_ms - log.now_ms + d.time_ms - r.submit_unix_ms;
      const gap = Math.abs(t - a.start_ms);
      if (!best || gap < best.gap) best = { d, gap };
    }
    if (!best) return "";
    const d = best.d;
    let s = `why: ${d.rule}`;
    if (d.waited_ms != null && d.threshold_ms != null)
      s += ` (waited ${(d.waited_ms / 1000).toFixed(2)} s of ${(d.threshold_ms / 1000).toFixed(2)} s)`;
    if (d.order) s += `, place ${d.rank + 1} in ${d.order} order`;
    if (d.replicas.length) s += `\ninput on ${d.replicas.map(name).join(", ")}; offered ${name(d.offered)} (${d.free_slots} free)`;
    return s;
  };
}

function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-3))));
  for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
  return 10 * p;
}

function hover(e) {
  const rect = e.target.getBoundingClientRect();
  const px = e.clientX - rect.left, py = e.clientY - rect.top;
  const hit = bars.find((b) => px >= b.x0 && px <= b.x1 && py >= b.y0 && py <= b.y1);
  const tip = $("tip");
  if (!hit) {
    tip.hidden = true;
    return;
  }
  const a = hit.a;
  const where =
    a.kind === "reduce" ? "reduce" : a.locality === "data-remote" ? `data-remote, read from ${a.source}` : "data-local";
  tip.textContent = a.running
    ? `task ${a.task} ${a.kind}, attempt ${a.attempt}, running\n${a.worker} slot ${a.slot ?? "?"} · ${where}\n` +
      `since ${(a.start_ms / 1000).toFixed(2)} s`
    : `task ${a.task} ${a.kind}, attempt ${a.attempt}\n${a.worker} slot ${a.slot} · ${where}\n` +
      `${(a.start_ms / 1000).toFixed(2)} s – ${(a.end_ms / 1000).toFixed(2)} s ` +
      `(${((a.end_ms - a.start_ms) / 1000).toFixed(2)} s), ${mb(a.input_bytes)} MB in` +
      (a.ok ? "" : `\n${a.error || "unsuccessful"}`);
  if (hit.why) tip.textContent += "\n" + hit.why;
  tip.style.left = e.clientX + 12 + "px";
  tip.style.top = e.clientY + 12 + "px";
  tip.hidden = false;
}

init();
