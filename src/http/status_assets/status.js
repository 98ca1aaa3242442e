/* rmqns status page: polls this node's read-only JSON (/api/...) and
 * /metrics, and the other nodes' /api/ when statusPeers lists them.
 * No dependencies; data only ever reaches the page as text nodes. */
'use strict';
(function () {
  const PAGE = 50;
  const NAMES = {
    100: 'PUT_KV_CONFIG', 101: 'GET_KV_CONFIG', 102: 'DELETE_KV_CONFIG', 103: 'REGISTER_BROKER',
    104: 'UNREGISTER_BROKER', 105: 'GET_ROUTEINFO_BY_TOPIC', 106: 'GET_BROKER_CLUSTER_INFO',
    205: 'WIPE_WRITE_PERM_OF_BROKER', 206: 'GET_ALL_TOPIC_LIST_FROM_NAMESERVER',
    216: 'DELETE_TOPIC_IN_NAMESRV', 217: 'REGISTER_TOPIC_IN_NAMESRV', 219: 'GET_KVLIST_BY_NAMESPACE',
    224: 'GET_TOPICS_BY_CLUSTER', 304: 'GET_SYSTEM_TOPIC_LIST_FROM_NS', 311: 'GET_UNIT_TOPIC_LIST',
    312: 'GET_HAS_UNIT_SUB_TOPIC_LIST', 313: 'GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST',
    318: 'UPDATE_NAMESRV_CONFIG', 319: 'GET_NAMESRV_CONFIG', 322: 'QUERY_DATA_VERSION',
    327: 'ADD_WRITE_PERM_OF_BROKER', 901: 'GET_BROKER_MEMBER_GROUP', 904: 'BROKER_HEARTBEAT'
  };
  const $ = (id) => document.getElementById(id);

  /* el('td', {class: 'num'}, 'text', child...) */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    for (const c of kids) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  function row(cells, attrs) {
    return el('tr', attrs, ...cells.map((c) => (c instanceof Node && c.tagName === 'TD' ? c : el('td', {}, c))));
  }
  function fill(tbody, rows) { tbody.replaceChildren(...rows); }
  function thead(...names) { return el('thead', {}, el('tr', {}, ...names.map((x) => el('th', { scope: 'col' }, x)))); }
  /* A table whose cells carry their column's name (the phone layout shows it). */
  function labelledTable(cls, caption, columns, rows) {
    for (const r of rows) [...r.cells].forEach((c, i) => c.setAttribute('data-label', columns[i]));
    return el('div', { class: 'scroll' }, el('table', { class: cls }, el('caption', { class: 'sr-only' }, caption),
      thead(...columns), el('tbody', {}, ...rows)));
  }

  async function getJSON(url, ms, credentials) {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), ms || 5000);
    try {
      const r = await fetch(url, { signal: ctl.signal, cache: 'no-store', credentials: credentials || 'same-origin' });
      if (!r.ok) { const e = new Error(url + ': HTTP ' + r.status); e.status = r.status; throw e; }
      return await r.json();
    } finally { clearTimeout(t); }
  }

  function secs(ms) {
    if (ms < 10000) return (ms / 1000).toFixed(1) + ' s';
    if (ms < 120000) return Math.round(ms / 1000) + ' s';
    return Math.round(ms / 60000) + ' min';
  }
  function bytes(n) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + ' ' + u[i];
  }
  function duration(ms) {
    const s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24;
    const m = Math.floor(s / 60) % 60;
    return (d ? d + ' d ' : '') + (d || h ? h + ' h ' : '') + m + ' min ' + (s % 60) + ' s';
  }
  function latency(s) {
    if (s == null) return '–';
    return s < 0.001 ? Math.round(s * 1e6) + ' µs' : s < 1 ? (s * 1000).toFixed(1) + ' ms' : s.toFixed(2) + ' s';
  }
  function perm(p) { return (p & 4 ? 'R' : '-') + (p & 2 ? 'W' : '-') + (p & 1 ? 'X' : '-'); }

  /* The live region changes only when the state does (a screen reader is
   * not told every second); the time of the last update sits beside it. */
  const live = $('live');
  let failures = 0;
  function setLive(ok, what) {
    failures = ok ? 0 : failures + 1;
    if (ok) {
      $('updated').textContent = '· updated ' + new Date().toLocaleTimeString();
      if (live.classList.contains('down') || live.textContent !== 'Live') { live.classList.remove('down'); live.textContent = 'Live'; }
    } else if (failures === 1) {
      live.classList.add('down');
      live.textContent = 'Not answering (' + what + '); retrying';
    }
  }

  /* ---- brokers ---- */

  const BROKER_COLUMNS = ['Broker set', 'Id', 'Role', 'Address', 'Heartbeat age / timeout', 'Topics', 'Data version'];
  let brokers = [], brokersAt = 0, brokerShape = '';
  /* Heartbeat bars, advanced between polls by tickBars: each holds the age
   * its poll reported and when that poll answered (at). */
  const bars = new Map(); /* cluster|addr -> {hb, span, text, age, timeout, at} */
  const ctlBars = new Map(); /* the controller's live brokers, by cluster|set|id|addr */

  function hbCell(map, key, age, timeout, at) {
    const span = el('span'), text = el('span', { class: 'hbtext' });
    const hb = el('div', { class: 'hb', role: 'img' }, el('div', { class: 'bar' }, span), text);
    map.set(key, { hb, span, text, age, timeout, at });
    return el('td', {}, hb);
  }
  function hbUpdate(map, key, age, timeout, at) {
    const v = map.get(key);
    if (v) { v.age = age; v.timeout = timeout; v.at = at; }
  }

  function tickBars() {
    const now = Date.now();
    for (const v of [...bars.values(), ...ctlBars.values()]) {
      const age = v.age + now - v.at, late = age >= v.timeout;
      v.span.style.width = Math.min(100, (100 * age) / Math.max(1, v.timeout)).toFixed(1) + '%';
      v.hb.classList.toggle('late', late);
      v.text.textContent = late ? 'timed out (' + secs(age) + ' / ' + secs(v.timeout) + ')' : secs(age) + ' / ' + secs(v.timeout);
      v.hb.setAttribute('aria-label', 'heartbeat ' + secs(age) + ' ago of ' + secs(v.timeout) + (late ? ', timed out' : ''));
    }
  }

  function renderBrokers() {
    const box = $('broker-list');
    bars.clear();
    if (!brokers.length) { box.replaceChildren(el('p', {}, 'No live brokers.')); return; }
    const clusters = new Map();
    for (const b of brokers) {
      if (!clusters.has(b.cluster)) clusters.set(b.cluster, []);
      clusters.get(b.cluster).push(b);
    }
    const out = [];
    for (const [name, list] of clusters) {
      const sets = new Set(list.map((b) => b.brokerName));
      out.push(el('h3', {}, 'Cluster ', el('code', {}, name), ' — ', sets.size + ' broker set' + (sets.size === 1 ? '' : 's') + ', ' + list.length + ' broker' + (list.length === 1 ? '' : 's')));
      const rows = [];
      let prev = null;
      for (const b of list) {
        const dv = b.dataVersion || {};
        rows.push(row([
          el('td', {}, el('code', { class: b.brokerName === prev ? 'same-set' : '' }, b.brokerName)), el('td', { class: 'num' }, b.brokerId),
          el('td', { class: b.role === 'master' ? 'role-master' : b.role === 'acting master' ? 'role-acting' : '' }, b.role),
          el('td', {}, el('code', {}, b.address)),
          hbCell(bars, b.cluster + '|' + b.address, b.lastHeartbeatAgeMillis, b.heartbeatTimeoutMillis, brokersAt), el('td', { class: 'num' }, b.topicCount),
          el('td', { class: 'mono' }, dv.counter + ' @ ' + (dv.timestamp ? new Date(dv.timestamp).toISOString().replace('T', ' ').slice(0, 19) : '–') + (dv.stateVersion ? ' (state ' + dv.stateVersion + ')' : ''))
        ], { 'data-broker': b.address, 'data-role': b.role }));
        prev = b.brokerName;
      }
      out.push(labelledTable('brokers', 'Brokers of cluster ' + name, BROKER_COLUMNS, rows));
    }
    box.replaceChildren(...out);
    mark('rmqns-brokers');
  }

  /* first renders, for whoever measures the page (performance marks) */
  const marked = new Set();
  function mark(name) { if (!marked.has(name)) { marked.add(name); performance.mark(name); } }

  async function pollBrokers() {
    const j = await getJSON('/api/brokers');
    brokers = j.brokers;
    brokersAt = Date.now();
    const shape = JSON.stringify(brokers.map((b) => [b.cluster, b.brokerName, b.brokerId, b.role, b.address, b.topicCount, b.dataVersion]));
    if (shape !== brokerShape) { brokerShape = shape; renderBrokers(); }
    else {
      for (const b of brokers) hbUpdate(bars, b.cluster + '|' + b.address, b.lastHeartbeatAgeMillis, b.heartbeatTimeoutMillis, brokersAt);
    }
    tickBars();
  }

  /* ---- topics ---- */

  const tq = $('topic-q');
  let topicOffset = 0, topicMatched = 0, topicSeq = 0, selected = null;

  async function loadTopics() {
    const seq = ++topicSeq;
    const q = tq.value.trim();
    const j = await getJSON('/api/topics?q=' + encodeURIComponent(q) + '&offset=' + topicOffset + '&limit=' + PAGE);
    if (seq !== topicSeq) return; /* a newer search answered first */
    topicMatched = j.matched;
    const items = j.topics.map((t) => {
      const b = el('button', { type: 'button', class: 'link', 'aria-pressed': String(t === selected), 'data-topic': t }, t);
      b.addEventListener('click', (e) => showRoute(t, e.detail === 0)); /* detail 0: Enter or Space */
      return el('li', {}, b);
    });
    $('topic-list').replaceChildren(...items);
    const last = Math.min(j.offset + j.topics.length, j.matched);
    $('topic-count').textContent = j.matched
      ? 'Topics ' + (j.offset + 1) + '–' + last + ' of ' + j.matched + (q ? ' matching “' + q + '”' : '') + ' (' + j.total + ' in all)'
      : (q ? 'No topic matches “' + q + '”' : 'No topics') + ' (' + j.total + ' in all)';
    mark('rmqns-topics');
    $('topic-prev').disabled = j.offset === 0;
    $('topic-next').disabled = last >= j.matched;
  }

  async function showRoute(name, fromKeyboard) {
    selected = name;
    for (const b of document.querySelectorAll('#topic-list button')) b.setAttribute('aria-pressed', String(b.dataset.topic === name));
    const box = $('topic-route');
    let r;
    try { r = await getJSON('/api/topic?name=' + encodeURIComponent(name)); }
    catch (e) {
      box.replaceChildren(el('h3', {}, 'Route of ', el('code', {}, name)), el('p', {}, e.status === 404 ? 'No route: the topic is gone.' : 'Could not read the route.'));
      return;
    }
    const bodyB = el('tbody'), bodyQ = el('tbody');
    for (const bd of r.brokerDatas || []) {
      const addrs = Object.keys(bd.brokerAddrs || {}).sort((a, b) => a - b).map((id) => id + ': ' + bd.brokerAddrs[id]).join(', ');
      bodyB.append(row([el('td', {}, el('code', {}, bd.brokerName)), el('td', {}, el('code', {}, bd.cluster)), el('td', { class: 'mono' }, addrs)]));
    }
    for (const q of r.queueDatas || []) {
      bodyQ.append(row([el('td', {}, el('code', {}, q.brokerName)), el('td', { class: 'num' }, q.readQueueNums), el('td', { class: 'num' }, q.writeQueueNums),
        el('td', { class: 'mono', title: 'perm ' + q.perm }, perm(q.perm)), el('td', { class: 'num' }, q.topicSysFlag)]));
    }
    const heading = el('h3', { id: 'route-h', tabindex: '-1' }, 'Route of ', el('code', {}, name));
    box.replaceChildren(
      heading,
      el('div', { class: 'scroll' }, el('table', { id: 'route-brokers' }, el('caption', {}, 'Brokers'), thead('Broker set', 'Cluster', 'Addresses (id: address)'), bodyB)),
      el('div', { class: 'scroll' }, el('table', { id: 'route-queues' }, el('caption', {}, 'Queues'), thead('Broker set', 'Read queues', 'Write queues', 'Permission', 'Sysflag'), bodyQ)),
      r.orderTopicConf ? el('p', {}, 'Order config: ', el('code', {}, r.orderTopicConf)) : '',
      el('details', {}, el('summary', {}, 'The route JSON as a client gets it'), el('pre', {}, JSON.stringify(r, null, 2))));
    if (fromKeyboard) heading.focus();
  }

  let searchTimer = 0;
  tq.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { topicOffset = 0; loadTopics().catch(() => setLive(false, 'topics')); }, 150);
  });
  $('topic-form').addEventListener('submit', (e) => { e.preventDefault(); topicOffset = 0; loadTopics().catch(() => setLive(false, 'topics')); });
  $('topic-prev').addEventListener('click', () => { topicOffset = Math.max(0, topicOffset - PAGE); loadTopics().catch(() => setLive(false, 'topics')); });
  $('topic-next').addEventListener('click', () => { if (topicOffset + PAGE < topicMatched) topicOffset += PAGE; loadTopics().catch(() => setLive(false, 'topics')); });

  /* ---- the node ---- */

  let node = null, kvKeys = -1;

  function fact(name, value) { return [el('dt', {}, name), el('dd', {}, value)]; }

  async function pollNode() {
    node = await getJSON('/api/node');
    $('node-version').textContent = node.version;
    const budget = node.connectionMemoryBudgetBytes;
    const mem = bytes(node.connectionMemoryBytes) + (budget ? ' of a ' + bytes(budget) + ' budget (' + (100 * node.connectionMemoryBytes / budget).toFixed(1) + '%)' : ' (no budget)');
    $('node-facts').replaceChildren(
      ...fact('Version', node.version), ...fact('Uptime', duration(node.uptimeMillis)),
      ...fact('Protocol port', node.listenPort), ...fact('Connections', node.connections),
      ...fact('Connection memory', mem), ...fact('Resident memory', bytes(node.rssBytes)),
      ...fact('Live brokers', node.brokersLive), ...fact('Broker sets', node.brokerGroups),
      ...fact('Topics', node.topics), ...fact('Queue entries', node.queueEntries),
      ...fact('KV', node.kvKeys + ' keys in ' + node.kvNamespaces + ' namespaces'));
    fill(document.querySelector('#config-table tbody'), node.config.map((c) => row([el('td', {}, el('code', {}, c.key)), el('td', { class: 'mono' }, c.value)])));
    if (node.kvKeys !== kvKeys) { kvKeys = node.kvKeys; loadKv().catch(() => setLive(false, 'KV')); }
    renderController(node.controller, Date.now());
  }

  async function loadKv() {
    const j = await getJSON('/api/kv');
    const t = j.configTable || {};
    const names = Object.keys(t).sort();
    if (!names.length) { $('kv').replaceChildren(el('p', {}, 'No KV config.')); return; }
    $('kv').replaceChildren(...names.map((ns) => {
      const keys = Object.keys(t[ns]).sort();
      return el('details', {}, el('summary', {}, el('code', {}, ns), ' — ' + keys.length + ' key' + (keys.length === 1 ? '' : 's')),
        el('div', { class: 'scroll' }, el('table', {}, el('caption', { class: 'sr-only' }, 'Namespace ' + ns),
          el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Key'), el('th', { scope: 'col' }, 'Value'))),
          el('tbody', {}, ...keys.map((k) => row([el('td', {}, el('code', {}, k)), el('td', { class: 'mono' }, t[ns][k])]))))));
    }));
  }

  /* ---- the embedded controller (/api/node's controller, as /controller) ---- */

  const SET_COLUMNS = ['Broker set', 'Cluster', 'Master', 'Master epoch', 'Sync-state set', 'Replicas'];
  const CTL_BROKER_COLUMNS = ['Cluster', 'Broker set', 'Id', 'Address', 'Heartbeat age / timeout', 'Epoch', 'Max offset', 'Election priority'];
  let ctlShape = null;

  function ctlRole(c) {
    return c.role + (c.role === 'leader' ? (c.serving ? ', serving' : ', not serving yet') : '');
  }
  function ctlLeader(c) { return c.leader ? c.leader + ' at ' + c.leaderAddress : 'none known'; }
  function liveKey(b) { return b.clusterName + '|' + b.brokerName + '|' + b.brokerId + '|' + b.address; }

  function replicaItem(r) {
    return el('li', { 'data-replica': r.brokerId, 'data-alive': String(r.alive), 'data-in-sync': String(r.inSyncStateSet) },
      el('code', {}, r.brokerId + ': ' + r.address), ' ',
      el('span', { class: r.alive ? 'diff-ok' : 'diff-bad' }, r.alive ? '✓\u00a0alive' : '✗\u00a0not alive'), ', ',
      el('span', { class: r.inSyncStateSet ? 'diff-ok' : 'ctl-out' }, r.inSyncStateSet ? 'in sync' : 'not in sync'));
  }

  /* Cells hold one element each: the phone layout makes a cell a grid of
   * its label and that element. */
  function setRow(s) {
    const master = s.masterBrokerId == null ? el('span', { class: 'diff-bad' }, 'none')
      : el('span', {}, s.masterBrokerId + ' at ', el('code', {}, s.masterAddress || 'address unknown'));
    const sss = s.syncStateSet.length ? '{' + s.syncStateSet.join(', ') + '}' : 'empty';
    return row([
      el('td', {}, el('span', {}, el('code', {}, s.brokerName), s.registered ? '' : ' (not registered)')), el('td', {}, el('code', {}, s.clusterName)),
      el('td', {}, master), el('td', { class: 'num' }, s.masterEpoch), el('td', {}, sss + ', epoch ' + s.syncStateSetEpoch),
      el('td', {}, s.replicas.length ? el('ul', { class: 'replicas' }, ...s.replicas.map(replicaItem)) : 'none')
    ], { 'data-set': s.brokerName, 'data-cluster': s.clusterName });
  }

  function liveRow(b, at) {
    return row([
      el('td', {}, el('code', {}, b.clusterName)), el('td', {}, el('code', {}, b.brokerName)), el('td', { class: 'num' }, b.brokerId),
      el('td', {}, el('code', {}, b.address)), hbCell(ctlBars, liveKey(b), b.heartbeatAgeMillis, b.heartbeatTimeoutMillis, at),
      el('td', { class: 'num' }, b.epoch), el('td', { class: 'num' }, b.maxOffset), el('td', { class: 'num' }, b.electionPriority)
    ], { 'data-ctl-broker': b.address });
  }

  /* c: the controller's view or null; at: when it was read. The facts are
   * redrawn every poll; the tables only when something but an age changed. */
  function renderController(c, at) {
    const state = $('controller-state'), view = $('controller-view');
    if (!c) {
      if (ctlShape !== 'none') {
        ctlShape = 'none';
        ctlBars.clear();
        view.hidden = true;
        state.hidden = false;
        state.textContent = 'No controller runs in this NameServer: there is no role, term or controller-managed broker set to show.';
      }
      return;
    }
    state.hidden = true;
    view.hidden = false;
    $('controller-facts').replaceChildren(
      ...fact('Role', ctlRole(c)), ...fact('Term', c.term), ...fact('Group', c.group), ...fact('This node', c.self),
      ...fact('Leader', ctlLeader(c)), ...fact('Leader changes', c.leaderChanges), ...fact('Last applied entry', c.lastApplied));
    $('controller-facts').dataset.role = c.role;
    const shape = JSON.stringify([c.brokerSets, c.liveBrokerCounts, c.liveBrokers.map((b) => ({ ...b, heartbeatAgeMillis: 0 }))]);
    if (shape === ctlShape) {
      for (const b of c.liveBrokers) hbUpdate(ctlBars, liveKey(b), b.heartbeatAgeMillis, b.heartbeatTimeoutMillis, at);
    } else {
      ctlShape = shape;
      ctlBars.clear();
      $('ctl-sets').replaceChildren(c.brokerSets.length
        ? labelledTable('brokers ctl-sets', 'Broker sets of the controller', SET_COLUMNS, c.brokerSets.map(setRow))
        : el('p', {}, 'No broker set registered with the controller.'));
      const counts = c.liveBrokerCounts;
      $('ctl-live').replaceChildren(c.liveBrokers.length
        ? labelledTable('brokers', 'Brokers heart-beating to this controller node', CTL_BROKER_COLUMNS, c.liveBrokers.map((b) => liveRow(b, at)))
        : el('p', {}, counts && !counts.listed
          ? `${counts.total} brokers heart-beat to this node (${counts.inBrokerSets} of registered broker sets), too many to list; at most ${counts.max} are tracked.`
          : 'No broker heart-beats to this node.'));
    }
    tickBars();
  }

  /* ---- requests, from /metrics ---- */

  const HISTORY = 60;
  let prevScrape = null;
  const series = new Map(); /* code -> {rate: [], p99: [], p50} */

  function parseMetrics(text) {
    const counts = new Map(), buckets = new Map();
    for (const line of text.split('\n')) {
      const m = /^(rmqns_requests_total|rmqns_request_duration_seconds_bucket)\{([^}]*)\}\s+(\S+)/.exec(line);
      if (!m) continue;
      const lab = {};
      for (const l of m[2].matchAll(/(\w+)="([^"]*)"/g)) lab[l[1]] = l[2];
      const v = Number(m[3]);
      if (m[1] === 'rmqns_requests_total') counts.set(lab.code, (counts.get(lab.code) || 0) + v);
      else {
        if (!buckets.has(lab.code)) buckets.set(lab.code, []);
        buckets.get(lab.code).push([lab.le === '+Inf' ? Infinity : Number(lab.le), v]);
      }
    }
    return { at: Date.now(), counts, buckets };
  }

  /* The q quantile of the observations between two cumulative histograms. */
  function quantile(now, before, q) {
    if (!now) return null;
    const old = new Map((before || []).map(([le, v]) => [le, v]));
    const d = now.map(([le, v]) => [le, v - (old.get(le) || 0)]);
    const total = d.length ? d[d.length - 1][1] : 0;
    if (total <= 0) return null;
    let prevLe = 0, prevN = 0;
    for (const [le, n] of d) {
      if (n >= q * total) {
        if (le === Infinity) return prevLe;
        return prevLe + (le - prevLe) * ((q * total - prevN) / Math.max(1, n - prevN));
      }
      prevLe = le; prevN = n;
    }
    return prevLe;
  }

  function spark(values, label) {
    const NS = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 120 28');
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
    const max = Math.max(...values.map((v) => v || 0), 1e-9);
    const pts = values.map((v, i) => (i * 120 / (HISTORY - 1)).toFixed(1) + ',' + (27 - 26 * (v || 0) / max).toFixed(1));
    const pl = document.createElementNS(NS, 'polyline');
    pl.setAttribute('points', pts.join(' '));
    svg.append(pl);
    return svg;
  }

  async function pollMetrics() {
    const r = await fetch('/metrics', { cache: 'no-store' });
    if (!r.ok) throw new Error('/metrics: HTTP ' + r.status);
    const cur = parseMetrics(await r.text());
    if (prevScrape) {
      const dt = (cur.at - prevScrape.at) / 1000;
      for (const [code, n] of cur.counts) {
        if (!series.has(code)) series.set(code, { rate: [], p99: [], p50: null, total: 0 });
        const s = series.get(code);
        s.total = n;
        s.rate.push(Math.max(0, n - (prevScrape.counts.get(code) || 0)) / dt);
        const p99 = quantile(cur.buckets.get(code), prevScrape.buckets.get(code), 0.99);
        s.p50 = quantile(cur.buckets.get(code), prevScrape.buckets.get(code), 0.5);
        s.p99.push(p99);
        if (s.rate.length > HISTORY) { s.rate.shift(); s.p99.shift(); }
      }
      const rows = [...series.entries()].sort((a, b) => b[1].total - a[1].total).slice(0, 12).map(([code, s]) => {
        const name = NAMES[code] ? NAMES[code] + ' (' + code + ')' : 'code ' + code;
        const rate = s.rate[s.rate.length - 1] || 0, p99 = s.p99[s.p99.length - 1];
        const pad = (a) => Array(HISTORY - a.length).fill(0).concat(a);
        return row([el('td', {}, name), el('td', { class: 'num' }, rate.toFixed(rate < 10 ? 1 : 0) + '/s'),
          el('td', { class: 'num' }, latency(s.p50)), el('td', { class: 'num' }, latency(p99)),
          el('td', {}, spark(pad(s.rate), name + ' requests per second')), el('td', {}, spark(pad(s.p99), name + ' p99 latency'))]);
      });
      fill(document.querySelector('#req-table tbody'), rows.length ? rows : [row([el('td', { colspan: '6' }, 'No requests yet.')])]);
    }
    prevScrape = cur;
  }

  /* ---- other nodes (statusPeers) ---- */

  function brokerKey(b) { return b.cluster + ' / ' + b.brokerName + ' / id ' + b.brokerId; }
  function brokerState(b) { return b.address + ', ' + b.role; }

  const peerCredentials = new Map();
  async function pollPeers() {
    const peers = (node && node.peers) || [];
    if (!peers.length) return;
    const mine = new Map(brokers.map((b) => [brokerKey(b), brokerState(b)]));
    const results = await Promise.all(peers.map(async (p) => {
      /* a peer behind TLS is listed as https://host:port, or is on the
       * scheme of this page; one behind a login reads with the browser's
       * credentials for it (log in on its page once), one without with none
       * (its answer allows any origin, which credentials forbid): the way
       * that worked last is tried first */
      const base = /^https?:\/\//.test(p) ? p : location.protocol + '//' + p;
      const modes = peerCredentials.get(p) === 'include' ? ['include', 'same-origin'] : ['same-origin', 'include'];
      let err;
      for (const mode of modes) {
        try {
          const [n, bs] = await Promise.all([getJSON(base + '/api/node', 3000, mode), getJSON(base + '/api/brokers', 3000, mode)]);
          peerCredentials.set(p, mode);
          return { p, n, bs: bs.brokers };
        } catch (e) { err = e; }
      }
      return { p, err: err.message || String(err) };
    }));
    const body = el('tbody'), diffs = [];
    for (const r of results) {
      if (r.err) { body.append(row([el('td', {}, el('code', {}, r.p)), el('td', { class: 'diff-bad' }, 'no answer'), '', '', '', ''])); continue; }
      const theirs = new Map(r.bs.map((b) => [brokerKey(b), brokerState(b)]));
      let nb = 0;
      for (const k of new Set([...mine.keys(), ...theirs.keys()])) {
        if (mine.get(k) === theirs.get(k)) continue;
        nb++;
        diffs.push(row([el('td', {}, el('code', {}, r.p)), el('td', {}, k), el('td', {}, mine.get(k) || 'absent'), el('td', {}, theirs.get(k) || 'absent')]));
      }
      const sameTopics = r.n.topicsDigest === node.topicsDigest && r.n.topics === node.topics;
      if (!sameTopics) diffs.push(row([el('td', {}, el('code', {}, r.p)), el('td', {}, 'topic routes'), el('td', {}, node.topics + ' topics'), el('td', {}, r.n.topics + ' topics' + (r.n.topics === node.topics ? ', routed differently' : ''))]));
      const c = r.n.controller, mc = node.controller;
      /* two nodes of one controller group should name one leader */
      if (c && mc && c.group === mc.group && c.leader !== mc.leader) {
        diffs.push(row([el('td', {}, el('code', {}, r.p)), el('td', {}, 'controller leader of ' + c.group), el('td', {}, ctlLeader(mc)), el('td', {}, ctlLeader(c))]));
      }
      body.append(row([el('td', {}, el('code', {}, r.p)), el('td', {}, r.n.version),
        el('td', { class: nb ? 'diff-bad' : 'diff-ok' }, nb ? nb + ' differ' : 'same'),
        el('td', { class: sameTopics ? 'diff-ok' : 'diff-bad' }, sameTopics ? 'same' : 'differ'), el('td', { class: 'num' }, duration(r.n.uptimeMillis)),
        el('td', {}, c ? ctlRole(c) + ' in ' + c.group + ', term ' + c.term + ', leader ' + ctlLeader(c) : 'none')]));
    }
    $('peer-diff').replaceChildren(
      el('div', { class: 'scroll' }, el('table', { id: 'peer-nodes' }, el('caption', {}, 'Nodes compared with this one'), thead('Node', 'Version', 'Brokers', 'Topic routes', 'Uptime', 'Controller'), body)),
      diffs.length ? el('div', { class: 'scroll' }, el('table', { id: 'peer-differences' }, el('caption', {}, 'Where they disagree'), thead('Node', 'What', 'Here', 'There'), el('tbody', {}, ...diffs)))
        : results.some((r) => !r.err) ? el('p', { class: 'diff-ok' }, 'Every node that answered agrees with this one.')
          : el('p', { class: 'diff-bad' }, 'No other node answered.'));
  }

  /* ---- polling ---- */

  function every(ms, fn, what) {
    const run = async () => {
      if (!document.hidden) {
        try { await fn(); setLive(true); } catch (e) { setLive(false, what); }
      }
      setTimeout(run, ms);
    };
    run();
  }

  every(1000, pollBrokers, 'brokers');
  every(2000, pollNode, 'node');
  every(2000, pollMetrics, 'metrics');
  every(5000, pollPeers, 'other nodes');
  setInterval(tickBars, 250);
  loadTopics().catch(() => setLive(false, 'topics'));
})();
