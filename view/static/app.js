// skyloop's live view: a Foxglove WebSocket protocol client (the server
// is the run's foxglove.Server, on the same address as this page) drawing
// the vehicles in 3D with three.js, the radio links heard recently
// coloured by their delivery ratio, packet flashes, and a panel with the
// selected vehicle's telemetry, the network figures and the events.
// World frame: x east, y north, z up (the camera's up is +z).
//
// Built for swarms (up to 10,000 vehicles): the vehicles are markers of a
// fixed size on screen (one draw call for all), named on hover and when
// selected; the links are a layer shown for all, for the selected vehicle
// only, for the weak ones (PDR below a threshold) or not at all; a scale
// bar gives the metres. What the page takes is thinned whatever the
// swarm's size (docs/guide.md, "The live view"): all positions come in one
// message (/skyloop/positions, at most about 1 MB/s), the network events
// in one a flush (/skyloop/network: counts of all, the first few), the
// telemetry of the selected vehicle only; the vehicle list is a search
// showing at most listMax names; above trailAll vehicles only the
// selected vehicle has a trail. The page reconnects by itself when the server
// drops it, and the server resends the channels and latest states.
import * as THREE from "./vendor/three.module.min.js";
import { OrbitControls } from "./vendor/OrbitControls.js";

const state = {
  errors: [],
  vehicles: new Map(), // name -> {position, quaternion, trail, trailGeom, trailN, telemetry, id, color}
  names: [], // by node id
  links: new Map(), // "src>dst" -> {rx: [times], drop: [times], last}
  flashes: [],
  events: [],
  ages: [], // [simTime, age s] of recent receptions
  rxTimes: [],
  dropTimes: [],
  simTime: 0,
  selected: null,
  pace: [], // [wall s, simulated s] of the server's time messages since the page (re)connected
  speed: 0,
  factor: 0, // the pace set (real-time runs), 0 if unknown
  connected: false,
  reconnects: 0, // connections made after the first
  bytes: 0, // received from the server
  hover: null,
  follow: false,
  linkMode: null, // "all", "selected", "weak", "off"; chosen by swarm size at first
  weakPdr: 0.8,
  drawn: 0, // links drawn
  ended: false,
  seen: 0, // vehicles whose position has come
  fixed: new Map(), // name -> {position} of the nodes that are not vehicles
  obstacles: new Set(), // scene entity ids drawn
  expected: Infinity,
  subscribed: new Map(), // topic -> subscription id
};
// listMax is the most vehicle names the list shows (a search finds the
// others); trailAll the most vehicles that all get a trail.
const listMax = 50, trailAll = 200;
window.addEventListener("error", (e) => state.errors.push(String(e.message)));
// three.js reports misuse with console.error, not exceptions.
const consoleError = console.error.bind(console);
console.error = (...a) => { state.errors.push(a.map(String).join(" ")); consoleError(...a); };
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
    for (const [name, v] of state.vehicles) out[name] = [v.position.x, v.position.y, v.position.z];
    return out;
  },
  // trail returns the number of points of a vehicle's trail and its last one.
  trail(name) {
    const v = state.vehicles.get(name);
    if (!v.trail) return { points: 0, last: null, visible: false };
    const a = v.trailGeom.attributes.position;
    const n = v.trailGeom.drawRange.count;
    return { points: n, last: n > 0 ? [a.getX(n - 1), a.getY(n - 1), a.getZ(n - 1)] : null, visible: v.trail.visible };
  },
  // screen returns where a vehicle is on the canvas (CSS pixels).
  screen(name) { const p = toScreen(state.vehicles.get(name).position); return p && [p.x, p.y]; },
  // view returns what the page shows beyond the scene: labels, selection,
  // link layer, scale bar, speed, connection.
  view() {
    const label = (id) => { const e = document.getElementById(id); return e.hidden ? null : e.textContent; };
    return { hover: label("hover-label"), selectedLabel: label("sel-label"), selected: state.selected, follow: state.follow,
      linkMode: state.linkMode, weakPdr: state.weakPdr, linksDrawn: state.drawn, linksVisible: linkLines.visible,
      scale: document.getElementById("scale-text").textContent, scalePx: document.getElementById("scale-bar").offsetWidth,
      markerPx, markers: markers.geometry.drawRange.count, speed: state.speed, status: document.getElementById("status").textContent,
      reconnects: state.reconnects, target: controls.target.toArray(), connected: state.connected, overlay: document.getElementById("overlay").hidden ? null : document.getElementById("overlay").textContent };
  },
  hoverAt(x, y) { hoverAt(x, y); },
  describe(name, detail) { return describe(name, detail); },
  markerColor(name) { return "#" + state.vehicles.get(name).color.getHexString(); },
  get target() { return controls.target.toArray(); },
  get bytes() { return state.bytes; },
  follow(on) { setFollow(on); },
  links(mode, pdr) { setLinkMode(mode, pdr); },
  select(name) { select(name); },
  panel() { return document.getElementById("telemetry").innerText; },
  // subscribed returns the topics the page takes; listed the names the
  // vehicle list shows; trails the number of trails.
  subscribed() { return [...state.subscribed.keys()]; },
  listed() { return [...document.querySelectorAll("#vehicles button")].map((b) => b.textContent); },
  find(text) { setSearch(text); },
  trails() { let n = 0; for (const v of state.vehicles.values()) if (v.trail) n++; return n; },
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
let grid = null, gridCell = 10;
// setGrid lays a ground grid of size metres in cells of a round size.
function setGrid(size) {
  if (grid) { scene.remove(grid); grid.geometry.dispose(); grid.material.dispose(); }
  gridCell = niceStep(size / 40);
  const n = Math.max(10, Math.min(200, Math.ceil(size / gridCell)));
  grid = new THREE.GridHelper(n * gridCell, n, 0x3a4656, 0x232b36);
  grid.rotation.x = Math.PI / 2; // the XZ grid into the XY (ground) plane
  scene.add(grid);
}
setGrid(400);
scene.add(new THREE.AxesHelper(5));

