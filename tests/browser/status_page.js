// The status page in a real browser (Debian's chromium, headless, driven by
// puppeteer-core) against a live rmqns holding 100,000 topics seeded by
// `rmqns-bench seed`, plus a few brokers registered here: a slave that stops
// heartbeating and an acting master. It asserts what an operator sees: every
// broker with its role, a topic search and the route's queues, the bar of a
// silent broker turning red and the broker then leaving, the request charts,
// the differences with a second node (read by the browser across origins),
// a phone-sized layout without sideways scrolling, and no console errors.
// A third node runs a one-node controller group with a broker set made by
// synthetic brokers: its controller section shows the role, term, the set
// with its master and epoch, and the brokers heart-beating to it (a silent
// one turning red); the first node's says none runs there.
//
//   RMQNS_BIN=... RMQNS_BENCH_BIN=... CHROMIUM=/usr/bin/chromium \
//     node status_page.js [SCREENSHOT.png]
'use strict';

const assert = require('node:assert');
const { spawn } = require('node:child_process');
const path = require('node:path');
const puppeteer = require('puppeteer-core');

const lib = path.join(__dirname, '..', 'compat', 'lib');
const { startServer, stopServer } = require(path.join(lib, 'server.js'));
const { RawConn, registerBroker, closedPort } = require(path.join(lib, 'wire.js'));
const controller = require(path.join(__dirname, 'controller.js'));

const TOPICS = 100000;
const SEED_BROKERS = 4;
const SILENT_TIMEOUT_MS = 6000;   // the slave that stops heartbeating
const STEP_MS = 30000;            // generous: "it happens at all"
// The controller node's expiry scan runs 2 s after its start, then at this
// interval: a silent broker stays listed (red) well past its timeout.
const CTL_SCAN_MS = 600000;
// Time to a rendered page (broker table and first topic page) that fails
// the test: generous for a loaded 2-core CI machine (a page that fetched
// every topic would not make it even on an idle one); the measured time is
// printed.
const RENDER_LIMIT_MS = Number(process.env.RMQNS_BROWSER_RENDER_LIMIT_MS || STEP_MS);

