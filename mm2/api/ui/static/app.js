// mm2's page: polls the REST API every 2 s and draws what it says. No framework, no CDN.
"use strict";

const POLL_MS = 2000;
const KEEP_MS = 5 * 60 * 1000;
const COLORS = ["#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00", "#00838f"];
const history = {}; // flow -> [{t, lag, rate}]
const lastCopied = {}; // flow -> {t, copied}
const errors = [];
const seenErrors = new Set();

async function getJson(path) {
  const answer = await fetch(path, { headers: { Accept: "application/json" } });
  if (!answer.ok) throw new Error(`${path}: ${answer.status}`);
  return answer.json();
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function stateBadge(state) {
  return el("span", state, { class: `state state-${state}` });
}

function noteError(text) {
  if (!text || seenErrors.has(text)) return;
  seenErrors.add(text);
  errors.unshift({ at: new Date(), text });
  errors.length = Math.min(errors.length, 30);
  const list = document.getElementById("errors");
  list.replaceChildren(...errors.map((e) =>
    el("li", `${e.at.toLocaleTimeString()}  ${e.text}`)));
}

async function act(method, path) {
  const answer = await fetch(path, { method });
  if (!answer.ok) noteError(`${method} ${path}: ${answer.status} ${await answer.text()}`);
  refresh();
}

function flowButtons(flow) {
  const cell = el("td");
  const base = `/flows/${encodeURIComponent(flow.source)}/${encodeURIComponent(flow.target)}`;
  const pause = el("button", "pause", { "data-action": "pause" });
  pause.onclick = () => act("PUT", `${base}/pause`);
  const resume = el("button", "resume", { "data-action": "resume" });
  resume.onclick = () => act("PUT", `${base}/resume`);
  const restart = el("button", "restart", { "data-action": "restart" });
  restart.onclick = () => Promise.all(flow.connectors.map((c) => act("POST",
    `/connectors/${encodeURIComponent(c)}/restart?includeTasks=true&onlyFailed=false`)));
  cell.append(pause, resume, restart);
  return cell;
}

function track(flow, now) {
  const name = `${flow.source}->${flow.target}`;
  const before = lastCopied[name];
  let rate = 0;
  if (before && now > before.t) {
    rate = Math.max(0, (flow.lag.records_copied - before.copied) / ((now - before.t) / 1000));
  }
  lastCopied[name] = { t: now, copied: flow.lag.records_copied };
  const points = (history[name] = history[name] || []);
  points.push({ t: now, lag: flow.lag.records, rate });
  while (points.length && points[0].t < now - KEEP_MS) points.shift();
  return rate;
}

function renderFlows(flows, now) {
  const body = document.querySelector("#flows tbody");
  body.replaceChildren(...flows.map((flow) => {
    const name = `${flow.source}->${flow.target}`;
    const rate = track(flow, now);
    const row = el("tr", undefined, { "data-flow": name, "data-state": flow.state });
    const state = el("td");
    state.append(stateBadge(flow.state));
    row.append(
      el("td", name),
      state,
      el("td", flow.cause || "", { class: "cause" }),
      el("td", flow.lag.records, { class: "num", "data-lag": flow.lag.records }),
      el("td", flow.lag.max_seconds.toFixed(1), { class: "num" }),
      el("td", rate.toFixed(0), { class: "num" }),
      flowButtons(flow),
    );
    if (flow.cause && !["PAUSED", "STOPPED", "DISABLED"].includes(flow.state)) {
      noteError(`${name}: ${flow.state}: ${flow.cause}`);
    }
    return row;
  }));
}

function renderTasks(connectors) {
  const rows = [];
  for (const [name, entry] of Object.entries(connectors)) {
    const status = entry.status;
    for (const task of status.tasks) {
      const firstLine = (task.trace || "").trim().split("\n").pop() || "";
      const row = el("tr", undefined, { "data-task": `${name}-${task.id}`, "data-state": task.state });
      const state = el("td");
      state.append(stateBadge(task.state));
      row.append(el("td", name), el("td", task.id), state, el("td", task.worker_id),
        el("td", firstLine, { class: "muted" }));
      rows.push(row);
      if (task.state === "FAILED" || task.state === "RESTARTING") noteError(`${name}-${task.id}: ${firstLine}`);
    }
  }
  document.querySelector("#tasks tbody").replaceChildren(...rows);
}

function drawChart(id, field, now) {
  const canvas = document.getElementById(id);
  const ctx = canvas.getContext("2d");
  const { width, height } = canvas;
  ctx.clearRect(0, 0, width, height);
  const series = Object.entries(history);
  const top = Math.max(1, ...series.flatMap(([, pts]) => pts.map((p) => p[field])));
  const x = (t) => 40 + ((t - (now - KEEP_MS)) / KEEP_MS) * (width - 50);
  const y = (v) => height - 20 - (v / top) * (height - 35);
  ctx.fillStyle = "#7a8490";
  ctx.font = "11px sans-serif";
  ctx.fillText(String(Math.round(top)), 2, 15);
  ctx.fillText("0", 2, height - 20);
  ctx.fillText("-5 min", 40, height - 5);
  ctx.fillText("now", width - 30, height - 5);
  series.forEach(([, pts], i) => {
    ctx.strokeStyle = COLORS[i % COLORS.length];
    ctx.lineWidth = 2;
    ctx.beginPath();
    pts.forEach((p, j) => (j ? ctx.lineTo(x(p.t), y(p[field])) : ctx.moveTo(x(p.t), y(p[field]))));
    ctx.stroke();
  });
  document.getElementById("legend").replaceChildren(...series.map(([name], i) => {
    const item = el("span", name);
    item.prepend(el("i", undefined, { style: `background:${COLORS[i % COLORS.length]}` }));
    return item;
  }));
}

async function refresh() {
  const now = Date.now();
  try {
    const [flows, connectors, leaders] = await Promise.all([
      getJson("/flows"), getJson("/connectors?expand=status"), getJson("/leaders"),
    ]);
    renderFlows(flows, now);
    renderTasks(connectors);
    drawChart("lag-chart", "lag", now);
    drawChart("rate-chart", "rate", now);
    const led = Object.entries(leaders).map(([c, l]) => `${c}: ${l ? (l.this_worker ? "this process" : l.url) : "no leader"}`);
    document.getElementById("leaders").textContent = led.length ? `leaders: ${led.join(", ")}` : "";
    document.getElementById("updated").textContent = `updated ${new Date(now).toLocaleTimeString()}`;
    document.body.setAttribute("data-loaded", "true");
  } catch (err) {
    noteError(`the REST API did not answer: ${err.message}`);
  }
}

getJson("/").then((info) => { document.getElementById("version").textContent = `version ${info.version}`; });
refresh();
setInterval(refresh, POLL_MS);