// niceBelow returns the 1, 2 or 5 times a power of ten nearest below x.
function niceBelow(x) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1e-6))));
  return x >= 5 * p ? 5 * p : x >= 2 * p ? 2 * p : p;
}

// niceStep returns the 1, 2 or 5 times a power of ten nearest above x.
function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1e-6))));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

const persp = new THREE.PerspectiveCamera(50, 1, 0.1, 20000);
persp.up.set(0, 0, 1);
persp.position.set(-40, -60, 50);
const ortho = new THREE.OrthographicCamera(-50, 50, 50, -50, 0.1, 20000);
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
// ?view=top starts in the top view; ?select=NAME selects a vehicle;
// ?links=all|selected|weak|off picks the link layer.
const params = new URLSearchParams(location.search);
if (params.get("view") === "top") toggleTop();
let showTrails = true;
document.getElementById("trails").onclick = (e) => {
  showTrails = !showTrails;
  e.target.classList.toggle("on", showTrails);
  for (const v of state.vehicles.values()) if (v.trail) v.trail.visible = showTrails;
};
document.getElementById("follow").onclick = () => setFollow(!state.follow);
document.getElementById("linkmode").onchange = (e) => setLinkMode(e.target.value);
document.getElementById("weakpdr").onchange = (e) => setLinkMode("weak", Number(e.target.value));

// setFollow turns the follow camera on or off: on, the camera keeps its
// offset from the selected vehicle as it flies.
function setFollow(on) {
  state.follow = !!on;
  document.getElementById("follow").classList.toggle("on", state.follow);
}

// setLinkMode picks the link layer: all links, the selected vehicle's,
// the weak ones (PDR below pdr), or none.
function setLinkMode(mode, pdr) {
  if (!["all", "selected", "weak", "off"].includes(mode)) return;
  state.linkMode = mode;
  if (Number.isFinite(pdr) && pdr >= 0 && pdr <= 1) state.weakPdr = pdr;
  document.getElementById("linkmode").value = mode;
  document.getElementById("weakpdr").value = String(state.weakPdr);
  document.getElementById("weakpdr").hidden = mode !== "weak";
  linkLines.visible = mode !== "off";
}

