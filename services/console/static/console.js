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
// A trainer env: PNG polls (its env sends frames only while watched) and the planner's
// takeovers. An env-sim session: its live stream (every frame as the session advances, up to
// the game's 60 a second) and a player that makes it play at the game's real speed.
let watchTimer = null, liveAbort = null;
const live = {arrivals: [], frames: 0};  // arrivals: [wall ms, game frame] of the last 2 s

function watch(id) {
  world.watching = id;
  world.dirty = true;
  const [source, run, ...rest] = id.split("/");
  const env = rest.join("/");
  const sim = source === "env-sim";
  $("#watch").hidden = false;
  $("#watch-name").textContent = id;
  $("#watch-note").textContent = "";
  $("#watch-frame").hidden = sim;
  $("#watch-live").hidden = !sim;
  $("#watch-play").hidden = !sim;
  $("#watch-planner").hidden = sim;
  $("#watch-rate").textContent = "";
  $("#planner-takeovers").replaceChildren();
  clearInterval(watchTimer);
  stopLive();
  let ticks = 0;
  const refresh = sim ? () => {
    if (world.watching !== id) return;
    showState(source, env, id);
    showPlay(env);
  } : async () => {
    if (world.watching !== id) return;
    await pollFrame(`/v1/watch/trainer/${encodeURIComponent(run)}/${encodeURIComponent(env)}/frame.png`);
    if (ticks++ % 4 === 0) { showState(source, env, id); showTakeovers(run, env); }
  };
  if (sim) streamLive(env, id);
  refresh();
  watchTimer = setInterval(refresh, sim ? 1000 : WATCH_MS);
}

async function pollFrame(url) {
  try {
    const response = await fetch(`${url}?t=${Date.now()}`);
    if (response.ok) {
      const blobUrl = URL.createObjectURL(await response.blob());
      const image = $("#watch-frame"), old = image.src;
      image.src = blobUrl;
      image.dataset.frames = String(Number(image.dataset.frames || 0) + 1);
      if (old.startsWith("blob:")) URL.revokeObjectURL(old);
      $("#watch-note").textContent = "";
    } else {
      $("#watch-note").textContent = (await response.json().catch(() => ({}))).detail || `HTTP ${response.status}`;
    }
  } catch (error) { $("#watch-note").textContent = error.message; }
}

async function showState(source, env, id) {
  let state = world.envs.get(id)?.event;
  if (source === "env-sim") state = await getJson(`/v1/watch/env-sim/${encodeURIComponent(env)}/state`).catch(() => state);
  if (world.watching === id) $("#watch-state").textContent = JSON.stringify(state, null, 1);
}

// -- the live stream: multipart PNG parts (Content-Length, X-Game-Frame), drawn on a canvas --
function stopLive() {
  if (liveAbort) liveAbort.abort();
  liveAbort = null;
  live.arrivals = [];
}

async function streamLive(session, id) {
  const controller = new AbortController();
  liveAbort = controller;
  const canvas = $("#watch-live"), ctx = canvas.getContext("2d");
  let pending = null, drawing = false;
  const drawLatest = async () => {
    drawing = true;
    while (pending) {
      const png = pending;
      pending = null;
      try {
        const bitmap = await createImageBitmap(new Blob([png], {type: "image/png"}));
        ctx.drawImage(bitmap, 0, 0);
        bitmap.close();
        live.frames += 1;
        canvas.dataset.frames = String(live.frames);
      } catch (error) { $("#watch-note").textContent = `frame: ${error.message}`; }
    }
    drawing = false;
  };
  try {
    const response = await fetch(`/v1/watch/env-sim/${encodeURIComponent(session)}/live`, {signal: controller.signal});
    if (!response.ok) throw new Error((await response.json().catch(() => ({}))).detail || `HTTP ${response.status}`);
    await readParts(response.body.getReader(), (png, gameFrame) => {
      live.arrivals.push([performance.now(), gameFrame]);
      pending = png;  // a browser slower than the stream skips frames, never queues them
      if (!drawing) drawLatest();
    });
    if (!controller.signal.aborted) $("#watch-note").textContent = "the live stream ended";
  } catch (error) {
    if (controller.signal.aborted) return;
    $("#watch-note").textContent = `live: ${error.message}; retrying`;
  }
  if (!controller.signal.aborted && world.watching === id) setTimeout(() => {
    if (liveAbort === controller && world.watching === id) streamLive(session, id);
  }, 2000);
}

const CRLF2 = [13, 10, 13, 10];
function indexOfHeadEnd(bytes) {
  outer: for (let i = 0; i + 3 < bytes.length; i++) {
    for (let j = 0; j < 4; j++) if (bytes[i + j] !== CRLF2[j]) continue outer;
    return i;
  }
  return -1;
}

