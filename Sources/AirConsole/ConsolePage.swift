// The air console's page (issue 29 item 1): one self-contained HTML document, its CSS and JavaScript inline, no asset
// fetched from anywhere, no JavaScript toolchain.
enum ConsolePage {
    static let html: String = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>OpenCoreBluetooth air</title>
<link rel="icon" href="data:,">
<style>
:root{
  --bg:#eceff3;--panel:#fff;--line:#dde2e8;--soft:#f5f7f9;--text:#1b2130;--muted:#6a7486;
  --accent:#2563eb;--red:#d92d4f;--green:#10a05a;--amber:#d97706;--head:#182030;
  --mono:ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace;
  --sans:system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", sans-serif
}
*{box-sizing:border-box}
[hidden]{display:none !important}
html, body{margin:0;height:100%}
body{
  font:13px/1.4 var(--sans);color:var(--text);background:var(--bg);
  display:grid;gap:8px;padding:0 8px;
  grid-template-columns:minmax(0, 1fr) 350px;
  grid-template-rows:auto auto minmax(280px, 1fr) minmax(230px, 40vh) auto
}
button, input, select{font:inherit;color:inherit}
button{
  border:1px solid #c5ccd6;background:#fff;border-radius:6px;padding:3px 10px;cursor:pointer
}
button:hover{border-color:var(--accent);color:var(--accent)}
button.danger:hover{border-color:var(--red);color:var(--red)}
input, select{border:1px solid #c5ccd6;border-radius:6px;padding:3px 6px;background:#fff}
header{
  grid-column:1 / -1;grid-row:1;margin:0 -8px;padding:7px 14px;background:var(--head);color:#e6ebf2;
  display:flex;align-items:center;gap:18px;flex-wrap:wrap
}
header h1{font-size:15px;margin:0;font-weight:600;letter-spacing:.01em}
header h1 small{font-weight:400;color:#8d99ad;margin-left:4px}
header .group{display:flex;align-items:center;gap:6px}
header .sep{flex:1}
header .k{color:#8d99ad}
header b{font-family:var(--mono);font-weight:600}
header button, header input{background:#243049;border-color:#3a4763;color:#e6ebf2}
header button:hover{color:#fff;border-color:#7aa2ff}
#loss-input{width:62px;text-align:right}
.dot{width:10px;height:10px;border-radius:50%;background:var(--red);display:inline-block;box-shadow:0 0 0 3px rgba(217,45,79,.25)}
.dot.live{background:#2fd17d;box-shadow:0 0 0 3px rgba(47,209,125,.25)}
#status-detail{color:#8d99ad}
body.stale #map-card, body.stale aside, body.stale #plots-card{opacity:.55;filter:grayscale(.6)}
#banner{grid-column:1 / -1;grid-row:2;background:#fff4e5;border:1px solid #f1c27d;color:#7a4200;border-radius:8px;padding:9px 14px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
.card{background:var(--panel);border:1px solid var(--line);border-radius:8px;min-height:0;min-width:0;display:flex;flex-direction:column;overflow:hidden}
.card > h2{
  font-size:11px;text-transform:uppercase;letter-spacing:.07em;color:var(--muted);margin:0;padding:6px 10px;
  border-bottom:1px solid var(--line);display:flex;align-items:center;gap:8px;font-weight:600;flex:none
}
.card > h2 .grow{flex:1}
.card > h2 .note{text-transform:none;letter-spacing:0;font-weight:400}
#map-card{position:relative;grid-row:3;grid-column:1}
#map{width:100%;height:100%;display:block;touch-action:none;user-select:none;background:#fbfcfd}
#map text{font-family:var(--mono)}
#map .grid{stroke:#e9edf2}
#map .axis{stroke:#cdd4de}
#map .gl{fill:#a3acb9}
.range{fill:var(--c);fill-opacity:.02;stroke:var(--c);stroke-opacity:.4}
#map{cursor:move}
.device{cursor:grab}
.device.dragging{cursor:grabbing}
.device .hit{fill:transparent}
.device .body{fill:var(--c);stroke:#fff;stroke-width:2.5}
.device .sel{fill:none;stroke:var(--c);stroke-width:2;opacity:0}
.device.selected .sel{opacity:1}
.device:hover .body{stroke:#e3e8ef}
.device text{paint-order:stroke;stroke:#fbfcfd;stroke-width:3px;stroke-linejoin:round}
.device .name{font-size:12px;fill:var(--text);font-weight:600}
.device .sub{font-size:10px;fill:var(--muted)}
.device .cross{stroke:#fff;stroke-width:2.2;stroke-linecap:round;display:none}
.device .scan{fill:none;stroke:var(--c);stroke-width:2;stroke-linecap:round;display:none}
.device.scanning .scan{display:inline}
.device.off .body{fill:#b7bec9}
.device.off .cross{display:inline;stroke:#596273}
.device.off .name{fill:#8a93a3;text-decoration:line-through}
.device.far .body{stroke-dasharray:3 2;stroke:var(--c);fill-opacity:.55}
.pulse{
  position:absolute;width:18px;height:18px;margin:-9px 0 0 -9px;border-radius:50%;border:1.5px solid var(--c);
  pointer-events:none;animation:pulse 1.1s ease-out forwards;will-change:transform, opacity
}
@keyframes pulse{from{transform:scale(1);opacity:.9} to{transform:scale(4.4);opacity:0}}
.link{stroke:#4d5b70;stroke-linecap:round;cursor:pointer}
.link-hit{stroke:rgba(0,0,0,0);cursor:pointer;pointer-events:stroke}
.link.encrypted{stroke:#0f7b6c}
.link.jammed{stroke:var(--red)}
.link.hover{stroke:var(--accent)}
.link.selected{stroke:var(--accent)}
.link-label{pointer-events:none}
.link-label rect{fill:#fff;stroke:#cfd6df}
.link-label.selected rect{stroke:var(--accent)}
.link-label text{font-size:11px;fill:#2d3748}
.link-label.jammed text{fill:var(--red)}
.link-label .lock{fill:none;stroke:#0f7b6c;stroke-width:1.4}
.link-label .lock rect{fill:#0f7b6c;stroke:none}
#pulses{position:absolute;inset:0;pointer-events:none;overflow:hidden}
.overlay{position:absolute;font:11px var(--mono);color:var(--muted);pointer-events:none}
#scale{left:12px;bottom:10px}
#scale i{display:block;height:6px;border:1.5px solid #6a7486;border-top:none;margin-bottom:2px}
#coords{right:12px;bottom:10px}
#map-hint{left:50%;transform:translateX(-50%);bottom:8px;white-space:nowrap}
#map-empty{inset:0;display:flex;align-items:center;justify-content:center;font:14px var(--sans)}
#fit{position:absolute;right:10px;top:8px;font-size:12px;padding:2px 8px}
aside{grid-row:3;grid-column:2;display:flex;flex-direction:column;gap:8px;min-height:0;overflow:hidden}
#device-panel{flex:0 1 auto}
#overview-card{flex:1 1 0;min-height:31px} #overview{overflow:auto;padding:4px 6px}
.pick.on{background:#e7eefc}
.stack{display:flex;flex-direction:column;gap:8px;min-height:0}
#plots-card{flex:0 1 auto;max-height:55%}
#panel-body{overflow:auto;padding:6px 12px 8px}
#panel-title .swatch{width:10px;height:10px;border-radius:50%;display:inline-block}
#panel-title .name{text-transform:none;letter-spacing:0;color:var(--text);font-size:13px}
#panel-close{border:none;padding:0 4px;font-size:15px;line-height:1;color:var(--muted);background:none}
dl.fields{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:0;line-height:1.35}
dl.fields dt{color:var(--muted)}
dl.fields dd{margin:0;font-family:var(--mono);font-size:12px;overflow-wrap:anywhere}
.yes{color:var(--green)}
.no{color:var(--muted)}
.bad{color:var(--red)}
#panel-actions{display:flex;flex-wrap:wrap;gap:6px;padding:0 12px 10px}
#panel-actions:empty{display:none}
.hint{color:var(--muted);margin:2px 0 8px}
.pick{display:flex;align-items:center;gap:8px;padding:4px 6px;border-radius:6px;cursor:pointer}
.pick:hover{background:var(--soft)}
.pick .swatch{width:9px;height:9px;border-radius:50%;flex:none}
.pick .m{font-family:var(--mono);font-size:12px}
.pick .r{margin-left:auto;color:var(--muted);font-size:12px}
.pick.off .m{color:var(--muted);text-decoration:line-through}
#events-card{flex:1 1 90px}
#captures-card{flex:0 0 auto}
#captures-card .row{display:flex;flex-wrap:wrap;gap:6px;align-items:center;padding:6px 10px 4px}
#captures-card select, #captures-card button{font-size:12px;padding:1px 6px}
#captures{list-style:none;margin:0;padding:0 6px 6px;font:11.5px/1.5 var(--mono);max-height:150px;overflow:auto}
#captures li{display:flex;gap:6px;align-items:center;padding:2px 4px;border-radius:5px}
#captures li:hover{background:var(--soft)}
#captures li .what{flex:1;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
#captures li.running .what::before{content:"● ";color:var(--red)}
#captures li button{font-size:11px;padding:0 5px}
#chart-overlay{position:fixed;inset:18px;z-index:20;background:#fff;border-radius:10px;box-shadow:0 10px 40px rgba(0,0,0,.35);display:flex;flex-direction:column}
#chart-overlay[hidden]{display:none}
#chart-overlay h2{display:flex;align-items:center;gap:8px}
#chart-frame{flex:1;border:none;width:100%;border-radius:0 0 10px 10px}
#events{list-style:none;margin:0;padding:4px 0;overflow:auto;font:11.5px/1.4 var(--mono);flex:1;min-height:0}
#events li{padding:1px 10px;display:flex;gap:8px}
#events time{color:#a0a8b5;flex:none}
#events li.joined span{color:#0b7a48}
#events li.left span, #events li.disconnected span{color:#a35a00}
#events li.connected span{color:#1d4fd8}
#events li.fault span, #events li.warning span{color:var(--red)}
#events li.encryption span{color:#0f7b6c}
#events li.sep{color:var(--muted);justify-content:center}
#lower{grid-column:1 / -1;grid-row:4;display:grid;grid-template-columns:minmax(0, 1fr) 320px 350px;gap:8px;min-height:0}
#packets-card h2 select, #packets-card h2 input, #packets-card h2 button{text-transform:none;letter-spacing:0;font-weight:400;color:var(--text);font-size:12px;padding:1px 6px}
#filter-text{width:110px} #filter-device{max-width:125px}
#dropped-note{color:var(--amber)}
#packet-scroll{overflow:auto;outline:none;flex:1;min-height:0;position:relative;contain:strict}
#packets-card h2{flex-wrap:wrap}
.prow{display:flex;height:20px;font:12px/19px var(--mono);border-bottom:1px solid #f1f3f6;white-space:nowrap}
.prow > span{padding:0 8px;overflow:hidden;text-overflow:ellipsis;flex:none}
.prow .t{width:84px;text-align:right;color:#7b8494} .prow .dev{width:74px} .prow .dir{width:34px;text-align:center;font-weight:700}
.prow .layer{width:60px} .prow .sum{flex:1 1 0;min-width:0}
.phead{flex:none;background:var(--soft);border-bottom:1px solid var(--line);font:600 11px/19px var(--sans);color:var(--muted)}
.packet{cursor:pointer}
.chunk{contain:content}
.packet:hover{background:#f3f6fb}
.packet.selected{background:#dfe9ff}
.packet .dev i{display:inline-block;width:7px;height:7px;border-radius:50%;margin-right:5px;vertical-align:1px}
.packet .dir.sent{color:var(--accent)} .packet .dir.received{color:var(--green)}
.tag{font-size:10.5px;padding:0 5px;border-radius:4px;background:#eef0f4;color:#4a5568}
.tag.acl{background:#e6f0ff;color:#2553b8}
.tag.l2cap{background:#f0e9ff;color:#6b3fc6} .tag.att{background:#e3f6ec;color:#11744a}
.tag.smp{background:#fff0dd;color:#a15800}
.gap{color:var(--amber);justify-content:center;background:#fff9ef;font-style:italic}
#jump{position:absolute;right:18px;bottom:12px;box-shadow:0 2px 8px rgba(0,0,0,.15);background:var(--accent);color:#fff;border-color:var(--accent);z-index:2}
#packets-card{position:relative}
#details-body{overflow:auto;padding:8px 10px;font:12px/1.5 var(--mono);flex:1;min-height:0}
#details-body .head{font-family:var(--sans);color:var(--muted);margin-bottom:6px}
.tree details > :not(summary){margin-left:14px}
.tree summary{cursor:pointer;list-style:none}
.tree summary::before{content: "▸";display:inline-block;width:12px;color:#9aa3b1}
.tree details[open] > summary::before{content: "▾"}
.tree .leaf{padding-left:12px}
.tree .val{color:#1d4fd8}
.tree .val::before{content: ": ";color:#9aa3b1}
pre.hex{margin:10px 0 0;padding:6px 8px;background:var(--soft);border-radius:6px;font:11px/1.45 var(--mono);color:#39424f;overflow-x:auto}
pre.hex .o{color:#a0a8b5} pre.hex .c{color:#8a6d3b}
#plots-body{overflow:auto;padding:6px 10px 10px;flex:1;min-height:0}
.plot-card{margin-bottom:10px}
.plot-card .title{font:600 12px var(--sans);margin-bottom:3px;display:flex;gap:6px;align-items:baseline}
.plot-card .title .m{font-family:var(--mono);font-weight:400;color:var(--muted);font-size:11px}
.plot-card .pair{display:grid;grid-template-columns:1fr 1fr;gap:6px}
canvas.plot{width:100%;height:66px;display:block;border-radius:5px;background:var(--soft)}
.empty{color:var(--muted);padding:10px 4px;font-family:var(--sans)}
@media (max-width:1250px){
  html, body{height:auto}
  body{grid-template-columns:minmax(0, 1fr) 320px;grid-template-rows:auto auto 470px auto auto}
  #lower{grid-template-columns:minmax(0, 1fr) 300px;grid-auto-rows:340px}
  .stack{grid-column:1 / -1;flex-direction:row}
  .stack > .card{flex:1 1 0;max-height:none}
}
footer{
  grid-column:1 / -1;grid-row:5;margin:0 -8px;padding:5px 14px;background:var(--head);color:#cfd6e1;
  font:12px var(--mono);display:flex;gap:10px;align-items:center;min-height:28px
}
footer .k{color:#7f8ba0;font-family:var(--sans)}
#toast.error{color:#ff9bb0}
#toast.flash{animation:flash 1.2s ease-out}
@keyframes flash{from{background:rgba(122,162,255,.45)} to{background:transparent}}
</style>
</head>
<body>
<header>
  <h1>OpenCoreBluetooth air<small>console</small></h1>
  <span class="group"><span id="status-dot" class="dot"></span><span id="status">disconnected</span><span id="status-detail"></span></span>
  <span class="group"><span class="k">air time</span><b id="air-time">—</b></span>
  <span class="group"><b id="air-counts">—</b></span>
  <span class="sep"></span>
  <span class="group"><label class="k" for="loss-input">packet loss</label><input id="loss-input" type="number" min="0" max="100" step="any" value="0"><span class="k">%</span><button id="loss-set" type="button">Set</button></span>
  <button id="drop-all" class="danger" type="button">Drop all links</button>
</header>
<div id="banner" hidden><strong>This page needs the token blue air printed: open the URL with ?token=…</strong></div>
<section id="map-card" class="card">
  <svg id="map" xmlns="http://www.w3.org/2000/svg" viewBox="-10 -10 20 20">
    <g id="g-grid"></g><g id="g-ranges"></g><g id="g-links"></g><g id="g-labels"></g><g id="g-devices"></g>
  </svg>
  <div id="pulses"></div>
  <div id="map-hint" class="overlay">drag a device to move it · wheel to zoom, drag the map to pan, double-click to fit</div>
  <div id="map-empty" class="overlay">Waiting for the air…</div>
  <div id="scale" class="overlay" hidden><i></i><span></span></div>
  <div id="coords" class="overlay"></div>
  <button id="fit" type="button" title="fit the view to the devices">Fit</button>
</section>
<aside>
  <section id="device-panel" class="card" data-selected="">
    <h2 id="panel-title"></h2>
    <div id="panel-body"></div>
    <div id="panel-actions"></div>
  </section>
  <section id="overview-card" class="card">
    <h2>On the air</h2>
    <div id="overview"></div>
  </section>
  <section id="captures-card" class="card">
    <h2>Captures<span class="grow"></span><button id="chart-open" type="button" title="the sequence chart of each device's last 2,000 HCI packets">Sequence chart</button></h2>
    <div class="row">
      <select id="capture-device" title="the device whose HCI traffic to capture"></select>
      <button id="capture-btsnoop" type="button" title="the device's HCI traffic, as btsnoop (Wireshark)">Capture HCI</button>
      <button id="capture-pcap" type="button" title="every packet on the air, as a link-layer pcap (Wireshark)">Capture air</button>
      <button id="recording-download" type="button" hidden title="the air recording blue air --record is writing (blue air --replay replays it)">Download recording</button>
    </div>
    <ul id="captures"></ul>
  </section>
</aside>
<div id="chart-overlay" hidden>
  <h2>Sequence chart<span class="note" id="chart-note"></span><span class="grow"></span><button id="chart-refresh" type="button">Refresh</button><button id="chart-close" type="button">Close</button></h2>
  <iframe id="chart-frame" sandbox="" title="sequence chart"></iframe>
</div>
<div id="lower">
  <section id="packets-card" class="card">
    <h2>Packets
      <select id="filter-device" title="device"><option value="">all devices</option></select>
      <select id="filter-layer" title="layer"><option value="">all layers</option><option value="hci">hci</option><option value="acl">acl</option><option value="l2cap">l2cap</option><option value="att">att</option><option value="smp">smp</option></select>
      <input id="filter-text" type="search" placeholder="summary…" title="show packets whose summary contains this">
      <button id="pause" type="button">Pause</button>
      <span class="grow"></span>
      <span class="note" id="dropped-note"></span>
      <span class="note" id="packet-count"></span>
    </h2>
    <div class="prow phead"><span class="t">time (s)</span><span class="dev">device</span><span class="dir" title="→ sent, host to controller; ← received, controller to host">dir</span><span class="layer">layer</span><span class="sum">summary</span></div>
    <div id="packet-scroll" tabindex="-1">
      <div id="packets"></div>
    </div>
    <button id="jump" type="button" hidden>↓ newest</button>
  </section>
  <section id="details-card" class="card">
    <h2>Packet details</h2>
    <div id="details-body"><div class="empty">Click a packet to see its fields and bytes.</div></div>
  </section>
  <div class="stack">
  <section id="plots-card" class="card">
    <h2>Links<span class="grow"></span><span class="note">last 60 s</span></h2>
    <div id="plots-body"><div class="empty">No link on the air.</div></div>
  </section>
  <section id="events-card" class="card">
    <h2>Events<span class="grow"></span><span class="note" id="event-count"></span></h2>
    <ul id="events"></ul>
  </section>
  </div>
</div>
<footer><span class="k">last answer</span><span id="toast"></span></footer>
<script>
"use strict";
(() => {
const $ = (s) => document.querySelector(s);
const SVGNS = "http://www.w3.org/2000/svg";
function put(e, attrs, kids) {
  if (attrs) for (const [key, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (key === "text") e.textContent = v;
    else if (typeof v === "function") e.addEventListener(key.slice(2), v);
    else e.setAttribute(key, v === true ? "" : v);
  }
  for (const c of kids) if (c != null && c !== false) e.append(c);
  return e;
}
const el = (t, a, ...kids) => put(document.createElement(t), a, kids);
const sv = (t, a, ...kids) => put(document.createElementNS(SVGNS, t), a, kids);
const PALETTE = ["#2563eb", "#e8590c", "#0c9f6a", "#9c36b5", "#d6336c", "#1098ad", "#c08a00", "#5c7cfa", "#2b8a3e", "#862e9c"];
const colour = (n) => typeof n === "number" ? PALETTE[((n - 1) % PALETTE.length + PALETTE.length) % PALETTE.length] : "#8a94a6";
const nf = new Intl.NumberFormat("en-US");
const num = (v) => v == null ? "—" : nf.format(v);
const pad2 = (v) => String(v).padStart(2, "0");
const fixed = (v, d) => (Math.round(v * 10 ** d) / 10 ** d).toFixed(d);
function fmtTime(t) {
  if (typeof t !== "number") return "—";
  if (t < 60) return t.toFixed(1) + " s";
  const s = Math.floor(t);
  return s >= 3600 ? `${Math.floor(s / 3600)}:${pad2(Math.floor(s / 60) % 60)}:${pad2(s % 60)}` : `${Math.floor(s / 60)}:${pad2(s % 60)}`;
}
const fmtMs = (v) => v == null ? "—" : +(+v).toFixed(2) + " ms";
const fmtPos = (p) => `(${fixed(p.x, 1)}, ${fixed(p.y, 1)}, ${fixed(p.z || 0, 1)}) m`;
function fmtRate(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(2) + " MB/s";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + " kB/s";
  return Math.round(v) + " B/s";
}
function fmtLength(m) {
  const a = Math.abs(m);
  if (a >= 1000) return +(m / 1000).toFixed(3) + " km";
  return +m.toFixed(3) + " m";
}
const clock = () => { const d = new Date(); return pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds()); };
const devName = (d) => d ? `dev${d.number} ${d.name || ""}`.trim() : "";
const plural = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;

// ---- token and API
const TOKEN_KEY = "openCoreBluetoothAirToken";
let token = "";
{
  const params = new URLSearchParams(location.search);
  const given = params.get("token");
  if (given) {
    token = given;
    try { sessionStorage.setItem(TOKEN_KEY, given); } catch (e) { /* no storage: memory only */ }
    params.delete("token");
    const q = params.toString();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : "") + location.hash);
  } else {
    try { token = sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { token = ""; }
  }
}
let unauthorized = false;
function showTokenBanner() {
  unauthorized = true;
  $("#banner").hidden = false;
  setStatus(false, "· no token");
}
async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  } catch (e) {
    return { ok: false, code: "network", text: "no answer from the console server" };
  }
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (res.status === 401) showTokenBanner();
  if (res.ok) return { ok: true, data };
  const err = data && data.error;
  return { ok: false, code: err ? err.code : "http" + res.status, text: err && err.reason ? err.reason : `HTTP ${res.status} ${res.statusText}` };
}
function toast(text, isError) {
  const t = $("#toast");
  t.textContent = text;
  t.classList.toggle("error", !!isError);
  t.classList.remove("flash"); void t.offsetWidth; t.classList.add("flash");
}
async function act(method, path, body) {
  const r = await api(method, path, body);
  if (r.ok) toast(r.data && r.data.effect ? r.data.effect : "done", false);
  else toast(r.text, true);
  return r;
}

// ---- state
let air = null;
let selected = null;          // {kind: "device"|"link", id}
let hoverLink = null;
const lastAdvertising = new Map();
const overrides = new Map();  // device number -> {x, y, since}: where the page put it before the air says so
const byNumber = new Map();
const byLink = new Map();
const device = (n) => byNumber.get(n);
const link = (id) => byLink.get(id);

function onAir(a) {
  if (!a || !Array.isArray(a.devices)) return;
  if (air && typeof a.time === "number" && typeof air.time === "number" && a.time < air.time - 1) linkHistory.clear();
  air = a; a.links = a.links || [];
  byNumber.clear(); for (const d of a.devices) { d.position = d.position || { x: 0, y: 0, z: 0 }; byNumber.set(d.number, d); }
  byLink.clear(); for (const l of a.links) byLink.set(l.id, l);
  const now = performance.now();
  for (const [n, o] of overrides) {
    const d = device(n);
    if (!d || (Math.abs(d.position.x - o.x) < 0.06 && Math.abs(d.position.y - o.y) < 0.06) || (o.since && now - o.since > 4000)) overrides.delete(n);
  }
  const pulses = [];
  for (const d of a.devices) {
    const last = lastAdvertising.get(d.number);
    if (last !== undefined && d.advertisingPackets > last && d.radioOn !== false) pulses.push(d.number);
    lastAdvertising.set(d.number, d.advertisingPackets);
  }
  for (const n of [...lastAdvertising.keys()]) if (!byNumber.has(n)) lastAdvertising.delete(n);
  if (selected && !(selected.kind === "device" ? byNumber.has(selected.id) : byLink.has(selected.id))) selected = null;
  if (hoverLink != null && !byLink.has(hoverLink)) hoverLink = null;
  updateLinkHistory(a);
  renderHeader();
  renderMap();
  for (const n of pulses) pulse(n);
  renderPanel();
  renderPlots();
  updateDeviceFilter();
}

function renderHeader() {
  $("#air-time").textContent = fmtTime(air.time);
  $("#air-counts").textContent = plural(air.devices.length, "device") + " · " + plural(air.links.length, "link");
  const input = $("#loss-input");
  if (document.activeElement !== input && !input.dataset.dirty && typeof air.lossPercent === "number") input.value = +air.lossPercent.toFixed(2);
}

// ---- map
const svg = $("#map");
const gGrid = $("#g-grid"), gRanges = $("#g-ranges"), gLinks = $("#g-links"), gLabels = $("#g-labels"), gDevices = $("#g-devices");
let view = null, k = 0.05, viewSize = "";
const devEls = new Map(), linkEls = new Map();
let nearSet = new Set();
let drag = null, pan = null, suppressClickUntil = 0;
const FAR = 10000;

function realPos(d) { const o = overrides.get(d.number); return o ? { x: o.x, y: o.y, z: d.position.z } : d.position; }
function computeNear() {
  const all = air ? air.devices : [];
  const near = all.filter((d) => { const p = realPos(d); return Math.abs(p.x) < FAR && Math.abs(p.y) < FAR; });
  nearSet = new Set((near.length ? near : all).map((d) => d.number));
}
function displayPos(d) {
  const p = realPos(d);
  if (nearSet.has(d.number) || !view || (p.x > view.x && p.x < view.x + view.w && p.y > view.y && p.y < view.y + view.h)) return p;
  const cx = view.x + view.w / 2, cy = view.y + view.h / 2;
  let dx = p.x - cx, dy = p.y - cy; const len = Math.hypot(dx, dy) || 1; dx /= len; dy /= len;
  const lim = (v, lo, hi) => v > 0 ? hi / v : v < 0 ? lo / v : Infinity;
  const t = Math.min(lim(dx, view.x + 40 * k - cx, view.x + view.w - 260 * k - cx), lim(dy, view.y + 40 * k - cy, view.y + view.h - 50 * k - cy));
  return { x: cx + dx * t, y: cy + dy * t, z: p.z, far: Math.hypot(p.x - cx, p.y - cy) };
}
function nearBox() {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const n of nearSet) { const p = realPos(device(n)); x0 = Math.min(x0, p.x); x1 = Math.max(x1, p.x); y0 = Math.min(y0, p.y); y1 = Math.max(y1, p.y); }
  if (x0 === Infinity) { x0 = -4; x1 = 4; y0 = -4; y1 = 4; }
  return { x0, x1, y0, y1, sx: Math.max(x1 - x0, 4), sy: Math.max(y1 - y0, 2) };
}
function pads(W, H) { return { l: Math.min(70, W * .1), r: Math.min(220, W * .3), t: Math.min(60, H * .15), b: Math.min(70, H * .15) }; }
function fitView() {
  const W = svg.clientWidth, H = svg.clientHeight;
  if (!W || !H) return;
  const b = nearBox(), PAD = pads(W, H);
  const s = Math.max(1e-6, Math.min((W - PAD.l - PAD.r) / b.sx, (H - PAD.t - PAD.b) / b.sy));
  const cx = (b.x0 + b.x1) / 2, cy = (b.y0 + b.y1) / 2;
  const ex = (W - PAD.l - PAD.r - b.sx * s) / 2, ey = (H - PAD.t - PAD.b - b.sy * s) / 2;
  view = { x: cx - b.sx / 2 - (PAD.l + ex) / s, y: cy - b.sy / 2 - (PAD.t + ey) / s, w: W / s, h: H / s };
  k = 1 / s; viewSize = W + "x" + H;
  applyView();
}
function applyView() {
  svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  drawGrid();
}
// the view follows the devices until the user zooms or pans; Fit or a double click goes back to following
let manual = false;
function needsFit() {
  const W = svg.clientWidth, H = svg.clientHeight;
  if (view && manual) {
    if (viewSize !== W + "x" + H && W && H) {
      view = { x: view.x + (view.w - W * k) / 2, y: view.y + (view.h - H * k) / 2, w: W * k, h: H * k };
      viewSize = W + "x" + H; applyView();
    }
    return false;
  }
  if (!view || viewSize !== W + "x" + H) return true;
  for (const n of nearSet) {
    const p = realPos(device(n));
    if (p.x < view.x + 30 * k || p.x > view.x + view.w - 160 * k || p.y < view.y + 30 * k || p.y > view.y + view.h - 40 * k) return true;
  }
  const b = nearBox(), PAD = pads(svg.clientWidth, svg.clientHeight);
  return b.sx / k < 0.3 * (svg.clientWidth - PAD.l - PAD.r) && b.sy / k < 0.3 * (svg.clientHeight - PAD.t - PAD.b);
}
function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(raw)), f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}
function drawGrid() {
  gGrid.replaceChildren();
  const step = niceStep(90 * k), fs = 10 * k;
  for (let i = Math.ceil(view.x / step); i * step <= view.x + view.w; i++) {
    const x = i * step;
    gGrid.append(sv("line", { x1: x, y1: view.y, x2: x, y2: view.y + view.h, class: i === 0 ? "axis" : "grid", "stroke-width": k }));
    if (x < view.x + view.w - 70 * k) gGrid.append(sv("text", { x: x + 3 * k, y: view.y + 12 * k, "font-size": fs, class: "gl", text: fmtLength(x) }));
  }
  for (let i = Math.ceil(view.y / step); i * step <= view.y + view.h; i++) {
    const y = i * step;
    gGrid.append(sv("line", { x1: view.x, y1: y, x2: view.x + view.w, y2: y, class: i === 0 ? "axis" : "grid", "stroke-width": k }));
    if (y > view.y + 20 * k && y < view.y + view.h - 40 * k) gGrid.append(sv("text", { x: view.x + 4 * k, y: y - 3 * k, "font-size": fs, class: "gl", text: fmtLength(y) }));
  }
  $("#scale").hidden = false;
  $("#scale i").style.width = step / k + "px";
  $("#scale span").textContent = fmtLength(step);
}
function ensureDevice(d) {
  let e = devEls.get(d.number);
  if (e) return e;
  const c = colour(d.number);
  e = {
    range: sv("circle", { class: "range", style: `--c:${c}` }),
    hit: sv("rect", { class: "hit", x: -22, y: -22, height: 46, rx: 8 }),
    sel: sv("circle", { class: "sel", r: 14 }),
    scan: sv("path", { class: "scan", d: "M-12.8,-2.3A13,13 0 0 1 -2.3,-12.8M-16.7,-3A17,17 0 0 1 -3,-16.7" }),
    body: sv("circle", { class: "body", r: 9 }),
    cross: sv("path", { class: "cross", d: "M-4.5,-4.5L4.5,4.5M4.5,-4.5L-4.5,4.5" }),
    name: sv("text", { class: "name", x: 16, y: 0 }),
    sub: sv("text", { class: "sub", x: 16, y: 13 }),
  };
  e.g = sv("g", { class: "device", "data-device": d.number, style: `--c:${c}` },
    e.hit, e.sel, e.scan, e.body, e.cross, e.name, e.sub);
  gRanges.append(e.range);
  gDevices.append(e.g);
  devEls.set(d.number, e);
  return e;
}
function ensureLink(l) {
  let e = linkEls.get(l.id);
  if (e) return e;
  const enter = () => { hoverLink = l.id; e.line.classList.add("hover"); renderPanel(); };
  const leave = () => { hoverLink = null; e.line.classList.remove("hover"); renderPanel(); };
  const click = (ev) => { ev.stopPropagation(); select({ kind: "link", id: l.id }); };
  e = {
    hit: sv("line", { class: "link-hit", "data-link-hit": l.id, onmouseenter: enter, onmouseleave: leave, onclick: click }),
    line: sv("line", { class: "link", "data-link": l.id, onmouseenter: enter, onmouseleave: leave, onclick: click }),
    bg: sv("rect", { height: 17, y: -9, rx: 8.5 }),
    lock: sv("g", { class: "lock" }, sv("path", { d: "M-2.6,-1V-3.2A2.6,2.6 0 0 1 2.6,-3.2V-1" }), sv("rect", { x: -3.8, y: -1, width: 7.6, height: 5.6, rx: 1 })),
    text: sv("text", { y: 3.8 }),
  };
  e.label = sv("g", { class: "link-label", "data-link-label": l.id }, e.bg, e.lock, e.text);
  gLinks.append(e.hit, e.line);
  gLabels.append(e.label);
  linkEls.set(l.id, e);
  return e;
}
const phyText = (l) => !l.phy ? "?" : l.phy.tx === l.phy.rx ? String(l.phy.tx) : `${l.phy.tx}/${l.phy.rx}`;
function renderMap() {
  if (!air) return;
  $("#map-empty").hidden = air.devices.length > 0;
  $("#map-empty").textContent = "No device on the air yet: start one with blue serve, blue scan, …";
  computeNear();
  if (!drag && needsFit()) fitView();
  if (!view) return;
  const seen = new Set();
  for (const d of air.devices) {
    seen.add(d.number);
    const e = ensureDevice(d), p = displayPos(d), on = d.radioOn !== false;
    const isSel = selected && selected.kind === "device" && selected.id === d.number;
    e.g.setAttribute("transform", `translate(${p.x} ${p.y}) scale(${k})`);
    e.g.classList.toggle("off", !on);
    e.g.classList.toggle("scanning", on && !!d.scanning);
    e.g.classList.toggle("selected", !!isSel);
    e.g.classList.toggle("far", p.far != null);
    e.g.classList.toggle("dragging", !!drag && drag.n === d.number);
    const name = devName(d);
    const bits = [];
    if (!on) bits.push("radio off");
    else { if (d.advertising) bits.push("advertising"); if (d.scanning) bits.push("scanning"); if (d.initiating) bits.push("connecting"); }
    if (d.links) bits.push(plural(d.links, "link"));
    if (p.far != null) bits.push((p.far >= 1000 ? (p.far / 1000).toFixed(1) + " km" : fmtLength(Math.round(p.far))) + " away");
    else if (d.position.z) bits.push("z " + fixed(d.position.z, 1) + " m");
    const sub = bits.join(" · ");
    if (e.name.textContent !== name) e.name.textContent = name;
    if (e.sub.textContent !== sub) e.sub.textContent = sub;
    e.hit.setAttribute("width", 44 + Math.max(name.length * 7.4, sub.length * 6.1));
    const showRange = on && p.far == null && typeof d.rangeMetres === "number" && d.rangeMetres > 0;
    e.range.style.display = showRange ? "" : "none";
    if (showRange) put(e.range, { cx: p.x, cy: p.y, r: d.rangeMetres, "stroke-width": k, "stroke-dasharray": `${5 * k} ${4 * k}` }, []);
  }
  for (const [n, e] of devEls) if (!seen.has(n)) { e.g.remove(); e.range.remove(); devEls.delete(n); overrides.delete(n); }
  const seenLinks = new Set();
  for (const l of air.links) {
    const a = device(l.central), b = device(l.peripheral);
    if (!a || !b) continue;
    seenLinks.add(l.id);
    const e = ensureLink(l), pa = displayPos(a), pb = displayPos(b);
    const isSel = selected && selected.kind === "link" && selected.id === l.id;
    for (const line of [e.hit, e.line]) put(line, { x1: pa.x, y1: pa.y, x2: pb.x, y2: pb.y }, []);
    e.hit.setAttribute("stroke-width", 16 * k);
    e.line.setAttribute("stroke-width", (isSel ? 4 : 2.5) * k);
    if (l.jammed) e.line.setAttribute("stroke-dasharray", `${7 * k} ${5 * k}`); else e.line.removeAttribute("stroke-dasharray");
    e.line.classList.toggle("jammed", !!l.jammed);
    e.line.classList.toggle("encrypted", !!l.encrypted && !l.jammed);
    e.line.classList.toggle("selected", !!isSel);
    e.label.classList.toggle("jammed", !!l.jammed);
    e.label.classList.toggle("selected", !!isSel);
    let dx = pb.x - pa.x, dy = pb.y - pa.y; const len = Math.hypot(dx, dy) || 1;
    let nx = -dy / len, ny = dx / len; if (ny > 0 || (ny === 0 && nx > 0)) { nx = -nx; ny = -ny; }
    const off = len / k > 120 ? 0 : 16;
    e.label.style.display = len / k < 80 ? "none" : "";
    const text = `${phyText(l)} · ${fmtMs(l.intervalMilliseconds)}${l.jammed ? " · jammed" : ""}`;
    const lockW = l.encrypted ? 13 : 0, w = text.length * 6.65 + 14 + lockW;
    e.text.textContent = text;
    e.text.setAttribute("x", -w / 2 + 7 + lockW);
    e.bg.setAttribute("x", -w / 2); e.bg.setAttribute("width", w);
    e.lock.style.display = l.encrypted ? "" : "none";
    e.lock.setAttribute("transform", `translate(${-w / 2 + 12} 0)`);
    const mx = (pa.x + pb.x) / 2 + nx * off * k, my = (pa.y + pb.y) / 2 + ny * off * k;
    // keep the label off the line's middle so a click there reaches the line itself
    const along = off ? 0 : 34 * k;
    e.label.setAttribute("transform", `translate(${mx + dx / len * along} ${my + dy / len * along}) scale(${k})`);
  }
  for (const [id, e] of linkEls) if (!seenLinks.has(id)) { e.hit.remove(); e.line.remove(); e.label.remove(); linkEls.delete(id); }
}
// an expanding ring at the device: an HTML element the compositor animates, no repaint of the map
function pulse(n) {
  const d = device(n), e = devEls.get(n);
  if (!d || !e || !view || e.g.classList.contains("far")) return;
  const p = displayPos(d), r = svg.getBoundingClientRect(), card = $("#map-card").getBoundingClientRect();
  const c = el("div", { class: "pulse", style: `--c:${colour(n)};left:${r.left - card.left + (p.x - view.x) / k}px;top:${r.top - card.top + (p.y - view.y) / k}px` });
  c.addEventListener("animationend", () => c.remove());
  $("#pulses").append(c);
}
function toMetres(ev) {
  const m = svg.getScreenCTM();
  if (!m) return { x: 0, y: 0 };
  return new DOMPoint(ev.clientX, ev.clientY).matrixTransform(m.inverse());
}
svg.addEventListener("pointerdown", (ev) => {
  if (ev.button !== 0) return;
  const g = ev.target.closest("g.device");
  if (!g && view && !ev.target.closest(".link, .link-hit")) {
    pan = { id: ev.pointerId, cx: ev.clientX, cy: ev.clientY, x: view.x, y: view.y, moved: false };
    svg.setPointerCapture(ev.pointerId);
    return;
  }
  const d = g && air && device(+g.dataset.device);
  if (!d) return;
  const p = toMetres(ev), at = displayPos(d);
  drag = { n: d.number, id: ev.pointerId, cx: ev.clientX, cy: ev.clientY, dx: at.x - p.x, dy: at.y - p.y, x: at.x, y: at.y, moved: false };
  try { svg.setPointerCapture(ev.pointerId); } catch (e) { /* capture is a nicety */ }
  ev.preventDefault();
});
svg.addEventListener("pointermove", (ev) => {
  if (pan && ev.pointerId === pan.id) {
    const dx = ev.clientX - pan.cx, dy = ev.clientY - pan.cy;
    if (!pan.moved && Math.hypot(dx, dy) < 4) return;
    pan.moved = manual = true;
    view.x = pan.x - dx * k; view.y = pan.y - dy * k;
    applyView(); renderMap();
    return;
  }
  if (drag && ev.pointerId === drag.id) {
    if (!drag.moved && Math.hypot(ev.clientX - drag.cx, ev.clientY - drag.cy) < 4) return;
    drag.moved = true;
    const p = toMetres(ev);
    drag.x = p.x + drag.dx; drag.y = p.y + drag.dy;
    overrides.set(drag.n, { x: drag.x, y: drag.y, since: 0 });
    renderMap();
    $("#coords").textContent = `dev${drag.n} → (${fixed(drag.x, 1)}, ${fixed(drag.y, 1)}) m`;
    return;
  }
  if (view) { const p = toMetres(ev); $("#coords").textContent = `x ${fixed(p.x, 1)} m  y ${fixed(p.y, 1)} m`; }
});
svg.addEventListener("pointerleave", () => { if (!drag) $("#coords").textContent = ""; });
function endDrag(ev, cancelled) {
  if (pan && ev.pointerId === pan.id) {
    if (pan.moved) suppressClickUntil = performance.now() + 400;
    pan = null;
    return;
  }
  if (!drag || ev.pointerId !== drag.id) return;
  const dr = drag; drag = null;
  try { svg.releasePointerCapture(ev.pointerId); } catch (e) { /* already released */ }
  suppressClickUntil = performance.now() + 400;
  if (cancelled) { overrides.delete(dr.n); renderMap(); return; }
  if (!dr.moved) { select({ kind: "device", id: dr.n }); return; }
  const d = device(dr.n);
  const x = Math.round(dr.x * 10) / 10, y = Math.round(dr.y * 10) / 10, z = d ? Math.round((d.position.z || 0) * 10) / 10 : 0;
  overrides.set(dr.n, { x, y, since: performance.now() });
  renderMap();
  act("POST", `/api/devices/${dr.n}/move`, { x, y, z }).then((r) => {
    if (!r.ok) { overrides.delete(dr.n); renderMap(); }
  });
}
svg.addEventListener("pointerup", (ev) => endDrag(ev, false));
svg.addEventListener("pointercancel", (ev) => endDrag(ev, true));
svg.addEventListener("click", (ev) => {
  if (performance.now() < suppressClickUntil) return;
  if (ev.target.closest("g.device, .link, .link-hit")) return;
  if (selected) select(null);
});
function refit() { manual = false; if (air) { computeNear(); fitView(); renderMap(); } }
$("#fit").addEventListener("click", refit);
svg.addEventListener("dblclick", (ev) => { if (!ev.target.closest("g.device, .link, .link-hit")) refit(); });
svg.addEventListener("wheel", (ev) => {
  if (!view) return;
  ev.preventDefault();
  const delta = ev.deltaY * (ev.deltaMode === 1 ? 33 : ev.deltaMode === 2 ? 400 : 1);
  const p = toMetres(ev), nk = Math.min(5000, Math.max(0.001, k * Math.exp(Math.max(-300, Math.min(300, delta)) * 0.002))), r = nk / k;
  view = { x: p.x - (p.x - view.x) * r, y: p.y - (p.y - view.y) * r, w: view.w * r, h: view.h * r };
  k = nk; manual = true;
  applyView(); renderMap();
}, { passive: false });
new ResizeObserver(() => { if (air) renderMap(); drawPlots(); }).observe(svg);

function select(s) {
  selected = s;
  hoverLink = null;
  for (const e of linkEls.values()) e.line.classList.remove("hover");
  renderMap();
  renderPanel();
}
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && !/INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName)) select(null);
});

// ---- side panel
const panel = $("#device-panel");
let actionsKey = null, overviewKey = null;
// rows [name, value, class]: the same names as shown update in place, so a selection (an address to copy) survives
function showFields(rows) {
  const body = $("#panel-body"), names = rows.map((r) => r[0]).join("|");
  let dl = body.firstElementChild;
  if (!dl || dl.tagName !== "DL" || dl.dataset.names !== names) {
    dl = el("dl", { class: "fields", "data-names": names });
    for (const [n, v, c] of rows) dl.append(el("dt", { text: n }), el("dd", { text: v, class: c }));
    body.replaceChildren(dl);
    return;
  }
  rows.forEach(([, v, c], i) => { const dd = dl.children[2 * i + 1]; if (dd.textContent !== v) dd.textContent = v; dd.className = c || ""; });
}
const isOut = (d) => Math.abs(d.position.x) >= FAR || Math.abs(d.position.y) >= FAR;
function setActions(key, make) {
  if (key === actionsKey) return;
  actionsKey = key;
  $("#panel-actions").replaceChildren(...make());
}
const button = (id, text, onclick, danger) => el("button", { id, type: "button", text, onclick, class: danger ? "danger" : null });
function deviceRef(n, addr) {
  const d = device(n);
  return d ? devName(d) : n != null ? `dev${n}` : (addr || "an unknown device");
}
function renderPanel() {
  renderOverview();
  fillCaptureDevices();
  const shown = hoverLink != null && link(hoverLink) ? { kind: "link", id: hoverLink } : selected;
  const title = $("#panel-title"), body = $("#panel-body");
  const close = el("button", { id: "panel-close", type: "button", title: "close (Esc)", text: "×", onclick: () => select(null) });
  const rows = [], field = (...row) => rows.push(row);
  if (shown && shown.kind === "device" && device(shown.id)) {
    const d = device(shown.id), on = d.radioOn !== false, out = isOut(d);
    panel.dataset.selected = "device:" + d.number;
    title.replaceChildren(el("span", { class: "swatch", style: `background:${colour(d.number)}` }), el("span", { class: "name", text: devName(d) }), el("span", { class: "grow" }), close);
    field("Number", `dev${d.number}`);
    field("Name", d.name || "—");
    field("Origin", d.origin || "—");
    field("Address", d.address || "—");
    field("Random address", d.randomAddress || "—");
    field("Position", fmtPos(realPos(d)) + (out ? " (out of range)" : ""));
    field("TX power", `${d.txPower == null ? "—" : d.txPower + " dBm"} (range ${typeof d.rangeMetres === "number" ? fmtLength(+d.rangeMetres.toFixed(1)) : "—"})`);
    field("Radio", on ? "on" : "off", on ? "yes" : "bad");
    field("Advertising", d.advertising ? `yes (${num(d.advertisingPackets)} packets)` : `no (${num(d.advertisingPackets)} packets)`, d.advertising ? "yes" : "no");
    field("Scanning", (d.scanning ? "yes" : "no") + (d.initiating ? " (initiating a connection)" : ""), d.scanning || d.initiating ? "yes" : "no");
    const mine = air.links.filter((l) => l.central === d.number || l.peripheral === d.number);
    field("Links", mine.length ? mine.map((l) => `link ${l.id} ${l.central === d.number ? "to" : "from"} ${deviceRef(l.central === d.number ? l.peripheral : l.central, l.central === d.number ? l.peripheralAddress : l.centralAddress)}`).join(", ") : String(d.links || 0));
    showFields(rows);
    setActions(`d${d.number}:${on}:${out}`, () => [
      button("radio-toggle", on ? "Radio off" : "Radio on", () => act("POST", `/api/devices/${d.number}/radio`, { on: !on })),
      button("range-toggle", out ? "Back in range" : "Out of range", () => act("POST", `/api/devices/${d.number}/range`, { out: !out })),
      button("drop-device-links", "Drop its links", () => act("POST", "/api/links/drop", { device: d.number }), true),
    ]);
    overviewKey = null;
    return;
  }
  if (shown && shown.kind === "link" && link(shown.id)) {
    const l = link(shown.id), h = linkHistory.get(l.id);
    panel.dataset.selected = "link:" + l.id;
    title.replaceChildren(el("span", { class: "name", text: `link ${l.id}` }), el("span", { text: shown === selected ? "" : "(hover)" }), el("span", { class: "grow" }), close);
    field("Role", `central ${deviceRef(l.central, l.centralAddress)} → peripheral ${deviceRef(l.peripheral, l.peripheralAddress)}`);
    field("Addresses", `${l.centralAddress || "?"} → ${l.peripheralAddress || "?"}`);
    field("PHY", l.phy ? `tx ${l.phy.tx} · rx ${l.phy.rx}` : "—");
    field("Interval", fmtMs(l.intervalMilliseconds));
    field("Latency", l.latency == null ? "—" : plural(l.latency, "event"));
    field("Supervision", fmtMs(l.supervisionTimeoutMilliseconds));
    field("Data length", l.dataLength ? `tx ${l.dataLength.tx} · rx ${l.dataLength.rx} octets` : "—");
    const rssi = (v) => v == null ? "—" : `${v} dBm`;
    field("RSSI", l.rssi ? `central ${rssi(l.rssi.central)} · peripheral ${rssi(l.rssi.peripheral)}` : "—");
    field("Encryption", l.encrypted ? "on" : "off", l.encrypted ? "yes" : "no");
    if (l.jammed) field("Jammed", "yes: no longer heard", "bad");
    field("Traffic", `${num(l.packets)} packets · ${num(l.octets)} octets`);
    field("Events", `${num(l.events)} connection events`);
    if (h && h.tp.length) field("Now", `${fmtRate(h.tp[h.tp.length - 1].v)} · ${h.ppe[h.ppe.length - 1].v.toFixed(2)} packets/event`);
    showFields(rows);
    const end = l.central != null ? l.central : l.peripheral;
    setActions(`l${l.id}:${end}`, () => end == null ? [] : [button("drop-link", "Drop link", () => act("POST", "/api/links/drop", { device: end }), true)]);
    return;
  }
  panel.dataset.selected = "";
  setActions("none", () => []);
  title.replaceChildren(el("span", { text: "Selection" }));
  body.replaceChildren(el("p", { class: "hint", text: "Click a device or a link, on the map or below, for its details and controls. Drag a device to move it; Esc clears." }));
}
function renderOverview() {
  const body = $("#overview");
  if (!air) { body.replaceChildren(el("div", { class: "empty", text: "Connecting…" })); overviewKey = null; return; }
  const key = JSON.stringify([selected, air.devices.map((d) => [d.number, d.name, d.radioOn, d.links, d.advertising, d.scanning]), air.links.map((l) => [l.id, l.central, l.peripheral, l.jammed, l.intervalMilliseconds, phyText(l)])]);
  if (key === overviewKey) return;
  overviewKey = key;
  const kids = [];
  const on = (kind, id) => selected && selected.kind === kind && selected.id === id ? " on" : "";
  for (const d of air.devices) {
    const state = d.radioOn === false ? "radio off" : [d.advertising && "adv", d.scanning && "scan", plural(d.links || 0, "link")].filter(Boolean).join(" · ");
    kids.push(el("div", { class: "pick" + (d.radioOn === false ? " off" : "") + on("device", d.number), "data-pick-device": d.number, onclick: () => select({ kind: "device", id: d.number }) },
      el("span", { class: "swatch", style: `background:${colour(d.number)}` }), el("span", { class: "m", text: devName(d) }),
      el("span", { class: "r", text: state })));
  }
  for (const l of air.links) {
    kids.push(el("div", { class: "pick" + on("link", l.id), "data-pick-link": l.id, onclick: () => select({ kind: "link", id: l.id }) },
      el("span", { class: "swatch", style: "background:#4d5b70" }),
      el("span", { class: "m", text: `link ${l.id}: ${l.central != null ? "dev" + l.central : "?"} → ${l.peripheral != null ? "dev" + l.peripheral : "?"}` }),
      el("span", { class: "r", text: l.jammed ? "jammed" : phyText(l) + " · " + fmtMs(l.intervalMilliseconds) })));
  }
  if (!kids.length) kids.push(el("div", { class: "empty", text: "Nothing on the air yet." }));
  body.replaceChildren(...kids);
}

// ---- link plots
const linkHistory = new Map();  // id -> {last, tp: [{t, v}], ppe: [{t, v}]}
function updateLinkHistory(a) {
  const t = a.time, live = new Set();
  for (const l of a.links) {
    live.add(l.id);
    let h = linkHistory.get(l.id);
    if (!h) { h = { last: null, tp: [], ppe: [] }; linkHistory.set(l.id, h); }
    const cur = { t, packets: l.packets || 0, octets: l.octets || 0, events: l.events || 0 };
    // a sample needs 0.2 s: the first two views (GET, then the socket's) come moments apart
    if (h.last && typeof t === "number" && t - h.last.t >= 0.2) {
      const dt = t - h.last.t, dEv = cur.events - h.last.events;
      h.tp.push({ t, v: Math.max(0, (cur.octets - h.last.octets) / dt) });
      h.ppe.push({ t, v: dEv > 0 ? Math.max(0, (cur.packets - h.last.packets) / dEv) : 0 });
      while (h.tp.length && h.tp[0].t < t - 60) h.tp.shift();
      while (h.ppe.length && h.ppe[0].t < t - 60) h.ppe.shift();
    }
    if (!h.last || t - h.last.t >= 0.2 || t < h.last.t) h.last = cur;
  }
  for (const id of [...linkHistory.keys()]) if (!live.has(id)) linkHistory.delete(id);
}
const plotEls = new Map();
function renderPlots() {
  const body = $("#plots-body");
  const links = air ? air.links : [];
  if (!links.length) {
    if (!body.querySelector(".empty")) { body.replaceChildren(el("div", { class: "empty", text: "No link on the air." })); plotEls.clear(); }
    return;
  }
  const emptyNote = body.querySelector(".empty"); if (emptyNote) emptyNote.remove();
  for (const l of links) {
    let p = plotEls.get(l.id);
    if (!p) {
      p = { title: el("span"), meta: el("span", { class: "m" }), tp: el("canvas", { class: "plot", "data-kind": "throughput", title: "throughput: octets per second" }), ppe: el("canvas", { class: "plot", "data-kind": "packets-per-event", title: "packets per connection event" }) };
      p.card = el("div", { class: "plot-card", "data-link": l.id }, el("div", { class: "title" }, p.title, p.meta), el("div", { class: "pair" }, p.tp, p.ppe));
      body.append(p.card);
      plotEls.set(l.id, p);
    }
    p.title.textContent = `link ${l.id}: ${l.central != null ? "dev" + l.central : "?"} → ${l.peripheral != null ? "dev" + l.peripheral : "?"}`;
    p.meta.textContent = `${phyText(l)} · ${fmtMs(l.intervalMilliseconds)}${l.encrypted ? " · encrypted" : ""}${l.jammed ? " · jammed" : ""}`;
  }
  const live = new Set(links.map((l) => l.id));
  for (const [id, p] of plotEls) if (!live.has(id)) { p.card.remove(); plotEls.delete(id); }
  drawPlots();
}
function drawPlots() {
  if (!air) return;
  for (const [id, p] of plotEls) {
    const h = linkHistory.get(id);
    drawPlot(p.tp, h ? h.tp : [], "throughput", fmtRate, "#2563eb");
    drawPlot(p.ppe, h ? h.ppe : [], "packets/event", (v) => v.toFixed(v < 10 ? 2 : 1), "#0c9f6a");
  }
}
function drawPlot(canvas, pts, name, fmt, stroke) {
  const W = canvas.clientWidth, H = canvas.clientHeight, dpr = window.devicePixelRatio || 1;
  if (!W || !H) return;
  if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) { canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr); }
  const c = canvas.getContext("2d");
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.clearRect(0, 0, W, H);
  const L = 6, R = W - 6, T = 21, B = H - 14;
  const now = air.time, t0 = now - 60;
  let max = 0; for (const q of pts) max = Math.max(max, q.v);
  const top = max > 0 ? niceStep(max / 1.2) * Math.ceil(max / niceStep(max / 1.2)) : 1;
  const X = (t) => L + (t - t0) / 60 * (R - L), Y = (v) => B - v / top * (B - T);
  c.strokeStyle = "#e1e5eb"; c.lineWidth = 1;
  c.beginPath(); for (const v of [0, top / 2, top]) { c.moveTo(L, Math.round(Y(v)) + .5); c.lineTo(R, Math.round(Y(v)) + .5); } c.stroke();
  const SANS = "system-ui, 'DejaVu Sans', sans-serif";
  c.font = "10px ui-monospace, 'DejaVu Sans Mono', monospace";
  c.fillStyle = "#8a94a6"; c.textBaseline = "alphabetic";
  c.textAlign = "left"; c.fillText(fmt(top), L + 2, T + 10); c.fillText("−60 s", L + 2, H - 3);
  c.textAlign = "right"; c.fillText("now", R, H - 3);
  if (pts.length) {
    c.beginPath();
    pts.forEach((q, i) => { const x = X(q.t), y = Y(q.v); if (i) c.lineTo(x, y); else c.moveTo(x, y); });
    c.strokeStyle = stroke; c.lineWidth = 1.6; c.lineJoin = "round"; c.stroke();
    c.lineTo(X(pts[pts.length - 1].t), B); c.lineTo(X(pts[0].t), B); c.closePath();
    c.globalAlpha = .12; c.fillStyle = stroke; c.fill(); c.globalAlpha = 1;
  }
  const cur = pts.length ? pts[pts.length - 1].v : null;
  c.textAlign = "right"; c.font = "600 11px " + SANS;
  c.fillStyle = "#1b2130"; c.fillText(cur == null ? "—" : fmt(cur), R, 12);
  c.textAlign = "left"; c.fillStyle = "#6a7486"; c.font = "11px " + SANS;
  c.fillText(name, L + 2, 12);
}

// ---- events
let eventTotal = 0;
function addEvent(text, cls) {
  const ul = $("#events");
  const atBottom = ul.scrollTop + ul.clientHeight >= ul.scrollHeight - 6;
  const kind = cls || ((/^(\w+):/.exec(text) || [])[1] || "");
  ul.append(el("li", { class: kind, "data-kind": kind }, el("time", { text: clock() }), el("span", { text })));
  while (ul.childElementCount > 500) ul.firstElementChild.remove();
  if (!cls) eventTotal++;
  $("#event-count").textContent = eventTotal ? plural(eventTotal, "event") : "";
  if (atBottom) ul.scrollTop = ul.scrollHeight;
}

// ---- packets
const MAX_ROWS = 2000;
const list = $("#packets"), scroller = $("#packet-scroll");
const rowPacket = new WeakMap();
let stick = true, autoTop = -1, holdUntil = 0, lastFlush = 0, flushGap = 100, rowCount = 0, pending = [], flushQueued = false, paused = false, firstMicros = null, packetTotal = 0, droppedTotal = 0;
let fDevice = "", fLayer = "", fText = "";
const rowTemplate = (() => {
  const tr = el("div", { class: "packet prow" });
  for (const c of ["t", "dev", "dir", "layer", "sum"]) tr.append(el("span", { class: c }));
  tr.children[1].append(el("i"), document.createTextNode(""));
  tr.children[3].append(el("span", { class: "tag" }));
  return tr;
})();
function matches(p) {
  if (fDevice !== "" && String(p.device) !== fDevice) return false;
  if (fLayer !== "" && !(p.layers || []).includes(fLayer)) return false;
  if (fText !== "" && !String(p.summary || "").toLowerCase().includes(fText)) return false;
  return true;
}
function makeRow(p) {
  if (p.gap) return el("div", { class: "gap prow", text: `… ${num(p.gap)} packets not shown: the page fell behind` });
  const tr = rowTemplate.cloneNode(true), td = tr.children, layers = p.layers || [];
  tr.dataset.layers = layers.join(" ");
  tr.dataset.device = p.device == null ? "" : p.device;
  tr.dataset.number = p.number;
  if (firstMicros == null && typeof p.unixMicroseconds === "number") firstMicros = p.unixMicroseconds;
  td[0].textContent = typeof p.unixMicroseconds === "number" ? ((p.unixMicroseconds - firstMicros) / 1e6).toFixed(3) : "";
  td[1].firstChild.style.background = colour(p.device);
  td[1].lastChild.data = p.device == null ? "—" : "dev" + p.device;
  const sent = p.direction === "sent";
  td[2].textContent = sent ? "→" : "←";
  td[2].className = "dir " + (sent ? "sent" : "received");
  const top = layers.length ? layers[layers.length - 1] : "";
  td[3].firstChild.textContent = top;
  td[3].firstChild.className = "tag " + top;
  td[4].textContent = p.summary || "";
  td[4].title = p.summary || "";
  if (!matches(p)) tr.hidden = true;
  rowPacket.set(tr, p);
  return tr;
}
function queuePacket(p) {
  pending.push(p);
  if (pending.length > MAX_ROWS) pending.splice(0, pending.length - MAX_ROWS);
  if (!p.gap) packetTotal++;
  scheduleFlush();
}
function scheduleFlush() {
  if (flushQueued) return;
  flushQueued = true;
  // at most ten list updates a second (four when busy), each in an animation frame: a burst costs one layout
  setTimeout(() => requestAnimationFrame(flush), Math.max(0, lastFlush + flushGap - performance.now()));
}
function flush() {
  flushQueued = false; lastFlush = performance.now();
  if (!paused && pending.length) addRows();
  if (stick) { if (lastFlush >= holdUntil) toBottom(); else rearm(); }
  $("#jump").hidden = stick;
  updatePacketCount();
}
function toBottom() { scroller.scrollTop = 1e9; autoTop = scroller.scrollTop; }
function addRows() {
  const batch = pending; pending = [];
  flushGap = batch.length > 60 ? 250 : 100;
  // rows live in contained chunks of 50: an update lays out and paints little
  let chunk = list.lastElementChild;
  for (const p of batch) {
    if (!chunk || chunk.childElementCount >= 50) list.append(chunk = el("div", { class: "chunk" }));
    chunk.append(makeRow(p));
  }
  rowCount += batch.length;
  while (rowCount > MAX_ROWS) {
    const first = list.firstElementChild;
    if (first.childElementCount <= rowCount - MAX_ROWS) { rowCount -= first.childElementCount; first.remove(); }
    else { first.firstElementChild.remove(); rowCount--; }
  }
}
function updatePacketCount() {
  $("#packet-count").textContent = `${num(packetTotal)} packets` + (paused && pending.length ? ` · ${num(pending.length)} waiting` : "");
  $("#dropped-note").textContent = droppedTotal ? `${num(droppedTotal)} not shown` : "";
  $("#dropped-note").title = droppedTotal ? `${num(droppedTotal)} packets not shown: the page fell behind` : "";
}
function refilter() {
  fDevice = $("#filter-device").value; fLayer = $("#filter-layer").value; fText = $("#filter-text").value.trim().toLowerCase();
  for (const tr of list.querySelectorAll(".packet")) tr.hidden = !matches(rowPacket.get(tr));
  stick = true; holdUntil = 0; toBottom();
  $("#jump").hidden = true;
}
$("#filter-device").addEventListener("change", refilter);
$("#filter-layer").addEventListener("change", refilter);
$("#filter-text").addEventListener("input", refilter);
$("#pause").addEventListener("click", () => {
  paused = !paused;
  $("#pause").textContent = paused ? "Resume" : "Pause";
  $("#pause").setAttribute("aria-pressed", paused);
  if (!paused) scheduleFlush();
  updatePacketCount();
});
// The list follows the newest packets unless the user scrolls up; at the bottom again, it follows again. It keeps
// still for a moment while pointed at or scrolled by a script, so that a row stays under the pointer.
let holdTimer = 0, userScroll = 0;
const rearm = () => { if (!holdTimer) holdTimer = setTimeout(() => { holdTimer = 0; scheduleFlush(); }, holdUntil - performance.now() + 20); };
const hold = () => { holdUntil = performance.now() + 1500; rearm(); };
for (const type of ["wheel", "pointerdown", "touchmove", "keydown"]) {
  scroller.addEventListener(type, (ev) => { if (type !== "pointerdown" || ev.target === scroller) userScroll = performance.now() + 800; }, { passive: true });
}
scroller.addEventListener("scroll", () => {
  if (Math.abs(scroller.scrollTop - autoTop) <= 2) return;
  hold();
  if (performance.now() < userScroll) stick = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 8;
  $("#jump").hidden = stick;
});
scroller.addEventListener("pointermove", hold);
$("#jump").addEventListener("click", () => { stick = true; holdUntil = 0; toBottom(); $("#jump").hidden = true; });
let selectedRow = null;
list.addEventListener("click", (ev) => {
  const tr = ev.target.closest(".packet");
  if (!tr) return;
  if (selectedRow) selectedRow.classList.remove("selected");
  selectedRow = tr; tr.classList.add("selected");
  showPacket(rowPacket.get(tr), tr.children[0].textContent);
});
function treeNode(n) {
  if (!n || typeof n !== "object") return el("div", { class: "leaf", text: String(n) });
  const line = [el("span", { class: "lbl", text: n.label == null ? "" : String(n.label) }), n.value != null ? el("span", { class: "val", text: String(n.value) }) : null];
  if (Array.isArray(n.children) && n.children.length) {
    const d = el("details", { open: true }, el("summary", null, ...line));
    for (const c of n.children) d.append(treeNode(c));
    return d;
  }
  return el("div", { class: "leaf" }, ...line);
}
function hexDump(hex) {
  const bytes = String(hex || "").replace(/[^0-9a-fA-F]/g, "").match(/../g) || [];
  const pre = el("pre", { class: "hex" });
  if (!bytes.length) { pre.textContent = "(no bytes)"; return pre; }
  for (let i = 0; i < bytes.length; i += 8) {
    const row = bytes.slice(i, i + 8);
    const hx = row.map((b) => b.toLowerCase()).join(" ").padEnd(23, " ");
    const ascii = row.map((b) => { const v = parseInt(b, 16); return v >= 32 && v < 127 ? String.fromCharCode(v) : "·"; }).join("");
    pre.append(el("span", { class: "o", text: i.toString(16).padStart(4, "0") }), "  " + hx + "  ", el("span", { class: "c", text: ascii }), i + 8 < bytes.length ? "\n" : "");
  }
  return pre;
}
function showPacket(p, time) {
  const body = $("#details-body");
  if (!p) return;
  const octets = (String(p.bytes || "").replace(/[^0-9a-fA-F]/g, "").length / 2) | 0;
  const sent = p.direction === "sent";
  const head = el("div", { class: "head" },
    el("b", { text: `#${p.number}` }), ` · ${p.device == null ? "?" : "dev" + p.device} · ${sent ? "sent, host → controller" : "received, controller → host"} · ${time} s · ${plural(octets, "octet")}`,
    el("br"), (p.layers || []).join(" / ") + (p.summary ? " — " + p.summary : ""));
  const tree = el("div", { class: "tree", id: "packet-tree" }, p.dissection ? treeNode(p.dissection) : el("div", { class: "empty", text: "no dissection" }));
  body.replaceChildren(head, tree, hexDump(p.bytes));
  body.dataset.packet = p.number;
}
let deviceFilterKey = "";
function updateDeviceFilter() {
  const sel = $("#filter-device");
  const nums = new Set(air ? air.devices.map((d) => d.number) : []);
  if (fDevice !== "") nums.add(+fDevice);
  const list = [...nums].sort((a, b) => a - b);
  const key = list.map((n) => n + ":" + (device(n) ? device(n).name : "")).join(",");
  if (key === deviceFilterKey) return;
  deviceFilterKey = key;
  const value = sel.value;
  sel.replaceChildren(el("option", { value: "", text: "all devices" }), ...list.map((n) => el("option", { value: String(n), text: device(n) ? devName(device(n)) : `dev${n}` })));
  sel.value = value;
}

// ---- loss and global actions
function setLoss() {
  const input = $("#loss-input"), v = Number(input.value);
  if (input.value.trim() === "" || !isFinite(v) || v < 0 || v > 100) { toast("packet loss is a percentage from 0 to 100", true); return; }
  act("PUT", "/api/loss", { percent: v }).then(() => { delete input.dataset.dirty; });
}
$("#loss-input").addEventListener("input", () => { $("#loss-input").dataset.dirty = "1"; });
$("#loss-input").addEventListener("keydown", (ev) => { if (ev.key === "Enter") setLoss(); });
$("#loss-set").addEventListener("click", setLoss);
$("#drop-all").addEventListener("click", () => act("POST", "/api/links/drop", {}));

// ---- the socket
let ws = null, backoff = 500, retryTimer = 0, everOpen = false;
function setStatus(live, detail) {
  $("#status").textContent = live ? "live" : "disconnected";
  $("#status-dot").classList.toggle("live", live);
  $("#status-detail").textContent = detail || "";
  document.body.classList.toggle("stale", !live && !!air);
}
function handle(msg) {
  if (!msg || typeof msg !== "object") return;
  switch (msg.type) {
    case "air": onAir(msg.air); break;
    case "event": if (msg.text) addEvent(String(msg.text)); break;
    case "packet": if (msg.packet) queuePacket(msg.packet); break;
    case "dropped": if (msg.count > 0) { droppedTotal += msg.count; queuePacket({ gap: msg.count }); } break;
  }
}
function connect() {
  clearTimeout(retryTimer);
  if (unauthorized) return;
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/events?token=" + encodeURIComponent(token);
  let sock;
  try { sock = new WebSocket(url); } catch (e) { scheduleReconnect(); return; }
  ws = sock;
  setStatus(false, "· connecting…");
  sock.onopen = () => {
    if (ws !== sock) return;
    backoff = 500;
    if (everOpen) addEvent("— reconnected —", "sep");
    everOpen = true;
    setStatus(true);
  };
  sock.onmessage = (m) => {
    if (ws !== sock || typeof m.data !== "string") return;
    let msg; try { msg = JSON.parse(m.data); } catch (e) { return; }
    handle(msg);
  };
  sock.onclose = () => {
    if (ws !== sock) return;
    ws = null;
    setStatus(false);
    scheduleReconnect();
  };
}
function scheduleReconnect() {
  const delay = backoff; backoff = Math.min(backoff * 2, 10000);
  setStatus(false, `· retrying in ${Math.ceil(delay / 1000)} s`);
  retryTimer = setTimeout(async () => {
    setStatus(false, "· connecting…");
    const r = await api("GET", "/api/air");
    if (r.ok) onAir(r.data);
    if (r.code === "unauthorized") return;
    if (r.code === "network") { scheduleReconnect(); return; }
    connect();
  }, delay);
}
// ---- captures and the sequence chart
let captureList = [];
let captureTimer = null;
function fillCaptureDevices() {
  $("#recording-download").hidden = !(air && air.recording);
  const select = $("#capture-device");
  const wanted = select.value;
  const devices = air && Array.isArray(air.devices) ? air.devices : [];
  const signature = devices.map((d) => d.number + ":" + (d.name || "")).join(",");
  if (select.dataset.signature === signature) return;
  select.dataset.signature = signature;
  select.replaceChildren(...devices.map((d) => { const o = document.createElement("option"); o.value = d.number; o.textContent = devName(d); return o; }));
  if (devices.some((d) => String(d.number) === wanted)) select.value = wanted;
}
function kilobytes(n) { return n >= 1048576 ? (n / 1048576).toFixed(1) + " MB" : (n / 1024).toFixed(1) + " kB"; }
function renderCaptures() {
  const list = $("#captures");
  list.replaceChildren(...captureList.map((c) => {
    const li = document.createElement("li");
    li.className = c.running ? "running" : "";
    li.dataset.id = c.id;
    const what = document.createElement("span");
    what.className = "what";
    what.textContent = `#${c.id} ${c.kind === "pcap" ? "air" : "dev" + c.device} ${c.kind} · ${plural(c.packets, "packet")} · ${kilobytes(c.bytes)}${c.note ? " · " + c.note : ""}`;
    what.title = c.filename;
    li.append(what);
    const button = (label, action) => { const b = document.createElement("button"); b.type = "button"; b.textContent = label; b.dataset.action = action; li.append(b); };
    if (c.running) button("Stop", "stop");
    button("Download", "download");
    button("Delete", "delete");
    return li;
  }));
  if (!captureList.length) { const li = document.createElement("li"); li.className = "empty"; li.textContent = "No capture yet."; list.append(li); }
}
async function refreshCaptures() {
  const r = await api("GET", "/api/captures");
  if (r.ok && Array.isArray(r.data)) { captureList = r.data; renderCaptures(); }
  clearTimeout(captureTimer);
  if (captureList.some((c) => c.running)) captureTimer = setTimeout(refreshCaptures, 1000);
}
async function startCapture(body) {
  const r = await api("POST", "/api/captures", body);
  if (r.ok) toast(`capture #${r.data.id} started: ${r.data.filename}`, false); else toast(r.text, true);
  refreshCaptures();
}
async function download(c) {
  await downloadFrom(`/api/captures/${c.id}/file`, c.filename);
}
async function downloadFrom(path, filename) {
  let res;
  try { res = await fetch(path, { headers: { "Authorization": "Bearer " + token }, cache: "no-store" }); }
  catch (e) { toast("no answer from the console server", true); return; }
  if (!res.ok) { let reason = `HTTP ${res.status}`; try { reason = (await res.json()).error.reason; } catch (e) {} toast(reason, true); return; }
  const given = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") || "");
  if (given) filename = given[1];
  const blob = await res.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  toast(`downloaded ${filename} (${kilobytes(blob.size)})`, false);
}
$("#recording-download").addEventListener("click", () => downloadFrom("/api/recording", "air-recording.txt"));
$("#capture-btsnoop").addEventListener("click", () => {
  const n = Number($("#capture-device").value);
  if (!n) { toast("no device on the air to capture", true); return; }
  startCapture({ kind: "btsnoop", device: n });
});
$("#capture-pcap").addEventListener("click", () => startCapture({ kind: "pcap" }));
$("#captures").addEventListener("click", async (event) => {
  const button = event.target.closest("button");
  if (!button) return;
  const c = captureList.find((x) => String(x.id) === button.closest("li").dataset.id);
  if (!c) return;
  if (button.dataset.action === "stop") { const r = await act("POST", `/api/captures/${c.id}/stop`); if (r.ok) toast(`capture #${c.id} stopped: ${plural(r.data.packets, "packet")}`, false); }
  else if (button.dataset.action === "delete") await act("DELETE", `/api/captures/${c.id}`);
  else if (button.dataset.action === "download") await download(c);
  refreshCaptures();
});
async function showChart() {
  let res;
  try { res = await fetch("/api/chart", { headers: { "Authorization": "Bearer " + token }, cache: "no-store" }); }
  catch (e) { toast("no answer from the console server", true); return; }
  if (!res.ok) { toast(`the chart: HTTP ${res.status}`, true); return; }
  $("#chart-frame").srcdoc = await res.text();
  $("#chart-note").textContent = " · at " + clock();
  $("#chart-overlay").hidden = false;
}
$("#chart-open").addEventListener("click", showChart);
$("#chart-refresh").addEventListener("click", showChart);
$("#chart-close").addEventListener("click", () => { $("#chart-overlay").hidden = true; $("#chart-frame").srcdoc = ""; });

async function start() {
  setStatus(false, "· connecting…");
  const r = await api("GET", "/api/air");
  if (r.code === "unauthorized") return;
  if (r.ok) onAir(r.data); else if (r.code !== "network") toast(r.text, true);
  if (r.code === "network") scheduleReconnect(); else connect();
}
renderPanel();
updatePacketCount();
renderCaptures();
start();
refreshCaptures();
})();
</script>
</body>
</html>
"""#
}