// frame points the cameras at the swarm.
function frame() {
  if (state.vehicles.size === 0) return;
  const box = new THREE.Box3();
  for (const v of state.vehicles.values()) if (v.seen) box.expandByPoint(v.position);
  for (const m of state.fixed.values()) box.expandByPoint(m.position);
  if (replay) { // the whole run's extent
    const s = replay.doc.samples;
    for (let i = 0; i < s.t.length; i++) box.expandByPoint(new THREE.Vector3(s.x[i], s.y[i], s.z[i]));
  }
  if (box.isEmpty()) return;
  const c = box.getCenter(new THREE.Vector3());
  const size = Math.max(20, box.getSize(new THREE.Vector3()).length());
  setGrid(Math.max(400, 3 * size));
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

// Markers: one point per vehicle, a disc of markerPx CSS pixels whatever
// the distance; the selected one gets a ring on top.
const markerPx = 11;
function discTexture(ring) {
  const c = document.createElement("canvas");
  c.width = c.height = 64;
  const g = c.getContext("2d");
  g.beginPath();
  g.arc(32, 32, ring ? 27 : 26, 0, 2 * Math.PI);
  if (ring) { g.lineWidth = 8; g.strokeStyle = "#ffffff"; g.stroke(); } else {
    g.fillStyle = "#ffffff"; g.fill(); g.lineWidth = 7; g.strokeStyle = "#10141a"; g.stroke();
  }
  return new THREE.CanvasTexture(c);
}
const dpr = window.devicePixelRatio || 1;
const markers = new THREE.Points(new THREE.BufferGeometry(), new THREE.PointsMaterial({
  size: markerPx * dpr, sizeAttenuation: false, vertexColors: true, map: discTexture(false), alphaTest: 0.5, depthTest: false }));
markers.frustumCulled = false;
markers.renderOrder = 2;
scene.add(markers);
const ring = new THREE.Points(new THREE.BufferGeometry(), new THREE.PointsMaterial({
  size: 2.2 * markerPx * dpr, sizeAttenuation: false, color: 0xffffff, map: discTexture(true), alphaTest: 0.5, depthTest: false }));
ring.geometry.setAttribute("position", new THREE.Float32BufferAttribute([0, 0, 0], 3));
ring.frustumCulled = false;
ring.renderOrder = 3;
ring.visible = false;
scene.add(ring);
const fixedMarkers = new THREE.Points(new THREE.BufferGeometry(), new THREE.PointsMaterial({
  size: markerPx * dpr, sizeAttenuation: false, color: 0xf28c1a }));
fixedMarkers.frustumCulled = false;
scene.add(fixedMarkers);
let markerCap = 0;

// updateMarkers writes every vehicle's position into the markers.
function updateMarkers() {
  const n = state.vehicles.size;
  if (markerCap === 0 || n > markerCap) {
    markerCap = Math.max(64, 2 * n);
    markers.geometry.dispose();
    markers.geometry = new THREE.BufferGeometry();
    markers.geometry.setAttribute("position", new THREE.BufferAttribute(new Float32Array(3 * markerCap), 3));
    markers.geometry.setAttribute("color", new THREE.BufferAttribute(new Float32Array(3 * markerCap), 3));
  }
  const pos = markers.geometry.attributes.position, col = markers.geometry.attributes.color;
  let k = 0;
  for (const v of state.vehicles.values()) {
    if (!v.seen) continue;
    pos.setXYZ(k, v.position.x, v.position.y, v.position.z);
    col.setXYZ(k, v.color.r, v.color.g, v.color.b);
    k++;
  }
  markers.geometry.setDrawRange(0, k);
  pos.needsUpdate = true; col.needsUpdate = true;
  const sel = state.vehicles.get(state.selected);
  ring.visible = !!(sel && sel.seen);
  if (ring.visible) {
    ring.geometry.attributes.position.setXYZ(0, sel.position.x, sel.position.y, sel.position.z);
    ring.geometry.attributes.position.needsUpdate = true;
  }
}

const palette = [0x4a90e2, 0xf5a623, 0x7ed321, 0xd0021b, 0x9013fe, 0x50e3c2, 0xb8e986, 0xf8e71c, 0xbd10e0, 0x8b572a];
// trailMax is the most points a trail keeps: its buffer is made this
// size once, so a trail of any length up to it fits (seeks included).
const trailMax = 600;

function vehicle(name) {
  let v = state.vehicles.get(name);
  if (v) return v;
  const id = state.vehicles.size;
  const color = new THREE.Color(palette[id % palette.length]);
  v = { position: new THREE.Vector3(), quaternion: new THREE.Quaternion(), trail: null, trailGeom: null, trailN: 0, telemetry: null, id, color, seen: false };
  state.vehicles.set(name, v);
  if (!(state.expected > trailAll)) addTrail(v);
  if (state.vehicles.size <= listMax) listVehicles();
  return v;
}

// addTrail gives v a trail (a line of up to trailMax points); dropTrail
// takes it away (a large swarm keeps the selected vehicle's only).
function addTrail(v) {
  if (v.trail) return;
  v.trailGeom = new THREE.BufferGeometry();
  v.trailGeom.setAttribute("position", new THREE.BufferAttribute(new Float32Array(3 * trailMax), 3));
  v.trailGeom.setDrawRange(0, 0);
  v.trail = new THREE.Line(v.trailGeom, new THREE.LineBasicMaterial({ color: v.color, transparent: true, opacity: 0.5 }));
  v.trail.frustumCulled = false;
  v.trail.visible = showTrails;
  v.trailN = 0;
  scene.add(v.trail);
}
function dropTrail(v) {
  if (!v || !v.trail) return;
  scene.remove(v.trail);
  v.trailGeom.dispose(); v.trail.material.dispose();
  v.trail = v.trailGeom = null;
  v.trailN = 0;
}

// listVehicles shows the buttons of the vehicles whose names hold the
// search text, at most listMax, and says how many more there are.
let search = "";
function listVehicles() {
  const box = document.getElementById("vehicles"), q = search.trim().toLowerCase();
  const names = [];
  let more = 0;
  for (const name of state.vehicles.keys()) {
    if (q && !name.toLowerCase().includes(q)) continue;
    if (names.length < listMax) names.push(name); else more++;
  }
  box.replaceChildren(...names.map((name) => {
    const b = document.createElement("button");
    b.textContent = name;
    b.classList.toggle("on", name === state.selected);
    b.onclick = () => select(name);
    return b;
  }));
  const note = document.getElementById("vehicles-more");
  note.textContent = more > 0 ? `and ${more} more: type to find` : "";
  document.getElementById("vsearch").hidden = state.vehicles.size <= listMax;
}
function setSearch(text) {
  search = String(text);
  document.getElementById("vsearch").value = search;
  listVehicles();
}
document.getElementById("vsearch").oninput = (e) => setSearch(e.target.value);
// Enter selects the vehicle named exactly, or the first listed.
document.getElementById("vsearch").onkeydown = (e) => {
  if (e.key !== "Enter") return;
  const q = search.trim();
  const b = document.querySelector("#vehicles button");
  if (state.vehicles.has(q)) select(q); else if (b) select(b.textContent);
};

// trailPush adds a point to a trail, dropping its oldest when full.
function trailPush(v, x, y, z) {
  const a = v.trailGeom.attributes.position;
  if (v.trailN === trailMax) {
    a.array.copyWithin(0, 3, 3 * trailMax);
    v.trailN--;
  }
  a.setXYZ(v.trailN++, x, y, z);
  a.needsUpdate = true;
  v.trailGeom.setDrawRange(0, v.trailN);
}

function select(name) {
  if (!state.vehicles.has(name)) return;
  const was = state.selected;
  state.selected = name;
  if (state.expected > trailAll && was !== name) {
    dropTrail(state.vehicles.get(was));
    const v = state.vehicles.get(name);
    addTrail(v);
    if (!replay && v.seen) trailPush(v, v.position.x, v.position.y, v.position.z);
  }
  if (replay && replay.doc.samples_every > 1 && was !== name) loadFull(name);
  if (replay) seek(replay.t);
  for (const b of document.querySelectorAll("#vehicles button")) b.classList.toggle("on", b.textContent === name);
  subscribeSelected();
  showTelemetry();
}

// toScreen returns where world point p is on the canvas in CSS pixels,
// or null behind the camera.
const projected = new THREE.Vector3();
function toScreen(p) {
  projected.copy(p).project(camera);
  if (projected.z > 1 || projected.z < -1) return null;
  return { x: (projected.x + 1) / 2 * host.clientWidth, y: (1 - projected.y) / 2 * host.clientHeight };
}

// pick returns the vehicle nearest canvas point (x, y) within a marker's
// reach, or null.
function pick(x, y) {
  let best = null, bestD = (markerPx / 2 + 5) ** 2;
  for (const [name, v] of state.vehicles) {
    if (!v.seen) continue;
    const p = toScreen(v.position);
    if (!p) continue;
    const d = (p.x - x) ** 2 + (p.y - y) ** 2;
    if (d <= bestD) { best = name; bestD = d; }
  }
  return best;
}

function hoverAt(x, y) { state.hover = pick(x, y); }

renderer.domElement.addEventListener("click", (e) => {
  const r = renderer.domElement.getBoundingClientRect();
  const name = pick(e.clientX - r.left, e.clientY - r.top);
  if (name) select(name);
});
renderer.domElement.addEventListener("pointermove", (e) => {
  const r = renderer.domElement.getBoundingClientRect();
  hoverAt(e.clientX - r.left, e.clientY - r.top);
});
renderer.domElement.addEventListener("pointerleave", () => { state.hover = null; });

// placeLabel puts label element id next to vehicle name (hidden if none).
function placeLabel(id, name) {
  const el = document.getElementById(id);
  const v = name && state.vehicles.get(name);
  const p = v && v.seen && toScreen(v.position);
  if (!p) { el.hidden = true; return; }
  if (el.textContent !== name) el.textContent = name;
  el.style.left = `${Math.round(p.x + markerPx)}px`;
  el.style.top = `${Math.round(p.y - markerPx)}px`;
  el.hidden = false;
}

// metresPerPixel returns the scale at the point the camera looks at.
function metresPerPixel() {
  const h = host.clientHeight || 1;
  if (camera === ortho) return (ortho.top - ortho.bottom) / ortho.zoom / h;
  const d = persp.position.distanceTo(controls.target);
  return 2 * d * Math.tan((persp.fov * Math.PI) / 360) / persp.zoom / h;
}

// drawScale sizes the scale bar to a round length of about 120 pixels.
function drawScale() {
  const mpp = metresPerPixel();
  const len = niceBelow(mpp * 150);
  const px = Math.round(len / mpp);
  const bar = document.getElementById("scale-bar");
  if (bar.dataset.px !== String(px)) { bar.style.width = `${px}px`; bar.dataset.px = String(px); }
  const text = `${len >= 1000 ? len / 1000 + " km" : len + " m"} · grid ${gridCell} m`;
  const el = document.getElementById("scale-text");
  if (el.textContent !== text) el.textContent = text;
}

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

// fixedNode marks a node that is not a vehicle (a ground station) at p:
// an orange square marker.
function fixedNode(id, name, p) {
  state.fixed.set(name, { position: new THREE.Vector3(p.x, p.y, p.z) });
  state.names[id] = name;
  const pos = [];
  for (const f of state.fixed.values()) pos.push(f.position.x, f.position.y, f.position.z);
  fixedMarkers.geometry.setAttribute("position", new THREE.Float32BufferAttribute(pos, 3));
}

// node returns the vehicle or fixed node of an id ({position}).
function node(id) {
  const name = state.names[id];
  return state.vehicles.get(name) ?? state.fixed.get(name);
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
    if (state.obstacles.has(ent.id ?? "")) continue; // sent again on reconnection
    if (ent.id) state.obstacles.add(ent.id);
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
  v.position.set(p.x, p.y, p.z);
  v.quaternion.set(q.x, q.y, q.z, q.w);
  moved(v, p.x, p.y, p.z);
  if (!framed && state.seen >= state.expected) frame();
}

// moved puts v at (x, y, z) and extends its trail, if it has one.
function moved(v, x, y, z) {
  v.position.set(x, y, z);
  if (v.trail) {
    const a = v.trailGeom.attributes.position, n = v.trailN;
    if (n === 0 || Math.hypot(a.getX(n - 1) - x, a.getY(n - 1) - y, a.getZ(n - 1) - z) > 0.3) trailPush(v, x, y, z);
  }
  if (!v.seen) { v.seen = true; state.seen++; }
}

// positions takes a skyloop.Positions message: every vehicle's position,
// x, y, z by vehicle id (null for one not sampled yet).
function positions(msg) {
  const p = msg.p ?? [];
  for (let i = 0; 3 * i + 2 < p.length; i++) {
    if (p[3 * i] === null) continue;
    const v = state.vehicles.get(state.names[i]);
    if (v) moved(v, p[3 * i], p[3 * i + 1], p[3 * i + 2]);
  }
  if (!framed && state.seen >= state.expected) frame();
}

// networkBatch takes a skyloop.NetworkBatch message: the counts of a
// flush's events go to the figures, the events it holds (the first few)
// to the links, flashes and ages.
function networkBatch(msg) {
  const t = stamp(msg.timestamp), [, rx, drop] = msg.counts ?? [0, 0, 0];
  if (rx > 0) state.rxTimes.push([t, rx]);
  if (drop > 0) state.dropTimes.push([t, drop]);
  for (const [te, type, src, node, gen, st] of msg.events ?? []) {
    networkEvent({ timestamp: { sec: te, nsec: 0 }, event: ["tx", "rx", "drop"][type], src, node, t_gen_ns: gen * 1e9, kind: st ? "state" : "other" }, true);
  }
}

function stamp(ts) { return ts.sec + ts.nsec / 1e9; }

// networkEvent takes a network event; counted says that the figures have
// it already (a batch's counts).
function networkEvent(msg, counted) {
  const t = stamp(msg.timestamp);
  if (msg.event === "tx") {
    const m = node(msg.src);
    if (m) state.flashes.push({ pos: m.position.clone(), until: performance.now() + 250 });
    return;
  }
  const key = `${msg.src}>${msg.node}`;
  let l = state.links.get(key);
  if (!l) { l = { rx: [], drop: [], last: -1e9, src: msg.src, dst: msg.node }; state.links.set(key, l); }
  if (msg.event === "rx") {
    l.rx.push(t); l.last = t;
    if (msg.kind === undefined || msg.kind === "state") l.gen = Math.max(l.gen ?? -Infinity, msg.t_gen_ns / 1e9);
    if (!counted) state.rxTimes.push([t, 1]);
    state.ages.push([t, t - msg.t_gen_ns / 1e9]);
  } else {
    l.drop.push(t);
    if (!counted) state.dropTimes.push([t, 1]);
  }
}

function logEvent(msg) {
  const text = String(msg.message ?? ""), k = text.indexOf(": ");
  const line = `${stamp(msg.timestamp).toFixed(2)} ${msg.name}: ${describe(k < 0 ? text : text.slice(0, k), k < 0 ? "" : text.slice(k + 2))}`;
  if (state.events.length > 0 && state.events[state.events.length - 1] === line) return; // resent after a reconnection
  state.events.push(line);
  if (state.events.length > 12) state.events.shift();
  document.getElementById("log").textContent = state.events.slice().reverse().join("\n");
}

// describe puts an event in words: "command" with "leg=1 op=1
// latency_ns=10000000" reads "command: leg 1 op 1, 10 ms latency"; a
// duration in ns reads in ms or s; a parameter (NAME=value) stays as it is.
function describe(name, detail) {
  const words = String(name).replace(/_/g, " ");
  if (!detail) return words;
  const parts = [], durations = [];
  for (const tok of String(detail).split(/[ ,]+/)) {
    const m = tok.match(/^([a-z][a-z0-9_]*)=(-?[0-9.eE+-]+)$/);
    if (!m) { if (tok) parts.push(tok); continue; }
    const [, key, value] = m;
    if (key.endsWith("_ns") && Number.isFinite(Number(value))) {
      durations.push(`${duration(Number(value) / 1e9)} ${key.slice(0, -3).replace(/_/g, " ")}`);
    } else {
      parts.push(`${key.replace(/_/g, " ")} ${value}`);
    }
  }
  return `${words}: ${[parts.join(" "), ...durations].filter(Boolean).join(", ")}`;
}

// duration writes s seconds in ms below a second, else in s.
function duration(s) {
  const a = Math.abs(s);
  if (a < 1e-3) return `${+(s * 1e6).toPrecision(3)} µs`;
  if (a < 1) return `${+(s * 1e3).toPrecision(3)} ms`;
  return `${+s.toPrecision(4)} s`;
}

// --- connection (Foxglove WebSocket protocol v1) ---
// The page reconnects whenever the connection drops before the run has
// ended (a server drops a client whose writes time out): it retries at
// once, then backs off to every 2 s, and the server sends the channels,
// the run's time and every latest state again.
let topics = new Map(); // subscription id -> topic
let channels = new Map(); // topic -> channel id
let socket = null, nextSub = 0;
let retryMs = 0;

// subscribe and unsubscribe change what the page takes from the server.
function subscribe(list) {
  const subs = [];
  for (const topic of list) {
    if (!channels.has(topic) || state.subscribed.has(topic)) continue;
    const id = nextSub++;
    topics.set(id, topic);
    state.subscribed.set(topic, id);
    subs.push({ id, channelId: channels.get(topic) });
  }
  if (subs.length > 0 && socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ op: "subscribe", subscriptions: subs }));
}
function unsubscribe(topic) {
  const id = state.subscribed.get(topic);
  if (id === undefined) return;
  state.subscribed.delete(topic);
  topics.delete(id);
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ op: "unsubscribe", subscriptionIds: [id] }));
}

