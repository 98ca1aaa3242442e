// An ali-ons push consumer (broadcast mode, offsets kept in memory) against
// rmqns: it subscribes, fetches the routes and builds its message queues
// from the read queue counts and read permission, then fails only because
// the synthetic brokers do not exist.
'use strict';

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert');
const { Consumer, Producer } = require('ali-ons');
const { clusterForFile } = require('../lib/fixture');
const { noHttp, recordingLogger, within } = require('../lib/clients');

const T = { timeout: 20000 };

const env = clusterForFile();

describe('ali-ons: push consumer', () => {
  let consumer;
  const errors = [];
  const logger = recordingLogger();

  before(async () => {
    consumer = new Consumer({
      nameSrv: env.server.addr,
      httpclient: noHttp,
      logger,
      consumerGroup: 'CG_compat',
      isBroadcast: true,
      pollNameServerInteval: 1000,
      heartbeatBrokerInterval: 1000,
      rebalanceInterval: 1000,
      persistConsumerOffsetInterval: 1000,
    });
    consumer.on('error', err => errors.push(err));
    await within(10000, consumer.ready(), 'consumer start');
    // the client's inner producer shares the consumer's connection state
    Producer.defaultProducer.on('error', err => errors.push(err));
  });

  after(async () => {
    if (!consumer) return;
    // Closing tells every known broker about it; these brokers do not exist.
    consumer._mqClient._brokerAddrTable.clear();
    await within(5000, consumer.close(), 'consumer close');
    const inner = Producer.defaultProducer;
    if (inner) {
      inner._mqClient._brokerAddrTable.clear();
      Producer.defaultProducer = null;
      await within(5000, inner.close(), 'inner producer close');
    }
    // close() drops every listener, yet a connection to a synthetic broker
    // may still be failing: with no 'error' listener left the client would
    // throw, and the test runner would count it against a finished test.
    for (const client of new Set([consumer._mqClient, inner && inner._mqClient])) {
      if (client) client.on('error', () => {});
    }
  });

  // Waits (bounded) for the consumer to know the topic's queues.
  async function subscribeInfo(topic) {
    for (let i = 0; i < 50 && !consumer._topicSubscribeInfoTable.has(topic); i++) {
      await new Promise(res => setTimeout(res, 100));
    }
    const list = consumer._topicSubscribeInfoTable.get(topic);
    assert.ok(list, `the consumer got the route of ${topic}; errors: ${errors.map(e => e.message).join('; ')}`);
    return list.map(q => `${q.brokerName}:${q.queueId}`).sort();
  }

  it('read queues of every group of the topic', T, async () => {
    consumer.subscribe('T1', '*', async () => {});
    assert.deepStrictEqual(await subscribeInfo('T1'),
      ['broker-a:0', 'broker-a:1', 'broker-b:0', 'broker-b:1', 'broker-b:2', 'broker-b:3']);
  });

  it('a read-only topic has its read queues; a write-only topic has none', T, async () => {
    consumer.subscribe('T2', '*', async () => {});
    consumer.subscribe('TC2', '*', async () => {});
    assert.deepStrictEqual(await subscribeInfo('T2'),
      Array.from({ length: 8 }, (_, i) => `broker-b:${i}`).sort());
    assert.deepStrictEqual(await subscribeInfo('TC2'), []);
  });

  it('the only errors are unreachable brokers', T, async () => {
    const unexpected = errors.map(e => e.message).filter(m => !/ECONNREFUSED 127\.0\.0\.1:\d+/.test(m));
    assert.deepStrictEqual(unexpected, []);
  });
});