async function readParts(reader, onPart) {
  const decoder = new TextDecoder();
  let buffer = new Uint8Array(0);
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    const joined = new Uint8Array(buffer.length + value.length);
    joined.set(buffer); joined.set(value, buffer.length);
    buffer = joined;
    for (;;) {
      const headEnd = indexOfHeadEnd(buffer);
      if (headEnd < 0) break;
      const head = decoder.decode(buffer.subarray(0, headEnd));
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1]);
      const start = headEnd + 4;
      if (!Number.isFinite(length) || buffer.length < start + length) break;
      onPart(buffer.slice(start, start + length), Number(/x-game-frame:\s*(\d+)/i.exec(head)?.[1]));
      buffer = buffer.slice(start + length);
    }
  }
}

// Frames shown per second and the game's own pace (frames it advanced per wall second).
function liveRates() {
  const now = performance.now();
  live.arrivals = live.arrivals.filter(([t]) => now - t < 2000);
  const a = live.arrivals;
  if (a.length < 2) return {fps: 0, gameFps: 0, frames: live.frames};
  const seconds = (a[a.length - 1][0] - a[0][0]) / 1000;
  return {fps: (a.length - 1) / seconds, gameFps: (a[a.length - 1][1] - a[0][1]) / seconds, frames: live.frames};
}

setInterval(() => {
  if ($("#watch-live").hidden || !liveAbort) return;
  const rates = liveRates();
  $("#watch-rate").textContent = rates.fps ? `live: ${rates.fps.toFixed(1)} frames/s shown, the game at ` +
    `${rates.gameFps.toFixed(1)} frames/s (${(rates.gameFps / 59.73).toFixed(2)}x real speed)`
    : "live: the session is not advancing (play it, or step it)";
}, 500);

// -- playing an env-sim session at real speed ---------------------------------------------
function playUrl() {
  const session = world.watching.split("/").slice(2).join("/");
  return `/v1/watch/env-sim/${encodeURIComponent(session)}/play`;
}

async function showPlay(session) {
  try {
    const play = await getJson(`/v1/watch/env-sim/${encodeURIComponent(session)}/play`);
    $("#play-status").textContent = play.state === "idle" ? "not playing" : play.state === "playing"
      ? `playing ${play.policy}: ${play.steps} steps, ${play.episodes} episodes, the game at ${play.game_fps.toFixed(1)} frames/s`
      : `stopped (${play.stopped_reason}) after ${play.steps} steps`;
    $("#play-status").dataset.state = play.state;
  } catch (error) { $("#play-status").textContent = `play: ${error.message}`; }
}

$("#play-start").addEventListener("click", async () => {
  const policy = $("#play-policy").value;
  try {
    await getJson(playUrl(), {method: "POST", headers: {"Content-Type": "application/json", ...controlHeaders()},
      body: JSON.stringify({policy, reset: policy === "walkthrough"})});
  } catch (error) { $("#play-status").textContent = `play: ${error.message}`; return; }
  showPlay(world.watching.split("/").slice(2).join("/"));
});

$("#play-stop").addEventListener("click", async () => {
  try { await getJson(playUrl(), {method: "DELETE", headers: controlHeaders()}); } catch (error) {
    $("#play-status").textContent = `stop: ${error.message}`; return;
  }
  showPlay(world.watching.split("/").slice(2).join("/"));
});

// -- the planner's takeovers of a trainer env (hybrid control) ------------------------------
async function showTakeovers(run, env) {
  let takeovers;
  try {
    ({takeovers} = await getJson(`/v1/watch/trainer/${encodeURIComponent(run)}/${encodeURIComponent(env)}/takeovers`));
  } catch (error) { $("#planner-note").textContent = `planner: ${error.message}`; return; }
  $("#planner-note").textContent = takeovers.length ? `the planner's last ${takeovers.length} takeovers, newest first`
    : "no takeover yet: the planner steps in when the switch fires (dialog or puzzle, with the planner on)";
  $("#planner-takeovers").replaceChildren(...takeovers.map((t) => {
    const item = document.createElement("li");
    item.className = "takeover";
    item.textContent = `step ${t.episode_step}: ${t.started_in} → ${t.stopped} (${t.macros} macros, ${t.frames} frames)`;
    const decisions = document.createElement("ul");
    decisions.append(...t.decisions.map((d) => {
      const line = document.createElement("li");
      line.className = "decision";
      const outcome = d.ok === null ? "" : d.ok ? " ✓" : " ✗";
      line.textContent = `${d.macro || "no macro"}${outcome} (${d.backend}): ${d.reason}`;
      line.title = d.result || "";
      return line;
    }));
    item.append(decisions);
    return item;
  }));
}