// subscribeSelected takes the selected vehicle's telemetry, and no other.
function subscribeSelected() {
  const want = state.selected ? `/vehicles/${state.selected}/telemetry` : null;
  for (const topic of [...state.subscribed.keys()]) if (topic.endsWith("/telemetry") && topic !== want) unsubscribe(topic);
  if (want) subscribe([want]);
}
function setStatus(text) {
  const el = document.getElementById("status");
  if (el.textContent !== text) el.textContent = text;
}
function connect() {
  const ws = new WebSocket(`ws://${location.host}/`, ["foxglove.websocket.v1"]);
  ws.binaryType = "arraybuffer";
  socket = ws;
  topics = new Map();
  channels = new Map();
  state.subscribed = new Map();
  state.pace = [];
  ws.onopen = () => {
    if (state.everConnected) state.reconnects++;
    state.everConnected = true;
    state.connected = true;
    retryMs = 0;
    setStatus("live");
  };
  ws.onclose = () => {
    const was = state.connected;
    state.connected = false;
    state.pace = [];
    if (state.ended) { setStatus("run ended"); return; }
    setStatus(state.everConnected ? "reconnecting…" : "connecting…");
    // Once the run has been seen, the server going away for good (skyloop
    // exited) still ends in retries every 2 s: harmless, and the page
    // comes back if the run is started again on the same address.
    retryMs = was ? 0 : Math.min(2000, Math.max(250, 2 * retryMs));
    setTimeout(connect, retryMs);
  };
  ws.onmessage = (ev) => {
    state.bytes += typeof ev.data === "string" ? ev.data.length : ev.data.byteLength;
    if (typeof ev.data === "string") {
      const m = JSON.parse(ev.data);
      if (m.op === "advertise") {
        // Taken: the scene, the events, the batches (or, from a server
        // without them, every transform and network event) and the
        // selected vehicle's telemetry. Never the fixes.
        const vehicles = [];
        for (const ch of m.channels) {
          channels.set(ch.topic, ch.id);
          const veh = ch.topic.match(/^\/vehicles\/(.+)\/telemetry$/);
          if (veh) vehicles.push(veh[1]);
        }
        vehicles.forEach((name, i) => { state.names[i] = name; });
        state.expected = vehicles.length;
        for (const name of vehicles) vehicle(name); // in node order
        listVehicles();
        if (state.linkMode === null) setLinkMode(params.get("links") ?? (vehicles.length > 20 ? "selected" : "all"));
        const batched = channels.has("/skyloop/positions");
        subscribe(["/scene", "/events", ...(batched ? ["/skyloop/positions", "/skyloop/network"] : ["/tf", "/network/events"])]);
        if (params.get("select") && !state.selected) select(params.get("select"));
        subscribeSelected();
      } else if (m.op === "status") {
        if (/ended/.test(m.message)) { state.ended = true; setStatus("run ended"); }
      }
      return;
    }
    const view = new DataView(ev.data);
    const op = view.getUint8(0);
    if (op === 2) { // Time: the run's simulated time (ns)
      const t = Number(view.getBigUint64(1, true)) / 1e9;
      if (t > state.simTime) state.simTime = t;
      pace(t);
      return;
    }
    if (op !== 1) return;
    const topic = topics.get(view.getUint32(1, true));
    const msg = JSON.parse(new TextDecoder().decode(new Uint8Array(ev.data, 13)));
    if (msg.timestamp) {
      const t = stamp(msg.timestamp);
      if (t > state.simTime) state.simTime = t;
    }
    if (topic === "/tf") transform(msg);
    else if (topic === "/scene") sceneUpdate(msg);
    else if (topic === "/skyloop/positions") positions(msg);
    else if (topic === "/skyloop/network") networkBatch(msg);
    else if (topic === "/network/events") networkEvent(msg);
    else if (topic === "/events") logEvent(msg);
    else if (topic && topic.endsWith("/telemetry")) {
      const v = state.vehicles.get(msg.name);
      if (v) v.telemetry = msg;
      if (msg.name === state.selected) showTelemetry();
    }
  };
}

