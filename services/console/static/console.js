// The Koholint console: the live map (SSE), one env's frames, runs, checkpoints, the fleet.
// Plain JavaScript, no build step and no CDN: the console serves this file itself.
"use strict";

const ROOM_W = 160, ROOM_H = 128, TILE = 16;
const TRAIL_SECONDS = 20, TRAIL_POINTS = 40, STALE_SECONDS = 30, WATCH_MS = 250;
const $ = (selector) => document.querySelector(selector);

const world = {
  rooms: new Map(),      // room key -> {indoor, map, room, image (Image or null)}
  envs: new Map(),       // env id -> {event, trail: [{x, y, t}], color}
  heat: new Map(),       // "roomKey/tileX/tileY" -> events seen there
  archive: null,         // the selected run's archive cells: {run, bin, cells}
  layout: new Map(),     // room key -> {x, y} top-left pixel on the canvas
  size: {width: ROOM_W, height: ROOM_H},
  lags: [], arrivals: [], watching: null, dirty: true,
};

// -- tabs and token ---------------------------------------------------------------
document.querySelectorAll("nav button").forEach((button) => {
  button.addEventListener("click", () => {
    document.querySelectorAll("nav button, .tab").forEach((el) => el.classList.remove("active"));
    button.classList.add("active");
    $(`#tab-${button.dataset.tab}`).classList.add("active");
  });
});
$("#token").value = localStorage.getItem("koholint.token") || "";
$("#token").addEventListener("change", (e) => localStorage.setItem("koholint.token", e.target.value));

function controlHeaders() {
  const token = $("#token").value.trim();
  return token ? {Authorization: `Bearer ${token}`} : {};
}

async function getJson(url, options = {}) {
  const response = await fetch(url, options);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || `HTTP ${response.status}`);
  return body;
}

// -- the map: rooms on the game's grids --------------------------------------------
function roomKeyOf(e) { return `${e.indoor}-${e.map}-${e.room}`; }
function envIdOf(e) { return `${e.source}/${e.run}/${e.env}`; }

function addRoom(indoor, map, room, imageUrl) {
  const key = `${indoor}-${map}-${room}`;
  const known = world.rooms.get(key);
  if (known && (known.image || !imageUrl)) return;  // an agent's room may get its image later
  const entry = known || {indoor, map, room, image: null};
  if (imageUrl) {
    const image = new Image();
    image.onload = () => { entry.image = image; world.dirty = true; };
    image.src = imageUrl;
  }
  if (!known) {
    world.rooms.set(key, entry);
    relayout();
  }
}

// Overworld rooms sit 16 to a row (LADX's numbering), indoor rooms 8 to a row per map;
// the overworld comes first, each indoor map to its right.
function relayout() {
  const groups = new Map();
  for (const [key, r] of world.rooms) {
    const group = r.indoor ? `indoor-${r.map}` : "overworld";
    const perRow = r.indoor ? 8 : 16;
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push({key, col: r.room % perRow, row: Math.floor(r.room / perRow)});
  }
  const order = [...groups.keys()].sort((a, b) => (a === "overworld" ? -1 : b === "overworld" ? 1 : a.localeCompare(b)));
  let left = 0, height = 0;
  for (const name of order) {
    const cells = groups.get(name);
    const minCol = Math.min(...cells.map((c) => c.col)), minRow = Math.min(...cells.map((c) => c.row));
    const cols = Math.max(...cells.map((c) => c.col)) - minCol + 1;
    const rows = Math.max(...cells.map((c) => c.row)) - minRow + 1;
    for (const c of cells) world.layout.set(c.key, {x: left + (c.col - minCol) * ROOM_W, y: (c.row - minRow) * ROOM_H});
    left += cols * ROOM_W + ROOM_W / 2;
    height = Math.max(height, rows * ROOM_H);
  }
  world.size = {width: Math.max(left - ROOM_W / 2, ROOM_W), height: Math.max(height, ROOM_H)};
  const canvas = $("#map");
  if (canvas.width !== world.size.width || canvas.height !== world.size.height) {
    canvas.width = world.size.width;
    canvas.height = world.size.height;
  }
  world.dirty = true;
}