$("#watch-close").addEventListener("click", () => {
  world.watching = null;
  clearInterval(watchTimer);
  stopLive();
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
    // A nested group of settings (env, curriculum, ...) is a reference to its own schema.
    const type = field.type || (field.$ref || field.allOf ? "object" : undefined)
      || (field.anyOf || []).map((t) => t.type).find((t) => t !== "null");
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
    const {scores, judge_accuracy: accuracy} = await getJson(`/v1/judges/scores?run=${encodeURIComponent(selectedRun)}&limit=20`);
    showAccuracy(accuracy || []);
    const rows = scores.slice().reverse().map((s) => [s.prefix, s.label ?? "–", fmt(s.score),
      s.judges.map(voteText).join("; "), framesButton(s)]);
    $("#judges").replaceChildren(rows.length ? table(["segment", "label", "score", "votes", ""], rows)
      : `no scored segments of ${selectedRun} yet`);
  } catch (error) { $("#judges").textContent = `scores: ${error.message}`; }
}

// Each judge against the RAM ground truth (which of two states is further along), newest batch.
function showAccuracy(accuracy) {
  const rows = accuracy.map((a) => [a.judge, String(a.pairs), fmt(a.accuracy), fmt(a.lower_bound),
    a.votes ? (a.measured ? "votes" : "votes (unmeasured)") : "no vote: not above chance"]);
  $("#judge-accuracy").replaceChildren(rows.length
    ? table(["judge", "pairs vs RAM", "accuracy", "95% lower bound", "vote"], rows)
    : "no judge measured against the RAM ground truth yet");
}

function voteText(j) { return `${j.judge}: ${j.abstained ? "abstained" : `${j.label} ${fmt(j.score)}`}`; }

function framesButton(score) {
  const button = document.createElement("button");
  button.type = "button"; button.textContent = "frames"; button.className = "frames";
  button.dataset.prefix = score.prefix;
  button.addEventListener("click", () => openSegment(score));
  return button;
}

// A scored segment's frames (from the trainer's store, through the console) beside its votes.
let segmentTimer = null;

async function openSegment(score) {
  const [, run, episode, segment] = score.prefix.split("/");
  const base = `/v1/judges/segments/${[run, episode, segment].map(encodeURIComponent).join("/")}`;
  $("#segment").hidden = false;
  $("#segment").dataset.prefix = score.prefix;
  $("#segment-name").textContent = score.prefix;
  $("#segment-note").textContent = `ensemble: ${score.label ?? "–"} ${fmt(score.score)}`;
  $("#segment-votes").replaceChildren(...score.judges.map((j) => {
    const item = document.createElement("li");
    item.textContent = voteText(j) + (j.rationale ? ` — ${j.rationale}` : "");
    return item;
  }));
  clearInterval(segmentTimer);
  let frames;
  try { ({frames} = await getJson(base)); } catch (error) {
    $("#segment-note").textContent = `frames: ${error.message}`;
    return;
  }
  const slider = $("#segment-step"), image = $("#segment-frame");
  slider.max = String(Math.max(0, frames.length - 1));
  slider.value = "0";
  const show = () => {
    const step = frames[Number(slider.value)];
    if (step === undefined) return;
    image.src = `${base}/frames/${step}.png`;
    image.dataset.step = String(step);
  };
  slider.oninput = () => { clearInterval(segmentTimer); show(); };
  show();
  // Played through at 10 frames a second until the slider is moved.
  segmentTimer = setInterval(() => {
    if ($("#segment").hidden || !frames.length) return;
    slider.value = String((Number(slider.value) + 1) % frames.length);
    show();
  }, 100);
}

$("#segment-close").addEventListener("click", () => {
  clearInterval(segmentTimer);
  $("#segment").hidden = true;
});

async function refreshRewardModels() {
  try {
    const {models, segments} = await getJson("/v1/reward-models");
    const rows = models.slice().reverse().map((m) => [m.version, fmt(m.heldout_accuracy),
      fmt(m.heldout_truth_accuracy), String(m.pairs), m.pair_kind ?? "segments",
      `${m.ensemble_size ?? 1}${m.disagreement != null ? ` (± ${fmt(m.disagreement)})` : ""}`,
      m.encoder_version, new Date(m.created_at * 1000).toISOString()]);
    $("#reward-models").replaceChildren(rows.length
      ? table(["version", "held-out vs judges", "vs RAM truth", "pairs", "of", "members (disagreement)",
        "encoder", "created"], rows)
      : `no version published yet (${segments} scored segments in the dataset)`);
  } catch (error) { $("#reward-models").textContent = `reward models: ${error.message}`; }
}

// -- start ---------------------------------------------------------------------------
// For tests and the browser's console: choose the run whose curves, archive and judges show.
function selectRun(name) { selectedRun = name; drawCurves(); refreshCheckpoints(); refreshArchive(); refreshFleet(); }
window.koholint = {dots, world, watch, liveRates, selectRun};
loadMap();
buildRunForm();
connectStream();
refreshRuns();
refreshFleet();
setInterval(refreshRuns, 2000);
setInterval(refreshFleet, 5000);
setInterval(refreshArchive, 10000);
requestAnimationFrame(draw);