// pace records the server's simulated time t against the wall clock and
// sets state.speed to the run's pace over the last few seconds: the time
// messages of this connection only, the first of which is the run's time
// when the page (re)connected, so a page that joins a run late does not
// count the time it missed.
function pace(t) {
  const wall = performance.now() / 1000, p = state.pace;
  // Time messages come every 40 ms while the run moves. A longer gap is
  // the page (or the link) stalled, as while it builds the scene on
  // connecting, and the messages held up then come in a burst: the time
  // measured across either is not the run's. After a gap the window
  // starts again, at the first message that comes at the usual spacing.
  const last = state.paceLast;
  state.paceLast = wall;
  if (last !== undefined && wall - last > 0.5) { p.length = 0; state.paceHold = true; return; }
  if (state.paceHold) {
    if (wall - last < 0.02) return;
    state.paceHold = false;
  }
  p.push([wall, t]);
  while (p.length > 2 && wall - p[1][0] >= 4) p.shift();
  const [w0, t0] = p[0];
  if (state.serverSpeed > 0) state.speed = state.serverSpeed; // the run's own measure (liveControls)
  else if (wall - w0 >= 1) state.speed = (t - t0) / (wall - w0);
}

// A replay (skyloop view RUN_DIR) serves run.json; a live run does not.
let replay = null;
fetch("run.json").then(async (r) => {
  if (!r.ok) { setOverlay("waiting for the run's vehicles…"); connect(); liveControls(); return; }
  setStatus("loading…");
  setOverlay("loading the run…");
  startReplay(await r.json());
}, () => connect()).catch((e) => state.errors.push(String(e && e.stack || e)));