async function loadMap() {
  try {
    const map = await getJson("/v1/map");
    $("#rom-title").textContent = `${map.rom_title} (${map.rooms.length} rooms drawn from the ROM)`;
    for (const r of map.rooms) addRoom(r.indoor, r.map, r.room, r.image);
  } catch (error) {
    $("#rom-title").textContent = `map: ${error.message}`;
  }
}

function colorOf(run) {
  let hash = 0;
  for (const ch of run) hash = (hash * 31 + ch.charCodeAt(0)) | 0;
  return `hsl(${Math.abs(hash) % 360}, 75%, 42%)`;
}

// Where an env's Link is on the canvas (null while its room is not laid out).
function dotPosition(event) {
  const origin = world.layout.get(roomKeyOf(event));
  if (!origin) return null;
  return {x: origin.x + Math.min(event.x, ROOM_W - 1), y: origin.y + Math.min(event.y, ROOM_H - 1)};
}

// -- positions from the relay -------------------------------------------------------
function applyEvent(event, live) {
  addRoom(event.indoor, event.map, event.room, null);  // rooms the map did not have yet
  const id = envIdOf(event);
  let env = world.envs.get(id);
  if (!env) {
    env = {trail: [], color: colorOf(event.run)};
    world.envs.set(id, env);
    renderEnvList();
  }
  env.event = event;
  const point = dotPosition(event);
  if (point) env.trail.push({...point, t: event.sent_at});
  if (env.trail.length > TRAIL_POINTS) env.trail.shift();
  const cell = `${roomKeyOf(event)}/${event.x >> 4}/${event.y >> 4}`;
  world.heat.set(cell, (world.heat.get(cell) || 0) + 1);
  if (live) {
    const now = Date.now() / 1000;
    world.lags.push(now - event.sent_at);
    if (world.lags.length > 500) world.lags.shift();
    world.arrivals.push(now);
  }
  world.dirty = true;
}

function connectStream() {
  const source = new EventSource("/v1/positions/stream");
  source.addEventListener("open", () => { $("#stream-status").textContent = "live"; });
  source.addEventListener("history", (e) => JSON.parse(e.data).forEach((ev) => applyEvent(ev, false)));
  source.addEventListener("positions", (e) => JSON.parse(e.data).forEach((ev) => applyEvent(ev, true)));
  source.addEventListener("dropped", (e) => {
    $("#stream-status").textContent = `dropped by the relay (${JSON.parse(e.data).reason}); reconnecting`;
  });
  source.addEventListener("error", () => { $("#stream-status").textContent = "reconnecting…"; });
}

function renderEnvList() {
  const list = $("#env-list");
  list.replaceChildren(...[...world.envs.keys()].sort().map((id) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = id;
    button.dataset.env = id;
    button.addEventListener("click", () => watch(id));
    item.append(button);
    return item;
  }));
}

// -- drawing ---------------------------------------------------------------------
let lastDraw = 0;
function draw(timestamp) {
  if (timestamp - lastDraw < 66) return requestAnimationFrame(draw);  // ~15 frames/s is plenty
  lastDraw = timestamp;
  const now = Date.now() / 1000;
  for (const [id, env] of world.envs) {
    if (now - env.event.sent_at > STALE_SECONDS && id !== world.watching) { world.envs.delete(id); world.dirty = true; renderEnvList(); }
  }
  if (!world.dirty && world.envs.size === 0) return requestAnimationFrame(draw);
  const canvas = $("#map"), ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  drawRooms(ctx);
  drawArchive(ctx);
  drawHeat(ctx);
  for (const env of world.envs.values()) drawTrail(ctx, env, now);
  for (const [id, env] of world.envs) drawDot(ctx, id, env);
  world.dirty = false;
  requestAnimationFrame(draw);
}

function drawRooms(ctx) {
  ctx.font = "10px monospace";
  for (const [key, r] of world.rooms) {
    const at = world.layout.get(key);
    if (r.image) { ctx.drawImage(r.image, at.x, at.y); continue; }
    ctx.fillStyle = "#ddd6c6";
    ctx.fillRect(at.x, at.y, ROOM_W, ROOM_H);
    ctx.strokeStyle = "#9a917f";
    ctx.strokeRect(at.x + 0.5, at.y + 0.5, ROOM_W - 1, ROOM_H - 1);
    ctx.fillStyle = "#6b6355";
    ctx.fillText(`room ${key} (seen by an agent)`, at.x + 6, at.y + 14);
  }
}

