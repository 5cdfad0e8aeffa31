// mm2's page: polls the REST API every 2 s and draws what it says. No framework, no CDN.
// The charts start from the last hour the process kept (GET /flows/{s}/{t}/history), then add
// a point per poll. Every request, actions included, goes to the same API with the browser's
// credentials for it (HTTP Basic when the process asks for it).
"use strict";

const POLL_MS = 2000;
const GROUPS_MS = 30000; // the groups view reads Kafka (commits, offset syncs): not every poll
const KEEP_MS = 60 * 60 * 1000;
const PARTITION_ROWS = 100;
const COLORS = ["#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00", "#00838f"];
// A switchover (dry run or for real) is offered where the flow copies or waits paused.
const SWITCHOVER_STATES = ["RUNNING", "DEGRADED", "PAUSED"];
// Which buttons a flow in each state gets: none on a DISABLED or UNASSIGNED flow.
const ACTIONS = {
  pause: ["RUNNING", "DEGRADED"],
  resume: ["PAUSED", "STOPPED"],
  restart: ["RUNNING", "DEGRADED", "FAILED"],
};
const history = {}; // flow -> [{t, lag, rate}], oldest first
const seeded = new Set(); // flows whose kept history was loaded
const lastCopied = {}; // flow -> {t, copied}
const details = {}; // flow -> its per-flow section (partitions, groups)
const groupsRead = {}; // flow -> {at, busy}
const recoveryRead = {}; // flow -> {at, busy}
const following = new Set(); // flows whose switchover this page follows
const errors = [];
const seenErrors = new Set();