function setOverlay(text) { document.getElementById("overlay").textContent = text; }

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
    if (r.ok) { c = await r.json(); state.factor = c.factor; state.paused = c.paused; show(); }
  };
  play.onclick = () => post({ pause: !c.paused });
  rate.onchange = () => post({ factor: Number(rate.value) });
  window.skyloop.pause = (on) => post({ pause: on });
  state.factor = c.factor; state.paused = c.paused;
  show();
  // A paced run measures its own speed: ask for it every second (the
  // pace the page measures from the time messages it gets is thrown off
  // while the page itself is busy).
  setInterval(async () => {
    if (!state.connected) return;
    try {
      const r = await fetch("control");
      if (!r.ok) return;
      const n = await r.json();
      if (typeof n.speed === "number" && Number.isFinite(n.speed) && n.speed >= 0) state.serverSpeed = n.speed;
    } catch (e) { /* the run has ended or the server is gone: the page's own measure stays */ }
  }, 1000);
}

// --- drawing ---
const linkGeom = new THREE.BufferGeometry();
const linkLines = new THREE.LineSegments(linkGeom, new THREE.LineBasicMaterial({ vertexColors: true, transparent: true, opacity: 0.85 }));
linkLines.frustumCulled = false;
scene.add(linkLines);
// Packet flashes: a ring of fixed size on screen around each sender for
// 250 ms, all in one Points object (at most flashMax at once).
const flashMax = 200;
const flashPos = new Float32Array(3 * flashMax);
const flashGeom = new THREE.BufferGeometry();
flashGeom.setAttribute("position", new THREE.BufferAttribute(flashPos, 3));
flashGeom.setDrawRange(0, 0);
const flashPoints = new THREE.Points(flashGeom, new THREE.PointsMaterial({
  size: 1.8 * markerPx * dpr, sizeAttenuation: false, color: 0xffffff, map: discTexture(true),
  alphaTest: 0.5, transparent: true, opacity: 0.8, depthTest: false }));