// The archive's cells (where the run's envs have been, over the whole run) in blue, under the
// live heat (what this page saw) in red.
function drawArchive(ctx) {
  if (!world.archive) return;
  const bin = world.archive.bin, peak = Math.max(1, ...world.archive.cells.map((c) => c.visits));
  for (const c of world.archive.cells) {
    const at = world.layout.get(`${c.indoor}-${c.map}-${c.room}`);
    if (!at) continue;
    ctx.fillStyle = `rgba(40, 90, 220, ${0.1 + 0.4 * Math.log1p(c.visits) / Math.log1p(peak)})`;
    ctx.fillRect(at.x + c.x * bin, at.y + c.y * bin, bin, bin);
  }
}

async function refreshArchive() {
  if (!selectedRun) return;
  try {
    world.archive = await getJson(`/v1/archive/${encodeURIComponent(selectedRun)}`);
    for (const c of world.archive.cells) addRoom(c.indoor, c.map, c.room, null);
    $("#archive-note").textContent = `archive of ${selectedRun}: ${world.archive.cells_total} cells (blue)`;
  } catch (error) {
    world.archive = null;
    $("#archive-note").textContent = `archive: ${error.message}`;
  }
  world.dirty = true;
}

function drawHeat(ctx) {
  const peak = Math.max(1, ...world.heat.values());
  for (const [cell, count] of world.heat) {
    const [key, tx, ty] = cell.split("/");
    const at = world.layout.get(key);
    if (!at) continue;
    ctx.fillStyle = `rgba(220, 60, 30, ${0.08 + 0.4 * Math.log1p(count) / Math.log1p(peak)})`;
    ctx.fillRect(at.x + tx * TILE, at.y + ty * TILE, TILE, TILE);
  }
}

function drawTrail(ctx, env, now) {
  for (let i = 1; i < env.trail.length; i++) {
    const a = env.trail[i - 1], b = env.trail[i];
    const age = now - b.t;
    if (age > TRAIL_SECONDS || Math.hypot(b.x - a.x, b.y - a.y) > ROOM_W / 2) continue;
    ctx.strokeStyle = env.color;
    ctx.globalAlpha = Math.max(0.05, 1 - age / TRAIL_SECONDS) * 0.8;
    ctx.lineWidth = 2;
    ctx.beginPath(); ctx.moveTo(a.x, a.y); ctx.lineTo(b.x, b.y); ctx.stroke();
  }
  ctx.globalAlpha = 1;
}

function drawDot(ctx, id, env) {
  const at = dotPosition(env.event);
  if (!at) return;
  ctx.beginPath();
  ctx.arc(at.x, at.y, 5, 0, 2 * Math.PI);
  ctx.fillStyle = env.color;
  ctx.fill();
  ctx.lineWidth = id === world.watching ? 3 : 1;
  ctx.strokeStyle = id === world.watching ? "#ffd400" : "#fff";
  ctx.stroke();
}

// The dots where a browser sees them (for clicks, and for tests that click them).
function dots() {
  const canvas = $("#map"), box = canvas.getBoundingClientRect();
  const scale = box.width / canvas.width;
  return [...world.envs].map(([id, env]) => {
    const at = dotPosition(env.event);
    return at && {id, x: box.left + at.x * scale, y: box.top + at.y * scale, room: roomKeyOf(env.event),
                  cx: at.x, cy: at.y};
  }).filter(Boolean);
}

$("#map").addEventListener("click", (e) => {
  const hit = dots().map((d) => ({...d, distance: Math.hypot(d.x - e.clientX, d.y - e.clientY)}))
    .sort((a, b) => a.distance - b.distance)[0];
  if (hit && hit.distance < 14) watch(hit.id);
});

