// Producers of both Node clients against rmqns: they start, fetch the route
// of the topic they send to, build their message queues from it (write
// queue counts, write permission, order-topic configuration from the KV
// store), and then fail only because the synthetic brokers do not exist.
'use strict';

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert');
const { startServer, stopServer } = require('../lib/server');
const { RawConn } = require('../lib/wire');
const { registerCluster } = require('../lib/fixture');
const { startProducer } = require('../lib/clients');

const T = { timeout: 20000 };
const PUT_KV_CONFIG = 100;
const WIPE_WRITE_PERM_OF_BROKER = 205;

let server;
let cluster;
let raw;

before(async () => {
  server = await startServer(['--orderMessageEnable=true']);
  cluster = await registerCluster(server);
  raw = await RawConn.connect(server.port);
  const put = await raw.request({ code: PUT_KV_CONFIG,
    ext: { namespace: 'ORDER_TOPIC_CONFIG', key: 'TORD', value: 'broker-b:1;broker-a:2' } });
  assert.strictEqual(put.header.code, 0);
  const wipe = await raw.request({ code: WIPE_WRITE_PERM_OF_BROKER, ext: { brokerName: 'broker-w' } });
  assert.strictEqual(wipe.header.code, 0);
  assert.strictEqual(wipe.header.extFields.wipeTopicCount, '2');
});

after(async () => {
  if (raw) raw.close();
  if (cluster) cluster.close();
  await stopServer(server);
});

const queues = info => info.messageQueueList.map(q => `${q.brokerName}:${q.queueId}`);

// Waits (bounded) until the client has reported failing to reach each of
// the given addresses.
async function waitForDialFailures(p, addrs) {
  for (let i = 0; i < 50; i++) {
    const text = p.errors.map(e => e.message).join('\n');
    if (addrs.every(a => text.includes(a))) return text;
    await new Promise(res => setTimeout(res, 100));
  }
  return p.errors.map(e => e.message).join('\n');
}

for (const pkg of ['ali-ons', 'rocketmq']) {
  describe(`${pkg}: producer`, () => {
    let p;

    before(async () => { p = await startProducer(pkg, server.addr, { producerGroup: `PG_${pkg}` }); });
    after(async () => { if (p) await p.close(); });

    it('sends over the route rmqns gave: the write queues of both masters, then the brokers are unreachable', T, async () => {
      const { a0, b0, b1 } = cluster.addrs;
      await assert.rejects(p.send('T1'), err => {
        assert.match(err.message, /^Send \[2\] times, still failed, .*Topic: T1, BrokersSent: (.*)$/);
        const sent = JSON.parse(/BrokersSent: (.*)$/.exec(err.message)[1]);
        assert.deepStrictEqual(sent.sort(), ['broker-a', 'broker-b']);
        return true;
      });
      const info = p.publishInfo('T1');
      assert.strictEqual(info.orderTopic, false);
      assert.deepStrictEqual(queues(info).sort(),
        ['broker-a:0', 'broker-a:1', 'broker-a:2', 'broker-b:0', 'broker-b:1', 'broker-b:2', 'broker-b:3']);
      // It dialled the masters' addresses from the route, not the slave's.
      const failures = await waitForDialFailures(p, [a0, b0]);
      assert.ok(failures.includes(a0) && failures.includes(b0), failures);
      assert.ok(!failures.includes(b1), failures);
    });

    it('a topic rmqns does not know fails with code 17 before any broker is tried', T, async () => {
      await assert.rejects(p.send('NoSuchTopic'), err => {
        assert.strictEqual(err.name, 'MQClientException');
        assert.strictEqual(err.code, 17);
        assert.match(err.message, /^No topic route info in name server for the topic: NoSuchTopic\n/);
        return true;
      });
    });

    it('order topic: the queues come from orderTopicConf (KV ORDER_TOPIC_CONFIG)', T, async () => {
      await assert.rejects(p.send('TORD'), /still failed/);
      const info = p.publishInfo('TORD');
      assert.strictEqual(info.orderTopic, true);
      assert.deepStrictEqual(queues(info), ['broker-b:0', 'broker-a:0', 'broker-a:1']);
    });

    it('write permission: a read-only topic gives no queue; a wiped group is left out', T, async () => {
      await assert.rejects(p.send('T2'), /still failed.*BrokersSent: \[\]$/);
      assert.deepStrictEqual(queues(p.publishInfo('T2')), []);
      // TW is on broker-b and on broker-w, whose write permission was wiped.
      await assert.rejects(p.send('TW'), err => {
        const sent = JSON.parse(/BrokersSent: (.*)$/.exec(err.message)[1]);
        assert.deepStrictEqual([...new Set(sent)], ['broker-b']);
        return true;
      });
      assert.deepStrictEqual(queues(p.publishInfo('TW')).sort(), ['broker-b:0', 'broker-b:1']);
    });

    it('the periodic route refresh parses every answer: the only errors are unreachable brokers and the unknown topic', T, async () => {
      const refreshes = () => p.logger.lines.filter(l => l.includes('updateAllTopicRouterInfo')).length;
      const before = refreshes();
      for (let i = 0; i < 50 && refreshes() < before + 2; i++) await new Promise(res => setTimeout(res, 100));
      assert.ok(refreshes() >= before + 2, 'the client refreshed its routes');
      const unexpected = p.errors.map(e => e.message)
        .filter(m => !/ECONNREFUSED 127\.0\.0\.1:\d+/.test(m) &&
          !/No topic route info in name server for the topic: NoSuchTopic\n/.test(m));
      assert.deepStrictEqual(unexpected, []);
    });
  });
}