flashPoints.frustumCulled = false;
scene.add(flashPoints);

function pdrColor(p, c = new THREE.Color()) {
  c.setHSL(0.33 * Math.max(0, Math.min(1, p)), 0.75, 0.5);
  return c;
}

function prune(list, from) {
  let i = 0;
  while (i < list.length && (Array.isArray(list[i]) ? list[i][0] : list[i]) < from) i++;
  if (i > 0) list.splice(0, i);
}

// maxLinksDrawn bounds the segments of the link layer (a swarm of 1000
// hears up to a million links).
const maxLinksDrawn = 20000;
let linkCap = 0;

// drawLinks draws the link layer: the links heard in the last second, as
// state.linkMode thins them, coloured by PDR over the last two.
function drawLinks() {
  const now = state.simTime;
  const mode = state.linkMode ?? "all", sel = state.names.indexOf(state.selected);
  if (linkCap === 0) {
    linkCap = maxLinksDrawn;
    linkGeom.setAttribute("position", new THREE.BufferAttribute(new Float32Array(6 * linkCap), 3));
    linkGeom.setAttribute("color", new THREE.BufferAttribute(new Float32Array(6 * linkCap), 3));
  }
  const pos = linkGeom.attributes.position, col = linkGeom.attributes.color;
  let heard = 0, k = 0;
  const c = new THREE.Color();
  for (const [key, l] of state.links) {
    prune(l.rx, now - 2); prune(l.drop, now - 2);
    if (l.rx.length === 0 && l.drop.length === 0) { state.links.delete(key); continue; }
    if (now - l.last > 1) continue; // nothing heard in the last second
    const a = node(l.src), b = node(l.dst);
    if (!a || !b) continue;
    heard++;
    const pdr = l.rx.length / (l.rx.length + l.drop.length);
    if (mode === "off" || k >= linkCap || (mode === "selected" && l.src !== sel && l.dst !== sel) || (mode === "weak" && pdr >= state.weakPdr)) continue;
    pdrColor(pdr, c);
    pos.setXYZ(2 * k, a.position.x, a.position.y, a.position.z);
    pos.setXYZ(2 * k + 1, b.position.x, b.position.y, b.position.z);
    col.setXYZ(2 * k, c.r, c.g, c.b);
    col.setXYZ(2 * k + 1, c.r, c.g, c.b);
    k++;
  }
  pos.needsUpdate = true; col.needsUpdate = true;
  linkGeom.setDrawRange(0, 2 * k);
  state.drawn = k;
  const text = k === heard ? String(heard) : `${heard} (${k} drawn)`;
  const el = document.getElementById("links");
  if (el.textContent !== text) el.textContent = text;
}

function drawFlashes() {
  const wall = performance.now();
  state.flashes = state.flashes.filter((f) => f.until > wall).slice(-flashMax);
  state.flashes.forEach((f, i) => {
    flashPos[3 * i] = f.pos.x; flashPos[3 * i + 1] = f.pos.y; flashPos[3 * i + 2] = f.pos.z;
  });
  flashGeom.setDrawRange(0, state.flashes.length);
  flashGeom.attributes.position.needsUpdate = true;
}