setInterval(() => {
  const now = Date.now() / 1000;
  world.arrivals = world.arrivals.filter((t) => now - t < 5);
  $("#eps").textContent = (world.arrivals.length / 5).toFixed(0);
  $("#env-count").textContent = world.envs.size;
  const sorted = [...world.lags].sort((a, b) => a - b);
  $("#lag").textContent = sorted.length ? `${(sorted[Math.floor(sorted.length / 2)] * 1000).toFixed(0)} ms` : "–";
}, 1000);

// -- watch one env -----------------------------------------------------------------
let watchTimer = null;

function watch(id) {
  world.watching = id;
  world.dirty = true;
  const [source, run, ...rest] = id.split("/");
  const env = rest.join("/");
  $("#watch").hidden = false;
  $("#watch-name").textContent = id;
  $("#watch-note").textContent = "";
  const frameUrl = source === "env-sim" ? `/v1/watch/env-sim/${encodeURIComponent(env)}/frame.png`
    : `/v1/watch/trainer/${encodeURIComponent(run)}/${encodeURIComponent(env)}/frame.png`;
  clearInterval(watchTimer);
  let ticks = 0;
  const refresh = async () => {
    if (world.watching !== id) return;
    try {
      const response = await fetch(`${frameUrl}?t=${Date.now()}`);
      if (response.ok) {
        const url = URL.createObjectURL(await response.blob());
        const image = $("#watch-frame"), old = image.src;
        image.src = url;
        image.dataset.frames = String(Number(image.dataset.frames || 0) + 1);
        if (old.startsWith("blob:")) URL.revokeObjectURL(old);
        $("#watch-note").textContent = "";
      } else {
        $("#watch-note").textContent = (await response.json().catch(() => ({}))).detail || `HTTP ${response.status}`;
      }
    } catch (error) { $("#watch-note").textContent = error.message; }
    if (ticks++ % 4 === 0) showState(source, env, id);
  };
  refresh();
  watchTimer = setInterval(refresh, WATCH_MS);
}

async function showState(source, env, id) {
  let state = world.envs.get(id)?.event;
  if (source === "env-sim") state = await getJson(`/v1/watch/env-sim/${encodeURIComponent(env)}/state`).catch(() => state);
  $("#watch-state").textContent = JSON.stringify(state, null, 1);
}

$("#watch-close").addEventListener("click", () => {
  world.watching = null;
  clearInterval(watchTimer);
  $("#watch").hidden = true;
  $("#watch-frame").dataset.frames = "0";
});

// -- runs, curves, checkpoints -----------------------------------------------------
const CURVES = ["episode_return_mean", "rooms_mean", "cells_mean", "win_rate", "steps_per_second"];
const history = new Map();  // run -> [{env_steps, ...status}]
let selectedRun = null;

function fmt(value) { return value === null || value === undefined ? "–" : Number(value).toFixed(2); }

async function refreshRuns() {
  let runs;
  try { runs = (await getJson("/v1/runs")).runs; } catch (error) {
    $("#runs-table tbody").replaceChildren(row([`runs: ${error.message}`]));
    return;
  }
  for (const run of runs) {
    const points = history.get(run.run) || [];
    if (!points.length || points[points.length - 1].env_steps !== run.env_steps) points.push(run);
    history.set(run.run, points.slice(-500));
  }
  if (!selectedRun && runs.length) { selectedRun = runs[0].run; refreshArchive(); }  // active first, then newest
  $("#runs-table tbody").replaceChildren(...runs.map(runRow));
  drawCurves();
  refreshCheckpoints();
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) td.append(cell); else td.textContent = cell;
    tr.append(td);
  }
  return tr;
}

function runRow(run) {
  const actions = document.createElement("span");
  const show = document.createElement("button");
  show.type = "button"; show.textContent = "curves";
  show.addEventListener("click", () => { selectedRun = run.run; drawCurves(); refreshCheckpoints(); refreshArchive(); });
  actions.append(show);
  if (["starting", "running"].includes(run.state)) {
    const stop = document.createElement("button");
    stop.type = "button"; stop.textContent = "Stop"; stop.className = "stop"; stop.dataset.run = run.run;
    stop.addEventListener("click", () => stopRun(run.run));
    actions.append(" ", stop);
  }
  const tr = row([run.run, run.state, String(run.env_steps), fmt(run.steps_per_second),
    fmt(run.episode_return_mean), fmt(run.rooms_mean), fmt(run.cells_mean), fmt(run.win_rate), actions]);
  tr.dataset.run = run.run; tr.dataset.state = run.state;
  return tr;
}

