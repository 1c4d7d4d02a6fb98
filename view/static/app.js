// skyloop's live view: a Foxglove WebSocket protocol client (the server
// is the run's foxglove.Server, on the same address as this page) drawing
// the vehicles in 3D with three.js, the radio links heard recently
// coloured by their delivery ratio, packet flashes, and a panel with the
// selected vehicle's telemetry, the network figures and the events.
// World frame: x east, y north, z up (the camera's up is +z).
import * as THREE from "./vendor/three.module.min.js";
import { OrbitControls } from "./vendor/OrbitControls.js";

const state = {
  errors: [],
  vehicles: new Map(), // name -> {mesh, trail, trailGeom, points, telemetry, id}
  names: [], // by node id
  links: new Map(), // "src>dst" -> {rx: [times], drop: [times], last}
  flashes: [],
  events: [],
  ages: [], // [simTime, age s] of recent receptions
  rxTimes: [],
  dropTimes: [],
  simTime: 0,
  selected: null,
  wallAt: 0,
  simAt: 0,
  speed: 0,
  connected: false,
  ended: false,
  seen: 0, // vehicles whose position has come
  fixed: new Map(), // name -> mesh of the nodes that are not vehicles
  expected: Infinity,
};
window.addEventListener("error", (e) => state.errors.push(String(e.message)));
window.addEventListener("unhandledrejection", (e) => state.errors.push(String(e.reason)));
// A blocked script, style or connection is an error too (the server's
// Content-Security-Policy allows no inline script or style).
document.addEventListener("securitypolicyviolation", (e) => state.errors.push(`CSP: ${e.violatedDirective} blocked ${e.blockedURI}`));

// The test hooks (runner/view_test.go) and anyone curious.
window.skyloop = {
  state,
  get vehicles() { return state.seen; },
  positions() {
    const out = {};
    for (const [name, v] of state.vehicles) out[name] = [v.mesh.position.x, v.mesh.position.y, v.mesh.position.z];
    return out;
  },
  select(name) { select(name); },
  panel() { return document.getElementById("telemetry").innerText; },
  seek(t) { if (replay) seek(t); },
  get replay() { return !!replay; },
  get errors() { return state.errors; },
  get simTime() { return state.simTime; },
};

// --- scene ---
const host = document.getElementById("scene");
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio);
host.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x10141a);
scene.add(new THREE.HemisphereLight(0xddeeff, 0x202830, 1.2));
const sun = new THREE.DirectionalLight(0xffffff, 1.5);
sun.position.set(50, -80, 120);
scene.add(sun);
const grid = new THREE.GridHelper(400, 40, 0x3a4656, 0x232b36);
grid.rotation.x = Math.PI / 2; // the XZ grid into the XY (ground) plane
scene.add(grid);
scene.add(new THREE.AxesHelper(5));

const persp = new THREE.PerspectiveCamera(50, 1, 0.1, 5000);
persp.up.set(0, 0, 1);
persp.position.set(-40, -60, 50);
const ortho = new THREE.OrthographicCamera(-50, 50, 50, -50, 0.1, 5000);
ortho.up.set(0, 1, 0);
ortho.position.set(0, 0, 500);
let camera = persp;
let controls = new OrbitControls(camera, renderer.domElement);
let topView = false;
let framed = false;

function resize() {
  const w = host.clientWidth, h = host.clientHeight;
  renderer.setSize(w, h);
  persp.aspect = w / h;
  persp.updateProjectionMatrix();
  const span = ortho.userData.span ?? 60;
  ortho.left = -span * w / h; ortho.right = span * w / h; ortho.top = span; ortho.bottom = -span;
  ortho.updateProjectionMatrix();
}
window.addEventListener("resize", resize);
resize();

function toggleTop() {
  topView = !topView;
  document.getElementById("view2d").classList.toggle("on", topView);
  controls.dispose();
  camera = topView ? ortho : persp;
  controls = new OrbitControls(camera, renderer.domElement);
  controls.enableRotate = !topView;
  frame();
}
document.getElementById("view2d").onclick = toggleTop;
// ?view=top starts in the top view; ?select=NAME selects a vehicle.
const params = new URLSearchParams(location.search);
if (params.get("view") === "top") toggleTop();
let showTrails = true;
document.getElementById("trails").onclick = (e) => {
  showTrails = !showTrails;
  e.target.classList.toggle("on", showTrails);
  for (const v of state.vehicles.values()) v.trail.visible = showTrails;
};

