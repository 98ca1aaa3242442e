// Fail-over and change with a real ali-ons client: a NameServer list with a
// dead first address, a NameServer killed mid-run, brokers of a topic
// changing between two route refreshes, and orderTopicConf switched on at
// run time (UPDATE_NAMESRV_CONFIG + the ORDER_TOPIC_CONFIG KV namespace).
//
// ali-ons walks its NameServer list round robin (the first request goes to
// the second address) and retries a failed route query on the next address,
// up to the length of the list; its fork `rocketmq` picks one address at
// random and does not retry, so only ali-ons is tested here.
'use strict';

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert');
const { startServer, stopServer } = require('../lib/server');
const { RawConn, registerBroker, closedPort } = require('../lib/wire');
const { registerCluster } = require('../lib/fixture');
const { clientApi, startProducer, within } = require('../lib/clients');

const T = { timeout: 30000 };
const PUT_KV_CONFIG = 100;
const DELETE_KV_CONFIG = 102;
const UNREGISTER_BROKER = 104;
const GET_ROUTEINFO_BY_TOPIC = 105;
const UPDATE_NAMESRV_CONFIG = 318;

// Waits, bounded, until check() returns a truthy value; returns the last
// value (the caller asserts on it, so a timeout fails with its message).
async function eventually(check, ms = 15000) {
  let v;
  for (const end = Date.now() + ms; Date.now() < end;) {
    v = await check();
    if (v) return v;
    await new Promise(res => setTimeout(res, 100));
  }
  return check();
}

const brokerData = (name, clusterName, brokerAddrs) =>
  ({ brokerAddrs, brokerName: name, cluster: clusterName, enableActingMaster: false });
const queueData = (name, perm, read, write) =>
  ({ brokerName: name, perm, readQueueNums: read, topicSysFlag: 0, writeQueueNums: write });

// The route of T1 as the client parses it (fixture.js registers it).
function expectedT1(addrs) {
  return {
    brokerDatas: [
      brokerData('broker-a', 'C1', { 0: addrs.a0 }),
      brokerData('broker-b', 'C1', { 0: addrs.b0, 1: addrs.b1 }),
    ],
    filterServerTable: {},
    queueDatas: [queueData('broker-a', 6, 2, 3), queueData('broker-b', 6, 4, 4)],
  };
}

// A producer's message queues for a topic, as broker:queueId.
const queues = info => (info ? info.messageQueueList.map(q => `${q.brokerName}:${q.queueId}`) : []);

// The client's failed attempts, from its own log and error events.
const failures = c => c.logger.lines.filter(l => /^(warn|error) /.test(l)).join('\n');

describe('ali-ons: a NameServer list whose first address is dead', () => {
  let server;
  let cluster;
  let c;
  let dead;

  before(async () => {
    server = await startServer();
    cluster = await registerCluster(server);
    dead = `127.0.0.1:${await closedPort()}`;
    c = await clientApi('ali-ons', [dead, server.addr]);
  });
  after(async () => {
    if (c) await c.close();
    if (cluster) cluster.close();
    await stopServer(server);
  });

  it('every route query is answered, the dead address tried and passed over', T, async () => {
    // Round robin: queries 2 and 4 start at the dead address and retry.
    for (let i = 0; i < 4; i++) {
      const r = await within(10000, c.route('T1', 5000), `route query ${i}`);
      assert.deepStrictEqual(JSON.parse(JSON.stringify(r)), expectedT1(cluster.addrs), `query ${i}`);
    }
    const f = failures(c);
    assert.match(f, new RegExp(`ECONNREFUSED ${dead.replace(/\./g, '\\.')}`), f);
    assert.ok(!f.includes(server.addr), `no failure on the live server:\n${f}`);
  });
});