async function stopRun(name) {
  try {
    await getJson(`/v1/runs/${encodeURIComponent(name)}/stop`, {method: "POST", headers: controlHeaders()});
    $("#run-error").textContent = "";
  } catch (error) { $("#run-error").textContent = `stop: ${error.message}`; }
  refreshRuns();
}

// The start form is built from the trainer's own schema of a run's settings (TrainConfig);
// only fields changed from their defaults are sent, so the trainer's environment still applies.
let configSchema = null;

async function buildRunForm() {
  try { configSchema = await getJson("/v1/train-config/schema"); } catch (error) {
    $("#run-fields").textContent = `the trainer's settings: ${error.message}`;
    return;
  }
  $("#run-fields").replaceChildren(...Object.entries(configSchema.properties).map(([name, field]) => {
    const label = document.createElement("label");
    label.title = field.description || "";
    const input = document.createElement("input");
    input.name = name;
    const type = field.type || (field.anyOf || []).map((t) => t.type).find((t) => t !== "null");
    if (type === "boolean") { input.type = "checkbox"; input.checked = Boolean(field.default); }
    else if (type === "integer" || type === "number") {
      input.type = "number";
      input.step = type === "integer" ? "1" : "any";
      if (field.minimum !== undefined) input.min = field.minimum;
      if (field.maximum !== undefined) input.max = field.maximum;
      input.value = field.default ?? "";
    } else if (type === "array" || type === "object") { input.value = JSON.stringify(field.default ?? null); input.dataset.json = "1"; }
    else input.value = field.default ?? "";
    input.dataset.type = type || "string";
    label.append(name, input);
    return label;
  }));
}

function runSettings() {
  const settings = {};
  for (const input of $("#run-fields").querySelectorAll("input")) {
    const field = configSchema.properties[input.name];
    let value = input.value;
    if (input.type === "checkbox") value = input.checked;
    else if (input.dataset.json) value = JSON.parse(value);
    else if (input.type === "number") value = value === "" ? null : Number(value);
    const fallback = input.type === "number" || input.dataset.json ? null : "";
    if (JSON.stringify(value) !== JSON.stringify(field.default ?? fallback)) settings[input.name] = value;
  }
  return settings;
}

$("#run-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!configSchema) return;
  let settings;
  try { settings = runSettings(); } catch (error) {
    $("#run-error").textContent = `settings: ${error.message}`;
    return;
  }
  try {
    const run = await getJson("/v1/runs", {method: "POST", body: JSON.stringify(settings),
      headers: {"Content-Type": "application/json", ...controlHeaders()}});
    selectedRun = run.run;
    $("#run-error").textContent = "";
  } catch (error) { $("#run-error").textContent = `start: ${error.message}`; }
  refreshRuns();
});

function drawCurves() {
  const points = history.get(selectedRun) || [];
  $("#curves-run").textContent = selectedRun ? `of ${selectedRun}` : "";
  $("#curves").replaceChildren(...CURVES.map((name) => {
    const figure = document.createElement("figure");
    const canvas = document.createElement("canvas");
    canvas.width = 220; canvas.height = 100;
    const values = points.filter((p) => p[name] !== null && p[name] !== undefined);
    const ctx = canvas.getContext("2d");
    if (values.length) {
      const xs = values.map((p) => p.env_steps), ys = values.map((p) => p[name]);
      const [x0, x1] = [Math.min(...xs), Math.max(...xs) || 1], [y0, y1] = [Math.min(...ys), Math.max(...ys)];
      ctx.strokeStyle = "#2f6f4f"; ctx.lineWidth = 2; ctx.beginPath();
      values.forEach((p, i) => {
        const x = 4 + (x1 > x0 ? (p.env_steps - x0) / (x1 - x0) : 0.5) * 212;
        const y = 96 - (y1 > y0 ? (p[name] - y0) / (y1 - y0) : 0.5) * 88;
        if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      });
      ctx.stroke();
    }
    const caption = document.createElement("figcaption");
    caption.textContent = `${name}: ${values.length ? fmt(values[values.length - 1][name]) : "–"}`;
    figure.append(canvas, caption);
    return figure;
  }));
}