// frame points the cameras at the swarm.
function frame() {
  if (state.vehicles.size === 0) return;
  const box = new THREE.Box3();
  for (const v of state.vehicles.values()) box.expandByPoint(v.mesh.position);
  if (replay) { // the whole run's extent
    const s = replay.doc.samples;
    for (let i = 0; i < s.t.length; i++) box.expandByPoint(new THREE.Vector3(s.x[i], s.y[i], s.z[i]));
  }
  const c = box.getCenter(new THREE.Vector3());
  const size = Math.max(20, box.getSize(new THREE.Vector3()).length());
  controls.target.copy(c);
  if (camera === persp) {
    persp.position.set(c.x - size * 0.8, c.y - size * 1.1, c.z + size * 0.9);
  } else {
    ortho.position.set(c.x, c.y, c.z + 500);
    ortho.userData.span = size * 0.7;
    resize();
  }
  controls.update();
  framed = true;
}

const vehicleGeom = new THREE.BoxGeometry(1.2, 1.2, 0.35);
const palette = [0x4a90e2, 0xf5a623, 0x7ed321, 0xd0021b, 0x9013fe, 0x50e3c2, 0xb8e986, 0xf8e71c, 0xbd10e0, 0x8b572a];

function vehicle(name) {
  let v = state.vehicles.get(name);
  if (v) return v;
  const id = state.vehicles.size;
  const color = palette[id % palette.length];
  const mesh = new THREE.Mesh(vehicleGeom, new THREE.MeshStandardMaterial({ color }));
  mesh.userData.name = name;
  scene.add(mesh);
  const points = [];
  const trailGeom = new THREE.BufferGeometry();
  const trail = new THREE.Line(trailGeom, new THREE.LineBasicMaterial({ color, transparent: true, opacity: 0.5 }));
  trail.visible = showTrails;
  scene.add(trail);
  v = { mesh, trail, trailGeom, points, telemetry: null, id };
  state.vehicles.set(name, v);
  const b = document.createElement("button");
  b.textContent = name;
  b.onclick = () => select(name);
  document.getElementById("vehicles").appendChild(b);
  return v;
}

function select(name) {
  state.selected = name;
  for (const [n, v] of state.vehicles) v.mesh.scale.setScalar(n === name ? 1.8 : 1);
  for (const b of document.querySelectorAll("#vehicles button")) b.classList.toggle("on", b.textContent === name);
  showTelemetry();
}

const raycaster = new THREE.Raycaster();
renderer.domElement.addEventListener("click", (e) => {
  const r = renderer.domElement.getBoundingClientRect();
  const p = new THREE.Vector2(((e.clientX - r.left) / r.width) * 2 - 1, -((e.clientY - r.top) / r.height) * 2 + 1);
  raycaster.setFromCamera(p, camera);
  const hit = raycaster.intersectObjects([...state.vehicles.values()].map((v) => v.mesh))[0];
  if (hit) select(hit.object.userData.name);
});

function showTelemetry() {
  const v = state.vehicles.get(state.selected);
  const t = v?.telemetry;
  const rows = !t ? [["vehicle", state.selected ?? "–"]] : [
    ["vehicle", t.name], ["mode", t.mode + (t.armed ? ", armed" : "")], ["altitude", t.position.z.toFixed(2) + " m"],
    ["speed", t.speed.toFixed(2) + " m/s"], ["position", `${t.position.x.toFixed(1)}, ${t.position.y.toFixed(1)} m`],
    ["battery", t.battery_v > 0 ? t.battery_v.toFixed(2) + " V" + (Number.isFinite(t.battery_remaining) ? `, ${(100 * t.battery_remaining).toFixed(0)}%` : "") : "–"],
    ["energy", t.energy_j.toFixed(0) + " J"],
  ];
  if (t && Number.isFinite(t.distance_m)) rows.push(["distance", t.distance_m.toFixed(1) + " m"]);
  // Values from a run's files are text: never HTML.
  document.getElementById("telemetry").replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    for (const s of [k, v]) {
      const td = document.createElement("td");
      td.textContent = String(s);
      tr.appendChild(td);
    }
    return tr;
  }));
}