describe('ali-ons: the second NameServer killed mid-run', () => {
  let ns1;
  let ns2;
  let clusters = [];
  let c;
  let p;
  let extra;

  before(async () => {
    ns1 = await startServer();
    ns2 = await startServer();
    // Brokers register with every NameServer.
    clusters = [await registerCluster(ns1)];
    clusters.push(await registerCluster(ns2));
    c = await clientApi('ali-ons', [ns1.addr, ns2.addr]);
    // A producer refreshing its routes every second from both servers.
    p = await startProducer('ali-ons', [ns1.addr, ns2.addr], { producerGroup: 'PG_failover_kill' });
    await assert.rejects(p.send('T1'), /still failed/);
  });
  after(async () => {
    if (p) await p.close();
    if (c) await c.close();
    if (extra) extra.close();
    for (const cl of clusters) cl.close();
    if (ns2) await ns2.kill();
    await stopServer(ns1);
  });

  it('queries go to both; after the kill they all go to the survivor, with the same route', T, async () => {
    const routes = {};
    for (const [i, cl] of clusters.entries()) routes[i] = expectedT1(cl.addrs);
    // Each server holds its own synthetic brokers (different closed ports),
    // so a route shows which server answered it.
    const fromWhich = r => {
      const plain = JSON.parse(JSON.stringify(r));
      const k = Object.keys(routes).find(i => isDeepEqual(plain, routes[i]));
      assert.ok(k !== undefined, `a route from neither server: ${JSON.stringify(plain)}`);
      return Number(k);
    };
    const seen = new Set();
    for (let i = 0; i < 4; i++) seen.add(fromWhich(await within(10000, c.route('T1', 5000), `route ${i}`)));
    assert.deepStrictEqual([...seen].sort(), [0, 1], 'round robin reached both NameServers');

    const st = await ns2.kill();
    assert.strictEqual(st.signal, 'SIGKILL');
    // The client notices the closed connection on its own.
    const gone = await eventually(() => {
      const ch = c.api._channels.get(ns2.addr);
      return !ch || !ch.isOK;
    });
    assert.ok(gone, 'the client still holds a live channel to the killed server');

    for (let i = 0; i < 4; i++) {
      const r = await within(10000, c.route('T1', 5000), `route after kill ${i}`);
      assert.strictEqual(fromWhich(r), 0, `query ${i} after the kill`);
    }
    const f = failures(c);
    assert.match(f, new RegExp(`ECONNREFUSED ${ns2.addr.replace(/\./g, '\\.')}`), f);
  });

  it('a running producer keeps refreshing from the survivor: a group added there reaches it', T, async () => {
    const addr = `127.0.0.1:${await closedPort()}`;
    extra = await RawConn.connect(ns1.port);
    await registerBroker(extra, { cluster: 'C1', brokerName: 'broker-n', brokerAddr: addr, brokerId: 0,
      topics: [{ name: 'T1', read: 1, write: 1, perm: 6 }, { name: 'TN', read: 1, write: 1, perm: 6 }] });
    const want = ['broker-a:0', 'broker-a:1', 'broker-a:2',
      'broker-b:0', 'broker-b:1', 'broker-b:2', 'broker-b:3', 'broker-n:0'];
    const got = await eventually(() => {
      const q = queues(p.publishInfo('T1')).sort();
      return JSON.stringify(q) === JSON.stringify(want) && q;
    });
    assert.deepStrictEqual(got, want, `the producer has ${JSON.stringify(queues(p.publishInfo('T1')))}`);
    assert.deepStrictEqual(p.producer._mqClient._brokerAddrTable.get('broker-n'), { 0: addr });
  });
});

function isDeepEqual(a, b) {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch (e) {
    return false;
  }
}

describe('ali-ons producer: route changes seen at the next refresh', () => {
  let server;
  let raw;
  let conns = [];
  let p;
  const addrs = {};

  before(async () => {
    server = await startServer();
    raw = await RawConn.connect(server.port);
    addrs.x = `127.0.0.1:${await closedPort()}`;
    addrs.y = `127.0.0.1:${await closedPort()}`;
    conns.push(await RawConn.connect(server.port));
    await registerBroker(conns[0], { cluster: 'CX', brokerName: 'broker-x', brokerAddr: addrs.x, brokerId: 0,
      topics: [{ name: 'TMOVE', read: 2, write: 2, perm: 6 }, { name: 'TBW102', read: 8, write: 8, perm: 7 }] });
    // Refreshes every second (pollNameServerInteval 1000, lib/clients.js).
    p = await startProducer('ali-ons', server.addr, { producerGroup: 'PG_failover_move' });
  });
  after(async () => {
    if (p) await p.close();
    for (const c of conns) c.close();
    if (raw) raw.close();
    await stopServer(server);
  });

  it('a second group added, then the first unregistered', T, async () => {
    await assert.rejects(p.send('TMOVE'), /still failed/);
    assert.deepStrictEqual(queues(p.publishInfo('TMOVE')), ['broker-x:0', 'broker-x:1']);

    conns.push(await RawConn.connect(server.port));
    await registerBroker(conns[1], { cluster: 'CX', brokerName: 'broker-y', brokerAddr: addrs.y, brokerId: 0,
      // (two topics: a 5.x NameServer refuses a first registration holding exactly one)
      topics: [{ name: 'TMOVE', read: 3, write: 3, perm: 6 }, { name: 'TOTHER', read: 1, write: 1, perm: 6 }] });
    const both = ['broker-x:0', 'broker-x:1', 'broker-y:0', 'broker-y:1', 'broker-y:2'];
    const added = await eventually(() => {
      const q = queues(p.publishInfo('TMOVE')).sort();
      return JSON.stringify(q) === JSON.stringify(both) && q;
    });
    assert.deepStrictEqual(added, both, 'the new group after a refresh');
    // The producer's broker table learnt the new address from the route.
    assert.deepStrictEqual(p.producer._mqClient._brokerAddrTable.get('broker-y'), { 0: addrs.y });

    // (on the broker's own connection, as a broker does at shutdown)
    const un = await conns[0].request({ code: UNREGISTER_BROKER,
      ext: { brokerName: 'broker-x', brokerAddr: addrs.x, clusterName: 'CX', brokerId: '0' } });
    assert.strictEqual(un.header.code, 0);
    const onlyY = ['broker-y:0', 'broker-y:1', 'broker-y:2'];
    const removed = await eventually(() => {
      const q = queues(p.publishInfo('TMOVE')).sort();
      return JSON.stringify(q) === JSON.stringify(onlyY) && q;
    });
    assert.deepStrictEqual(removed, onlyY, 'the unregistered group is gone after a refresh');
  });
});