async function refreshCheckpoints() {
  if (!selectedRun) return;
  const run = encodeURIComponent(selectedRun), metric = $("#best-metric").value;
  const ledger = await getJson(`/v1/checkpoints?run=${run}`).catch(() => ({checkpoints: []}));
  const best = await getJson(`/v1/checkpoints/best?run=${run}&metric=${metric}`).catch(() => null);
  $("#best").textContent = best ? `best by ${metric}: ${best.name}` : `no checkpoint has ${metric} yet`;
  $("#checkpoints-table tbody").replaceChildren(...ledger.checkpoints.map((c) => {
    const tr = row([c.name, String(c.step), Object.entries(c.metrics).map(([k, v]) => `${k} ${fmt(v)}`).join(", ")]);
    if (best && best.name === c.name) tr.className = "best";
    return tr;
  }));
}
$("#best-metric").addEventListener("change", refreshCheckpoints);

// -- fleet, judges, reward models ----------------------------------------------------
async function refreshFleet() {
  let fleet;
  try { fleet = await getJson("/v1/fleet"); } catch (error) { return; }
  $("#fleet-table tbody").replaceChildren(...fleet.services.map((s) => {
    const tr = row([s.service, s.deployed ? "yes" : "no", s.deployed ? String(s.alive) : "–",
      s.deployed ? String(s.ready) : "–", s.detail || ""]);
    tr.dataset.service = s.service;
    return tr;
  }));
  const p = fleet.positions;
  $("#positions-status").textContent = p.configured
    ? `positions stream ${p.stream}: ${p.connected ? "connected" : "not connected"}, ${p.clients} browsers`
    : "positions stream: no Redis configured (KOHOLINT_CONSOLE_REDIS_URL)";
  const byName = Object.fromEntries(fleet.services.map((s) => [s.service, s]));
  if (byName.evaluator.deployed) refreshScores(); else $("#judges").textContent = "The evaluator (judges) is not deployed.";
  if (byName["reward-model"].deployed) refreshRewardModels();
  else $("#reward-models").textContent = "The reward-model service is not deployed.";
}

function table(headers, rows) {
  const element = document.createElement("table");
  element.append(row(headers), ...rows.map(row));
  element.querySelector("tr").querySelectorAll("td").forEach((td) => { td.style.fontWeight = "bold"; });
  return element;
}

async function refreshScores() {
  if (!selectedRun) { $("#judges").textContent = "no run yet: the judges score a run's exported segments"; return; }
  try {
    const {scores} = await getJson(`/v1/judges/scores?run=${encodeURIComponent(selectedRun)}&limit=20`);
    const rows = scores.slice().reverse().map((s) => [s.prefix, s.label ?? "–", fmt(s.score),
      s.judges.map((j) => `${j.judge}: ${j.abstained ? "abstained" : `${j.label} ${fmt(j.score)}`}`).join("; ")]);
    $("#judges").replaceChildren(rows.length ? table(["segment", "label", "score", "votes"], rows)
      : `no scored segments of ${selectedRun} yet`);
  } catch (error) { $("#judges").textContent = `scores: ${error.message}`; }
}

async function refreshRewardModels() {
  try {
    const {models, segments} = await getJson("/v1/reward-models");
    const rows = models.slice().reverse().map((m) => [m.version, fmt(m.heldout_accuracy), String(m.pairs),
      m.encoder_version, new Date(m.created_at * 1000).toISOString()]);
    $("#reward-models").replaceChildren(rows.length
      ? table(["version", "held-out accuracy", "pairs", "encoder", "created"], rows)
      : `no version published yet (${segments} scored segments in the dataset)`);
  } catch (error) { $("#reward-models").textContent = `reward models: ${error.message}`; }
}

// -- start ---------------------------------------------------------------------------
window.koholint = {dots, world, watch};
loadMap();
buildRunForm();
connectStream();
refreshRuns();
refreshFleet();
setInterval(refreshRuns, 2000);
setInterval(refreshFleet, 5000);
setInterval(refreshArchive, 10000);
requestAnimationFrame(draw);