// fixedNode marks a node that is not a vehicle (a ground station) at p.
function fixedNode(id, name, p) {
  const m = new THREE.Mesh(new THREE.OctahedronGeometry(1.2), new THREE.MeshStandardMaterial({ color: 0xf28c1a }));
  m.position.set(p.x, p.y, p.z);
  m.userData.name = name;
  scene.add(m);
  state.fixed.set(name, m);
  state.names[id] = name;
}

// nodeMesh returns the mesh of a vehicle or fixed node by id.
function nodeMesh(id) {
  const name = state.names[id];
  return state.vehicles.get(name)?.mesh ?? state.fixed.get(name);
}

// Obstacles and fixed nodes from the scene update.
function sceneUpdate(msg) {
  for (const ent of msg.entities ?? []) {
    if (ent.frame_id !== "world") continue;
    if ((ent.id ?? "").startsWith("node/")) {
      const meta = Object.fromEntries((ent.metadata ?? []).map((kv) => [kv.key, kv.value]));
      fixedNode(Number(meta.id), meta.name, ent.cubes[0].pose.position);
      continue;
    }
    for (const c of ent.cubes ?? []) {
      const m = new THREE.Mesh(new THREE.BoxGeometry(c.size.x, c.size.y, c.size.z),
        new THREE.MeshStandardMaterial({ color: 0x8a93a6, transparent: true, opacity: 0.45 }));
      m.position.set(c.pose.position.x, c.pose.position.y, c.pose.position.z);
      scene.add(m);
    }
  }
}

function transform(msg) {
  const v = vehicle(msg.child_frame_id);
  const p = msg.translation, q = msg.rotation;
  v.mesh.position.set(p.x, p.y, p.z);
  v.mesh.quaternion.set(q.x, q.y, q.z, q.w);
  const last = v.points[v.points.length - 1];
  if (!last || last.distanceTo(v.mesh.position) > 0.3) {
    v.points.push(v.mesh.position.clone());
    if (v.points.length > 600) v.points.shift();
    v.trailGeom.setFromPoints(v.points);
  }
  if (!v.seen) { v.seen = true; state.seen++; }
  if (!framed && state.seen >= state.expected) frame();
}

function stamp(ts) { return ts.sec + ts.nsec / 1e9; }

function networkEvent(msg) {
  const t = stamp(msg.timestamp);
  if (msg.event === "tx") {
    const m = nodeMesh(msg.src);
    if (m) state.flashes.push({ pos: m.position.clone(), until: performance.now() + 250 });
    return;
  }
  const key = `${msg.src}>${msg.node}`;
  let l = state.links.get(key);
  if (!l) { l = { rx: [], drop: [], last: -1e9, src: msg.src, dst: msg.node }; state.links.set(key, l); }
  if (msg.event === "rx") {
    l.rx.push(t); l.last = t;
    if (msg.kind === undefined || msg.kind === "state") l.gen = Math.max(l.gen ?? -Infinity, msg.t_gen_ns / 1e9);
    state.rxTimes.push(t);
    state.ages.push([t, t - msg.t_gen_ns / 1e9]);
  } else {
    l.drop.push(t);
    state.dropTimes.push(t);
  }
}

function logEvent(msg) {
  state.events.push(`${stamp(msg.timestamp).toFixed(2)} ${msg.name}: ${msg.message}`);
  if (state.events.length > 12) state.events.shift();
  document.getElementById("log").textContent = state.events.slice().reverse().join("\n");
}