async function getJson(path) {
  const answer = await fetch(path, { headers: { Accept: "application/json" } });
  if (!answer.ok) throw new Error(`${path}: ${answer.status} ${(await answer.text()).slice(0, 300)}`);
  return answer.json();
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function cell(value, attrs) {
  return el("td", value === null || value === undefined ? "-" : value, attrs);
}

function num(value) {
  return cell(value, { class: "num" });
}

function badge(text, kind) {
  const td = el("td");
  td.append(el("span", text, { class: `state state-${kind || text}` }));
  return td;
}

function flowName(flow) {
  return `${flow.source}->${flow.target}`;
}

function flowPath(flow) {
  return `/flows/${encodeURIComponent(flow.source)}/${encodeURIComponent(flow.target)}`;
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

// Every change carries it: the mirror refuses a browser's change without it (another site's
// page cannot set it), docs/operations.md "REST API security".
const CHANGE = { "X-MM2-Request": "1" };

async function act(method, path) {
  const answer = await fetch(path, { method, headers: CHANGE });
  if (!answer.ok) noteError(`${method} ${path}: ${answer.status} ${await answer.text()}`);
  refresh();
}

function flowButtons(flow) {
  const td = el("td");
  const base = flowPath(flow);
  const run = {
    pause: () => act("PUT", `${base}/pause`),
    resume: () => act("PUT", `${base}/resume`),
    restart: () => Promise.all(flow.connectors.map((c) => act("POST",
      `/connectors/${encodeURIComponent(c)}/restart?includeTasks=true&onlyFailed=false`))),
  };
  for (const [action, states] of Object.entries(ACTIONS)) {
    if (!states.includes(flow.state)) continue;
    const button = el("button", action, { "data-action": action });
    button.onclick = run[action];
    td.append(button);
  }
  return td;
}

// -- the charts: the kept history first, then a point per poll --

async function seedHistory(flow) {
  const name = flowName(flow);
  if (seeded.has(name)) return;
  try {
    const kept = await getJson(`${flowPath(flow)}/history`);
    const points = kept.points.map((p) => ({ t: p.time_ms, lag: p.lag_records, rate: p.records_per_second }));
    history[name] = [...points, ...(history[name] || [])].sort((a, b) => a.t - b.t);
    seeded.add(name);
  } catch (err) {
    noteError(`${name}: its history was not read: ${err.message}`);
  }
}

function track(flow, now) {
  const name = flowName(flow);
  const points = (history[name] = history[name] || []);
  const before = lastCopied[name];
  let rate = points.length ? points[points.length - 1].rate : 0;
  if (before && now > before.t) {
    rate = Math.max(0, (flow.lag.records_copied - before.copied) / ((now - before.t) / 1000));
  }
  lastCopied[name] = { t: now, copied: flow.lag.records_copied };
  points.push({ t: now, lag: flow.lag.records, rate });
  while (points.length && points[0].t < now - KEEP_MS) points.shift();
  return rate;
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
  ctx.fillText("-60 min", 40, height - 5);
  ctx.fillText("now", width - 30, height - 5);
  let drawn = 0;
  series.forEach(([, pts], i) => {
    ctx.strokeStyle = COLORS[i % COLORS.length];
    ctx.fillStyle = COLORS[i % COLORS.length];
    ctx.lineWidth = 2;
    ctx.beginPath();
    pts.forEach((p, j) => (j ? ctx.lineTo(x(p.t), y(p[field])) : ctx.moveTo(x(p.t), y(p[field]))));
    ctx.stroke();
    if (pts.length === 1) ctx.fillRect(x(pts[0].t) - 2, y(pts[0][field]) - 2, 4, 4);
    drawn += pts.length;
  });
  canvas.setAttribute("data-points", String(drawn));
  document.getElementById("legend").replaceChildren(...series.map(([name], i) => {
    const item = el("span", name);
    item.prepend(el("i", undefined, { style: `background:${COLORS[i % COLORS.length]}` }));
    return item;
  }));
}

// -- per flow: partitions (worst first) and consumer groups (failover drill) --

function detailFor(flow) {
  const name = flowName(flow);
  if (!details[name]) {
    const node = document.getElementById("detail-template").content.firstElementChild.cloneNode(true);
    node.setAttribute("data-flow-detail", name);
    node.querySelector(".partitions-title").textContent = `${name}: partitions, worst first`;
    node.querySelector(".groups-title").textContent = `${name}: consumer groups, failover drill`;
    node.querySelector(".recovery-title").textContent = `${name}: recovery point (what a failover now loses)`;
    document.getElementById("details").append(node);
    details[name] = node;
    followSwitchover(flow, node); // one running (or the last one) shows on first load
  }
  return details[name];
}

function dropDetails(names) {
  for (const name of Object.keys(details)) {
    if (names.has(name)) continue;
    details[name].remove();
    delete details[name];
    delete groupsRead[name];
    delete recoveryRead[name];
  }
}

function worstFirst(a, b) {
  return b.lag_seconds - a.lag_seconds || b.lag_records - a.lag_records
    || a.topic.localeCompare(b.topic) || a.partition - b.partition;
}

async function loadPartitions(flow, node) {
  const body = node.querySelector(".partitions tbody");
  let rows;
  try {
    rows = await getJson(`${flowPath(flow)}/partitions`);
  } catch (err) {
    noteError(`${flowName(flow)}: partitions not read: ${err.message}`);
    return;
  }
  rows.sort(worstFirst);
  const shown = rows.slice(0, PARTITION_ROWS).map((p) => {
    const tr = el("tr", undefined, {
      "data-partition": `${p.topic}-${p.partition}`, "data-lag": p.lag_records,
      "data-lag-seconds": p.lag_seconds, "data-owner": p.owner || "", "data-state": p.state,
    });
    tr.append(cell(`${p.topic}-${p.partition}`), cell(p.target_topic), num(p.log_end),
      num(p.position), num(p.lag_records), num(p.lag_seconds.toFixed(1)), cell(p.owner),
      badge(p.state));
    return tr;
  });
  if (!rows.length) {
    shown.push(el("tr", undefined, { class: "muted" }));
    shown[0].append(el("td", "no partition read yet (the lag is read from Kafka every few seconds)", { colspan: 8 }));
  } else if (rows.length > shown.length) {
    const more = el("tr", undefined, { class: "muted" });
    more.append(el("td", `${rows.length - shown.length} more: GET ${flowPath(flow)}/partitions`, { colspan: 8 }));
    shown.push(more);
  }
  body.replaceChildren(...shown);
}

function sum(values) {
  const known = values.filter((v) => v !== null && v !== undefined);
  return known.length ? known.reduce((a, b) => a + b, 0) : null;
}

function failoverButton(flow, group) {
  const button = el("button", "fail over\u2026", { "data-action": "failover" });
  button.onclick = async () => {
    const question = `Commit group ${group.group}'s translated offsets on ${flow.target}? ` +
      `Its consumers must be stopped on ${flow.target}; commits ahead there are kept.`;
    if (!window.confirm(question)) return;
    const path = `${flowPath(flow)}/groups/${encodeURIComponent(group.group)}/failover`;
    const answer = await fetch(path, { method: "POST", headers: CHANGE });
    if (!answer.ok) noteError(`POST ${path}: ${answer.status} ${await answer.text()}`);
    (groupsRead[flowName(flow)] || {}).at = 0; // read the groups again at the next poll
  };
  return button;
}

function groupRows(flow, group) {
  const parts = group.partitions;
  const translated = parts.filter((p) => p.target_offset !== null).length;
  const ready = group.ready ? "yes" : "no";
  const name = group.target_group && group.target_group !== group.group
    ? `${group.group} (as ${group.target_group})` : group.group;
  const head = el("tr", undefined, { "data-group": group.group, "data-ready": ready, class: "group" });
  const why = el("td", group.why, { class: "why" });
  if (group.ready) why.append(failoverButton(flow, group));
  head.append(el("td", name, { class: "group-name" }), cell(""),
    num(sum(parts.map((p) => p.source_lag))), num(`${translated} of ${parts.length}`), cell(""),
    cell(""), num(sum(parts.map((p) => p.target_behind))), badge(ready, `ready-${ready}`), why);
  const rows = [head];
  for (const p of parts) {
    const where = `${p.source_topic}-${p.source_partition}`;
    const tr = el("tr", undefined, { "data-group-partition": `${group.group}|${where}` });
    const exact = p.target_offset === null ? "-" : (p.exact ? "yes" : "no");
    tr.append(el("td", where, { class: "indent" }), num(p.source_offset), num(p.source_lag),
      num(p.target_offset), cell(exact), num(p.current_target_offset), num(p.target_behind),
      cell(""), el("td", p.note, { class: "muted" }));
    rows.push(tr);
  }
  return rows;
}

// Runs `load` for the flow once GROUPS_MS have passed since it last ran, never twice at once;
// `reads` keeps each flow's {at, busy}.
async function readEvery(reads, flow, now, load) {
  const name = flowName(flow);
  const read = (reads[name] = reads[name] || { at: 0, busy: false });
  if (read.busy || now - read.at < GROUPS_MS) return;
  read.busy = true;
  read.at = now;
  try {
    await load();
  } finally {
    read.busy = false;
  }
}

async function loadGroups(flow, node) {
  const table = node.querySelector(".groups");
  try {
    const body = await getJson(`${flowPath(flow)}/groups/offsets`);
    const rows = body.groups.flatMap((group) => groupRows(flow, group));
    if (!rows.length) {
      rows.push(el("tr", undefined, { class: "muted" }));
      rows[0].append(el("td", `no group with commits on ${flow.source} that this flow mirrors`, { colspan: 9 }));
    }
    table.querySelector("tbody").replaceChildren(...rows);
    table.setAttribute("data-read", "true");
    node.querySelector(".groups-read").textContent =
      `read ${new Date().toLocaleTimeString()} (every ${GROUPS_MS / 1000} s), as mm2 failover --dry-run reads it`;
  } catch (err) {
    table.setAttribute("data-read", "error");
    node.querySelector(".groups-read").textContent = `not read: ${err.message}`;
  }
}

// -- recovery point: what an unplanned failover now loses, as `mm2 failover` prints it --

function utc(ms) {
  return ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

async function loadRecovery(flow, node) {
  const summary = node.querySelector(".recovery-summary");
  try {
    const point = await getJson(`${flowPath(flow)}/recovery-point`);
    // A bound only from the source's ends read for this answer; else unknown since a time.
    const bound = point.at_risk_at_most;
    summary.setAttribute("data-at-risk", bound === null ? "unknown" : String(bound));
    summary.setAttribute("data-unknown-since", point.unknown_since_ms === null ? "" : String(point.unknown_since_ms));
    summary.textContent = point.summary;
    const rows = [...point.partitions]
      .sort((a, b) => (b.uncopied_below_end || 0) - (a.uncopied_below_end || 0))
      .slice(0, PARTITION_ROWS)
      .map((p) => {
        const risk = p.at_risk_at_most === null ? "unknown" : p.at_risk_at_most;
        const tr = el("tr", undefined, { "data-recovery-partition": `${p.topic}-${p.partition}`,
          "data-at-risk": risk });
        tr.append(cell(`${p.topic}-${p.partition}`), num(p.copied_to), num(p.source_end),
          cell(utc(p.ends_read_at_ms)), num(risk), num(p.uncopied_below_end));
        return tr;
      });
    node.querySelector(".recovery tbody").replaceChildren(...rows);
  } catch (err) {
    summary.setAttribute("data-at-risk", "unread");
    summary.textContent = `recovery point not read: ${err.message}`;
  }
}

// -- switchover: a dry run, or for real after a confirmation; followed until it ends --

function showSwitchover(node, job) {
  const drill = node.querySelector(".drill");
  drill.setAttribute("data-switchover", job.running ? "running" : (job.error ? "stopped" : "done"));
  const lines = [...job.said];
  if (job.report) {
    const point = job.report.recovery_point;
    lines.push("", `recovery point: ${point.records} record(s) not copied, the oldest ${point.seconds.toFixed(1)} s old`);
    for (const step of job.report.steps) lines.push(`${step.name}: ${step.seconds.toFixed(1)} s${step.failed ? " (failed)" : ""}`);
  }
  if (job.error) lines.push("", `stopped: ${job.error}`);
  node.querySelector(".switchover-log").textContent = lines.join("\n");
}

async function followSwitchover(flow, node) {
  const name = flowName(flow);
  if (following.has(name)) return;
  following.add(name);
  try {
    for (;;) {
      const answer = await fetch(`${flowPath(flow)}/switchover`, { headers: { Accept: "application/json" } });
      if (answer.status === 404) break; // none since the process started
      if (!answer.ok) throw new Error(`${answer.status} ${(await answer.text()).slice(0, 300)}`);
      const job = await answer.json();
      showSwitchover(node, job);
      if (!job.running) break;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } catch (err) {
    noteError(`${name}: switchover not followed: ${err.message}`);
  } finally {
    following.delete(name);
  }
}

async function startSwitchover(flow, node, dryRun) {
  const back = node.querySelector(".start-reverse").checked;
  if (!dryRun) {
    const question = `Switch ${flowName(flow)} over to ${flow.target}? It waits until every ` +
      `partition is copied (stop the producers on ${flow.source}), commits every mirrored group ` +
      `on ${flow.target} and pauses the flow` + (back ? `, then starts ${flow.target}->${flow.source}.` : ".");
    if (!window.confirm(question)) return;
  }
  const path = `${flowPath(flow)}/switchover`;
  const answer = await fetch(path, {
    method: "POST",
    headers: { ...CHANGE, "Content-Type": "application/json" },
    body: JSON.stringify({ dry_run: dryRun, start_reverse: back }),
  });
  if (!answer.ok) {
    noteError(`POST ${path}: ${answer.status} ${await answer.text()}`);
    return;
  }
  followSwitchover(flow, node);
}

function drillButtons(flow, node) {
  const offered = SWITCHOVER_STATES.includes(flow.state);
  node.querySelector(".drill").hidden = !offered;
  node.querySelector(".switchover-dry").onclick = () => startSwitchover(flow, node, true);
  node.querySelector(".switchover-run").onclick = () => startSwitchover(flow, node, false);
}

// -- flows and tasks --

function renderFlows(flows, now) {
  const body = document.querySelector("#flows tbody");
  body.replaceChildren(...flows.map((flow) => {
    const name = flowName(flow);
    const rate = track(flow, now);
    const row = el("tr", undefined, { "data-flow": name, "data-state": flow.state });
    row.append(
      el("td", name),
      badge(flow.state),
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
      row.append(el("td", name), el("td", task.id), badge(task.state), el("td", task.worker_id),
        el("td", firstLine, { class: "muted" }));
      rows.push(row);
      if (task.state === "FAILED" || task.state === "RESTARTING") noteError(`${name}-${task.id}: ${firstLine}`);
    }
  }
  document.querySelector("#tasks tbody").replaceChildren(...rows);
}

let refreshing = false;

async function refresh() {
  if (refreshing) return; // the last poll has not ended: skip this one
  refreshing = true;
  try {
    const [flows, connectors, leaders] = await Promise.all([
      getJson("/flows"), getJson("/connectors?expand=status"), getJson("/leaders"),
    ]);
    const listed = new Set(flows.map(flowName));
    for (const name of Object.keys(history)) {
      if (!listed.has(name)) {
        delete history[name];
        delete lastCopied[name];
        seeded.delete(name);
      }
    }
    await Promise.all(flows.map(seedHistory));
    const now = Date.now();
    renderFlows(flows, now);
    renderTasks(connectors);
    drawChart("lag-chart", "lag", now);
    drawChart("rate-chart", "rate", now);
    const copying = flows.filter((f) => f.state !== "DISABLED");
    dropDetails(new Set(copying.map(flowName)));
    await Promise.all(copying.map((flow) => {
      const node = detailFor(flow);
      drillButtons(flow, node);
      // not awaited: the groups read Kafka and may take seconds; the recovery point the same
      // (the offsets topic, then the source's ends)
      readEvery(groupsRead, flow, now, () => loadGroups(flow, node));
      readEvery(recoveryRead, flow, now, () => loadRecovery(flow, node));
      return loadPartitions(flow, node);
    }));
    const led = Object.entries(leaders).map(([c, l]) => `${c}: ${l ? (l.this_worker ? "this process" : l.url) : "no leader"}`);
    document.getElementById("leaders").textContent = led.length ? `leaders: ${led.join(", ")}` : "";
    document.getElementById("updated").textContent = `updated ${new Date(now).toLocaleTimeString()}`;
    document.body.setAttribute("data-loaded", "true");
  } catch (err) {
    noteError(`the REST API did not answer: ${err.message}`);
  } finally {
    refreshing = false;
  }
}

getJson("/").then((info) => { document.getElementById("version").textContent = `version ${info.version}`; });
refresh();
setInterval(refresh, POLL_MS);