function updatePanel() {
  const now = state.simTime;
  prune(state.rxTimes, now - 5); prune(state.dropTimes, now - 5); prune(state.ages, now - 5);
  const sum = (list) => list.reduce((a, x) => a + x[1], 0);
  const rx = sum(state.rxTimes), dr = sum(state.dropTimes);
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
  // The true pace: from the server's time messages (see pace); none for
  // a second means the run stands still (paused, or stalled).
  const wall = performance.now() / 1000, last = state.pace[state.pace.length - 1];
  if (last && wall - last[0] > 1.5) state.speed = 0;
  let speed = "–";
  if (state.connected && last && (state.speed > 0 || wall - last[0] > 1.5)) {
    speed = `${state.speed.toFixed(state.speed < 10 ? 2 : 1)}x real time`;
    if (state.factor > 0) speed += ` (set ${state.factor}x${state.paused ? ", paused" : ""})`;
  }
  const el = document.getElementById("speed");
  if (el.textContent !== speed) el.textContent = speed;
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
  if (doc.samples_every > 1) notes.push(`1 sample in ${doc.samples_every} shown (all of the selected vehicle's)`);
  if (doc.net_every > 1) notes.push(`1 network event in ${doc.net_every} shown, each counted ${doc.net_every} times`);
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
  setLinkMode(params.get("links") ?? (doc.names.length > 20 ? "selected" : "all"));
  if (params.get("select")) select(params.get("select"));
  seek(0);
}

// loadFull fetches the selected vehicle's samples at full rate
// (vehicle.json) for a replay whose run.json holds every nth sample.
async function loadFull(name) {
  const id = replay.doc.names.indexOf(name);
  const r = await fetch(`vehicle.json?id=${id}`);
  if (!r.ok || state.selected !== name) return;
  const samples = await r.json();
  replay.full = { id, samples, idx: samples.t.map((_, i) => i) };
  seek(replay.t);
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
    const v = state.vehicles.get(name);
    // A vehicle's samples: the full-rate ones of the selected vehicle of
    // a thinned run (vehicle.json), else run.json's.
    const full = replay.full && replay.full.id === id ? replay.full : null;
    const c = full ? full.samples : s, idx = full ? full.idx : replay.byVehicle[id];
    const k = upper(idx, c.t, replay.t) - 1;
    if (k < 0) return;
    const i = idx[k];
    v.position.set(c.x[i], c.y[i], c.z[i]);
    if (v.trail) { // the last trailMax samples up to now, into its own buffer
      const a = v.trailGeom.attributes.position, from = Math.max(0, k + 1 - trailMax);
      for (let m = from; m <= k; m++) { const j = idx[m]; a.setXYZ(m - from, c.x[j], c.y[j], c.z[j]); }
      v.trailN = k + 1 - from;
      a.needsUpdate = true;
      v.trailGeom.setDrawRange(0, v.trailN);
    }
    if (name === state.selected) {
      v.telemetry = { name, mode: c.mode[i], armed: c.armed[i], position: { x: c.x[i], y: c.y[i], z: c.z[i] }, speed: c.speed[i],
        battery_v: c.battery_v[i], battery_remaining: NaN, energy_j: c.energy[i], distance_m: NaN };
    }
    if (!v.seen) { v.seen = true; state.seen++; }
  });
  if (!framed) frame();
  if (state.selected) showTelemetry();
  // Network: the events of the last five seconds, links of the last two.
  const n = doc.net, order = replay.net;
  const hi = upper(order, n.t, replay.t), lo5 = upper(order, n.t, replay.t - 5);
  state.links.clear();
  state.rxTimes = []; state.dropTimes = []; state.ages = [];
  // A thinned trace (every net_every-th event sent) counts each event
  // it holds net_every times.
  const every = doc.net_every ?? 1;
  for (let k = lo5; k < hi; k++) {
    const i = order[k];
    if (n.type[i] === 0) continue;
    networkEvent({ timestamp: { sec: n.t[i], nsec: 0 }, event: n.type[i] === 1 ? "rx" : "drop", src: n.src[i], node: n.node[i], t_gen_ns: n.gen[i] * 1e9 }, true);
    (n.type[i] === 1 ? state.rxTimes : state.dropTimes).push([n.t[i], every]);
  }
  state.events = doc.events.filter((e) => e.t <= replay.t).slice(-12).map((e) => `${e.t.toFixed(2)} ${e.node >= 0 ? (state.names[e.node] ?? e.node) + "/" : ""}${e.source}: ${describe(e.name, e.detail)}`);
  document.getElementById("log").textContent = state.events.slice().reverse().join("\n");
}

function stepReplay() {
  const wall = performance.now();
  const dt = (wall - replay.lastWall) / 1000;
  replay.lastWall = wall;
  if (replay.playing && replay.t < replay.doc.duration_s) seek(replay.t + dt * replay.rate);
}

// followSelected moves the camera with the selected vehicle.
const followAt = new THREE.Vector3();
function followSelected() {
  const v = state.follow && state.vehicles.get(state.selected);
  if (!v || !v.seen) return;
  followAt.subVectors(v.position, controls.target);
  controls.target.add(followAt);
  camera.position.add(followAt);
}

let frames = 0;
window.skyloop.frames = () => frames;
function animate() {
  requestAnimationFrame(animate);
  frames++;
  if (replay) stepReplay();
  followSelected();
  updateMarkers();
  drawLinks();
  drawFlashes();
  updatePanel();
  controls.update();
  renderer.render(scene, camera);
  placeLabel("sel-label", state.selected);
  placeLabel("hover-label", state.hover !== state.selected ? state.hover : null);
  drawScale();
  const overlay = document.getElementById("overlay");
  if (!overlay.hidden && state.seen > 0) overlay.hidden = true;
}
animate();