// --- connection (Foxglove WebSocket protocol v1) ---
const topics = new Map(); // subscription id -> topic
function connect() {
  const ws = new WebSocket(`ws://${location.host}/`, ["foxglove.websocket.v1"]);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { state.connected = true; document.getElementById("status").textContent = "live"; };
  ws.onclose = () => {
    state.connected = false;
    document.getElementById("status").textContent = state.ended ? "run ended" : "disconnected";
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string") {
      const m = JSON.parse(ev.data);
      if (m.op === "advertise") {
        const subs = [];
        const vehicles = [];
        for (const ch of m.channels) {
          const id = topics.size;
          topics.set(id, ch.topic);
          subs.push({ id, channelId: ch.id });
          const veh = ch.topic.match(/^\/vehicles\/(.+)\/telemetry$/);
          if (veh) vehicles.push(veh[1]);
        }
        vehicles.forEach((name, i) => { state.names[i] = name; });
        state.expected = vehicles.length;
        for (const name of vehicles) vehicle(name); // buttons in node order
        if (params.get("select")) select(params.get("select"));
        ws.send(JSON.stringify({ op: "subscribe", subscriptions: subs }));
      } else if (m.op === "status") {
        if (/ended/.test(m.message)) { state.ended = true; document.getElementById("status").textContent = "run ended"; }
      }
      return;
    }
    const view = new DataView(ev.data);
    if (view.getUint8(0) !== 1) return;
    const topic = topics.get(view.getUint32(1, true));
    const msg = JSON.parse(new TextDecoder().decode(new Uint8Array(ev.data, 13)));
    if (msg.timestamp) {
      const t = stamp(msg.timestamp);
      if (t > state.simTime) state.simTime = t;
    }
    if (topic === "/tf") transform(msg);
    else if (topic === "/scene") sceneUpdate(msg);
    else if (topic === "/network/events") networkEvent(msg);
    else if (topic === "/events") logEvent(msg);
    else if (topic.endsWith("/telemetry")) {
      vehicle(msg.name).telemetry = msg;
      if (msg.name === state.selected) showTelemetry();
    }
  };
}
// A replay (skyloop view RUN_DIR) serves run.json; a live run does not.
let replay = null;
fetch("run.json").then(async (r) => {
  if (!r.ok) { connect(); liveControls(); return; }
  startReplay(await r.json());
}, () => connect()).catch((e) => state.errors.push(String(e && e.stack || e)));