describe('ali-ons producer: orderTopicConf switched on and off at run time', () => {
  let server;
  let cluster;
  let raw;
  let p;

  const route = async () => {
    const r = await raw.request({ code: GET_ROUTEINFO_BY_TOPIC, ext: { topic: 'TORD' } });
    assert.strictEqual(r.header.code, 0);
    return JSON.parse(r.body.toString('utf8')); // version 479: standard JSON
  };
  const config = async text => {
    const r = await raw.request({ code: UPDATE_NAMESRV_CONFIG, body: text });
    assert.strictEqual(r.header.code, 0, JSON.stringify(r.header));
  };
  const kv = async (code, value) => {
    const ext = { namespace: 'ORDER_TOPIC_CONFIG', key: 'TORD' };
    if (value !== undefined) ext.value = value;
    const r = await raw.request({ code, ext });
    assert.strictEqual(r.header.code, 0, JSON.stringify(r.header));
  };
  const waitQueues = async (want, orderTopic) => {
    const got = await eventually(() => {
      const info = p.publishInfo('TORD');
      const q = orderTopic ? queues(info) : queues(info).sort();
      return info && info.orderTopic === orderTopic && JSON.stringify(q) === JSON.stringify(want) && info;
    });
    assert.ok(got, `the producer never had ${want} (order ${orderTopic}); has ${JSON.stringify(queues(p.publishInfo('TORD')))}`);
  };
  const allQueues = ['broker-a:0', 'broker-a:1', 'broker-a:2', 'broker-a:3',
    'broker-b:0', 'broker-b:1', 'broker-b:2', 'broker-b:3'];

  before(async () => {
    server = await startServer();
    cluster = await registerCluster(server);
    raw = await RawConn.connect(server.port);
    p = await startProducer('ali-ons', server.addr, { producerGroup: 'PG_failover_order' });
  });
  after(async () => {
    if (p) await p.close();
    if (raw) raw.close();
    if (cluster) cluster.close();
    await stopServer(server);
  });

  it('the KV alone changes nothing while orderMessageEnable is false', T, async () => {
    await assert.rejects(p.send('TORD'), /still failed/);
    await kv(PUT_KV_CONFIG, 'broker-a:2');
    assert.strictEqual((await route()).orderTopicConf, undefined);
    assert.deepStrictEqual(queues(p.publishInfo('TORD')).sort(), allQueues);
  });

  it('orderMessageEnable=true: the route carries the KV value and the producer builds order queues from it', T, async () => {
    await config('orderMessageEnable=true\n');
    assert.strictEqual((await route()).orderTopicConf, 'broker-a:2');
    await waitQueues(['broker-a:0', 'broker-a:1'], true);
    await kv(PUT_KV_CONFIG, 'broker-b:1;broker-a:3');
    assert.strictEqual((await route()).orderTopicConf, 'broker-b:1;broker-a:3');
    await waitQueues(['broker-b:0', 'broker-a:0', 'broker-a:1', 'broker-a:2'], true);
  });

  it('the KV entry deleted, then orderMessageEnable=false: back to the write queues', T, async () => {
    await kv(DELETE_KV_CONFIG);
    assert.strictEqual((await route()).orderTopicConf, undefined);
    await waitQueues(allQueues, false);
    await kv(PUT_KV_CONFIG, 'broker-a:1');
    await waitQueues(['broker-a:0'], true);
    await config('orderMessageEnable=false\n');
    assert.strictEqual((await route()).orderTopicConf, undefined);
    await waitQueues(allQueues, false);
  });
});