function log(...a) { console.log('browser:', ...a); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A silent broker's bar is not red while its timeout runs: checked when the
// page showed the broker before the timeout could have run out (on a loaded
// host it may show it later, already red; the red bar's own check follows).
async function expectNotLateYet(page, selector, since) {
  const late = await page.$(`${selector} .hb.late`);
  if (Date.now() - since < SILENT_TIMEOUT_MS - 1500) assert.strictEqual(late, null, 'not red while its timeout runs');
  else log(`${selector} shown ${Date.now() - since} ms after its last heartbeat: too late to see it not red`);
}

async function getJSON(url) {
  const r = await fetch(url);
  assert.strictEqual(r.status, 200, `${url}: HTTP ${r.status}`);
  return r.json();
}

async function waitFor(what, fn, ms = STEP_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

// Console errors, failed requests and HTTP errors of a page, collected in problems.
function watch(page, problems) {
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
}

// The rows of a table as the text of their cells.
function cellTexts(page, selector) {
  return page.$$eval(selector, (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
}

async function main() {
  const shot = process.argv[2];
  const httpPort = await closedPort(), peerHttpPort = await closedPort();
  // a second node the page compares with (each names the other in statusPeers)
  const peer = await startServer([`--httpPort=${peerHttpPort}`, '--httpBindAddress=127.0.0.1',
    `--statusPeers=127.0.0.1:${httpPort}`]);
  const server = await startServer([`--httpPort=${httpPort}`, '--httpBindAddress=127.0.0.1',
    '--scanNotActiveBrokerInterval=2000', '--supportActingMaster=true', `--statusPeers=127.0.0.1:${peerHttpPort}`]);
  const base = `http://127.0.0.1:${httpPort}`;
  let seed = null, browser = null, ctlServer = null;
  const conns = [];
  try {
    // 100,000 topics over four brokers, kept alive until the end
    seed = spawn(process.env.RMQNS_BENCH_BIN, ['seed', '-a', server.addr, '-b', String(SEED_BROKERS),
      '-t', String(TOPICS / SEED_BROKERS), '--queues', '4', '-d', '600s', '--keepalive', '60s', '--quiet'],
    { stdio: ['ignore', 'ignore', 'inherit'] });
    await waitFor('the seeded topics', async () => (await getJSON(`${base}/api/node`)).topics >= TOPICS, 120000);

    // brokers with roles the seed does not make
    const addr = async () => `127.0.0.1:${await closedPort()}`;
    const master = await addr(), slave = await addr(), silent = await addr(), acting = await addr();
    const regs = [
      { cluster: 'StatusCluster', brokerName: 'status-a', brokerAddr: master, brokerId: 0,
        topics: [{ name: 'StatusTopic', read: 4, write: 2, perm: 6 }, { name: 'odd<b>"x&y\'', read: 1, write: 1, perm: 6 }] },
      { cluster: 'StatusCluster', brokerName: 'status-a', brokerAddr: slave, brokerId: 1,
        topics: [{ name: 'StatusTopic', read: 4, write: 2, perm: 4 }, { name: 'SlaveTopic', read: 1, write: 1, perm: 4 }] },
      { cluster: 'StatusCluster', brokerName: 'status-acting', brokerAddr: acting, brokerId: 2,
        enableActingMaster: true,
        topics: [{ name: 'ActingTopic', read: 2, write: 2, perm: 6 }, { name: 'ActingTopic2', read: 2, write: 2, perm: 6 }] },
    ];
    const register = async (g, port = server.port) => {
      const c = await RawConn.connect(port);
      conns.push(c);
      await registerBroker(c, g);
    };
    for (const g of regs) await register(g);
    // the peer knows the master only, and a broker this node lacks
    const elsewhere = await addr();
    await register(regs[0], peer.port);
    await register({ cluster: 'StatusCluster', brokerName: 'only-on-peer', brokerAddr: elsewhere, brokerId: 0,
      topics: [{ name: 'PeerTopic', read: 1, write: 1, perm: 6 }, { name: 'PeerTopic2', read: 1, write: 1, perm: 6 }] }, peer.port);

    browser = await puppeteer.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    });
    const page = await browser.newPage();
    const problems = [];
    watch(page, problems);
    await page.setViewport({ width: 1200, height: 1500 });

    // the first render: brokers and the first page of topics
    const t0 = Date.now();
    await page.goto(`${base}/`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#broker-list table tr[data-broker]', { timeout: STEP_MS });
    await page.waitForSelector('#topic-list button[data-topic]', { timeout: STEP_MS });
    const renderMs = Date.now() - t0;
    // the page's own marks: from navigation start to its first broker table and topic page
    const marks = await page.evaluate(() => ['rmqns-brokers', 'rmqns-topics'].map((n) => performance.getEntriesByName(n)[0].startTime));
    log(`rendered with ${TOPICS} topics: brokers at ${marks[0].toFixed(0)} ms, topics at ${marks[1].toFixed(0)} ms after navigation start (${renderMs} ms as the driver saw it)`);
    assert.ok(renderMs < RENDER_LIMIT_MS, `the page took ${renderMs} ms to render`);
    const count = await page.$eval('#topic-count', (e) => e.textContent);
    assert.match(count, /of \d+ \(100\d{3} in all\)/, `topic count line: ${count}`);
    assert.strictEqual(await page.$$eval('#topic-list li', (r) => r.length), 50, 'one page of 50 topics');

    // no controller here: the section says so and shows no tables
    await page.waitForFunction(() => /^No controller runs in this NameServer/.test(document.getElementById('controller-state').textContent), { timeout: STEP_MS });
    assert.deepStrictEqual(await page.evaluate(() => [document.getElementById('controller-state').hidden, document.getElementById('controller-view').hidden]),
      [false, true], 'the controller section without a controller');

    // every broker with its role, as the JSON says and as registered
    const api = (await getJSON(`${base}/api/brokers`)).brokers;
    const seeded = api.filter((b) => b.cluster === 'BenchCluster');
    assert.strictEqual(seeded.length, SEED_BROKERS, 'the seeded brokers are live');
    const want = new Map(seeded.map((b) => [b.address, 'master']));
    want.set(master, 'master').set(slave, 'slave').set(acting, 'acting master');
    await waitFor('every broker row', () => page.evaluate((n) => document.querySelectorAll('tr[data-broker]').length >= n, want.size));
    for (const [a, role] of want) {
      const got = await page.$eval(`tr[data-broker="${a}"]`, (tr) => [tr.dataset.role, tr.cells[2].textContent]);
      assert.deepStrictEqual(got, [role, role], `broker ${a}`);
    }

    // a search finds a topic; Enter on it (keyboard) shows its queues
    await page.type('#topic-q', 'b3-t24999');
    await page.waitForSelector('button[data-topic="BenchTopic-b3-t24999"]', { timeout: STEP_MS });
    await page.focus('button[data-topic="BenchTopic-b3-t24999"]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /BenchTopic-b3-t24999/.test((document.getElementById('route-h') || {}).textContent || ''), { timeout: STEP_MS });
    assert.strictEqual(await page.evaluate(() => document.activeElement.id), 'route-h', 'focus moves to the route');
    const q1 = await cellTexts(page, '#route-queues tbody tr');
    assert.deepStrictEqual(q1, [['bench-broker-3', '4', '4', 'RW-', '0']], 'queues of the seeded topic');

    await page.click('#topic-q', { clickCount: 3 });
    await page.type('#topic-q', 'statustopic');
    await page.waitForSelector('button[data-topic="StatusTopic"]', { timeout: STEP_MS });
    await page.click('button[data-topic="StatusTopic"]');
    await page.waitForFunction(() => /StatusTopic/.test((document.getElementById('route-h') || {}).textContent || ''), { timeout: STEP_MS });
    const q2 = await cellTexts(page, '#route-queues tbody tr');
    assert.deepStrictEqual(q2, [['status-a', '4', '2', 'RW-', '0']], 'queues of StatusTopic');
    const b2 = await page.$$eval('#route-brokers tbody tr', (rows) => rows.map((r) => r.cells[2].textContent));
    assert.deepStrictEqual(b2, [`0: ${master}, 1: ${slave}`], 'the broker set of StatusTopic');

    // an odd name shows as text, never as markup
    await page.click('#topic-q', { clickCount: 3 });
    await page.type('#topic-q', 'odd<');
    await page.waitForSelector('#topic-list button[data-topic]', { timeout: STEP_MS });
    await waitFor('the odd topic alone', () => page.$$eval('#topic-list button', (b) => b.length === 1 && b[0].textContent === 'odd<b>"x&y\''));
    assert.strictEqual(await page.$$eval('#topic-list b', (b) => b.length), 0, 'no markup from a topic name');

    // the other node, read by the browser across origins: where they disagree
    const diffRows = await waitFor('the comparison with the other node', async () => {
      const rows = await cellTexts(page, '#peer-differences tbody tr');
      return rows.length ? rows : null;
    });
    const peerName = `127.0.0.1:${peerHttpPort}`;
    const has = (what, here, there) => diffRows.some((r) => r[0] === peerName && r[1] === what && r[2] === here && r[3] === there);
    assert.ok(has('StatusCluster / only-on-peer / id 0', 'absent', `${elsewhere}, master`), JSON.stringify(diffRows));
    assert.ok(has('StatusCluster / status-a / id 1', `${slave}, slave`, 'absent'), JSON.stringify(diffRows));
    const here = (await getJSON(`${base}/api/node`)).topics;
    assert.ok(has('topic routes', `${here} topics`, '4 topics'), JSON.stringify(diffRows));
    assert.ok(!diffRows.some((r) => r[1] === 'StatusCluster / status-a / id 0'), 'the master is the same on both');

    // StatusTopic's route stays open for the screenshot
    await page.click('#topic-q', { clickCount: 3 });
    await page.type('#topic-q', 'StatusTopic');
    await page.waitForSelector('button[data-topic="StatusTopic"]', { timeout: STEP_MS });
    await page.click('button[data-topic="StatusTopic"]');
    await page.waitForSelector('#route-queues tbody tr', { timeout: STEP_MS });

    // the request table fills from /metrics
    await page.waitForFunction(() => /REGISTER_BROKER \(103\)/.test(document.querySelector('#req-table tbody').textContent), { timeout: STEP_MS });
    assert.ok(await page.$('#req-table svg.spark polyline'), 'a chart is drawn');

    // a slave that registers once and then stays silent: listed, red once
    // its timeout has run out, then gone
    // taken before the registration: the server's heartbeat stamp is later
    const silentSince = Date.now();
    await register({ cluster: 'StatusCluster', brokerName: 'status-a', brokerAddr: silent, brokerId: 3,
      heartbeatTimeoutMillis: SILENT_TIMEOUT_MS,
      topics: [{ name: 'StatusTopic', read: 4, write: 2, perm: 4 }, { name: 'SilentTopic', read: 1, write: 1, perm: 4 }] });
    await page.waitForSelector(`tr[data-broker="${silent}"][data-role="slave"]`, { timeout: STEP_MS });
    await expectNotLateYet(page, `tr[data-broker="${silent}"]`, silentSince);
    await page.waitForSelector(`tr[data-broker="${silent}"] .hb.late`, { timeout: SILENT_TIMEOUT_MS + STEP_MS });
    const redAt = Date.now() - silentSince;
    if (shot) { // the picture in docs/observability.md, with that red bar
      await page.setViewport({ width: 1000, height: 1180 });
      await page.screenshot({ path: shot, type: 'png' });
      await page.setViewport({ width: 1200, height: 1500 });
      log(`screenshot ${shot}`);
    }
    assert.ok(redAt >= SILENT_TIMEOUT_MS - 1500, `red after ${redAt} ms, before its timeout`);
    const colour = await page.$eval(`tr[data-broker="${silent}"] .bar > span`, (s) => getComputedStyle(s).backgroundColor);
    assert.strictEqual(colour, 'rgb(179, 0, 27)', 'the late bar is red');
    await page.waitForFunction((a) => !document.querySelector(`tr[data-broker="${a}"]`), { timeout: STEP_MS }, silent);
    log(`silent broker red after ${redAt} ms, gone after ${Date.now() - silentSince} ms`);
    assert.ok(await page.$(`tr[data-broker="${master}"]`), 'its master stays');

    // a phone-sized screen: no sideways scrolling of the page itself
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await sleep(300);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `the page is ${overflow} px wider than a phone`);

    // read-only: no form posts anywhere, no buttons other than navigation
    const buttons = await page.$$eval('button', (b) => b.map((x) => x.id || 'topic'));
    assert.ok(buttons.every((id) => ['topic-prev', 'topic-next', 'topic'].includes(id)), `buttons: ${buttons}`);

    // the controller node, started only now: its expiry scan runs 2 s
    // after its start, then every CTL_SCAN_MS; the master's 10 min
    // heartbeat timeout is allowed (the default cuts timeouts to 1 min)
    const ctlPort = await controller.controllerPort(), ctlHttpPort = await closedPort();
    ctlServer = await startServer([`--httpPort=${ctlHttpPort}`, '--httpBindAddress=127.0.0.1',
      `--scanNotActiveBrokerInterval=${CTL_SCAN_MS}`, `--statusPeers=127.0.0.1:${httpPort}`,
      '--controllerMaxHeartbeatTimeoutMillis=600000',
      ...controller.oneNodeGroup('StatusGroup', ctlPort)]);
    await controllerSection(browser, problems, conns,
      { port: ctlPort, base: `http://127.0.0.1:${ctlHttpPort}`, peer: `127.0.0.1:${httpPort}` });

    assert.deepStrictEqual(problems, [], 'console errors or failed requests');
    log('ok');
  } finally {
    if (browser) await browser.close();
    for (const c of conns) c.close();
    if (seed && seed.exitCode === null) {
      seed.kill('SIGTERM');
      await new Promise((r) => seed.once('exit', r));
    }
    await stopServer(server);
    await stopServer(peer);
    await stopServer(ctlServer);
  }
}

// The page of a node running a one-node controller group (ctl: its
// controller port, its page's base URL, and the controller-less node it
// lists in statusPeers): role, term and leader; a broker set made through
// the controller (master 1, then a slave 2 that falls silent); the brokers
// heart-beating to it; the controller column of the other node.
async function controllerSection(browser, problems, conns, ctl) {
  const view = async () => (await getJSON(`${ctl.base}/api/node`)).controller;
  await waitFor('the controller leading and serving', async () => { const c = await view(); return c && c.serving; });

  const master = { cluster: 'CtlCluster', brokerName: 'ctl-a', brokerId: 1, address: `127.0.0.1:${await closedPort()}`, timeoutMillis: 600000 };
  const masterConn = await controller.startBroker(ctl.port, master);
  conns.push(masterConn);
  const elected = await controller.electSelf(masterConn, master);
  assert.deepStrictEqual([elected.masterBrokerId, elected.masterAddress, elected.masterEpoch], ['1', master.address, '1'],
    `the election: ${JSON.stringify(elected)}`);
  await controller.heartbeat(masterConn, master, 1, 4096); // as a master of epoch 1 with data
  const term = (await view()).term;

  const page = await browser.newPage();
  watch(page, problems);
  await page.setViewport({ width: 1200, height: 1500 });
  await page.goto(`${ctl.base}/`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#ctl-sets tr[data-set="ctl-a"]', { timeout: STEP_MS });
  assert.strictEqual(await page.$eval('#controller-state', (e) => e.hidden), true, 'no "no controller" text');
  const facts = await page.$$eval('#controller-facts dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
  assert.strictEqual(facts.Role, 'leader, serving', JSON.stringify(facts));
  assert.strictEqual(facts.Term, String(term), JSON.stringify(facts));
  assert.strictEqual(facts.Group, 'StatusGroup', JSON.stringify(facts));
  assert.strictEqual(facts['This node'], 'n0', JSON.stringify(facts));
  assert.strictEqual(facts.Leader, `n0 at 127.0.0.1:${ctl.port}`, JSON.stringify(facts));
  assert.match(facts['Leader changes'], /^\d+$/, JSON.stringify(facts));

  const setRow = () => cellTexts(page, '#ctl-sets tr[data-set="ctl-a"]');
  assert.deepStrictEqual(await setRow(), [['ctl-a', 'CtlCluster', `1 at ${master.address}`, '1', '{1}, epoch 1',
    `1: ${master.address} ✓\u00a0alive, in sync`]], 'the broker set');

  // the master heart-beating, its epoch and offset from the last heartbeat
  const liveRow = async (b) => (await cellTexts(page, `#ctl-live tr[data-ctl-broker="${b.address}"]`))[0];
  const masterRow = await waitFor('the master as its last heartbeat says', async () => {
    const r = await liveRow(master);
    return r && r[5] === '1' ? r : null;
  });
  assert.deepStrictEqual(masterRow.filter((c, i) => i !== 4), ['CtlCluster', 'ctl-a', '1', master.address, '1', '4096', '2147483647']);
  assert.match(masterRow[4], /^\d+(\.\d)? s \/ 10 min$/, 'heartbeat age / timeout');
  assert.strictEqual(await page.$(`#ctl-live tr[data-ctl-broker="${master.address}"] .hb.late`), null, 'the master is not late');

  // a slave that heart-beats once: alive and out of the sync-state set,
  // then red and not alive once its timeout has run out
  const slave = { ...master, brokerId: 2, address: `127.0.0.1:${await closedPort()}`, timeoutMillis: SILENT_TIMEOUT_MS };
  const slaveSince = Date.now();
  conns.push(await controller.startBroker(ctl.port, slave));
  const replicas = () => page.$$eval('#ctl-sets tr[data-set="ctl-a"] li', (li) => li.map((x) => [x.dataset.replica, x.dataset.alive, x.dataset.inSync]));
  await waitFor('the slave among the replicas', async () =>
    JSON.stringify(await replicas()) === JSON.stringify([['1', 'true', 'true'], ['2', 'true', 'false']]));
  const slaveSel = `#ctl-live tr[data-ctl-broker="${slave.address}"]`;
  await page.waitForSelector(slaveSel, { timeout: STEP_MS });
  await expectNotLateYet(page, slaveSel, slaveSince);
  await page.waitForSelector(`${slaveSel} .hb.late`, { timeout: SILENT_TIMEOUT_MS + STEP_MS });
  assert.match((await liveRow(slave))[4], /^timed out \(/, 'the late heartbeat text');
  const colour = await page.$eval(`${slaveSel} .bar > span`, (s) => getComputedStyle(s).backgroundColor);
  assert.strictEqual(colour, 'rgb(179, 0, 27)', 'the late bar is red');
  await waitFor('the silent slave not alive', async () =>
    JSON.stringify(await replicas()) === JSON.stringify([['1', 'true', 'true'], ['2', 'false', 'false']]));
  assert.deepStrictEqual((await setRow())[0].slice(2, 6), [`1 at ${master.address}`, '1', '{1}, epoch 1',
    `1: ${master.address} ✓\u00a0alive, in sync2: ${slave.address} ✗\u00a0not alive, not in sync`], 'the set with its silent slave');

  // the other node, without a controller, in the comparison
  const peerRow = await waitFor('the other node in the comparison', async () =>
    (await cellTexts(page, '#peer-nodes tbody tr')).find((r) => r[0] === ctl.peer));
  assert.strictEqual(peerRow[5], 'none', `the other node's controller: ${JSON.stringify(peerRow)}`);

  // a phone-sized screen: no sideways scrolling
  await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
  await sleep(300);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the controller page is ${overflow} px wider than a phone`);
  log(`controller section: leader in term ${term}, set ctl-a with master 1 at epoch 1, silent slave red`);
  await page.close();
}

main().then(() => process.exit(0), (e) => {
  console.error('browser: FAIL:', e && e.stack || e);
  process.exit(1);
});