// liveControls shows pause and speed for a real-time run (the server
// answers /control only then).
async function liveControls() {
  const r = await fetch("control");
  if (!r.ok) return;
  let c = await r.json();
  const box = document.getElementById("replay");
  box.hidden = false;
  document.getElementById("scrub").hidden = true;
  const play = document.getElementById("play"), rate = document.getElementById("rate");
  const show = () => {
    play.textContent = c.paused ? "resume" : "pause";
    if (![...rate.options].some((o) => Number(o.value) === c.factor)) rate.add(new Option(String(c.factor), String(c.factor)));
    rate.value = String(c.factor);
  };
  const post = async (body) => {
    const r = await fetch("control", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (r.ok) { c = await r.json(); show(); }
  };
  play.onclick = () => post({ pause: !c.paused });
  rate.onchange = () => post({ factor: Number(rate.value) });
  window.skyloop.pause = (on) => post({ pause: on });
  show();
}

// --- drawing ---
const linkGeom = new THREE.BufferGeometry();
const linkLines = new THREE.LineSegments(linkGeom, new THREE.LineBasicMaterial({ vertexColors: true, transparent: true, opacity: 0.85 }));
scene.add(linkLines);
const flashGeom = new THREE.SphereGeometry(1, 12, 8);
const flashMat = new THREE.MeshBasicMaterial({ color: 0xffffff, transparent: true, opacity: 0.5 });
const flashMeshes = [];

function pdrColor(p) {
  const c = new THREE.Color();
  c.setHSL(0.33 * Math.max(0, Math.min(1, p)), 0.75, 0.5);
  return c;
}

function prune(list, from) {
  let i = 0;
  while (i < list.length && (Array.isArray(list[i]) ? list[i][0] : list[i]) < from) i++;
  if (i > 0) list.splice(0, i);
}

function drawLinks() {
  const now = state.simTime;
  const pos = [], col = [];
  let heard = 0;
  for (const [key, l] of state.links) {
    prune(l.rx, now - 2); prune(l.drop, now - 2);
    if (l.rx.length === 0 && l.drop.length === 0) { state.links.delete(key); continue; }
    if (now - l.last > 1) continue; // nothing heard in the last second
    const a = nodeMesh(l.src), b = nodeMesh(l.dst);
    if (!a || !b) continue;
    heard++;
    const c = pdrColor(l.rx.length / (l.rx.length + l.drop.length));
    pos.push(a.position.x, a.position.y, a.position.z, b.position.x, b.position.y, b.position.z);
    col.push(c.r, c.g, c.b, c.r, c.g, c.b);
  }
  linkGeom.setAttribute("position", new THREE.Float32BufferAttribute(pos, 3));
  linkGeom.setAttribute("color", new THREE.Float32BufferAttribute(col, 3));
  document.getElementById("links").textContent = heard;
}

function drawFlashes() {
  const wall = performance.now();
  state.flashes = state.flashes.filter((f) => f.until > wall).slice(-200);
  while (flashMeshes.length < state.flashes.length) {
    const m = new THREE.Mesh(flashGeom, flashMat);
    scene.add(m);
    flashMeshes.push(m);
  }
  flashMeshes.forEach((m, i) => {
    const f = state.flashes[i];
    m.visible = !!f;
    if (f) { m.position.copy(f.pos); m.scale.setScalar(1 + 3 * (1 - (f.until - wall) / 250)); }
  });
}

function updatePanel() {
  const now = state.simTime;
  prune(state.rxTimes, now - 5); prune(state.dropTimes, now - 5); prune(state.ages, now - 5);
  const rx = state.rxTimes.length, dr = state.dropTimes.length;
  document.getElementById("rx").textContent = rx;
  document.getElementById("drops").textContent = dr;
  document.getElementById("pdr").textContent = rx + dr > 0 ? (rx / (rx + dr)).toFixed(3) : "–";
  if (state.ages.length > 0) {
    const a = state.ages.map((x) => x[1]).sort((x, y) => x - y);
    document.getElementById("p95").textContent = (1000 * a[Math.min(a.length - 1, Math.ceil(0.95 * a.length) - 1)]).toFixed(2) + " ms";
  }
  // Age of information: now minus the freshest state update each
  // receiver has from each source it heard in the last two seconds.
  let aoiSum = 0, aoiN = 0;
  for (const l of state.links.values()) {
    if (Number.isFinite(l.gen)) { aoiSum += now - l.gen; aoiN++; }
  }
  document.getElementById("aoi").textContent = aoiN > 0 ? (aoiSum / aoiN).toFixed(3) + " s" : "–";
  document.getElementById("clock").textContent = now.toFixed(2) + " s";
  const wall = performance.now() / 1000;
  if (wall - state.wallAt >= 1) {
    if (state.wallAt > 0) state.speed = (now - state.simAt) / (wall - state.wallAt);
    state.wallAt = wall; state.simAt = now;
  }
  document.getElementById("speed").textContent = state.connected && state.speed > 0 ? state.speed.toFixed(1) + "x real time" : "–";
}

// --- replay ---
// The page plays the run from run.json: every vehicle at its last sample
// at or before the time shown, its trail up to it, the links from the
// receptions of the last second, the figures of the last five.
function startReplay(doc) {
  replay = { doc, t: 0, playing: true, rate: 1, lastWall: performance.now(), byVehicle: [], net: null };
  document.getElementById("replay").hidden = false;
  document.getElementById("title").textContent = `${doc.scenario}, seed ${doc.seed}`;
  document.getElementById("status").textContent = "replay";
  const notes = [];
  if (doc.samples_cut) notes.push(`vehicles.csv cut after its first ${doc.samples.t.length} samples`);
  if (doc.net_cut) notes.push(`trace.csv cut after its first ${doc.net.t.length} events`);
  if (doc.events_cut) notes.push(`events.csv cut after its first ${doc.events.length} rows`);
  if (doc.missing.length) notes.push("missing: " + doc.missing.join(", "));
  document.getElementById("cut").textContent = notes.join("; ");
  for (const o of doc.obstacles) {
    const size = [0, 1, 2].map((i) => o.max[i] - o.min[i]);
    sceneUpdate({ entities: [{ frame_id: "world", cubes: [{ size: { x: size[0], y: size[1], z: size[2] },
      pose: { position: { x: (o.min[0] + o.max[0]) / 2, y: (o.min[1] + o.max[1]) / 2, z: (o.min[2] + o.max[2]) / 2 } } }] }] });
  }
  state.names = doc.names.slice();
  state.expected = doc.names.length;
  doc.fixed.forEach((f, i) => fixedNode(doc.names.length + i, f.name, { x: f.position[0], y: f.position[1], z: f.position[2] }));
  for (const name of doc.names) { vehicle(name); replay.byVehicle.push([]); }
  const s = doc.samples;
  for (let i = 0; i < s.t.length; i++) replay.byVehicle[s.id[i]].push(i);
  const order = doc.net.t.map((_, i) => i).sort((a, b) => doc.net.t[a] - doc.net.t[b]);
  replay.net = order;
  const scrub = document.getElementById("scrub");
  scrub.max = doc.duration_s;
  scrub.oninput = () => seek(Number(scrub.value));
  document.getElementById("play").onclick = (e) => {
    replay.playing = !replay.playing;
    e.target.textContent = replay.playing ? "pause" : "play";
  };
  document.getElementById("rate").onchange = (e) => { replay.rate = Number(e.target.value); };
  if (params.get("select")) select(params.get("select"));
  seek(0);
}

// upper returns the number of entries of sorted idx whose time is <= t.
function upper(idx, times, t) {
  let lo = 0, hi = idx.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (times[idx[m]] <= t) lo = m + 1; else hi = m;
  }
  return lo;
}

