// The overview page: one file, no build step, no third-party script. It reads /api/overview every
// two seconds and listens to /api/facts/stream for facts as they are stated.

export const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>the mesh</title>
<style>
  :root { font-family: system-ui, sans-serif; color: #1d2327; background: #f6f7f7; }
  body { margin: 0 auto; max-width: 1100px; padding: 1.5rem; }
  h1 { font-size: 1.4rem; margin: 0 0 1rem; }
  h2 { font-size: 1.05rem; margin: 1.6rem 0 .5rem; }
  #verdict { padding: .9rem 1rem; border-radius: 6px; font-weight: 600; }
  #verdict.healthy { background: #e7f6ec; color: #1e6b35; }
  #verdict.unhealthy { background: #fcebea; color: #8a1f11; }
  #verdict ul { margin: .5rem 0 0; font-weight: 400; }
  #verdict .detail { display: block; margin-top: .3rem; font-weight: 400; }
  .note { font-size: .85rem; margin: .4rem 0 0; }
  table { width: 100%; border-collapse: collapse; background: #fff; border-radius: 6px; overflow: hidden; }
  th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #e4e6e7; vertical-align: top; font-size: .92rem; }
  th { background: #eef0f1; font-weight: 600; }
  .muted { color: #687076; }
  #facts li { margin: .2rem 0; font-size: .9rem; }
  code { font-size: .85rem; }
</style>
</head>
<body>
<h1>the mesh</h1>
<div id="verdict" class="unhealthy">asking the control plane…</div>
<p id="checked" class="note muted"></p>
<p id="projections" class="note muted"></p>
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>node</th><th>last heard from</th><th>declaration applied</th><th>running</th><th>seats it holds</th><th>problems</th></tr></thead><tbody></tbody></table>
<h2>Held</h2>
<p id="held-summary" class="note muted"></p>
<table id="held"><thead><tr><th>node</th><th>module</th><th>resource</th><th>why, as the node said</th><th>since</th></tr></thead><tbody></tbody></table>
<h2>Seats</h2>
<p id="seat-summary" class="note muted"></p>
<table id="seats"><thead><tr><th>seat</th><th>scope</th><th>delivers</th><th>held by</th></tr></thead><tbody></tbody></table>
<h2>Facts, as they are stated</h2>
<p id="live" class="note muted">connecting to the live stream…</p>
<ul id="facts"><li id="no-facts" class="muted">none stated yet</li></ul>
<script>
const text = (value) => String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const ago = (iso) => { if (!iso) return 'never'; const s = Math.round((Date.now() - Date.parse(iso)) / 1000); return s < 60 ? s + ' s ago' : Math.round(s / 60) + ' min ago'; };
const describe = (fact) => {
  const d = fact.data;
  const where = d.node + (d.module ? '/' + d.module : '');
  switch (fact.type) {
    case 'fact.applied': return where + ' now runs definition ' + d.version.definitionVersion + (d.previous ? ' (was ' + d.previous.definitionVersion + ')' : '');
    case 'fact.refused': return where + ': ' + d.resource + ' refused: ' + d.reason;
    case 'fact.crash-looping': return where + ': ' + d.resource + ' crash-looping (' + d.restarts + ' restarts)';
    case 'fact.stopped': return where + ' stopped';
    case 'fact.held': return d.resources.length === 0 ? where + ': nothing held any more' : where + ': ' + d.resources.length + ' held (' + [...new Set(d.resources.map((r) => r.reason ?? 'no reason given'))].join('; ') + ')';
    case 'fact.capabilities': return where + ' applies ' + (d.capabilities.length === 0 ? 'only the kinds every agent applies' : d.capabilities.join(', '));
    default: return fact.type + ' ' + where;
  }
};
const addFact = (fact) => {
  document.getElementById('no-facts')?.remove();
  const item = document.createElement('li');
  item.innerHTML = '<span class="muted">' + text(new Date(fact.time).toLocaleTimeString()) + '</span> ' + text(describe(fact));
  document.getElementById('facts').prepend(item);
};
// Which declaration a node runs, in words: the newest it was sent, or how far behind it is.
const applied = (n) => {
  if (n.declaredSequence === null) return '<span class="muted">none sent yet</span>';
  if (n.appliedSequence === n.declaredSequence) return 'the newest (#' + text(n.declaredSequence) + ')';
  return (n.appliedSequence === null ? 'none yet' : '#' + text(n.appliedSequence)) + '; newest is #' + text(n.declaredSequence);
};
let seenFacts = false;
const render = (o) => {
  const verdict = document.getElementById('verdict');
  verdict.className = o.healthy ? 'healthy' : 'unhealthy';
  const running = o.nodes.reduce((sum, n) => sum + n.running.length, 0);
  verdict.innerHTML = o.healthy
    ? 'The mesh is doing what it was told.<span class="detail">' + o.nodes.length + ' nodes heard from, ' + running + ' modules running as declared.</span>'
    : 'The mesh is not doing everything it was told (' + o.problems.length + (o.problems.length === 1 ? ' problem' : ' problems') + '):<ul>' + o.problems.map((p) => '<li>' + text(p) + '</li>').join('') + '</ul>';
  document.getElementById('checked').textContent = 'checked ' + new Date().toLocaleTimeString() + '; the page asks again every 2 seconds.';
  // Absence is not health: say so when the overview carries nothing about the projections.
  const behind = (o.projections ?? []).filter((p) => p.stalledAt || p.notServing || p.lagEvents > 0);
  document.getElementById('projections').innerHTML = o.projections === undefined
    ? 'The projections could not be asked: their lag and stalls are not known here; <code>npx mesh status</code> shows them.'
    : behind.length === 0
      ? 'Projections: all ' + o.projections.length + ' caught up with the log.'
      : 'Projections: ' + behind.map((p) => text(p.projection) + (p.stalledAt ? ' stalled at sequence ' + text(p.stalledAt.seq) : p.notServing ? ' not built yet' : ' ' + text(p.lagEvents) + ' behind')).join(', ') + '.';
  document.querySelector('#nodes tbody').innerHTML = o.nodes.map((n) => '<tr><td><b>' + text(n.node) + '</b><br><span class="muted">' + text(n.address ?? '') + '</span></td><td>' + text(ago(n.lastHeard)) + '</td><td>' + applied(n) + '</td><td>' + (n.running.map((r) => text(r.module)).join(', ') || '<span class="muted">nothing</span>') + '</td><td>' + (n.seats.map(text).join(', ') || '<span class="muted">none</span>') + '</td><td>' + (n.problems.map(text).join('<br>') || '<span class="muted">none</span>') + '</td></tr>').join('');
  const holds = o.nodes.flatMap((n) => n.held ?? []);
  document.getElementById('held-summary').textContent = holds.length === 0 ? 'Nothing is held.' : holds.length + ' resources held: assigned, and waiting for what is named.';
  document.querySelector('#held tbody').innerHTML = holds.map((h) => '<tr><td>' + text(h.node) + '</td><td>' + text(h.module) + '</td><td>' + text(h.resource) + ' <span class="muted">(' + text(h.kind) + ')</span></td><td>' + text(h.reason ?? 'no reason given') + '</td><td>' + text(ago(h.since.time)) + ' <span class="muted">(seq ' + text(h.since.seq) + ')</span></td></tr>').join('');
  const held = o.seats.filter((s) => s.holders.length > 0).length;
  document.getElementById('seat-summary').textContent = held + ' of ' + o.seats.length + ' seats held. An unheld seat is an answer, not a fault: nothing was told to hold it.';
  document.querySelector('#seats tbody').innerHTML = o.seats.map((s) => '<tr><td>' + text(s.seat) + '</td><td>' + text(s.scope) + '</td><td>' + text(s.delivers ?? '–') + '</td><td>' + (s.holders.map(text).join(', ') || '<span class="muted">unheld</span>') + '</td></tr>').join('');
  if (!seenFacts) { seenFacts = true; for (const fact of o.facts) addFact(fact); }
};
const refresh = () => fetch('/api/overview').then((r) => r.json()).then(render).catch(() => {
  const verdict = document.getElementById('verdict');
  verdict.className = 'unhealthy';
  verdict.textContent = 'The control plane does not answer: what the mesh is doing is unknown.';
});
refresh();
setInterval(refresh, 2000);
const stream = new EventSource('/api/facts/stream');
const live = (words) => { document.getElementById('live').textContent = words; };
stream.addEventListener('open', () => live('live: a new fact shows here as it is stated.'));
stream.addEventListener('error', () => live('the live stream is interrupted; reconnecting. Facts stated meanwhile show after a reload.'));
stream.addEventListener('fact', (event) => addFact(JSON.parse(event.data)));
</script>
</body>
</html>
`;