function seek(t) {
  const doc = replay.doc, s = doc.samples;
  replay.t = Math.max(0, Math.min(doc.duration_s, t));
  state.simTime = replay.t;
  document.getElementById("scrub").value = replay.t;
  doc.names.forEach((name, id) => {
    const v = state.vehicles.get(name), idx = replay.byVehicle[id];
    const k = upper(idx, s.t, replay.t) - 1;
    if (k < 0) return;
    const i = idx[k];
    v.mesh.position.set(s.x[i], s.y[i], s.z[i]);
    v.mesh.rotation.set(s.roll[i], s.pitch[i], s.yaw[i], "ZYX");
    v.points = idx.slice(Math.max(0, k - 600), k + 1).map((j) => new THREE.Vector3(s.x[j], s.y[j], s.z[j]));
    v.trailGeom.setFromPoints(v.points);
    v.telemetry = { name, mode: s.mode[i], armed: s.armed[i], position: { x: s.x[i], y: s.y[i], z: s.z[i] }, speed: s.speed[i],
      battery_v: s.battery_v[i], battery_remaining: NaN, energy_j: s.energy[i], distance_m: NaN };
    if (!v.seen) { v.seen = true; state.seen++; }
  });
  if (!framed) frame();
  if (state.selected) showTelemetry();
  // Network: the events of the last five seconds, links of the last two.
  const n = doc.net, order = replay.net;
  const hi = upper(order, n.t, replay.t), lo5 = upper(order, n.t, replay.t - 5);
  state.links.clear();
  state.rxTimes = []; state.dropTimes = []; state.ages = [];
  for (let k = lo5; k < hi; k++) {
    const i = order[k];
    if (n.type[i] === 0) continue;
    networkEvent({ timestamp: { sec: n.t[i], nsec: 0 }, event: n.type[i] === 1 ? "rx" : "drop", src: n.src[i], node: n.node[i], t_gen_ns: n.gen[i] * 1e9 });
  }
  state.events = doc.events.filter((e) => e.t <= replay.t).slice(-12).map((e) => `${e.t.toFixed(2)} ${state.names[e.node] ?? e.node}/${e.source}: ${e.name}${e.detail ? ": " + e.detail : ""}`);
  document.getElementById("log").textContent = state.events.slice().reverse().join("\n");
}

function stepReplay() {
  const wall = performance.now();
  const dt = (wall - replay.lastWall) / 1000;
  replay.lastWall = wall;
  if (replay.playing && replay.t < replay.doc.duration_s) seek(replay.t + dt * replay.rate);
}

function animate() {
  requestAnimationFrame(animate);
  if (replay) stepReplay();
  drawLinks();
  drawFlashes();
  updatePanel();
  controls.update();
  renderer.render(scene, camera);
}
animate();
